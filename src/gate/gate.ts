// The gate: submit() and recover() over a target, the Redis journal and the approvals store (DESIGN §3, §7).
// Decisions come from src/core; submit.ts, recover.ts and settle.ts sequence reads, atomic scripts and the send.
import { timingProblems } from '../core/timing.js';
import { InterlockError } from '../core/errors.js';
import { createContext, type GateDeps, type GateResult } from './context.js';
import { createRecover } from './recover.js';
import { createSubmit, prepare } from './submit.js';

export type { GateDeps, GateEvents, GateResult, GateTiming, RecoveryReport } from './context.js';
export { PremiseReadError } from './context.js';

export type Gate = ReturnType<typeof createGate>;

export function createGate(deps: GateDeps) {
  const { journal, target, timing, heartbeat } = deps;
  // loadConfig checked the configuration against Stripe's window; the target may remember keys for less, and
  // brings its own send timeout. (The durability interval is no concern of the gate's.)
  const problems = timingProblems({ ...timing, heartbeatMs: heartbeat.intervalMs, heartbeatTtlMs: heartbeat.ttlMs, sendTimeoutMs: target.sendTimeoutMs, dedupWindowMs: target.dedupWindowMs, durabilityCheckMs: 1 });
  if (problems.length > 0) throw new InterlockError('invalid_config', `The gate's timing is unsafe for target ${target.name}: ${problems.map((problem) => problem.message).join('; ')}.`);
  const ctx = createContext(deps);
  const { recover, recoverOne } = createRecover(ctx);
  const submit = createSubmit(ctx, (effectId, partition) => recoverOne(effectId, partition));

  return {
    owner: ctx.owner,
    target,
    /** Submits a proposal; an IN_FLIGHT answer also says how long to wait before asking again. */
    async submit(input: unknown): Promise<GateResult> {
      const answer = await submit(input);
      if (answer.outcome === 'IN_FLIGHT' && answer.retryAt !== undefined) {
        const now = journal.clock.estimate() ?? (await journal.serverTime());
        answer.retryAfterMs = Math.max(0, answer.retryAt - now);
      }
      return answer;
    },
    recover,
    effectIdOf(input: unknown): string {
      return prepare(ctx, input).effectId;
    },
    async receipt(effectId: string) {
      return journal.receipt(effectId);
    },
  };
}
