// Crash injection for the scenarios and the crash matrix (issue 9 §5): INTERLOCK_CRASH_AT=before_send|after_send
// makes the process SIGKILL itself, for real, at that point of its next send: before_send once the DISPATCHED is
// durable and right before the request would leave; after_send once the target answered and before anything
// recorded the answer. Honoured only against the sandbox or with a Stripe test key, never live.
import type { Target } from '../core/target.js';

export const CRASH_POINTS = ['before_send', 'after_send'] as const;
export type CrashPoint = (typeof CRASH_POINTS)[number];

export function isCrashPoint(value: string): value is CrashPoint {
  return (CRASH_POINTS as readonly string[]).includes(value);
}

/** The target, with the process killed once at `point` of its next send. */
export function withCrashAt(target: Target, point: CrashPoint, kill: () => void = () => process.kill(process.pid, 'SIGKILL')): Target {
  let armed = true;
  return {
    ...target,
    async apply(effectId, effect, context) {
      if (!armed) return target.apply(effectId, effect, context);
      armed = false;
      if (point === 'before_send') {
        kill();
        // SIGKILL does not return; a test's kill function may, and then nothing is sent.
        throw new Error('the process was killed before the send');
      }
      await target.apply(effectId, effect, context);
      kill();
      throw new Error('the process was killed after the send');
    },
  };
}
