// Fuzzing the request bodies (issue 11 §5): whatever arrives, the answer is never a 5xx and never carries a stack,
// and a refused body leaves nothing in Redis: no effect binding for its request id, and, counted over the whole run,
// exactly as many effects as there were accepted proposals. Bodies are any JSON, valid bodies with one field
// replaced by hostile values (control characters, lone surrogates, huge or fractional numbers, "__proto__"), and
// text that is not JSON at all.
import fc from 'fast-check';
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { hasLoneSurrogate } from '../../src/core/json.js';
import { effectIdFor } from '../../src/interlock.js';
import { approvalBody, bearer, creditBody, refundBody, rigSuite, TOKENS } from './rig.js';

const rig = rigSuite({ deps: { limits: { ratePerMinute: null } } });
/** Effect ids the API accepted a proposal for (200 or 202). */
const accepted = new Set<string>();
let sequence = 0;
let refused = 0;
let granted = 0;

beforeAll(async () => {
  // The approval every fuzzed proposal names: a proposal under one that does not exist is refused before anything else.
  await rig.stores.approvals.grant({ id: 'ap_fuzz', approver: 'alex', capCents: 5_000, expiresAt: Date.now() + 3_600_000, maxUses: 5, scope: 'payment:pi_1' });
  rig.target.world.set('payment:pi_1', { chargebacks: [], refunded_by_others: 0 });
});

const hostileString = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.constantFrom('', ' ', 'pi_', 'pi_1 ', 'cus_1\n', '\u0000', '\ud800', 'a\u202eb', 'x'.repeat(300), '__proto__', 'constructor', 'sk_test_4eC39HqLyjWDarjtT1zdp7dc', '{"$ne":1}', 'payment:pi_1', 'customer:cus_1'),
);
const hostileValue = fc.oneof(
  hostileString,
  fc.integer(),
  fc.constantFrom(0, -1, 12.5, 1e21, Number.MAX_SAFE_INTEGER, 99_999_999, 100_000_000, 2_000),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.jsonValue(), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.jsonValue(), { maxKeys: 3 }),
);

/** A valid body with one field replaced, removed or added; the JSON text itself, so "__proto__" stays a key. */
function mutations(valid: () => Record<string, unknown>) {
  return fc.record({ field: fc.constantFrom(...Object.keys(valid()), 'extra', '__proto__', 'decision'), value: fc.option(hostileValue, { nil: undefined }) }).map(({ field, value }) => {
    const body = valid();
    const text = JSON.stringify(body);
    if (value === undefined) {
      delete body[field];
      return JSON.stringify(body);
    }
    if (field === '__proto__') return `${text.slice(0, -1)},"__proto__":${JSON.stringify(value)}}`;
    body[field] = value;
    return JSON.stringify(body);
  });
}

/** A valid body as it is, under a fresh request id: the accepted half of the property. */
const untouched = (valid: () => Record<string, unknown>) => fc.constant(null).map(() => JSON.stringify(valid()));

const notJson = fc.oneof(fc.string({ maxLength: 60 }), fc.constantFrom('{', '{"a":}', 'null', '"text"', '[1,2]', '1', 'true', '{"amount": 1e999}', '\ufeff{}'));
const anyJson = fc.jsonValue({ maxDepth: 4 }).map((value) => JSON.stringify(value) ?? 'null');

/** Percent-encoding; a lone surrogate (which has none) goes as the bytes of its WTF-8 form, invalid UTF-8. */
function encode(value: string): string {
  try {
    return encodeURIComponent(value);
  } catch {
    return value.replace(/[\ud800-\udfff]/g, '%ED%A0%80').replace(/[^%A-Za-z0-9]/g, (char) => encodeURIComponent(char));
  }
}

async function expectNoFault(answer: request.Response): Promise<void> {
  expect(answer.status, answer.text).toBeLessThan(500);
  expect(answer.text).not.toMatch(/\n\s+at |Error:|node_modules/);
  if (answer.status >= 400) {
    expect(answer.body.error.code).toEqual(expect.any(String));
    expect(answer.body.error.message).toEqual(expect.any(String));
  }
}

/** The body's request id, when it could name an effect (one with a lone surrogate has no canonical form, so none). */
function requestIdOf(text: string): string | null {
  try {
    const value = JSON.parse(text) as { request_id?: unknown } | null;
    return typeof value === 'object' && value !== null && typeof value.request_id === 'string' && value.request_id !== '' && !hasLoneSurrogate(value.request_id) ? value.request_id : null;
  } catch {
    return null;
  }
}

