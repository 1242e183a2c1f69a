// One bounded send of the recorded payload. The target gets the time left to the deadline for every call it
// makes, and a last check right before the request leaves the process; the gate also stops waiting at the
// deadline, so a target that ignores it can delay nobody's answer (its late bytes are the settle margin's to cover).
import { performance } from 'node:perf_hooks';
import type { Effect } from '../core/effects.js';
import type { JsonObject } from '../core/json.js';
import { ProcessCrash, Rejected, SendFenced, type SendContext } from '../core/target.js';
import { InterlockError, type SlowDown } from '../core/errors.js';
import type { GateContext } from './context.js';
import { inspectable } from './reads.js';
import { quoteError } from '../core/quote.js';
import type { Heartbeat } from '../redis/heartbeat.js';
import type { ClaimCheck } from '../redis/journal.js';
import { heartbeatAbortMs, watchdogArms } from './send-watchdog.js';

/**
 * `fenced`: the send did not start, or did nothing (the target refused its key: target_misconfigured), nothing was sent;
 * `cause`: the error that stopped it, where it carried one (a read the target makes before it writes: its rate limit,
 * its refused key; the write's own refused key).
 */
export type SendResult = { landed: JsonObject } | { rejected: Rejected } | { unknown: unknown } | { fenced: string; cause?: unknown };

/**
 * Whether a dispatched effect may be sent now: this worker may send (the guard: Redis durable by the monitor's last
 * reading, not superseded under its worker id), and, when the operator asked for it, enough replicas hold the
 * DISPATCHED that a failover cannot lose it. Returns why not, or null; a guard's refusal is thrown. Either way
 * nothing left, so the claim is given up saying so (`unsent`: `first` from the dispatching worker, `unsent` from a
 * recoverer; release-claim-1.lua): the dispatch stays open and is sent once this holds, never settled AMBIGUOUS.
 */
export async function holdBack(ctx: GateContext, holding: { partition: string; effectId: string; epoch: number; indexEntry?: string }, unsent: 'first' | 'unsent'): Promise<string | null> {
  const giveUp = () => ctx.journal.releaseClaim(holding.partition, holding.effectId, ctx.owner, holding.epoch, unsent);
  try {
    ctx.guard?.assertMaySend();
  } catch (error) {
    await giveUp().catch(() => undefined);
    throw error;
  }
  const replicas = ctx.timing.minReplicas ?? 0;
  if (replicas === 0) return null;
  const { ok, acknowledged } = await ctx.journal.replicated(holding, replicas, ctx.timing.replicaWaitMs ?? 1_000);
  if (ok) return null;
  await giveUp();
  return `only ${acknowledged} of the ${replicas} Redis replicas required acknowledged the DISPATCHED, so it was not sent; recovery sends it once they do`;
}

/**
 * Records that a request of the open dispatch got no definite answer, so recovery looks the effect up before it
 * resends under the key (decisions.ts, planRecovery): Stripe stores a 500 under the key and replays it for 24 h.
 * A rate limiter's answer (`slowDown`, Stripe's 429) is not recorded: Stripe's limiter answers before the
 * idempotency layer, so nothing was stored (stripe-facts §3), and the effects queue already slows down for it.
 * A mark that cannot be written is logged, not thrown: the send's answer still stands, and recovery then resends
 * at once as after a crash, which is what it did before marks existed.
 */
export async function markUnknown(ctx: GateContext, where: { partition: string; effectId: string }, slowDown: SlowDown | null): Promise<void> {
  if (slowDown !== null) return;
  try {
    await ctx.journal.markUnknown(where.partition, where.effectId);
  } catch (error) {
    if (error instanceof ProcessCrash) throw error;
    ctx.logger.warn({ effectId: where.effectId, err: error }, 'could not record that the send got no definite answer; recovery may resend before it looks the effect up');
  }
}

/**
 * The sends in progress under one heartbeat (one worker id), each by the function that aborts it, and the one timer
 * that aborts them all once the heartbeat's key could lapse soon (heartbeatAbortMs before the watchdog's kill). The
 * timer counts to the bound it was set from; a bound that dropped (superseded, the key cleared or found gone by a beat,
 * a stale beat's answer) is looked at again at once, before the watchdog is told it (heartbeat.onBoundDropped), not
 * when the timer fires.
 */
