// Redis itself crashes mid-run (issue 9 §6): a private redis-server with AOF and `appendfsync always` holds the
// journal, the claims and the queue; two real worker processes drain refunds while the test keeps proposing more;
// Redis is SIGKILLed in the middle and restarted on the same directory and port. Nothing acknowledged is lost —
// every effect whose proposal returned is found and settles, committed — and every effect, acknowledged or not,
// reached Stripe at most once (exactly once for the acknowledged ones), with a receipt that verifies.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApprovalTerms } from '../../src/interlock.js';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis.js';
import { pay, sleep, startStripeWorld, type StripeWorld } from '../stripe/stripe-support.js';
import { openPipeline, spawnWorker, type Pipeline, type WorkerProcess } from './pipeline-support.js';

const REFUNDS = 60;
/** Redis dies once this many proposals were acknowledged. */
const KILL_AFTER = 20;
const COMMITTED = ['COMMITTED', 'COMMITTED_BY_RETRY', 'COMMITTED_ON_QUERY', 'REAPPLIED_AFTER_QUERY'];

let world: StripeWorld;
let redis: PrivateRedis;
let pipeline: Pipeline;
beforeAll(async () => {
  world = await startStripeWorld();
  redis = await startPrivateRedis(['--appendonly', 'yes', '--appendfsync', 'always', '--maxmemory-policy', 'noeviction', '--save', '']);
  pipeline = await openPipeline(world.sandbox, { redisUrl: redis.url, config: { unsafeDurability: false } });
});
afterAll(async () => {
  await pipeline.close().catch(() => undefined);
  await redis.stop();
  await world.close();
});

describe('Redis SIGKILLed in the middle of a run and restarted from its append-only file', () => {
  it('loses nothing acknowledged and lands every refund at most once (once for each acknowledged one)', async () => {
    // The durability check is on (no INTERLOCK_UNSAFE_DURABILITY): the workers verify AOF and fsync themselves.
    const env = pipeline.env({ INTERLOCK_UNSAFE_DURABILITY: '0', INTERLOCK_CONCURRENCY: '4', INTERLOCK_RECOVERY_INTERVAL_MS: '2000' });
    const workers: WorkerProcess[] = [spawnWorker(env), spawnWorker(env)];
    const began = Date.now();
    const phase = (what: string) => console.info(`redis crash +${Date.now() - began} ms: ${what}`);
    try {
      const payments = await Promise.all(Array.from({ length: REFUNDS }, () => pay(world.stripe, 'pm_card_visa', 5_000)));
      await Promise.all(workers.map((worker) => worker.ready));
      phase('payments made, workers serving');
      const premises = { chargebacks: [], refunded_by_others: 0, refundable: 5_000, charge_status: 'succeeded' };
      const acknowledged = new Map<string, string>();
      const attempted = new Map<string, string>();
      let restarted: Promise<void> | null = null;
      let killedAt = -1;
      for (const [i, payment] of payments.entries()) {
        if (acknowledged.size === KILL_AFTER && restarted === null) {
          // Mid-run: the workers are sending; Redis dies without a chance to write anything more.
          await redis.kill('SIGKILL');
          killedAt = i;
          restarted = sleep(1_000).then(() => redis.restart());
        }
        const requestId = `case-redis-${pipeline.config.keyPrefix}-${i}`;
        const effect = { kind: 'refund' as const, paymentIntent: payment.paymentIntent, amount: 1_000 };
        try {
          const terms: ApprovalTerms = { id: `ap_redis_${i}`, approver: 'dana@support', capCents: 1_000, expiresAt: Date.now() + 3_600_000, maxUses: 1, scope: `payment:${payment.paymentIntent}` };
          await pipeline.stores.approvals.grant(terms);
          attempted.set(payment.paymentIntent, requestId);
          acknowledged.set(payment.paymentIntent, await pipeline.propose({ requestId, approval: terms.id, effect, premises }));
        } catch {
          // Not acknowledged (Redis was down): the caller would retry; it may or may not have been recorded.
        }
      }
      await restarted;
      expect(killedAt).toBeGreaterThan(0);
      for (const worker of workers) expect(worker.child.exitCode, `a worker exited when Redis died:\n${worker.logs().slice(-3000)}`).toBeNull();

      phase(`Redis killed after ${killedAt} proposals and restarted; ${acknowledged.size} acknowledged`);
      // A job whose worker lost Redis mid-submit retries with backoff, or comes back when its lock lapses (60 s).
      const settled = await pipeline.untilSettled([...acknowledged.values()], 180_000);
      phase('all acknowledged settled');
      const problems: string[] = [];
      for (const payment of payments) {
        const refunds = (await world.stripe.refunds.list({ payment_intent: payment.paymentIntent })).data;
        const effectId = acknowledged.get(payment.paymentIntent);
        if (refunds.length > 1) problems.push(`${payment.paymentIntent}: ${refunds.length} refunds`);
        if (effectId === undefined) continue;
        const answer = settled.get(effectId);
        if (refunds.length !== 1 || refunds[0]?.metadata?.['interlock_effect_id'] !== effectId) problems.push(`${payment.paymentIntent}: acknowledged, but Stripe holds ${JSON.stringify(refunds.map((refund) => refund.metadata))}`);
        if (answer === undefined || !COMMITTED.includes(answer.outcome) || answer.verification.valid !== true || !answer.verification.happenedOnce) problems.push(`${effectId.slice(0, 12)}: ${answer?.outcome ?? 'lost'} ${answer?.verification.problems.join('; ') ?? ''}`);
      }
      expect(problems).toEqual([]);
      const outcomes: Record<string, number> = {};
      for (const answer of settled.values()) outcomes[answer.outcome] = (outcomes[answer.outcome] ?? 0) + 1;
      console.info(`redis crash after ${killedAt} proposals: ${acknowledged.size} of ${attempted.size} acknowledged, outcomes ${JSON.stringify(outcomes)}`);
    } finally {
      await Promise.all(workers.map((worker) => worker.stop()));
    }
  }, 420_000);
});
