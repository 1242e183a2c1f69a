// Rule: a request GET /v1/openapi.json allows is one the server takes, as far as JSON Schema can say it: a note or a
// story that is empty or only white space, a case that names neither payment_intent nor customer (or both, or a
// customer without its incident, or a payment with one), a `limit` outside 1-100 and a `wait` past 30 s are refused
// by the document as by the server; what JSON Schema cannot say (NFC, characters a reader cannot see, the approval
// ids . and ..) is said in the field's description. The document took all of these, and the server answered 400.
import { Ajv2020 } from 'ajv/dist/2020.js';
import fc from 'fast-check';
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { listQuery, proposeQuery } from '../../webhooks/api/schemas.js';
import { approvalBody, bearer, caseBody, refundBody, rigSuite, TOKENS } from './rig.js';

type Parameter = { name: string; schema: object };
type Schema = { properties?: Record<string, { description?: string }> };

const rig = rigSuite();
const ITEM = `stale_premise:${'a'.repeat(64)}`;
let doc: { paths: Record<string, Record<string, { parameters: Parameter[] }>>; components: { schemas: Record<string, Schema> } };
let ajv: Ajv2020;

beforeAll(async () => {
  doc = (await request(rig.app).get('/v1/openapi.json')).body;
  ajv = new Ajv2020({ strict: false, validateFormats: false });
  for (const [id, schema] of Object.entries(doc.components.schemas)) ajv.addSchema(schema, `#/components/schemas/${id}`);
});

const documentTakes = (id: string, body: unknown) => ajv.getSchema(`#/components/schemas/${id}`)?.(body) === true;
const parameter = (path: string, method: string, name: string) => {
  const found = doc.paths[path]?.[method]?.parameters.find((each) => each.name === name);
  if (found === undefined) throw new Error(`no parameter ${name} on ${method} ${path}`);
  return ajv.compile(found.schema);
};
const description = (id: string, field: string) => doc.components.schemas[id]?.properties?.[field]?.description ?? '';

