// Every route × every role, and every error class a route can meet (issue 11 §2, §5): the table below is the
// issue's, written out independently of webhooks/api/auth.ts, and the OpenAPI document must list exactly its
// routes, so a route added without a row here, or a role widened in the code, fails.
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { effectIdFor } from '../../src/interlock.js';
import { createApp, type Role } from '../../webhooks/app.js';
import { createItemMaker, type ItemMaker } from './inbox-items.js';
import { approvalBody, bearer, caseBody, creditBody, refundBody, ROLE_TOKENS, startRig, tokenRegistry, TOKENS, uid, type Rig } from './rig.js';

const ROLES: Role[] = ['support', 'approver', 'auditor', 'operator'];

const EXPECTED: Record<string, readonly Role[] | 'public'> = {
  'POST /v1/refunds': ['support'],
  'POST /v1/credits': ['support'],
  'POST /v1/cases': ['support'],
  'GET /v1/cases/{id}': ['support', 'auditor', 'operator'],
  'GET /v1/effects': ['support', 'auditor', 'operator'],
  'GET /v1/effects/{id}': ['support', 'auditor', 'operator'],
  'GET /v1/effects/{id}/receipt': ['auditor', 'operator'],
  'GET /v1/keys': ['auditor', 'operator'],
  'POST /v1/approvals': ['approver'],
  'GET /v1/approvals/{id}': ['approver', 'operator'],
  'POST /v1/approvals/{id}/revoke': ['approver'],
  'PUT /v1/caps/{subject}': ['approver'],
  'GET /v1/alerts': ['auditor', 'operator'],
  'POST /v1/recover': ['operator'],
  'GET /v1/inbox': ['approver', 'auditor', 'operator'],
  'GET /v1/inbox/{id}': ['approver', 'auditor', 'operator'],
  'POST /v1/inbox/{id}/reapprove': ['approver'],
  'POST /v1/inbox/{id}/resolve': ['approver'],
  'POST /v1/inbox/{id}/dismiss': ['approver'],
  'GET /healthz': 'public',
  'GET /readyz': 'public',
  'GET /v1/openapi.json': 'public',
};

type Call = { method: 'get' | 'post' | 'put'; path: string; body?: Record<string, unknown> };
type Case = {
  /** A request the route answers with `ok` when the role may call it; built fresh for every call. */
  call(): Promise<Call>;
  ok: number;
  /** Bad input of each place the route reads, with a field path the answer must name. */
  invalid?: { call: Call; field: string }[];
  /** An id that names nothing. */
  missing?: Call;
  /** Whether it reads a body (413 and 415 apply). */
  body?: boolean;
};

let rig: Rig;
let make: ItemMaker;
let effectId: string;
const MISSING_EFFECT = 'f'.repeat(64);

async function grant(overrides: Record<string, unknown> = {}): Promise<string> {
  const body = approvalBody(overrides);
  const answer = await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(body);
  expect(answer.status).toBe(201);
  return String(body.id);
}