describe.each([
  { path: '/v1/refunds', valid: () => refundBody({ approval: 'ap_fuzz', request_id: `fz-${(sequence += 1)}` }) },
  { path: '/v1/credits', valid: () => creditBody({ approval: 'ap_fuzz', request_id: `fz-${(sequence += 1)}` }) },
])('POST $path with fuzzed bodies', ({ path, valid }) => {
  it('never answers 5xx, and a refused body records no effect', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof({ arbitrary: mutations(valid), weight: 4 }, { arbitrary: untouched(valid), weight: 2 }, anyJson, notJson), fc.constantFrom('application/json', 'application/json; charset=utf-8', 'text/plain', 'application/x-www-form-urlencoded', 'application/merge-patch+json'), async (text, type) => {
        const answer = await request(rig.app).post(path).set(bearer(TOKENS.support)).set('Content-Type', type).send(text);
        await expectNoFault(answer);
        const requestId = requestIdOf(text);
        if (answer.status === 200 || answer.status === 202) {
          accepted.add(String(answer.body.effect_id));
          return;
        }
        refused += 1;
        if (requestId !== null && !accepted.has(effectIdFor({ requestId, effect: null }))) expect(await rig.hasEffect(effectIdFor({ requestId, effect: null })), text).toBe(false);
      }),
      {
        numRuns: 250,
        examples: [
          ...[0, -1, 12.5, 100_000_000, '2000', null].map((amount) => [JSON.stringify(valid()).replace(/"amount":\d+/, `"amount":${JSON.stringify(amount)}`), 'application/json'] as [string, string]),
          // A request id with a lone surrogate (a seed found it): refused, and it can name no effect to look for.
          [JSON.stringify({ ...valid(), request_id: '\ud800' }), 'application/json'] as [string, string],
        ],
      },
    );
  });
});

describe('POST /v1/approvals and PUT /v1/caps with fuzzed bodies', () => {
  it('never answers 5xx, and a refused grant writes neither the approval nor its options', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof({ arbitrary: mutations(() => approvalBody({ id: `ap_fz${(sequence += 1)}` })), weight: 4 }, { arbitrary: untouched(() => approvalBody({ id: `ap_fz${(sequence += 1)}` })), weight: 1 }, anyJson, notJson), async (text) => {
        const answer = await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).set('Content-Type', 'application/json').send(text);
        await expectNoFault(answer);
        let id: unknown;
        try {
          id = (JSON.parse(text) as { id?: unknown } | null)?.id;
        } catch {
          id = null;
        }
        if (answer.status === 201) granted += 1;
        if (answer.status >= 400 && typeof id === 'string' && id !== '') {
          expect(await rig.redis.hexists(rig.stores.keys.approvalPartitions, id)).toBe(0);
        }
      }),
      {
        numRuns: 150,
        // The boundaries of every number, always tried first: each is one the core refuses, so the API must too.
        examples: [
          ...[0, -1, 0.5, Number.MAX_SAFE_INTEGER + 2].map((cap) => [JSON.stringify(approvalBody({ cap_cents: cap }))] as [string]),
          ...[0, 1.5, 1_000_001].map((uses) => [JSON.stringify(approvalBody({ max_uses: uses }))] as [string]),
          ...[0, 10 * 365 * 24 * 3600 + 1].map((seconds) => [JSON.stringify(approvalBody({ expires_in: seconds }))] as [string]),
          ...['payment:pi_', 'customer:cus_a b', 'payment:pi_1:x'].map((scope) => [JSON.stringify(approvalBody({ scope }))] as [string]),
          ...['', ' alex', 'a\u0000b'].map((approver) => [JSON.stringify(approvalBody({ approver }))] as [string]),
        ],
      },
    );
    expect(granted).toBeGreaterThanOrEqual(10);
    await fc.assert(
      fc.asyncProperty(fc.oneof(hostileString, fc.constantFrom('payment:pi_1', 'customer:cus_1')), fc.oneof(anyJson, notJson, hostileValue.map((value) => JSON.stringify({ cap_cents: value }) ?? '{}')), async (subject, text) => {
        const answer = await request(rig.app).put(`/v1/caps/${encode(subject)}`).set(bearer(TOKENS.approver)).set('Content-Type', 'application/json').send(text);
        await expectNoFault(answer);
      }),
      { numRuns: 100 },
    );
  });
});

describe('GET /v1/effects with fuzzed queries and paths', () => {
  it('never answers 5xx', async () => {
    const key = fc.constantFrom('request', 'subject', 'state', 'limit', 'starting_after', 'other');
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(key, hostileString), { maxLength: 4 }), hostileString, async (pairs, id) => {
        const query = pairs.map(([name, value]) => `${name}=${encode(value)}`).join('&');
        await expectNoFault(await request(rig.app).get(`/v1/effects?${query}`).set(bearer(TOKENS.auditor)));
        await expectNoFault(await request(rig.app).get(`/v1/effects/${encode(id)}`).set(bearer(TOKENS.auditor)));
      }),
      { numRuns: 150 },
    );
  });
});

describe('over the whole run', () => {
  it('Redis holds exactly the effects the API accepted', async () => {
    // Both kinds of answer happened, so neither half of the property held vacuously.
    expect(accepted.size).toBeGreaterThanOrEqual(10);
    expect(refused).toBeGreaterThanOrEqual(100);
    expect(await rig.effectCount()).toBe(accepted.size);
  });
});
