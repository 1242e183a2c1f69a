// Rule: `interlock recover` exits 4 while its pass left an effect open for later, not only when something waits or is
// unresolved: an effect whose holder's heartbeat has not lapsed (passed over until it lapses) used to exit 0, telling
// an operator who ran it after killing a worker that everything was settled. And a proposal recorded but never queued
// is not "settled meanwhile": the command's pass has no queue to put its job on, says so, and leaves exit 4.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { createEffectsQueue } from '../../queues/effects.js';
import { exitForRecovery } from '../../src/cli/effect-command.js';
import { createMemoryTarget, InterlockError, openStores, ProcessCrash, settledOutcome, startSender, type ApprovalTerms, type Target } from '../../src/interlock.js';
import { OUTBOX_GRACE_MS } from '../../src/redis/journal.js';
import { openPipeline, type Pipeline } from '../pipeline/pipeline-support.js';
import { pay, startStripeWorld, type StripeWorld } from '../stripe/stripe-support.js';
import { approvalTerms, refundProposal, removePrefixes, testConfig, testKey } from '../support/harness.js';
import { runCli } from './run-cli.js';

let world: StripeWorld;
let quiet: Pipeline;
beforeAll(async () => {
  world = await startStripeWorld();
  quiet = await openPipeline(world.sandbox);
}, 120_000);
afterAll(async () => {
  await quiet?.close();
  await world?.close();
});

it('recover with an open effect whose holder still beats: the effect stays open, and the exit code says so (4)', async () => {
  const { paymentIntent } = await pay(world.stripe, 'pm_card_visa', 5_000);
  const terms: ApprovalTerms = { id: `ap_rr_${quiet.config.keyPrefix}`, approver: 'dana@support', capCents: 2_000, expiresAt: Date.now() + 3_600_000, maxUses: 1, scope: `payment:${paymentIntent}` };
  await quiet.stores.approvals.grant(terms);
  const dying: Target = { ...quiet.stripe.target, apply: () => Promise.reject(new ProcessCrash('killed before the send')) };
  const sender = await startSender(quiet.stores, dying);
  const proposal = { requestId: `case-rr-${quiet.config.keyPrefix}`, agent: 'cli-test', approval: terms.id, premises: { chargebacks: [], refunded_by_others: 0, refundable: 5_000, charge_status: 'succeeded' }, effect: { kind: 'refund', paymentIntent, amount: 2_000 } };
  await expect(sender.gate.submit(proposal)).rejects.toThrow(/killed before the send/);
  const effectId = sender.gate.effectIdOf(proposal);
  const partition = `payment:${paymentIntent}`;
  const { state } = await quiet.stores.journal.readState(partition, effectId);
  await sender.heartbeat.stop({ clear: true });
  await sender.close().catch(() => undefined);
  // The holder is (as far as Redis can tell) still alive: its heartbeat carries its nonce for two minutes.
  const live = new Redis(quiet.config.redisUrl);
  await live.set(quiet.stores.keys.heartbeat(state.owner), state.nonce, 'PX', 120_000);
  try {
    const run = await runCli(['recover'], quiet.env(), { timeoutMs: 120_000 });
    const report = JSON.parse(run.stdout) as { skipped: { effectId: string; reason: string }[]; waiting: unknown[] };
    expect(report.skipped.map((s) => s.effectId)).toContain(effectId);
    expect((await quiet.stores.journal.readState(partition, effectId)).state.open).toBe(true);
    // Nothing settled, the effect still open: the command must not report success.
    expect(run.code, run.stdout).toBe(4);
  } finally {
    await live.del(quiet.stores.keys.heartbeat(state.owner));
    await live.quit();
  }
}, 180_000);

const keyPair = testKey();
const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

it('a recorded, never-queued proposal past its grace: the command\'s pass says it is not settled and leaves exit 4', async () => {
  const config = testConfig({ keyPrefix: `rr${randomBytes(6).toString('hex')}` });
  const target = createMemoryTarget({ tier: 1, sendTimeoutMs: config.sendTimeoutMs });
  target.world.set('payment:pi_1', { chargebacks: [], refunded_by_others: 0 });
  const stores = await openStores(config, { logger: pino({ level: 'silent' }), signingKey: keyPair.key });
  const redis = new Redis(config.redisUrl);
  closers.push(async () => {
    await stores.close();
    await redis.quit();
    await removePrefixes([config.keyPrefix, `{${config.keyPrefix}-queues}`]);
  });
  const terms = approvalTerms();
  await stores.approvals.grant(terms);
  const closing = createEffectsQueue(stores);
  await closing.close();
  const failed = await closing.propose(refundProposal({ approval: terms.id })).catch((error: unknown) => error);
  expect(failed).toBeInstanceOf(InterlockError);
  const effectId = (failed as InterlockError).message.slice('Effect '.length, 'Effect '.length + 64);
  const flat = await redis.zrange(stores.keys.openIndex, '0', '-1', 'WITHSCORES');
  for (let i = 0; i + 1 < flat.length; i += 2) if (flat[i]?.startsWith(`${effectId}:`)) await redis.zadd(stores.keys.openIndex, 'XX', Number(flat[i + 1]) - OUTBOX_GRACE_MS - 1_000, flat[i] as string);

  // What `npx interlock recover` runs (main.ts): its own sender, gate.recover() with no requeue.
  const sender = await startSender(stores, target, { workerId: 'recover:probe' });
  closers.push(() => sender.close());
  const report = await sender.gate.recover();
  expect(await settledOutcome(stores, effectId)).toBeNull();
  const mine = report.skipped.find((s) => s.effectId === effectId);
  expect(mine?.reason ?? '', JSON.stringify(report)).not.toMatch(/settled/);
  expect(mine?.reason ?? '').toMatch(/never queued: this pass has no queue/);
  expect(exitForRecovery(report)).toBe(4);
});