type HeartbeatFence = { sends: Set<() => void>; timer: NodeJS.Timeout | undefined };

const fences = new WeakMap<Heartbeat, HeartbeatFence>();

/** No watched send may begin, nor any request of one leave, this close to the heartbeat's lapse: the sends in progress are being aborted. */
function heartbeatNearLapse(ctx: GateContext): boolean {
  return ctx.heartbeat.aliveFor() <= heartbeatAbortMs(ctx.heartbeat.ttlMs);
}

/** Why this worker's heartbeat key could be gone soon: said by the abort's warning and the aborted send's error. */
function lapseReason(heartbeat: Heartbeat): string {
  if (heartbeat.supersededBy() !== null) return 'another process beats under this worker id (INTERLOCK_WORKER_ID), so its key holds that process\'s nonce';
  return `no heartbeat of this worker reached Redis for most of its TTL (INTERLOCK_HEARTBEAT_TTL_MS, ${heartbeat.ttlMs} ms), so its key could lapse, or a beat found the key gone and wrote it anew (Redis lost it: a failover to a replica without it)`;
}

/**
 * Aborts the sends in progress under this heartbeat once its key could lapse soon; looks again when a beat moved the
 * bound meanwhile. One warning says how many were aborted.
 */
function watchHeartbeat(ctx: GateContext, fence: HeartbeatFence): void {
  const left = ctx.heartbeat.aliveFor() - heartbeatAbortMs(ctx.heartbeat.ttlMs);
  if (left > 0) {
    fence.timer = setTimeout(() => watchHeartbeat(ctx, fence), Math.ceil(left));
    return;
  }
  fence.timer = undefined;
  const aborts = [...fence.sends];
  fence.sends.clear();
  for (const abort of aborts) abort();
  ctx.logger.warn(
    { workerId: ctx.heartbeat.workerId, aborted: aborts.length },
    `${lapseReason(ctx.heartbeat)}, and other workers then read this one as dead: aborted the ${aborts.length} send(s) in progress; their outcome is unknown and their claims stay for recovery`,
  );
}

/** Watches one send for the heartbeat's lapse: `abort` is called once it could lapse soon. Returns the function that stops watching it. */
function fenceSend(ctx: GateContext, abort: () => void): () => void {
  let fence = fences.get(ctx.heartbeat);
  if (fence === undefined) {
    const created: HeartbeatFence = { sends: new Set(), timer: undefined };
    ctx.heartbeat.onBoundDropped(() => {
      if (created.timer === undefined) return;
      clearTimeout(created.timer);
      watchHeartbeat(ctx, created);
    });
    fences.set(ctx.heartbeat, created);
    fence = created;
  }
  const watched = fence;
  watched.sends.add(abort);
  if (watched.timer === undefined) watchHeartbeat(ctx, watched);
  return () => {
    watched.sends.delete(abort);
    if (watched.sends.size > 0 || watched.timer === undefined) return;
    clearTimeout(watched.timer);
    watched.timer = undefined;
  };
}

/** What the last check before a request leaves found on Redis's clock instead of a live claim, as a SendFenced's message. */
function refusedSentence(check: Exclude<ClaimCheck, true>, approvalId: string): string {
  const paused = 'this process was paused or stalled after its dispatch step';
  switch (check.refused) {
    case 'claim_moved':
      return 'this worker lost its claim before the request left (it stalled or was paused, and another worker took over)';
    case 'send_deadline':
      return `the send deadline passed on Redis's clock (${check.now - check.at} ms before the request could leave: ${paused}); nothing was sent`;
    case 'claim_expired':
      return `this worker's claim expired on Redis's clock (${check.now - check.at} ms before the request could leave: ${paused}); nothing was sent`;
    case 'approval_expired':
      return `the approval ${approvalId} expired before the request could leave (${check.now - check.at} ms before, on Redis's clock); nothing was sent`;
    case 'approval_revoked':
      return `the approval ${approvalId} was revoked before the request could leave (${check.now - check.at} ms before, on Redis's clock); nothing was sent`;
    case 'approval_missing':
      return `the approval ${approvalId} no longer exists in Redis, so the request could not leave; nothing was sent`;
    default: {
      const never: never = check;
      return never;
    }
  }
}