describe('request schemas as strict as the server', () => {
  it('notes: empty or white space only is refused by both; a note a reader can see passes the document', async () => {
    const posts = [
      { id: 'DismissRequest', url: `/v1/inbox/${ITEM}/dismiss`, body: (note: string) => ({ note }) },
      { id: 'ResolveRequest', url: `/v1/inbox/${ITEM}/resolve`, body: (note: string) => ({ resolution: 'landed', note }) },
      { id: 'ReapproveRequest', url: `/v1/inbox/${ITEM}/reapprove`, body: (note: string) => ({ approval: 'ap_1', note }) },
    ];
    for (const { id, url, body } of posts) {
      for (const note of ['', ' ', '\t\n ', '\u3000']) {
        const answer = await request(rig.app).post(url).set(bearer(TOKENS.approver)).send(body(note));
        expect({ id, note, status: answer.status, document: documentTakes(id, body(note)) }).toEqual({ id, note, status: 400, document: false });
      }
      // No such item: the body passed.
      expect((await request(rig.app).post(url).set(bearer(TOKENS.approver)).send(body(' Checked Stripe. '))).status).toBe(404);
      expect(documentTakes(id, body(' Checked Stripe. ')), id).toBe(true);
      expect(description(id, 'note'), id).toContain('a reader can see');
    }
  });

  it("a case's story and subject: the document takes a case exactly when the server gets past its body", async () => {
    const subjects = { payment_intent: 'pi_1', customer: 'cus_1', incident: 'inc_1' };
    const names = Object.keys(subjects) as (keyof typeof subjects)[];
    const bodies = [
      ...[0, 1, 2, 3, 4, 5, 6, 7].map((mask) => caseBody({ payment_intent: undefined, ...Object.fromEntries(names.filter((_, bit) => mask & (1 << bit)).map((name) => [name, subjects[name]])) })),
      caseBody({ story: '' }),
      caseBody({ story: ' \n\t' }),
      caseBody({ story: ' The jar arrived cracked. ' }),
      // Its request id, case:<case_id>, has at most 200 characters.
      caseBody({ case_id: 'c'.repeat(196) }),
      caseBody({ case_id: 'c'.repeat(195) }),
    ];
    let taken = 0;
    for (const body of bodies) {
      const answer = await request(rig.app).post('/v1/cases').set(bearer(TOKENS.support)).send(body);
      // ap_none names no approval: a body the server took is answered 404 unknown_approval, one it refused 400.
      expect([400, 404], JSON.stringify(answer.body)).toContain(answer.status);
      expect(documentTakes('CaseRequest', body), JSON.stringify(body)).toBe(answer.status === 404);
      if (answer.status === 404) taken += 1;
    }
    // A refund case, a credit case, the story a reader can see, and the longest case id.
    expect(taken).toBe(4);
  });

  it('limit and wait: the document takes exactly the values the server takes', () => {
    const limits = [
      { path: '/v1/effects', method: 'get' },
      { path: '/v1/inbox', method: 'get' },
      { path: '/v1/alerts', method: 'get' },
    ].map(({ path, method }) => parameter(path, method, 'limit'));
    const waits = ['/v1/refunds', '/v1/credits', '/v1/cases'].map((path) => parameter(path, 'post', 'wait'));
    const server = { limit: listQuery.shape.limit, wait: proposeQuery.shape.wait };
    const given = fc.string({ unit: fc.constantFrom('0', '1', '2', '3', '5', '9', '.'), maxLength: 7 });
    fc.assert(
      fc.property(given, (value) => {
        for (const validate of limits) expect(validate(value), `limit=${value}`).toBe(server.limit.safeParse(value).success);
        for (const validate of waits) expect(validate(value), `wait=${value}`).toBe(server.wait.safeParse(value).success);
      }),
      { numRuns: 3_000 },
    );
    for (const value of ['0', '000', '101', '500']) expect(server.limit.safeParse(value).success || limits.some((validate) => validate(value)), value).toBe(false);
    for (const value of ['1', '001', '100']) expect(limits.every((validate) => validate(value)), value).toBe(true);
    for (const value of ['30.001', '31', '60', '99.999']) expect(server.wait.safeParse(value).success || waits.some((validate) => validate(value)), value).toBe(false);
    for (const value of ['0', '05', '29.999', '30', '30.000']) expect(waits.every((validate) => validate(value)), value).toBe(true);
  });

  it('the server answers 400 to a limit or wait out of range, which the document refuses', async () => {
    for (const url of ['/v1/effects?limit=0', '/v1/effects?limit=500']) {
      expect((await request(rig.app).get(url).set(bearer(TOKENS.support))).status, url).toBe(400);
      expect(parameter('/v1/effects', 'get', 'limit')(url.split('=')[1]), url).toBe(false);
    }
    expect((await request(rig.app).post('/v1/refunds?wait=60').set(bearer(TOKENS.support)).send(refundBody())).status).toBe(400);
    expect(parameter('/v1/refunds', 'post', 'wait')('60')).toBe(false);
  });

  it('what JSON Schema cannot say is in the description of the field the server refuses it in', async () => {
    const refused = [
      { id: 'RefundRequest', field: 'request_id', url: '/v1/refunds', token: TOKENS.support, body: refundBody({ request_id: 'cafe\u0301' }), says: 'NFC' },
      { id: 'RefundRequest', field: 'agent', url: '/v1/refunds', token: TOKENS.support, body: refundBody({ agent: 'alex\u202e' }), says: 'direction override' },
      { id: 'CreditRequest', field: 'description', url: '/v1/credits', token: TOKENS.support, body: { ...refundBody(), payment_intent: undefined, reason: undefined, customer: 'cus_1', amount: 500, incident: 'inc_1', description: 'a\u0007b' }, says: 'control characters' },
      { id: 'ApprovalRequest', field: 'id', url: '/v1/approvals', token: TOKENS.approver, body: approvalBody({ id: '..' }), says: 'not . or ..' },
      { id: 'ApprovalRequest', field: 'approver', url: '/v1/approvals', token: TOKENS.approver, body: approvalBody({ approver: 'alex\u200b' }), says: 'zero-width' },
      { id: 'CaseRequest', field: 'case_id', url: '/v1/cases', token: TOKENS.support, body: caseBody({ case_id: '..' }), says: 'Not . or ..' },
      { id: 'CaseRequest', field: 'story', url: '/v1/cases', token: TOKENS.support, body: caseBody({ story: 'cracked\u0000' }), says: 'control characters' },
    ];
    for (const { id, field, url, token, body, says } of refused) {
      const answer = await request(rig.app).post(url).set(bearer(token)).send(body);
      expect({ field, status: answer.status, named: answer.body.error?.fields?.some((problem: { path: string }) => problem.path === field) }).toEqual({ field, status: 400, named: true });
      expect(documentTakes(id, JSON.parse(JSON.stringify(body))), `${id}.${field}`).toBe(true);
      expect(description(id, field), `${id}.${field}`).toContain(says);
    }
  });
});
