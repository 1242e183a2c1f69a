// Rule: no send of a worker is in progress once its own heartbeat key could have been gone (send-watchdog.ts header,
// README "Recovery without the wait" step 6), also when the key vanished while the worker's beats went on succeeding:
// Redis failed over to a replica that did not have it, or a lagging replica expired it. Recovery reads the missing key
// as a dead sender, takes the effect over at once and, a settle margin later, trusts an empty lookup and sends again.
// The worker's next beat writes the key anew (beat-1.lua answers `kept: false`); it aborts the sends in progress then,
// as at a lapse (the target closes their requests still open, their outcome unknown, their claims kept for recovery),
// before it tells the new bound. Before, beat() only restarted heldSince: a request still connecting wrote its body
// after the recoverer's reapply, and a tier-2 target got the refund twice.
import { describe, expect, it } from 'vitest';
import type { SendContext, Target } from '../../src/core/target.js';
import { createKeys } from '../../src/redis/keys.js';
import { createMemoryTarget, type MemoryTarget } from '../../src/targets/memory-target.js';
import { REDIS_URL, refundProposal, sleep, startNode, testConfig, testKey, type TestNode } from '../support/harness.js';
import { Redis } from 'ioredis';
import { FACTS, PAYMENT, grant } from './gate-support.js';

/**
 * A tier-2 memory target whose request, once past the gate's last check, takes `connectMs` to connect before its body
 * is written; abortSends closes the requests of the aborted sends (no time left) still connecting, as the Stripe
 * targets do, so those never land. `connecting` resolves when a request starts connecting, `done` when it ended.
 */
function connectingTarget(memory: MemoryTarget, connectMs: number) {
  const open = new Set<{ context: SendContext; closed: boolean }>();
  let started!: () => void;
  let ended!: () => void;
  const connecting = new Promise<void>((resolve) => (started = resolve));
  const done = new Promise<void>((resolve) => (ended = resolve));
  const target: Target = {
    ...memory,
    abortSends() {
      for (const request of open) if (request.context.timeLeftMs() <= 0) request.closed = true;
      memory.abortSends?.();
    },
    async apply(effectId, effect, context) {
      await context.beforeWrite();
      const request = { context, closed: false };
      open.add(request);
      started();
      try {
        await sleep(connectMs);
        if (request.closed) throw new Error('the connection was closed before the request body was written');
        // Past its last check: the body is written now, whatever happened meanwhile.
        return await memory.apply(effectId, effect, { ...context, beforeWrite: async () => undefined });
      } finally {
        open.delete(request);
        ended();
      }
    },
  };
  return { target, connecting, done };
}

describe('a live sender whose heartbeat key vanished mid-send while its beats went on (a failover)', () => {
  it('aborts its send at its next beat, so recovery lands the tier-2 refund once', async () => {
    const config = testConfig({ sendWatchdog: true, sendTimeoutMs: 8_000, claimTtlMs: 20_000, settleMarginMs: 300, heartbeatMs: 200, heartbeatTtlMs: 800 });
    const memory = createMemoryTarget({ tier: 2, sendTimeoutMs: config.sendTimeoutMs });
    memory.world.set(PAYMENT, { ...FACTS });
    const slow = connectingTarget(memory, 3_000);
    const key = testKey().key;
    const nodes: TestNode[] = [];
    const redis = new Redis(REDIS_URL);
    try {
      const a = await startNode({ config, target: slow.target, key, workerId: 'a' });
      nodes.push(a);
      const b = await startNode({ config, target: memory, key, workerId: 'b' });
      nodes.push(b);
      const { id: approval } = await grant(a);
      const proposal = refundProposal({ approval });
      const effectId = a.gate.effectIdOf(proposal);
      const submitted = a.gate.submit(proposal);
      await slow.connecting;

      // The failover: the new master has no heartbeat key for a; a's beats go on and write it anew.
      await redis.del(createKeys(config.keyPrefix).heartbeat('a'));
      const settled: string[] = [];
      for (let i = 0; i < 40 && settled.length === 0; i += 1) {
        settled.push(...(await b.gate.recover({ only: [effectId] })).settled.map((one) => one.outcome));
        if (settled.length === 0) await sleep(100);
      }
      const answer = await submitted;
      await slow.done;
      expect({ recovered: settled, sender: answer.outcome, aborts: memory.sendAborts.length, landed: memory.landedCount(effectId) }).toEqual({ recovered: ['REAPPLIED_AFTER_QUERY'], sender: 'IN_FLIGHT', aborts: 1, landed: 1 });
    } finally {
      await Promise.all(nodes.map((node) => node.close().catch(() => undefined)));
      const stale = await redis.keys(`${config.keyPrefix}:*`);
      if (stale.length > 0) await redis.del(...stale);
      await redis.quit();
    }
  }, 30_000);
});
