// The OpenAPI 3.1 document: generated from the zod schemas that validate requests, its schemas are valid JSON Schema
// 2020-12 (OpenAPI 3.1's dialect), and a body the API accepts is one the document accepts too (checked on many
// generated bodies), so a client generated from the document never builds a request the document calls invalid
// while the API takes it, or the other way round for anything the document can express.
import { Ajv2020 } from 'ajv/dist/2020.js';
import fc from 'fast-check';
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { approvalBody as approvalSchema, creditBody as creditSchema, refundBody as refundSchema } from '../../webhooks/api/schemas.js';
import { approvalBody, bearer, creditBody, refundBody, rigSuite, TOKENS } from './rig.js';

type Doc = {
  openapi: string;
  components: { schemas: Record<string, Record<string, unknown>> };
  paths: Record<string, Record<string, { operationId: string; responses: Record<string, unknown>; parameters: { name: string; in: string }[]; requestBody?: { required: boolean; content: { 'application/json': { schema: { $ref: string } } } } }>>;
};

const rig = rigSuite();
let doc: Doc;
let ajv: Ajv2020;

beforeAll(async () => {
  doc = (await request(rig.app).get('/v1/openapi.json')).body as Doc;
  ajv = new Ajv2020({ strict: true, allErrors: true, validateFormats: false });
  for (const [id, schema] of Object.entries(doc.components.schemas)) ajv.addSchema(schema, `#/components/schemas/${id}`);
});

const validatorOf = (id: string) => {
  const validate = ajv.getSchema(`#/components/schemas/${id}`);
  if (!validate) throw new Error(`no schema ${id}`);
  return validate;
};

describe('the OpenAPI document', () => {
  it('is OpenAPI 3.1 with unique operation ids, a response for every operation, and path parameters for every {name}', () => {
    expect(doc.openapi).toBe('3.1.0');
    const operations = Object.entries(doc.paths).flatMap(([path, methods]) => Object.values(methods).map((operation) => ({ path, operation })));
    expect(new Set(operations.map(({ operation }) => operation.operationId)).size).toBe(operations.length);
    for (const { path, operation } of operations) {
      expect(Object.keys(operation.responses).length, path).toBeGreaterThan(0);
      const named = [...path.matchAll(/\{(\w+)\}/g)].map((match) => match[1]);
      expect(operation.parameters.filter((parameter) => parameter.in === 'path').map((parameter) => parameter.name)).toEqual(named);
    }
  });

  it('every component schema compiles as JSON Schema 2020-12 (strict), and every $ref resolves', () => {
    for (const id of Object.keys(doc.components.schemas)) expect(() => validatorOf(id)).not.toThrow();
    const refs = [...JSON.stringify(doc).matchAll(/"\$ref":"#\/components\/schemas\/(\w+)"/g)].map((match) => match[1]);
    for (const ref of refs) expect(doc.components.schemas, String(ref)).toHaveProperty(String(ref));
  });

  it('the request bodies are the schemas that validate requests', () => {
    expect(doc.paths['/v1/refunds']?.post?.requestBody?.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/RefundRequest' });
    expect(doc.components.schemas.RefundRequest).toMatchObject({ required: ['request_id', 'payment_intent', 'amount', 'approval'], additionalProperties: false });
    expect(doc.paths['/v1/effects']?.get?.parameters.map((parameter) => parameter.name)).toEqual(['request', 'subject', 'state', 'outcome', 'limit', 'starting_after']);
  });

  it('marks a request body required exactly where the API refuses a request without one', async () => {
    const required = (path: string) => doc.paths[path]?.post?.requestBody?.required;
    expect(required('/v1/refunds')).toBe(true);
    expect((await request(rig.app).post('/v1/refunds').set(bearer(TOKENS.support))).status).toBe(400);
    expect(required('/v1/approvals/{id}/revoke')).toBe(false);
    expect((await request(rig.app).post('/v1/approvals/ap_none/revoke').set(bearer(TOKENS.approver))).status).toBe(404);
    expect(required('/v1/recover')).toBe(false);
    expect((await request(rig.app).post('/v1/recover').set(bearer(TOKENS.operator))).status).not.toBe(400);
  });

  const cases = [
    { id: 'RefundRequest', schema: refundSchema, valid: refundBody() },
    { id: 'CreditRequest', schema: creditSchema, valid: creditBody({ description: 'outage' }) },
    { id: 'ApprovalRequest', schema: approvalSchema, valid: approvalBody({ four_eyes: true, expires_in: 60 }) },
  ];

  it.each(cases)('$id: whatever the API accepts, the document accepts', ({ id, schema, valid }) => {
    const validate = validatorOf(id);
    expect(validate(valid)).toBe(true);
    const value = fc.oneof(fc.constant(undefined), fc.string({ maxLength: 30 }), fc.integer({ min: -10, max: 100_000_000 }), fc.double(), fc.boolean(), fc.constant(null), fc.constantFrom('pi_1', 'cus_1', 'payment:pi_1', 'requested_by_customer', 'ap_1'));
    const mutated = fc.record({ field: fc.constantFrom(...Object.keys(valid), 'extra'), value }).map(({ field, value: replacement }) => {
      const body: Record<string, unknown> = { ...valid };
      if (replacement === undefined) delete body[field];
      else body[field] = replacement;
      return body;
    });
    fc.assert(
      fc.property(mutated, (body) => {
        if (schema.safeParse(body).success) expect(validate(body), JSON.stringify(body)).toBe(true);
        // What the document refuses, the API refuses too.
        if (!validate(body)) expect(schema.safeParse(body).success, JSON.stringify(body)).toBe(false);
      }),
      { numRuns: 300 },
    );
  });
});
