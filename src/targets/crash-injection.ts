// Crash injection for the scenarios and the crash matrix (issue 9 §5): INTERLOCK_CRASH_AT=before_send|after_send
// makes the process SIGKILL itself, for real, at that point of its next send: before_send once the DISPATCHED is
// durable and right before the request would leave; after_send once the target answered and before anything
// recorded the answer. Honoured only against the sandbox or with a Stripe test key, never live.
//
// INTERLOCK_CRASH_BATCH=N makes the worker die with N sends at that point at once (a worker running several sends
// when it dies, as one with concurrency 16 does): each of the first N sends stops at the point and waits, and the
// Nth arrival kills the process. If fewer than N arrive, the process is killed when the first waiting send's
// deadline is 100 ms away, so it never sends late and never hangs.
import type { Target } from '../core/target.js';

export const CRASH_POINTS = ['before_send', 'after_send'] as const;
export type CrashPoint = (typeof CRASH_POINTS)[number];

export function isCrashPoint(value: string): value is CrashPoint {
  return (CRASH_POINTS as readonly string[]).includes(value);
}

export type CrashOptions = {
  kill?: () => void;
  /** Sends that reach the point before the kill (1: the next send). */
  batch?: number;
};

/** The target, with the process killed once at `point` of its next send (or of its next `batch` sends). */
export function withCrashAt(target: Target, point: CrashPoint, options: CrashOptions = {}): Target {
  const kill = options.kill ?? (() => process.kill(process.pid, 'SIGKILL'));
  const batch = options.batch ?? 1;
  let entered = 0;
  let arrived = 0;
  let killed = false;
  let fallback: NodeJS.Timeout | null = null;
  const releases: (() => void)[] = [];
  const killNow = () => {
    if (killed) return;
    killed = true;
    if (fallback !== null) clearTimeout(fallback);
    kill();
    // SIGKILL does not return; a test's kill function may, and then the waiting sends end without sending more.
    for (const release of releases.splice(0)) release();
  };
  /** Holds this send at the point until the batch is complete (or the first waiter's deadline is near). */
  const reachPoint = (timeLeftMs: number): Promise<void> => {
    arrived += 1;
    if (arrived >= batch) {
      killNow();
      return Promise.resolve();
    }
    fallback ??= setTimeout(killNow, Math.max(0, timeLeftMs - 100));
    return new Promise((resolve) => releases.push(resolve));
  };
  return {
    ...target,
    async apply(effectId, effect, context) {
      // Only the first `batch` sends are part of the crash; any later one goes through as if nothing were armed.
      entered += 1;
      if (killed || entered > batch) return target.apply(effectId, effect, context);
      if (point === 'before_send') {
        await reachPoint(context.timeLeftMs());
        throw new Error('the process was killed before the send');
      }
      await target.apply(effectId, effect, context);
      await reachPoint(context.timeLeftMs());
      throw new Error('the process was killed after the send');
    },
  };
}