const CASES: Record<string, Case> = {
  'POST /v1/refunds': {
    call: async () => ({ method: 'post', path: '/v1/refunds', body: refundBody() }),
    ok: 202,
    body: true,
    invalid: [
      { call: { method: 'post', path: '/v1/refunds', body: refundBody({ amount: 12.5 }) }, field: 'amount' },
      { call: { method: 'post', path: '/v1/refunds?wait=31', body: refundBody() }, field: 'query.wait' },
    ],
  },
  'POST /v1/credits': {
    call: async () => ({ method: 'post', path: '/v1/credits', body: creditBody({ approval: 'ap_credits' }) }),
    ok: 202,
    body: true,
    invalid: [
      { call: { method: 'post', path: '/v1/credits', body: creditBody({ customer: 'pi_1' }) }, field: 'customer' },
      { call: { method: 'post', path: '/v1/credits?waiting=1', body: creditBody({ approval: 'ap_credits' }) }, field: 'query.waiting' },
    ],
  },
  'POST /v1/cases': {
    call: async () => ({ method: 'post', path: '/v1/cases', body: caseBody() }),
    ok: 202,
    body: true,
    invalid: [
      { call: { method: 'post', path: '/v1/cases', body: caseBody({ story: 'x'.repeat(8_001) }) }, field: 'story' },
      { call: { method: 'post', path: '/v1/cases', body: caseBody({ payment_intent: undefined, customer: 'cus_1' }) }, field: 'incident' },
      { call: { method: 'post', path: '/v1/cases?wait=40', body: caseBody() }, field: 'query.wait' },
    ],
    missing: { method: 'post', path: '/v1/cases', body: caseBody({ approval: 'ap_missing' }) },
  },
  'GET /v1/cases/{id}': {
    call: async () => ({ method: 'get', path: '/v1/cases/case-fixed' }),
    ok: 200,
    invalid: [{ call: { method: 'get', path: '/v1/cases/a%20b' }, field: 'path.id' }],
    missing: { method: 'get', path: '/v1/cases/case-missing' },
  },
  'GET /v1/effects': {
    call: async () => ({ method: 'get', path: '/v1/effects?limit=5' }),
    ok: 200,
    invalid: [{ call: { method: 'get', path: '/v1/effects?limit=0' }, field: 'query.limit' }, { call: { method: 'get', path: '/v1/effects?state=done' }, field: 'query.state' }],
  },
  'GET /v1/effects/{id}': {
    call: async () => ({ method: 'get', path: `/v1/effects/${effectId}` }),
    ok: 200,
    invalid: [{ call: { method: 'get', path: '/v1/effects/not-an-id' }, field: 'path.id' }],
    missing: { method: 'get', path: `/v1/effects/${MISSING_EFFECT}` },
  },
  'GET /v1/effects/{id}/receipt': {
    call: async () => ({ method: 'get', path: `/v1/effects/${effectId}/receipt` }),
    ok: 200,
    invalid: [{ call: { method: 'get', path: '/v1/effects/ABC/receipt' }, field: 'path.id' }],
    missing: { method: 'get', path: `/v1/effects/${MISSING_EFFECT}/receipt` },
  },
  'GET /v1/keys': { call: async () => ({ method: 'get', path: '/v1/keys' }), ok: 200 },
  'POST /v1/approvals': {
    call: async () => ({ method: 'post', path: '/v1/approvals', body: approvalBody() }),
    ok: 201,
    body: true,
    invalid: [
      { call: { method: 'post', path: '/v1/approvals', body: approvalBody({ scope: 'payment:nope' }) }, field: 'scope' },
      { call: { method: 'post', path: '/v1/approvals', body: approvalBody({ cap_cents: -1 }) }, field: 'cap_cents' },
    ],
  },
  'GET /v1/approvals/{id}': {
    call: async () => ({ method: 'get', path: `/v1/approvals/${await grant()}` }),
    ok: 200,
    invalid: [{ call: { method: 'get', path: '/v1/approvals/a%20b' }, field: 'path.id' }],
    missing: { method: 'get', path: '/v1/approvals/ap_missing' },
  },
  'POST /v1/approvals/{id}/revoke': {
    call: async () => ({ method: 'post', path: `/v1/approvals/${await grant()}/revoke` }),
    ok: 200,
    body: true,
    invalid: [{ call: { method: 'post', path: '/v1/approvals/ap_x/revoke', body: { by: 'me' } }, field: 'by' }],
    missing: { method: 'post', path: '/v1/approvals/ap_missing/revoke' },
  },
  'PUT /v1/caps/{subject}': {
    call: async () => ({ method: 'put', path: `/v1/caps/payment:pi_${uid()}`, body: { cap_cents: 3_000 } }),
    ok: 200,
    body: true,
    invalid: [
      { call: { method: 'put', path: '/v1/caps/payment:pi_1', body: { cap_cents: 'lots' } }, field: 'cap_cents' },
      { call: { method: 'put', path: '/v1/caps/charge:ch_1', body: { cap_cents: 1 } }, field: 'path.subject' },
    ],
  },
  'GET /v1/alerts': {
    call: async () => ({ method: 'get', path: '/v1/alerts?all=true' }),
    ok: 200,
    invalid: [{ call: { method: 'get', path: '/v1/alerts?all=yes' }, field: 'query.all' }],
  },
  'POST /v1/recover': {
    call: async () => ({ method: 'post', path: '/v1/recover' }),
    ok: 200,
    body: true,
    invalid: [{ call: { method: 'post', path: '/v1/recover', body: { only: ['x'] } }, field: 'only' }],
  },
  'GET /v1/inbox': {
    call: async () => ({ method: 'get', path: '/v1/inbox?kind=stale_premise&limit=5' }),
    ok: 200,
    invalid: [{ call: { method: 'get', path: '/v1/inbox?kind=nope' }, field: 'query.kind' }],
  },
  'GET /v1/inbox/{id}': {
    call: async () => ({ method: 'get', path: `/v1/inbox/${(await make.stale()).item}` }),
    ok: 200,
    invalid: [{ call: { method: 'get', path: '/v1/inbox/nope' }, field: 'path.id' }],
    missing: { method: 'get', path: `/v1/inbox/ambiguous:${MISSING_EFFECT}` },
  },
  'POST /v1/inbox/{id}/reapprove': {
    async call() {
      const { pi, item } = await make.stale();
      return { method: 'post', path: `/v1/inbox/${item}/reapprove`, body: { approval: await make.grant(pi) } };
    },
    ok: 202,
    body: true,
    invalid: [{ call: { method: 'post', path: `/v1/inbox/stale_premise:${MISSING_EFFECT}/reapprove`, body: { approval: 'a b' } }, field: 'approval' }],
    missing: { method: 'post', path: `/v1/inbox/stale_premise:${MISSING_EFFECT}/reapprove`, body: { approval: 'ap_x' } },
  },
  'POST /v1/inbox/{id}/resolve': {
    call: async () => ({ method: 'post', path: `/v1/inbox/${(await make.ambiguous()).item}/resolve`, body: { resolution: 'landed', note: 'The refund shows in the dashboard.' } }),
    ok: 200,
    body: true,
    invalid: [{ call: { method: 'post', path: `/v1/inbox/ambiguous:${MISSING_EFFECT}/resolve`, body: { resolution: 'maybe', note: 'x' } }, field: 'resolution' }],
    missing: { method: 'post', path: `/v1/inbox/ambiguous:${MISSING_EFFECT}/resolve`, body: { resolution: 'landed', note: 'x' } },
  },
  'POST /v1/inbox/{id}/dismiss': {
    call: async () => ({ method: 'post', path: `/v1/inbox/${(await make.stale()).item}/dismiss`, body: { note: 'Handled by phone.' } }),
    ok: 200,
    body: true,
    invalid: [{ call: { method: 'post', path: `/v1/inbox/stale_premise:${MISSING_EFFECT}/dismiss`, body: {} }, field: 'note' }],
    missing: { method: 'post', path: `/v1/inbox/stale_premise:${MISSING_EFFECT}/dismiss`, body: { note: 'x' } },
  },
  'GET /healthz': { call: async () => ({ method: 'get', path: '/healthz' }), ok: 200 },
  'GET /readyz': { call: async () => ({ method: 'get', path: '/readyz' }), ok: 200 },
  'GET /v1/openapi.json': { call: async () => ({ method: 'get', path: '/v1/openapi.json' }), ok: 200 },
};

