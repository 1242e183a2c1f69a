// Load (issue 11 §5): 200 concurrent refunds on distinct payments plus 200 duplicates of them, all at once, against
// a real effects worker and the memory target. Every effect lands exactly once; of each pair one answer is the new
// effect (202) and the other the same effect (200); nothing is a 5xx. A later wave of the same duplicates answers
// 200 with the settled effects and sends nothing more.
import type { AddressInfo, Server } from 'node:net';
import request from 'supertest';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { approvalBody, bearer, refundBody, startRig, TOKENS, uid, type Rig } from './rig.js';

const PAYMENTS = 200;

let rig: Rig;
let server: Server;
let base: string;

beforeAll(async () => {
  rig = await startRig({ worker: true, concurrency: 16, deps: { limits: { ratePerMinute: null } } });
  server = rig.app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await rig.close();
});

it('200 concurrent refunds plus 200 duplicates: each lands once, duplicates answer 200 with the same effect, no 5xx', async () => {
  const run = uid();
  const cases = Array.from({ length: PAYMENTS }, (_, i) => ({ pi: `pi_load${run}_${i}`, approval: `ap_load${run}_${i}`, requestId: `case-load-${run}-${i}` }));
  for (const { pi } of cases) rig.target.world.set(`payment:${pi}`, { chargebacks: [], refunded_by_others: 0 });
  const grants = await Promise.all(cases.map(({ pi, approval }) => request(base).post('/v1/approvals').set(bearer(TOKENS.approver)).send(approvalBody({ id: approval, scope: `payment:${pi}` }))));
  expect(grants.map((answer) => answer.status)).toEqual(Array(PAYMENTS).fill(201));

  const bodies = cases.map(({ pi, approval, requestId }) => refundBody({ request_id: requestId, payment_intent: pi, approval, amount: 1_000 + (cases.length % 7) }));
  const propose = (body: Record<string, unknown>) => request(base).post('/v1/refunds?wait=30').set(bearer(TOKENS.support)).send(body);
  const started = Date.now();
  // Originals and duplicates interleaved, all in flight together.
  const answers = await Promise.all(bodies.flatMap((body) => [propose(body), propose(body)]));
  const seconds = (Date.now() - started) / 1000;

  expect(answers.filter((answer) => answer.status >= 500).map((answer) => answer.text)).toEqual([]);
  const effectIds: string[] = [];
  for (let i = 0; i < PAYMENTS; i += 1) {
    const pair = [answers[2 * i], answers[2 * i + 1]];
    expect(pair.map((answer) => answer?.status).sort()).toEqual([200, 202]);
    expect(pair[0]?.body.effect_id).toBe(pair[1]?.body.effect_id);
    for (const answer of pair) expect(answer?.body).toMatchObject({ state: 'committed', outcome: 'COMMITTED' });
    effectIds.push(String(pair[0]?.body.effect_id));
  }
  expect(new Set(effectIds).size).toBe(PAYMENTS);
  for (const effectId of effectIds) expect(rig.target.landedCount(effectId)).toBe(1);
  expect(rig.target.landings).toHaveLength(PAYMENTS);
  const journals = await Promise.all(effectIds.map(async (effectId) => (await request(base).get(`/v1/effects/${effectId}`).set(bearer(TOKENS.auditor))).body.journal as { kind: string }[]));
  for (const journal of journals) expect(journal.filter((entry) => entry.kind === 'COMMITTED')).toHaveLength(1);

  const again = await Promise.all(bodies.map((body) => propose(body)));
  expect(again.map((answer) => answer.status)).toEqual(Array(PAYMENTS).fill(200));
  expect(again.map((answer) => answer.body.effect_id)).toEqual(effectIds);
  expect(rig.target.landings).toHaveLength(PAYMENTS);
  rig.stores.logger.info({ seconds, requests: 2 * PAYMENTS }, 'load: proposals answered');
}, 120_000);
