// Rule: the last check before a request leaves (check-epoch-2.lua) refuses, on Redis's clock, a send deadline or a
// claim that lapsed and an approval that expired or was revoked since the dispatch step, not only a claim that moved
// (DESIGN §1 "sent only under a live, unrevoked approval", §3 I2, §7): nothing is sent, and recovery settles the effect
// as for any fence. A paused VM's monotonic clock stands still, so only Redis's clock can tell.
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { afterEach, expect, it, vi } from 'vitest';
import { createKeys } from '../../src/redis/keys.js';
import { kill, refundProposal, sleep, type World } from '../support/harness.js';
import { gateWorld, grant, PAYMENT, recoverUntilSettled, submitAndCrash } from './gate-support.js';

let world: World | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
  await world?.close();
  world = undefined;
});

it('tier 2: a worker waking from a pause past its claim and send deadline sends nothing, so the recoverer that takes the lapsed claim applies the refund once', async () => {
  const config = { sendTimeoutMs: 3_000, claimTtlMs: 4_000, settleMarginMs: 150, dedupMarginMs: 60_000, heartbeatMs: 60_000, heartbeatTtlMs: 120_000 };
  world = await gateWorld({ target: { tier: 2, sendTimeoutMs: config.sendTimeoutMs }, config });
  const w = world;
  const [a, b] = [await w.node('a'), await w.node('b')];
  const terms = await grant(a);

  // A VM pause (as paused-vm-claim-check.test.ts): performance.now() stands still from the instant the send reaches
  // the target until it resumes.
  const real = performance.now.bind(performance);
  let behind = 0;
  let stoodAt: number | null = null;
  vi.spyOn(performance, 'now').mockImplementation(() => stoodAt ?? real() - behind);
  let reached!: () => void;
  const atTarget = new Promise<void>((resolve) => (reached = resolve));
  let resume!: () => void;
  const resumed = new Promise<void>((resolve) => (resume = resolve));
  const apply = w.target.apply.bind(w.target);
  let armed = true;
  w.target.apply = async (effectId, effect, context) => {
    if (armed) {
      armed = false;
      stoodAt = real() - behind;
      reached();
      await resumed;
      behind = real() - stoodAt;
      stoodAt = null;
    }
    return apply(effectId, effect, context);
  };

  const proposal = refundProposal({ approval: terms.id });
  const effectId = a.gate.effectIdOf(proposal);
  const submitted = a.gate.submit(proposal);
  await atTarget;
  // The pause outlasted a's heartbeat, its claim and its send deadline on Redis's clock; nobody took the claim yet.
  const redis = new Redis(a.config.redisUrl);
  const keys = createKeys(a.config.keyPrefix);
  await redis.del(keys.heartbeat(a.heartbeat.workerId));
  const [seconds] = await redis.time();
  const past = String(Number(seconds) * 1000 - 1_000);
  await redis.hset(keys.state(PAYMENT, effectId), 'claimExpires', past, 'sendDeadline', past);
  await redis.quit();

  resume();
  const answer = await submitted;
  expect(answer.outcome).toBe('IN_FLIGHT');
  expect(answer.reason).toContain("the send deadline passed on Redis's clock");
  expect(w.target.sendStarts.filter((start) => start.effectId === effectId)).toHaveLength(0);

  const report = await recoverUntilSettled(b, effectId);
  expect(report.settled).toEqual([expect.objectContaining({ effectId, outcome: 'REAPPLIED_AFTER_QUERY' })]);
  expect(w.target.landedCount(effectId)).toBe(1);
}, 30_000);

it('an approval that expires while the target reads before its write stops the write, and recovery refuses the effect', async () => {
  world = await gateWorld({ target: { tier: 1, sendTimeoutMs: 3_000 }, config: { sendTimeoutMs: 3_000, claimTtlMs: 4_000, dedupMarginMs: 60_000 } });
  const w = world;
  const a = await w.node('a');
  const terms = await grant(a, { expiresAt: Date.now() + 600 });
  // The target spends time before its write (Stripe's refund target reads the payment first), inside the deadline.
  const apply = w.target.apply.bind(w.target);
  w.target.apply = async (effectId, effect, context) => {
    const left = terms.expiresAt - Date.now();
    if (left > -300) await sleep(left + 300);
    return apply(effectId, effect, context);
  };
  const proposal = refundProposal({ approval: terms.id });
  const effectId = a.gate.effectIdOf(proposal);
  const answer = await a.gate.submit(proposal);
  expect(answer.outcome).toBe('IN_FLIGHT');
  expect(answer.reason).toContain(`the approval ${terms.id} expired before the request could leave`);
  expect(w.target.sendStarts.filter((start) => start.effectId === effectId)).toHaveLength(0);

  const report = await recoverUntilSettled(a, effectId);
  expect(report.settled).toEqual([expect.objectContaining({ effectId, outcome: 'REFUSED:lease_at_recovery' })]);
  expect(w.target.landedCount(effectId)).toBe(0);
}, 20_000);

it('an approval revoked while the target reads before its write stops the write', async () => {
  world = await gateWorld({ target: { tier: 1, sendTimeoutMs: 3_000 }, config: { sendTimeoutMs: 3_000, claimTtlMs: 4_000, dedupMarginMs: 60_000 } });
  const w = world;
  const a = await w.node('a');
  const terms = await grant(a);
  const apply = w.target.apply.bind(w.target);
  w.target.apply = async (effectId, effect, context) => {
    await a.approvals.revoke(terms.id, 'lee@risk');
    return apply(effectId, effect, context);
  };
  const proposal = refundProposal({ approval: terms.id });
  const effectId = a.gate.effectIdOf(proposal);
  const answer = await a.gate.submit(proposal);
  expect(answer.outcome).toBe('IN_FLIGHT');
  expect(answer.reason).toContain(`the approval ${terms.id} was revoked before the request could leave`);
  expect(w.target.landedCount(effectId)).toBe(0);

  const report = await recoverUntilSettled(a, effectId);
  expect(report.settled).toEqual([expect.objectContaining({ effectId, outcome: 'REFUSED:lease_at_recovery' })]);
  expect(w.target.landedCount(effectId)).toBe(0);
}, 20_000);

it('tier 1: a recovery resend whose approval expires during the target\'s read before its write sends nothing, and the next pass refuses the effect', async () => {
  world = await gateWorld({ target: { tier: 1, sendTimeoutMs: 3_000 }, config: { sendTimeoutMs: 3_000, claimTtlMs: 4_000, dedupMarginMs: 60_000 } });
  const w = world;
  const [a, b] = [await w.node('a'), await w.node('b')];
  const terms = await grant(a, { expiresAt: Date.now() + 1_500 });
  w.target.inject({ kind: 'crash-before-send' });
  const effectId = await submitAndCrash(a, refundProposal({ approval: terms.id }));
  await kill(a);
  await sleep(Math.max(0, terms.expiresAt - 900 - Date.now()));
  const apply = w.target.apply.bind(w.target);
  w.target.apply = async (id, effect, context) => {
    const left = terms.expiresAt - Date.now();
    if (left > -200) await sleep(left + 200);
    return apply(id, effect, context);
  };
  const report = await recoverUntilSettled(b, effectId);
  expect(report.settled).toEqual([expect.objectContaining({ effectId, outcome: 'REFUSED:lease_at_recovery' })]);
  expect(w.target.sendStarts.filter((start) => start.effectId === effectId)).toHaveLength(0);
  expect(w.target.landedCount(effectId)).toBe(0);
}, 20_000);
