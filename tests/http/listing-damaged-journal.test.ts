// Rule: a chain Redis holds that does not read (an entry that is not JSON, or that parses but has no canonical form: a
// number past 1e308, a lone surrogate in a value or a key, a "__proto__" key) fails every listing page that reaches its
// effect alike, unfiltered or filtered by a state or outcome it would match or not, and ?request= naming it; never
// passed over in silence by a filter that reads it without hashing (unhashedEntriesOfStored). It is answered as the
// service's fault, 500 journal_damaged naming the effect and how to repair it, never 400 non_canonical_value, which
// tells the caller to change a request that holds no such value. The effect's own page and its receipt answer the same.
import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { beforeAll, expect, it } from 'vitest';
import { effectIdFor, entriesOfStored, unhashedEntriesOfStored } from '../../src/interlock.js';
import { inboxSuite } from './inbox-items.js';
import { bearer, TOKENS } from './rig.js';

const { rig, make } = inboxSuite();

/** Entries, as JSON text, that parse but that hashing refuses: each has no canonical form. */
const TAMPERED = [
  '{"v":2,"kind":"OBSERVED","at":1e400}',
  '{"v":2,"kind":"OBSERVED","at":1,"reason":"\\ud800"}',
  '{"v":2,"kind":"OBSERVED","at":1,"facts":{"\\udc00":1}}',
  '{"v":2,"kind":"OBSERVED","at":1,"facts":{"__proto__":{}}}',
  `{"v":2,"kind":"OBSERVED","at":1,"facts":${'['.repeat(70)}${']'.repeat(70)}}`,
];

let committed = '';
beforeAll(async () => {
  const pi = `pi_${randomBytes(5).toString('hex')}`;
  const effectId = await make.proposed(pi);
  expect(await make.submitLatest(effectId)).toBe('COMMITTED');
  committed = (await rig.redis.get(rig.stores.keys.entries(`payment:${pi}`, effectId))) ?? '';
  expect(committed).not.toBe('');
}, 120_000);

/** The committed chain, copied under effect `id` of a subject of its own, with `extra` appended as one more line. */
async function tampered(id: string, extra: string): Promise<string> {
  const subject = `payment:pi_${randomBytes(5).toString('hex')}`;
  await rig.redis.set(rig.stores.keys.entries(subject, id), `${committed}\n${extra}`);
  await rig.redis.hset(rig.stores.keys.effectPartitions, id, subject);
  await rig.redis.zadd(rig.stores.keys.effectsByTime, Date.now(), id);
  return subject;
}

function expectDamaged(answer: request.Response, effectId: string, what: string): void {
  expect([answer.status, answer.body?.error?.code], what).toEqual([500, 'journal_damaged']);
  const message = String(answer.body.error.message);
  expect(message).toContain(`The journal of effect ${effectId} in Redis is damaged`);
  expect(message).toContain('the request is not at fault');
  expect(message).toContain('interlock receipt verify');
}

it('reads no state from a chain whose entry has no canonical form, as reading it in full refuses it', () => {
  const effectId = randomBytes(32).toString('hex');
  for (const extra of TAMPERED) {
    const text = `${committed}\n${extra}`;
    expect(unhashedEntriesOfStored(effectId, text), extra).toBeNull();
    expect(() => entriesOfStored(effectId, text), extra).toThrow();
  }
  expect(unhashedEntriesOfStored(effectId, committed)?.map((entry) => entry.kind)).toEqual(entriesOfStored(effectId, committed).map((entry) => entry.kind));
});

it('fails every page that reaches a tampered chain alike, matching its filters or not, as 500 journal_damaged', async () => {
  for (const extra of [...TAMPERED, 'not an entry']) {
    const id = randomBytes(32).toString('hex');
    const subject = await tampered(id, extra);
    for (const filter of ['', '&state=committed', '&state=refused', '&outcome=AMBIGUOUS', '&outcome=COMMITTED']) {
      expectDamaged(await request(rig.app).get(`/v1/effects?subject=${subject}${filter}`).set(bearer(TOKENS.support)), id, `${extra} ${filter}`);
    }
  }
});

it('answers a request id whose chain is tampered as 500 journal_damaged, not the caller\'s 400', async () => {
  const requestId = `case-damaged-${randomBytes(5).toString('hex')}`;
  const id = effectIdFor({ requestId, effect: null });
  await tampered(id, TAMPERED[0] ?? '');
  expectDamaged(await request(rig.app).get(`/v1/effects?request=${requestId}`).set(bearer(TOKENS.support)), id, 'request');
});

it("answers the effect's own page and its receipt for a tampered chain as 500 journal_damaged too", async () => {
  for (const extra of [TAMPERED[0] ?? '', 'not an entry']) {
    const id = randomBytes(32).toString('hex');
    await tampered(id, extra);
    expectDamaged(await request(rig.app).get(`/v1/effects/${id}`).set(bearer(TOKENS.support)), id, `${extra} page`);
    expectDamaged(await request(rig.app).get(`/v1/effects/${id}/receipt`).set(bearer(TOKENS.auditor)), id, `${extra} receipt`);
  }
});
