// Rule (gate/send.ts sendOnce; README "A frozen process writes nothing after it wakes fenced out"; DESIGN §7): right
// before a request leaves, the sender asks Redis whether it still holds the claim, however recently a script proved
// it. A paused VM (a QEMU/KVM stop and continue, a snapshot, a live migration's blackout, a host suspend) stops the
// guest's monotonic clock too, so performance.now() does not count the pause while Redis's clock, which claims and
// heartbeats live by, runs on. The check was skipped within 250 ms by performance.now() of the script that proved the
// claim, with the heartbeat looking alive by the same clock: a worker paused between its dispatch step (or recovery's
// re-check) and its send, past its heartbeat, was taken over and settled by another worker, and on resuming sent
// anyway: a second refund (tier 2), or a refund under an approval revoked meanwhile after recovery had refused it.
//
// The pause is modelled without time: performance.now() stands still from the instant the send reaches the target
// (before its last check) until it goes on, and the paused worker's heartbeat key is deleted meanwhile, as Redis
// expires it (no beat runs in a paused VM: the beats are a minute apart here).
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createKeys } from '../../src/redis/keys.js';
import type { MemoryTarget } from '../../src/targets/memory-target.js';
import { kill, refundProposal, type TestNode, type World } from '../support/harness.js';
import { gateWorld, grant, recoverUntilSettled, untilRedisTime } from './gate-support.js';

let world: World | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
  await world?.close();
  world = undefined;
});

/** What the paused worker answers: it sent nothing, having found on waking that it no longer holds the claim. */
const FENCED = expect.stringContaining('nothing was sent: this worker lost its claim before the request left');

/** A send deadline long enough for another worker to take over and settle while the first is paused; no beat meanwhile. */
const PAUSABLE = { sendTimeoutMs: 8_000, claimTtlMs: 20_000, settleMarginMs: 150, dedupMarginMs: 60_000, heartbeatMs: 60_000, heartbeatTtlMs: 120_000 };

async function pausableWorld(tier: 1 | 2): Promise<World> {
  world = await gateWorld({ target: { tier, sendTimeoutMs: PAUSABLE.sendTimeoutMs }, config: PAUSABLE });
  return world;
}

/**
 * The next send that reaches the target is held there, before its last check, as in a paused VM: performance.now()
 * stands still until `resume`, then goes on from where it stood. `reached` resolves once a send is held.
 */
function pauseNextSend(target: MemoryTarget) {
  const real = performance.now.bind(performance);
  let behind = 0;
  let stoodAt: number | null = null;
  vi.spyOn(performance, 'now').mockImplementation(() => stoodAt ?? real() - behind);
  let held!: () => void;
  let resume!: () => void;
  const reached = new Promise<void>((resolve) => (held = resolve));
  const resumed = new Promise<void>((resolve) => (resume = resolve));
  let armed = true;
  const apply = target.apply.bind(target);
  target.apply = async (effectId, effect, context) => {
    if (armed) {
      armed = false;
      stoodAt = real() - behind;
      held();
      await resumed;
      behind = real() - stoodAt;
      stoodAt = null;
    }
    return apply(effectId, effect, context);
  };
  return { reached, resume, wasReached: () => !armed };
}

/** The paused worker's heartbeat key lapses in Redis while its own clock stands still. */
async function heartbeatLapses(node: TestNode): Promise<void> {
  const redis = new Redis(node.config.redisUrl);
  try {
    await redis.del(createKeys(node.config.keyPrefix).heartbeat(node.heartbeat.workerId));
  } finally {
    await redis.quit();
  }
}

/** How many requests of the effect passed the gate's last check and left for the target. */
function requestsLeft(target: MemoryTarget, effectId: string): number {
  return target.sendStarts.filter((start) => start.effectId === effectId).length;
}