function send(call: Call, headers: Record<string, string> = {}) {
  const pending = request(rig.app)[call.method](call.path).set(headers);
  return call.body === undefined ? pending : pending.send(call.body);
}

/** The approvals and the world the allowed calls run against: every sample refund and credit has a live approval. */
async function prepare(): Promise<void> {
  rig.target.world.set('payment:pi_1', { chargebacks: [], refunded_by_others: 0 });
  const refunds = await grant({ id: 'ap_none', max_uses: 100, cap_cents: 1_000_000 });
  // The sample credits' own (an approval of another subject is refused before anything is recorded).
  await grant({ id: 'ap_credits', scope: 'customer:cus_1', max_uses: 100, cap_cents: 1_000_000 });
  const first = await send({ method: 'post', path: '/v1/refunds', body: refundBody({ request_id: 'case-fixed', approval: refunds }) }, bearer(TOKENS.support));
  expect(first.status).toBe(202);
  effectId = String(first.body.effect_id);
  const submitted = await send({ method: 'post', path: '/v1/cases', body: caseBody({ case_id: 'case-fixed', approval: refunds }) }, bearer(TOKENS.support));
  expect(submitted.status).toBe(202);
}

beforeAll(async () => {
  rig = await startRig({ deps: { recover: async () => ({ settled: [], waiting: [], skipped: [], unresolved: [], nextAt: null }), alerts: async () => ({ data: [{ id: 'exposure:x', kind: 'exposure' }], next: null }) } });
  await prepare();
  make = await createItemMaker(rig);
});
afterAll(async () => {
  await make?.close();
  await rig.close();
});