/**
 * `where.neverSent`: this is the send of a first dispatch, after a premise read that said so (SendContext.neverSent).
 * `where.approvalId`: the approval the dispatch reserved on.
 *
 * Right before each request leaves (beforeWrite), Redis is asked whether this worker may still send under its claim,
 * however recently a script proved it: no local clock can tell how long the process was stopped since. performance.now()
 * is monotonic, and a paused VM (a QEMU/KVM stop and continue, a snapshot, a live migration's blackout, a host suspend)
 * stops it too: the VM wakes reading a few ms since the proof while Redis's clock ran on, this worker's heartbeat
 * lapsed there, and another worker took the claim over and settled it, or is about to take the lapsed claim and trust
 * a lookup that finds nothing (DESIGN §7). So the check (check-epoch-2.lua) refuses, on Redis's clock, a claim that
 * moved or expired, a send deadline that passed, and an approval that was revoked or expired since the dispatch step.
 * What is left is a pause between Redis's answer and the bytes leaving, which the settle margin covers.
 */
export async function sendOnce(ctx: GateContext, where: { partition: string; effectId: string; epoch: number; approvalId: string; attempt?: string; neverSent?: true }, effect: Effect, requestId: string | null, deadlineAt: number): Promise<SendResult> {
  const { journal, heartbeat, target } = ctx;
  // Whether a watchdog thread watches this send (set once armed), and set once the send was aborted because this
  // worker's heartbeat could lapse (fenceSend): nothing of it leaves after.
  let watched = false;
  let aborted = false;
  // Set once the gate stopped waiting (the deadline, an abort): no request of the send passes beforeWrite after, so
  // what the gate answered then stays true.
  let givenUp = false;
  // Set once a request passed beforeWrite, the last step before it leaves: from then on its bytes may be out, and a
  // send the gate stops waiting for has an unknown outcome. Until then nothing was written (a target's reads before
  // its write change nothing), and the send is answered as fenced.
  let writing = false;
  const mayLeave = () => {
    if (aborted || (watched && heartbeatNearLapse(ctx))) throw new SendFenced("this worker's heartbeat could lapse before the request is answered (no beat reached Redis for most of its TTL)");
  };
  const holdsClaim = async () => {
    try {
      return await journal.holdsClaim(where.partition, where.effectId, ctx.owner, where.epoch, where.approvalId);
    } catch (error) {
      if (error instanceof ProcessCrash) throw error;
      // Redis did not answer (a dropped connection, a failover): the request is held, as when the claim was lost.
      const fenced = new SendFenced(`could not ask Redis whether this worker still holds the claim before the request left (${quoteError(error)}); nothing was sent`);
      fenced.cause = error;
      throw fenced;
    }
  };
  const context: SendContext = {
    requestId,
    ...(where.attempt === undefined ? {} : { attempt: where.attempt }),
    ...(where.neverSent === true ? { neverSent: true } : {}),
    timeLeftMs: () => (aborted ? 0 : Math.floor(deadlineAt - performance.now())),
    async beforeWrite() {
      if (deadlineAt - performance.now() <= 0) throw new SendFenced('the send deadline passed before the request could leave');
      mayLeave();
      const check = await holdsClaim();
      if (check !== true) throw new SendFenced(refusedSentence(check, where.approvalId));
      if (givenUp || deadlineAt - performance.now() <= 0) throw new SendFenced('the send deadline passed before the request could leave');
      // The claim's answer may have come after the heartbeat's bound (Redis away): the send was aborted meanwhile.
      mayLeave();
      writing = true;
    },
  };
  // No send of this worker may be in progress once its heartbeat key could have lapsed: the gate aborts the sends in
  // progress a little before (fenceSend), and the watchdog kills a process whose stalled event loop did not
  // (send-watchdog.ts). After Redis was away the beats failed and that bound has passed or is about to, while the
  // dispatch step just proved Redis is back: renew the heartbeat before the send begins, instead of starting one that
  // is aborted at once.
  if (ctx.watchdog !== undefined && heartbeat.aliveFor() < heartbeat.ttlMs / 2) {
    try {
      await heartbeat.beat();
    } catch (error) {
      return { fenced: `this worker's heartbeat could not be renewed before the send (${quoteError(error)}); nothing left` };
    }
    if (heartbeat.aliveFor() < heartbeat.ttlMs / 2) return { fenced: "this worker's heartbeat could not be renewed before the send (another process beats under its worker id); nothing left" };
  }
  const remaining = context.timeLeftMs();
  if (remaining <= 0) return { fenced: 'the send deadline passed before the request could start; nothing left' };
  const armsBefore = watchdogArms();
  const disarm = ctx.watchdog?.arm(deadlineAt);
  // With INTERLOCK_SEND_WATCHDOG=0 no thread watches the send, and nothing aborts it for the heartbeat (README).
  watched = watchdogArms() !== armsBefore;
  if (watched && heartbeatNearLapse(ctx)) {
    disarm?.();
    return { fenced: "this worker's heartbeat could lapse before the send would be answered; nothing left" };
  }
  let timer: NodeJS.Timeout | undefined;
  let unfence: (() => void) | undefined;
  // Set when the target failed to close the requests of this send once aborted: its slot is then held to the deadline.
  let keepArmed = false;
  const abortSends = target.abortSends?.bind(target);
  try {
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        givenUp = true;
        // No request passed beforeWrite (Redis slow to answer the claim check, a read before the write running long):
        // nothing was written, and none will be.
        if (!writing) reject(new SendFenced(`the send deadline (${target.sendTimeoutMs} ms) passed before any request of it left (its last check, or a read before it, was still running); nothing was sent`));
        else reject(new Error(`the target did not answer within the send deadline (${target.sendTimeoutMs} ms)`));
      }, remaining);
      // Aborted as at the deadline: the gate stops waiting, nothing more of it leaves (beforeWrite, timeLeftMs), the
      // target closes its requests still open (one still connecting would otherwise write its body after the lapse,
      // past the settle margin recovery counts from it), and only then is its slot freed, so the watchdog leaves the
      // process alone. A request already on the wire may still land: its outcome is unknown and the claim stays for
      // recovery, as after a timeout. A target that cannot close its requests (no abortSends) is not aborted: the
      // watchdog kills the process at the lapse, which closes them.
      if (watched && abortSends !== undefined) {
        unfence = fenceSend(ctx, () => {
          aborted = true;
          givenUp = true;
          try {
            abortSends();
          } catch (error) {
            keepArmed = true;
            ctx.logger.error(
              { workerId: heartbeat.workerId, effectId: where.effectId },
              `the target ${target.name} could not close the requests of an aborted send (${quoteError(error)}); its watchdog slot is held until the send deadline, so the send watchdog kills the process if this worker's heartbeat lapses before then`,
            );
          }
          if (!keepArmed) disarm?.();
          if (!writing) reject(new SendFenced(`the send was aborted before any request of it left: ${lapseReason(heartbeat)}, and no send may be in progress once its key could be gone; nothing was sent`));
          else reject(new Error(`the send was aborted: ${lapseReason(heartbeat)}, and no send may be in progress once its key could be gone; its outcome is unknown`));
        });
      }
    });
    return { landed: await Promise.race([target.apply(where.effectId, effect, context), deadline]) };
  } catch (thrown) {
    // Whatever the target threw is classified here, and that must not throw in its place (a Proxy whose traps throw).
    const error = inspectable(thrown);
    if (error instanceof ProcessCrash) throw error;
    if (error instanceof Rejected) return { rejected: error };
    if (error instanceof SendFenced) return { fenced: error.message, ...(error.cause === undefined ? {} : { cause: error.cause }) };
    // A refused key or permission (Stripe's 401/403) is answered before anything runs, and is stored under no key: the
    // send did nothing, so it is fenced carrying the error, which the gate answers as the configuration error it is
    // (submit throws it, recovery names it), never an unknown outcome holding the claim for a lookup.
    if (error instanceof InterlockError && error.code === 'target_misconfigured') return { fenced: error.message, cause: error };
    return { unknown: error };
  } finally {
    if (timer) clearTimeout(timer);
    unfence?.();
    // A request of the send may be open until its own timeout, the send deadline: the slot is freed then, not before.
    if (keepArmed && disarm !== undefined) setTimeout(disarm, Math.max(0, deadlineAt - performance.now())).unref();
    else disarm?.();
  }
}