/** Workers a and b on a world of `tier`, and a's refund under a new approval held right before its send (paused). */
async function submitPausedBeforeSend(tier: 1 | 2) {
  const w = await pausableWorld(tier);
  const [a, b] = [await w.node('a'), await w.node('b')];
  const { id } = await grant(a);
  const proposal = refundProposal({ approval: id });
  const effectId = a.gate.effectIdOf(proposal);
  const pause = pauseNextSend(w.target);
  const submitted = a.gate.submit(proposal);
  await pause.reached;
  return { w, a, b, id, effectId, pause, submitted };
}

/** What left and landed for the effect, and what the paused submit answered once it went on. */
async function afterThePause(target: MemoryTarget, effectId: string, submitted: ReturnType<TestNode['gate']['submit']>) {
  const answer = await submitted;
  return { left: requestsLeft(target, effectId), landed: target.landedCount(effectId), outcome: answer.outcome, reason: answer.reason };
}

describe('a worker whose VM is paused between proving its claim and sending, past its heartbeat', () => {
  it('tier 2: the dispatching worker sends nothing after another worker reapplied the refund', async () => {
    const { w, a, b, effectId, pause, submitted } = await submitPausedBeforeSend(2);

    await heartbeatLapses(a);
    const recovered = await recoverUntilSettled(b, effectId);
    expect(recovered.settled.map((one) => one.outcome)).toEqual(['REAPPLIED_AFTER_QUERY']);
    expect(requestsLeft(w.target, effectId)).toBe(1);

    pause.resume();
    expect(await afterThePause(w.target, effectId, submitted)).toEqual({ left: 1, landed: 1, outcome: 'IN_FLIGHT', reason: FENCED });
  }, 30_000);

  it('tier 1: the dispatching worker sends nothing under an approval revoked while it was paused, after recovery refused it', async () => {
    const { w, a, b, id, effectId, pause, submitted } = await submitPausedBeforeSend(1);

    await b.approvals.revoke(id, 'dana@support');
    await heartbeatLapses(a);
    const recovered = await recoverUntilSettled(b, effectId);
    expect(recovered.settled.map((one) => one.outcome)).toEqual(['REFUSED:lease_at_recovery']);

    pause.resume();
    expect(await afterThePause(w.target, effectId, submitted)).toEqual({ left: 0, landed: 0, outcome: 'IN_FLIGHT', reason: FENCED });
  }, 30_000);

  it('tier 2, recovery\'s resend: the paused recoverer sends nothing after a third worker reapplied the refund', async () => {
    const w = await pausableWorld(2);
    const [a, b, c] = [await w.node('a'), await w.node('b'), await w.node('c')];
    const { id } = await grant(a);
    // a's connection drops before its request is written: nothing landed, the dispatch stays open; then a dies.
    w.target.inject({ kind: 'error-before-send' });
    const first = await a.gate.submit(refundProposal({ approval: id }));
    expect(first.outcome).toBe('IN_FLIGHT');
    const { effectId } = first;
    await kill(a);

    // b takes the dispatch over and resends it (after the settle margin past a's death); its VM pauses right then.
    const pause = pauseNextSend(w.target);
    const passes = (async () => {
      for (;;) {
        const report = await b.gate.recover({ only: [effectId] });
        if (pause.wasReached() || report.nextAt === null) return report;
        await untilRedisTime(b, report.nextAt);
      }
    })();
    await pause.reached;

    await heartbeatLapses(b);
    const recovered = await recoverUntilSettled(c, effectId);
    expect(recovered.settled.map((one) => one.outcome)).toEqual(['REAPPLIED_AFTER_QUERY']);
    expect(requestsLeft(w.target, effectId)).toBe(1);

    pause.resume();
    const report = await passes;
    expect({ left: requestsLeft(w.target, effectId), landed: w.target.landedCount(effectId), resend: report.unresolved }).toEqual({ left: 1, landed: 1, resend: [expect.objectContaining({ outcome: 'UNRESOLVED:fenced', error: expect.stringContaining('this worker lost its claim before the request left') })] });
  }, 30_000);
});
