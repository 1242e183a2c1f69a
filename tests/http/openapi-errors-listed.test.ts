// Rule: every operation of GET /v1/openapi.json lists the 500 `internal` the service answers by design (a fault of its
// own: a sentence and the request id), and every operation that takes a token the 401 it answers without one, each
// with the Error schema; the Error schema's `code` is one of the error registry's codes, so a client can switch on it.
// No operation listed a 500, and `code` was any string. Also: every operation that takes a token lists the 404 a
// request carrying a Stripe-Signature gets before the token is asked for, its 401 in `authenticate`'s words (a
// route's own text had replaced them), and GET /v1/openapi.json its body.
import { Ajv2020 } from 'ajv/dist/2020.js';
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { ERROR_REGISTRY } from '../../src/interlock.js';
import { createApp } from '../../webhooks/app.js';
import { approvalBody, bearer, refundBody, rigSuite, tokenRegistry, TOKENS } from './rig.js';

type Response = { content?: { 'application/json': { schema: { $ref?: string } } } };
type Operation = { operationId: string; security?: unknown[]; responses: Record<string, Response> };

const rig = rigSuite();
let doc: { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, { properties?: Record<string, unknown> }> } };
beforeAll(async () => {
  doc = (await request(rig.app).get('/v1/openapi.json')).body;
});

const operations = () => Object.entries(doc.paths).flatMap(([path, methods]) => Object.entries(methods).map(([method, operation]) => ({ path, method, operation })));
const ERROR_REF = '#/components/schemas/Error';

describe('errors the document lists', () => {
  it('every operation lists 500, and every one that takes a token 401, each with the Error schema', () => {
    const missing: string[] = [];
    for (const { path, method, operation } of operations()) {
      const wanted = operation.security?.length === 0 ? ['500'] : ['401', '500'];
      for (const status of wanted) {
        if (operation.responses[status]?.content?.['application/json'].schema.$ref !== ERROR_REF) missing.push(`${method.toUpperCase()} ${path} ${status}`);
      }
    }
    expect(operations().length).toBeGreaterThanOrEqual(20);
    expect(missing).toEqual([]);
  });

  it('every operation that takes a token lists the Stripe-Signature 404 and the 401 in authenticate\'s words', async () => {
    const wrong: string[] = [];
    for (const { path, method, operation } of operations()) {
      if (operation.security?.length === 0) continue;
      const described = (status: string) => (operation.responses[status] as { description?: string } | undefined)?.description ?? '';
      if (!described('404').includes('Stripe-Signature')) wrong.push(`${method.toUpperCase()} ${path} 404`);
      if (!described('401').includes('`unauthenticated`')) wrong.push(`${method.toUpperCase()} ${path} 401`);
    }
    expect(wrong).toEqual([]);
    // As the service answers it: a token route, a token or not, a Stripe-Signature header.
    const answer = await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).set('stripe-signature', 't=1,v1=x').send(approvalBody());
    expect({ status: answer.status, code: answer.body.error?.code }).toEqual({ status: 404, code: 'not_found' });
  });

  it('GET /v1/openapi.json documents its body', () => {
    expect(doc.paths['/v1/openapi.json']?.['get']?.responses['200']?.content?.['application/json'].schema).toBeDefined();
  });

  it("the Error schema's code is exactly the registry's codes", () => {
    const error = doc.components.schemas.Error?.properties?.['error'] as { properties: { code: { enum: string[] } } };
    expect([...error.properties.code.enum].sort()).toEqual(Object.keys(ERROR_REGISTRY).sort());
  });

  it('the 500 a proposal answers when the fact reader returns facts the gate cannot record is the one documented', async () => {
    const app = createApp({ stores: rig.stores, effects: rig.queue, readFacts: async () => ({ chargebacks: 'x'.repeat(100_000) }), tokens: tokenRegistry(), logger: rig.stores.logger });
    const approval = approvalBody();
    expect((await request(app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(approval)).status).toBe(201);
    const answer = await request(app).post('/v1/refunds').set(bearer(TOKENS.support)).send(refundBody({ approval: approval.id }));
    expect({ status: answer.status, code: answer.body.error?.code }).toEqual({ status: 500, code: 'internal' });

    const ajv = new Ajv2020({ strict: false, validateFormats: false });
    for (const [id, schema] of Object.entries(doc.components.schemas)) ajv.addSchema(schema, `#/components/schemas/${id}`);
    const documented = doc.paths['/v1/refunds']?.['post']?.responses['500']?.content?.['application/json'].schema;
    expect(documented).toEqual({ $ref: ERROR_REF });
    expect(ajv.getSchema(ERROR_REF)?.(answer.body)).toBe(true);
  });

  it('a route that takes a token answers 401 unauthenticated without one, and a code outside the registry is not an Error', async () => {
    const answer = await request(rig.app).get('/v1/effects');
    expect({ status: answer.status, code: answer.body.error?.code }).toEqual({ status: 401, code: 'unauthenticated' });
    const ajv = new Ajv2020({ strict: false, validateFormats: false });
    for (const [id, schema] of Object.entries(doc.components.schemas)) ajv.addSchema(schema, `#/components/schemas/${id}`);
    const validate = ajv.getSchema(ERROR_REF);
    expect(validate?.(answer.body)).toBe(true);
    expect(validate?.({ error: { code: 'no_such_code', message: 'x' } })).toBe(false);
  });
});