describe('the route table', () => {
  it('the OpenAPI document lists exactly the routes of the table, with the roles of the table', async () => {
    const doc = (await request(rig.app).get('/v1/openapi.json')).body as { paths: Record<string, Record<string, { 'x-roles'?: Role[]; security: unknown[] }>> };
    const documented = Object.entries(doc.paths).flatMap(([path, operations]) => Object.entries(operations).map(([method, operation]) => [`${method.toUpperCase()} ${path}`, operation] as const));
    expect(documented.map(([name]) => name).sort()).toEqual(Object.keys(EXPECTED).sort());
    for (const [name, operation] of documented) {
      const expected = EXPECTED[name];
      if (expected === 'public') expect(operation.security, name).toEqual([]);
      else expect(operation['x-roles'], name).toEqual(expected);
    }
    expect(Object.keys(CASES).sort()).toEqual(Object.keys(EXPECTED).sort());
  });
});

describe.concurrent.each(Object.entries(EXPECTED))('%s', (name, allowed) => {
  const spec = CASES[name] as Case;

  if (allowed === 'public') {
    it('answers without a token, and the same with any role', async () => {
      expect((await send(await spec.call())).status).toBe(spec.ok);
      for (const role of ROLES) expect((await send(await spec.call(), bearer(ROLE_TOKENS[role]))).status).toBe(spec.ok);
    });
    return;
  }

  it.each(ROLES)('with the %s role', async (role) => {
    const call = await spec.call();
    const answer = await send(call, bearer(ROLE_TOKENS[role]));
    if (allowed.includes(role)) {
      expect(answer.status, JSON.stringify(answer.body)).toBe(spec.ok);
    } else {
      expect(answer.status).toBe(403);
      expect(answer.body.error.code).toBe('forbidden');
      expect(answer.body.error.message).toContain(role);
      // A refused proposal leaves nothing behind.
      if (typeof call.body?.request_id === 'string') expect(await rig.hasEffect(effectIdFor({ requestId: call.body.request_id, effect: null }))).toBe(false);
      if (typeof call.body?.case_id === 'string') expect(await rig.stores.cases.get(call.body.case_id)).toBeNull();
    }
  });

  it('401 without a token, with an unknown token and with a malformed header', async () => {
    for (const headers of [{}, bearer('itk_not_a_known_token_1234'), { Authorization: `Basic ${Buffer.from('a:b').toString('base64')}` }, { Authorization: 'Bearer' }]) {
      const answer = await send(await spec.call(), headers);
      expect(answer.status).toBe(401);
      expect(answer.body.error.code).toBe('unauthenticated');
      expect(answer.headers['www-authenticate']).toMatch(/^Bearer/);
    }
  });

  const role = allowed[0] as Role;

  if (spec.invalid) {
    it('400 naming the field for bad input of each place it reads', async () => {
      for (const { call, field } of spec.invalid ?? []) {
        const answer = await send(call, bearer(ROLE_TOKENS[role]));
        expect(answer.status, `${call.path} ${JSON.stringify(call.body)}`).toBe(400);
        expect(answer.body.error.code).toBe('invalid_request');
        expect(answer.body.error.fields.map((problem: { path: string }) => problem.path)).toContain(field);
      }
    });
  }

  if (spec.missing) {
    it('404 for an id that names nothing', async () => {
      const answer = await send(spec.missing as Call, bearer(ROLE_TOKENS[role]));
      expect(answer.status).toBe(404);
      expect(['unknown_effect', 'unknown_approval', 'unknown_case', 'unknown_inbox_item']).toContain(answer.body.error.code);
    });
  }

  if (spec.body) {
    it('415 for a body that is not JSON, 413 for one past the limit, 400 for broken JSON', async () => {
      const call = await spec.call();
      const token = bearer(ROLE_TOKENS[role]);
      const text = await request(rig.app)[call.method](call.path).set(token).set('Content-Type', 'text/plain').send('amount=1');
      expect(text.status).toBe(415);
      expect(text.body.error.code).toBe('unsupported_media_type');
      const form = await request(rig.app)[call.method](call.path).set(token).type('form').send({ amount: 1 });
      expect(form.status).toBe(415);
      const big = await request(rig.app)[call.method](call.path).set(token).set('Content-Type', 'application/json').send(JSON.stringify({ pad: 'x'.repeat(300 * 1024) }));
      expect(big.status).toBe(413);
      expect(big.body.error.code).toBe('payload_too_large');
      const broken = await request(rig.app)[call.method](call.path).set(token).set('Content-Type', 'application/json').send('{"amount": ');
      expect(broken.status).toBe(400);
      expect(broken.body.error.code).toBe('invalid_request');
    });
  }

  it('429 once its token passed the rate limit, with Retry-After; other tokens are not held back', async () => {
    const limited = createApp({
      stores: rig.stores,
      effects: rig.queue,
      readFacts: async (_effect, names) => Object.fromEntries(names.map((fact) => [fact, null])),
      tokens: tokenRegistry(),
      logger: rig.stores.logger,
      limits: { ratePerMinute: 1, rateBurst: 1 },
    });
    const token = bearer(ROLE_TOKENS[role]);
    const first = await request(limited).get('/v1/nothing-here').set(token);
    expect(first.status).toBe(404);
    const call = await spec.call();
    const pending = request(limited)[call.method](call.path).set(token);
    const answer = await (call.body === undefined ? pending : pending.send(call.body));
    expect(answer.status).toBe(429);
    expect(answer.body.error.code).toBe('rate_limited');
    expect(Number(answer.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    const other = ROLES.find((each) => each !== role) as Role;
    expect((await request(limited).get('/v1/nothing-here').set(bearer(ROLE_TOKENS[other]))).status).toBe(404);
  });
});

describe('conflicts (409)', () => {
  it('POST /v1/refunds and /v1/credits: another payload under a recorded request id', async () => {
    const refund = refundBody({ request_id: `case-${uid()}` });
    expect((await send({ method: 'post', path: '/v1/refunds', body: refund }, bearer(TOKENS.support))).status).toBe(202);
    const redecided = await send({ method: 'post', path: '/v1/refunds', body: { ...refund, amount: 3_000 } }, bearer(TOKENS.support));
    expect(redecided.status).toBe(409);
    expect(redecided.body.error.code).toBe('conflicting_payload');
    const credit = creditBody({ request_id: `case-${uid()}`, approval: 'ap_credits' });
    expect((await send({ method: 'post', path: '/v1/credits', body: credit }, bearer(TOKENS.support))).status).toBe(202);
    const other = await send({ method: 'post', path: '/v1/credits', body: { ...credit, incident: 'inc_2' } }, bearer(TOKENS.support));
    expect(other.status).toBe(409);
    expect(other.body.error.code).toBe('conflicting_payload');
  });

  it('POST /v1/approvals: an id taken by other terms or other options', async () => {
    const body = approvalBody();
    expect((await send({ method: 'post', path: '/v1/approvals', body }, bearer(TOKENS.approver))).status).toBe(201);
    const wider = await send({ method: 'post', path: '/v1/approvals', body: { ...body, cap_cents: 9_000 } }, bearer(TOKENS.approver));
    expect(wider.status).toBe(409);
    expect(wider.body.error.code).toBe('approval_conflict');
    const looser = await send({ method: 'post', path: '/v1/approvals', body: { ...body, four_eyes: true } }, bearer(TOKENS.approver));
    expect(looser.status).toBe(409);
  });
});
