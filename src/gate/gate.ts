// The gate: submit() and recover() over a target, the Redis journal and the approvals store (DESIGN §3, §7).
// Decisions come from src/core; submit.ts, recover.ts and settle.ts sequence reads, atomic scripts and the send.
import { targetProblems } from '../core/target.js';
import { timingProblems } from '../core/timing.js';
import { errorMessage, InterlockError } from '../core/errors.js';
import { INBOX_OUTCOMES } from '../core/inbox.js';
import type { ParseOptions } from '../core/proposal.js';
import { createContext, type GateDeps, type GateResult } from './context.js';
import { createRecover } from './recover.js';
import { createSubmit, prepare } from './submit.js';

export type { GateDeps, GateEvents, GateResult, GateTiming, RecoveryReport } from './context.js';
export { PremiseReadError } from './context.js';

export type Gate = ReturnType<typeof createGate>;

export function createGate(deps: GateDeps) {
  const { journal, target, timing, heartbeat } = deps;
  // What the gate relies on from the target, checked before anything starts: the shape it declares, then its timing.
  // loadConfig checked the configuration against Stripe's window; the target may remember keys for less, and
  // brings its own send timeout. (The durability interval is no concern of the gate's.)
  const shape = targetProblems(target);
  const problems = timingProblems({ ...timing, heartbeatMs: heartbeat.intervalMs, heartbeatTtlMs: heartbeat.ttlMs, sendTimeoutMs: target.sendTimeoutMs, dedupWindowMs: target.dedupWindowMs, durabilityCheckMs: 1 });
  if (shape.length > 0) throw new InterlockError('invalid_config', `Target ${String(target.name).slice(0, 80)} is declared wrong, so the gate cannot rely on it: ${[...shape, ...problems.map((problem) => problem.message)].join('; ')}.`);
  if (problems.length > 0) throw new InterlockError('invalid_config', `The gate's timing is unsafe for target ${target.name}: ${problems.map((problem) => problem.message).join('; ')}.`);
  const ctx = createContext(deps);
  const { recover, recoverOne } = createRecover(ctx);
  const { submit, submitLatest } = createSubmit(ctx, (effectId, partition) => recoverOne(effectId, partition));

  /**
   * An outcome a person must look at opens its inbox item right after the entry that settled it (another Redis slot,
   * so not in the same step). A failure here is retryable: the effect's job runs again, its submit answers from the
   * journal and opens the item then.
   */
  async function escalate(effectId: string, outcome: string): Promise<void> {
    if (!deps.inbox || INBOX_OUTCOMES[outcome] === undefined) return;
    try {
      await deps.inbox.openFor(effectId);
    } catch (error) {
      throw new InterlockError('redis_unavailable', `Effect ${effectId} settled ${outcome}, but its inbox item could not be opened (${errorMessage(error)}); retry, and the item opens from the journal.`, { cause: error });
    }
  }

  /** What every judged answer gets: its inbox item when a person must look, and how long to wait when in flight. */
  async function finish(answer: GateResult): Promise<GateResult> {
    await escalate(answer.effectId, answer.outcome);
    if (answer.outcome === 'IN_FLIGHT' && answer.retryAt !== undefined) {
      const now = journal.clock.estimate() ?? (await journal.serverTime());
      answer.retryAfterMs = Math.max(0, answer.retryAt - now);
    }
    return answer;
  }

  return {
    owner: ctx.owner,
    target,
    /**
     * Submits a proposal; an IN_FLIGHT answer also says how long to wait before asking again. `options.recorded`: the
     * proposal was read back from the journal (latestProposal), whose request id is taken as it was recorded.
     */
    async submit(input: unknown, options: ParseOptions = {}): Promise<GateResult> {
      return finish(await submit(input, options));
    },
    /**
     * Submits the effect's latest recorded proposal (`carried`, the job's copy, when none is recorded); `judged` is
     * false when that proposal had been refused already, whose refusal is then the answer (see submit.ts).
     * `onlyEntry`: the carried proposal's PROPOSED as its producer wrote it when it began the chain (record.ts; a job's
     * data, so checked before it is used).
     */
    async submitLatest(effectId: string, carried: unknown, onlyEntry: unknown = null): Promise<{ answer: GateResult; judged: boolean }> {
      const { answer, judged } = await submitLatest(effectId, carried, onlyEntry);
      return { answer: judged ? await finish(answer) : answer, judged };
    },
    async recover(...args: Parameters<typeof recover>) {
      const report = await recover(...args);
      for (const settled of report.settled) {
        await escalate(settled.effectId, settled.outcome).catch((error: unknown) => deps.logger.error({ err: error, effectId: settled.effectId }, 'inbox item not opened; the effect\'s next job opens it from the journal'));
      }
      return report;
    },
    effectIdOf(input: unknown): string {
      return prepare(ctx, input).effectId;
    },
    async receipt(effectId: string) {
      return journal.receipt(effectId);
    },
  };
}
