// The effects queue: one BullMQ job per gated effect, its id the effect id (so a second enqueue of one effect is a
// no-op), its data the recorded proposal. The worker hands each job to gate.submit. BullMQ is at-least-once; the
// gate's claims and recovery, not BullMQ's lock, are what make an effect reach Stripe at most once.
import { setTimeout as sleep } from 'node:timers/promises';
import { DelayedError, Queue, UnrecoverableError, Worker, type Job } from 'bullmq';
import { activeJobs, afterOutages, orphansOf } from './after-outages.js';
import { closeWorker } from './closing.js';
import { logWorkerErrors } from './worker-errors.js';
import { createRecheck, jobEvents, waitForJob } from './job-events.js';
import { queueRecorded } from './recorded.js';
export { wasRecorded } from './recorded.js';
import { closeConnection, createProposalRecall, createProposalRecorder, currencyOfEffectOrCredit, currentOutcome, describeEffect, errorCode, explainOutcome, errorMessage, InterlockError, isRedisOutage, isRefusal, isRetryable, journalOf, latestProposal, limitedErrorLog, LONGEST_RETRY_AFTER_MS, moneyText, openDispatch, proposalJudged, settledOutcome, slowDownOf, TooManyProposals, withinRedisTimeout, type GateResult, type OnlyEntry, type Proposal, type Recalled, type Recorded, type Sender, type SlowDown, type Stores } from '../src/interlock.js';

/**
 * `transient`: the job's failures before its effect was judged (see afterTransientFailure); absent on a fresh job.
 * `revived`: the job replaces one that failed for good (the same request sent again), which may have raised a
 * not_judged alert for the effect.
 * `onlyEntry`: the PROPOSED its producer wrote, when that began the effect's chain. The job's first run takes the
 * chain to be that entry alone and dispatches without reading it: the entry's hash is checked against the proposal,
 * and the dispatch step's head check proves the rest (a chain that moved is read, and judged, as without it).
 * `outbox`: the token of its producer's outbox entry (journal.ts OUTBOX_TOKEN), which stays until a run of this job
 * judges the effect (or finds it judged) or the job fails for good: should the job go before that (removed by hand,
 * its queue's keys deleted), recovery queues the proposal again. Absent on a job queued by recovery or by an older
 * producer (their entries, if any, go once recovery finds the effect judged).
 */
export type EffectJob = { proposal: unknown; recordedAt: number; transient?: TransientFailures; revived?: true; onlyEntry?: OnlyEntry; unresolved?: number; outbox?: string };
export type EffectAnswer = GateResult;

export type EffectsQueueOptions = {
  /**
   * BullMQ's attempts, for a job whose worker could not even move it to wait (Redis gone again mid-failure). A submit
   * that failed retryably (a premise read Stripe did not answer, a Redis hiccup) does not use them: the worker keeps
   * the job delayed for as long as its transientRetry window lasts.
   */
  attempts?: number;
  /** The first of BullMQ's exponential backoff delays between those attempts, ms. */
  backoffMs?: number;
};

const DEFAULT_ATTEMPTS = 8;
const DEFAULT_BACKOFF_MS = 1_000;

/**
 * The margin longestOwnJobDelayMs adds for clock skew: BullMQ keeps a job delayed until an instant on the clock of the
 * process that delayed it (delayedUntil), which the process reading it compares with its own.
 */
const DELAY_CLOCK_SKEW_MS = 5 * 60_000;

/**
 * The longest the service itself keeps an effects job delayed while the effect's dispatch is not open, plus
 * DELAY_CLOCK_SKEW_MS, in ms: BullMQ's backoff before the last of its attempts (exponential from backoffMs), a retry
 * while the effect could not be judged or an UNRESOLVED answer (at most the transient retry's longest wait:
 * TRANSIENT_RETRY's, or INTERLOCK_RETRY_MAX_DELAY_MS as the service starts its workers), an IN_FLIGHT answer's wait
 * for a claim (INTERLOCK_CLAIM_TTL_MS), and Stripe's longest Retry-After honoured (LONGEST_RETRY_AFTER_MS). While a
 * dispatch is open recovery settles the effect whatever its job does, and the job waits as recovery says (up to an
 * hour between resends), so this bound is not asked then. A job delayed longer was delayed by someone else (a job
 * added under the effect's id with a `delay`, a job moved to the delayed set by hand) or by a bug: the producer and
 * recovery's requeue promote it (queueJob).
 */
export function longestOwnJobDelayMs(config: Pick<Stores['config'], 'retryMaxDelayMs' | 'claimTtlMs'>, options: EffectsQueueOptions = {}): number {
  const backoff = (options.backoffMs ?? DEFAULT_BACKOFF_MS) * 2 ** Math.max(0, (options.attempts ?? DEFAULT_ATTEMPTS) - 2);
  return Math.max(backoff, TRANSIENT_RETRY.maxDelayMs, config.retryMaxDelayMs, config.claimTtlMs, LONGEST_RETRY_AFTER_MS) + DELAY_CLOCK_SKEW_MS;
}

/** Producer side: records a proposal (I5 at the edge) and queues it; `waitFor` hears the outcome (job events, and the journal). */
export function createEffectsQueue(stores: Stores, options: EffectsQueueOptions = {}) {
  const connection = stores.queueConnection();
  const queue = new Queue<EffectJob, EffectAnswer>(stores.queues.effects, { connection, ...stores.bullmq });
  logWorkerErrors(queue, stores.logger, 'effects queue error');
  const record = createProposalRecorder(stores);
  const recall = createProposalRecall(stores);
  const longestOwnDelayMs = longestOwnJobDelayMs(stores.config, options);
  // The queue's event stream, subscribed before any job is looked at, so no completion can slip between.
  const events = jobEvents(stores, stores.queues.effects);
  // The journal asked again while anyone waits on an effect: an effect can settle with no job of it finishing (a worker
  // died after dispatching; recovery settles it within seconds of its heartbeat lapsing, while BullMQ counts its job as
  // running until the lock lapses, 60 to 90 s). Asked once per heartbeat, the cadence recovery itself moves at, so the
  // answer comes at most a heartbeat (1 s by default) after the journal holds it. One chain read per waited-on effect
  // per heartbeat, shared by every wait on it in this process.
  const rechecked = createRecheck<EffectAnswer>(stores.config.heartbeatMs, async (effectId) => {
    const outcome = await settledOutcome(stores, effectId);
    return outcome === null ? null : ({ effectId, outcome } as EffectAnswer);
  });

  /**
   * Queues the job of the effect's proposal number `proposals`. A job runs the effect's latest recorded proposal (the
   * worker reads it from the journal). One that is waiting or delayed will pick up a proposal recorded now; one that
   * already ran, or is running, will not, so a re-decision (a proposal recorded after a refusal) gets a follow-up job
   * of its own, its id derived from the proposal's place among the effect's proposals: the same request sent again
   * after its enqueue failed (it is answered `exists`, its proposal unsettled) queues that job, once.
   * Whether the effect's job has started (is running, or ran): one read of the job's hash, O(1) whatever the backlog
   * (BullMQ's getJobState scans the waiting list). A job that ran once and waits for a retry counts as started; its
   * follow-up finds the effect settled or submits the same latest proposal, both harmless.
   * The queue's connection waits out a Redis outage (BullMQ needs that); the caller bounds the wait, and a job queued
   * late runs the proposal as recorded. `outbox`: the token the job carries (EffectJob). Without `revive`, a job that
   * failed for good is left as it is and answered 'failed'. A job found delayed for longer than the service ever
   * delays one is promoted (promoteStranded), unless the effect's dispatch is open (`dispatchOpen`: recovery settles it,
   * and the job waits as recovery said).
   */
  async function queueJob(effectId: string, proposals: number, proposal: unknown, onlyEntry: OnlyEntry | null, how: { revive: boolean; dispatchOpen: boolean; outbox?: string }): Promise<'added' | 'existed' | 'revived' | 'failed'> {
    const { revive, dispatchOpen, outbox } = how;
    const [processedOn, timestamp] = await connection.hmget(queue.toKey(effectId), 'processedOn', 'timestamp');
    const followUp = proposals > 1 && processedOn !== null && processedOn !== undefined;
    const jobId = followUp ? `${effectId}.${proposals}` : effectId;
    // Whether the job is there already (the add below is then a no-op): the effect's own job was just read; a follow-up's is asked.
    const existed = followUp ? (await connection.exists(queue.toKey(jobId))) === 1 : timestamp !== null && timestamp !== undefined;
    const add = (revived: boolean) =>
      queue.add('effect', { proposal, recordedAt: Date.now(), ...(revived ? { revived: true as const } : {}), ...(onlyEntry !== null ? { onlyEntry } : {}), ...(outbox !== undefined ? { outbox } : {}) }, {
        jobId,
        attempts: options.attempts ?? DEFAULT_ATTEMPTS,
        backoff: { type: 'exponential', delay: options.backoffMs ?? DEFAULT_BACKOFF_MS },
        // Receipts keep the record; finished jobs are kept a while for operators, then dropped.
        removeOnComplete: { age: 24 * 3_600, count: 10_000 },
        removeOnFail: { age: 7 * 24 * 3_600 },
      });
    await add(false);
    // A job that failed for good (its effect unjudged: this request is not settled, or it was not queued) still
    // holds the id for a week, and the add above was a no-op: the same request sent again, as the not_judged alert
    // asks once the cause is fixed, replaces it. One read of the failed set, O(log n). Two senders replacing at
    // once leave one job or two (a duplicate job is harmless); a job a worker already holds is not removed (0).
    // A job that was there already is also asked until when it is delayed, if it is: one read of the delayed set, O(1),
    // sent with the other.
    const [failedScore, delayedScore] = await Promise.all([
      revive || existed ? connection.zscore(queue.toKey('failed'), jobId) : null,
      existed && !dispatchOpen ? connection.zscore(queue.toKey('delayed'), jobId) : null,
    ]);
    const failed = failedScore !== null;
    if (failed && !revive) return 'failed';
    if (failed) {
      await queue.remove(jobId);
      await add(true);
      stores.logger.info({ effectId, jobId }, 'effect job had failed for good; queued again');
      return 'revived';
    }
    if (delayedScore !== null) await promoteStranded(effectId, jobId, Number(delayedScore));
    return existed ? 'existed' : 'added';
  }

  /**
   * An effect's job delayed (BullMQ's delayed set scores a job by the instant it is due, times 0x1000) longer than the
   * service ever delays one (longestOwnJobDelayMs) would leave the effect unjudged for that long, and nothing else
   * judges it: the job is promoted (BullMQ's promote: to waiting, as though its delay were over) and a warning names it.
   * The instant is on the clock of whoever delayed the job (BullMQ never asks Redis's), so it is read against this
   * process's. A promote that fails (the job left the delayed set meanwhile, Redis away) is logged; the job stands, so
   * recovery keeps the effect's outbox entry and its next pass past the grace looks again.
   */
  async function promoteStranded(effectId: string, jobId: string, delayedScore: number): Promise<void> {
    const delayedUntilMs = Math.floor(delayedScore / 0x1000);
    const delayMs = delayedUntilMs - Date.now();
    if (delayMs <= longestOwnDelayMs) return;
    // A score written by hand may be no instant at all (+inf, or past the year 275760).
    const until = new Date(delayedUntilMs);
    const found = { effectId, jobId, delayMs, delayedUntil: Number.isNaN(until.getTime()) ? null : until.toISOString(), longestOwnDelayMs };
    try {
      await queue.backend.promote(jobId);
    } catch (error) {
      stores.logger.warn({ err: error, ...found }, "an effect's job was delayed far longer than the service delays one, and could not be promoted (it may have left the delayed set meanwhile); recovery looks again");
      return;
    }
    stores.logger.warn(
      found,
      `an effect's job was delayed far longer than the service ever delays one (at most ${Math.round(longestOwnDelayMs / 60_000)} min), which would have left the effect unjudged all that time: promoted, so it runs now. Someone added or moved the job by hand (a delay given to Queue.add, the dashboard, a write to the queue's keys), or a bug did: look at who can write the queue keys`,
    );
  }

  /** The effect's latest recorded proposal and how many it holds, while it stands unjudged; null once judged, or when none is recorded. */
  async function unjudgedLatest(effectId: string): Promise<{ proposals: number; proposal: Proposal; dispatchOpen: boolean } | null> {
    const partition = await stores.journal.partitionOf(effectId);
    if (partition === null) return null;
    const entries = await stores.journal.entries(partition, effectId);
    const proposals = entries.filter((entry) => entry.kind === 'PROPOSED').length;
    if (proposals === 0 || currentOutcome(entries) !== null) return null;
    const proposal = await latestProposal(stores, effectId);
    return proposal === null ? null : { proposals, proposal, dispatchOpen: openDispatch(entries) !== null };
  }

  /**
   * A new decision refused with too_many_proposals (record.ts MAX_PROPOSALS) waits for the effect to be judged, which
   * only its latest proposal's job can do. When that job failed for good (Stripe's reads failing past the transient
   * window raised a not_judged alert, and recovery's requeue leaves such a job alone), nothing would judge the effect,
   * and every re-decision after it would be refused for ever. So the refusal makes sure the latest proposal has a live
   * job, as the same request sent again does: a job that failed for good is replaced, a missing one added, a live one
   * left as it is. Once that job judges the effect, a refusal lets re-decisions in again and any other outcome answers
   * them as the effect stands. Nothing is written to the chain, so the cap's count (read on the chain its append would
   * be placed on) is untouched. The answer is the refusal, saying so when the latest decision was queued again: the
   * caller waits for the effect and sends its decision again. Bounded like queuing (the queue's connection waits out
   * outages); a failure to queue leaves the refusal as it was, and the next refused decision tries again.
   */
  async function afterTooMany(refused: TooManyProposals): Promise<InterlockError> {
    // The effect the recorder refused the decision for: the caller's input is not read again (it was read once, and a
    // getter of it may answer otherwise now).
    const { effectId } = refused;
    // The job carries no outbox token (the refused decision's entry went with its refusal): should it go before judging
    // the effect, the next decision refused here, or the latest sent again, queues it again.
    const queueLatest = async (): Promise<Awaited<ReturnType<typeof queueJob>> | null> => {
      const unjudged = await unjudgedLatest(effectId);
      return unjudged === null ? null : queueJob(effectId, unjudged.proposals, unjudged.proposal, null, { revive: true, dispatchOpen: unjudged.dispatchOpen });
    };
    const ms = stores.config.redisCommandTimeoutMs;
    let queued: Awaited<ReturnType<typeof queueLatest>>;
    try {
      queued = await withinRedisTimeout(queueLatest(), ms, `Redis did not answer within ${ms} ms`);
    } catch (error) {
      stores.logger.warn({ err: error, effectId }, 'a decision was refused as too many, and the effect\'s latest decision could not be checked for a live job');
      return refused;
    }
    if (queued !== 'added' && queued !== 'revived') return refused;
    stores.logger.warn({ effectId, queued }, 'a decision was refused as too many while the latest decision had no live job (it had failed for good, or was gone); queued it again');
    return new InterlockError(
      'too_many_proposals',
      `${refused.message} Its latest decision had no job left to judge it (that job had failed for good, or was gone), so it was queued again now: once the effect is judged, send this decision again.`,
      { cause: refused },
    );
  }

  return {
    queue,
    /**
     * Records the proposal and queues it, unless recording refused it (another payload under this request id) or
     * it is already settled. The facts it carries as premises were read by the caller at decision time. `firstOnly`:
     * record it only when the effect holds no proposal yet (a case's decision; see the recorder).
     */
    async propose(proposal: unknown, how: { firstOnly?: boolean } = {}): Promise<Recorded & { queued: boolean }> {
      const { outbox, ...recorded } = await record(proposal, { ...how, outbox: true }).catch(async (error: unknown) => {
        throw error instanceof TooManyProposals ? await afterTooMany(error) : error;
      });
      if (recorded.status === 'conflict' || (recorded.status === 'exists' && recorded.outcome !== null && !recorded.open)) return { ...recorded, queued: false };
      // Recorded: a failure to queue it is never answered as "nothing was recorded" (queues/recorded.ts). The binding's
      // outbox entry stays until the effect is judged (the job carries its token, and its worker drops it), so recovery
      // queues the proposal if its job never comes or goes before judging it. A job that was there already carries
      // its own token, or none; this entry then goes once recovery finds the effect judged.
      const queued = async () => {
        // The proposal as recorded (read once from the caller's input), not the input again: a getter of it may answer
        // otherwise on a second read, and the job's copy is checked against the journal's entry.
        const fresh = recorded.status === 'recorded';
        await queueJob(recorded.effectId, recorded.proposals, recorded.proposal, fresh ? recorded.onlyEntry : null, { revive: true, dispatchOpen: !fresh && recorded.open, ...(outbox === undefined ? {} : { outbox }) });
      };
      await queueRecorded(queued, stores.config.redisCommandTimeoutMs, {
        done: `Effect ${recorded.effectId} was recorded`,
        retry: 'Send the same request again',
        again: 'a proposal repeated with the same request_id is answered from the journal and queued if it is not, and its money moves at most once.',
      });
      return { ...recorded, queued: true };
    },
    /**
     * Queues the effect's latest recorded proposal if it stands unjudged (recovery's outbox sweep: a proposal whose
     * producer recorded it and died, or lost Redis, before its job was added, or whose job was removed before it
     * judged the effect). The job is the one its producer would have added, so a job that exists already makes this a
     * no-op. Answers whether a job stands for the proposal: one added now, or one there already (waiting, delayed,
     * running); false when the effect is judged, nothing is recorded, or its job failed for good. Recovery keeps the
     * effect's outbox entries while this answers true, and drops them when it answers false.
     */
    async requeue(effectId: string): Promise<boolean> {
      const unjudged = await unjudgedLatest(effectId);
      if (unjudged === null) return false;
      // A job that exists (waiting behind a backlog, say) is left as it is, unless it is delayed longer than the service
      // delays one (it is promoted); so is one that failed for good: its not_judged alert asks a person to fix the cause
      // and send the request again, and a sweep must not retry it.
      const queued = await queueJob(effectId, unjudged.proposals, unjudged.proposal, null, { revive: false, dispatchOpen: unjudged.dispatchOpen });
      if (queued === 'failed') return false;
      if (queued === 'added') stores.logger.warn({ effectId }, 'a recorded proposal had no job (its producer stopped before queuing it, or the job was removed); queued now');
      return true;
    },
    /**
     * The journal's answer to a proposal whose facts could not be read (Stripe not answering), where it needs none:
     * another payload under its request id, or an effect nothing more can happen to (record.ts, createRecall). It
     * records and queues nothing.
     */
    async recall(proposal: unknown): Promise<Recalled> {
      return recall(proposal);
    },
    /**
     * The effect's answer once a job of it finished with one (heard on the queue's event stream), or once the journal
     * holds the outcome: at once when it does already, and otherwise within a heartbeat of its getting there however
     * it did (recovery settles a dead worker's effect with no job finishing; the journal is asked again each heartbeat
     * while anyone waits on the effect); null when neither happened within `timeoutMs`. The answer
     * is the latest proposal's: a re-decision (a proposal recorded after a refusal) waited on right after the refusal
     * is not answered by the refused proposal's job, which BullMQ completes only after the refusal is in the journal.
     * `signal` ends the wait (waitForJob).
     */
    async waitFor(effectId: string, timeoutMs: number, signal?: AbortSignal): Promise<EffectAnswer | null> {
      return waitForJob<EffectAnswer | null>(events, {
        ours: (jobId) => jobId === effectId || jobId.startsWith(`${effectId}.`),
        timeoutMs,
        ...(signal === undefined ? {} : { signal }),
        // Subscribed first, then the journal is asked: an outcome cannot slip in between.
        settled: async () => {
          const outcome = await settledOutcome(stores, effectId);
          return outcome === null ? null : ({ effectId, outcome } as EffectAnswer);
        },
        recheck: (heard) => rechecked.watch(effectId, heard),
        // Only a refusal can be followed by another proposal, so only a refusal is checked against the journal (one
        // read): it answers unless the journal holds no outcome (a re-decision recorded since, not judged yet); a
        // journal whose outcome moved on (a landing reported since) ends the wait too, and callers read the journal. A
        // refusal of another payload (conflicting_payload) answers that request for good and is no outcome of the
        // effect's. Any other answer settled the effect for good.
        answers: async (finish) => {
          if (finish.kind !== 'completed') return true;
          const { outcome } = answerOf(finish.returnvalue);
          return !isRefusal(outcome) || outcome === 'REFUSED:conflicting_payload' || (await settledOutcome(stores, effectId)) !== null;
        },
        // A job that failed for good (bad input the gate refused to take) has no answer; the caller reads the journal.
        // A refusal whose effect the journal shows settled otherwise since (a re-decision that committed before the
        // refused job's completion was heard) is answered with the journal's outcome: the latest proposal's.
        answer: async (finish) => {
          if (finish.kind !== 'completed') return null;
          const heard = answerOf(finish.returnvalue);
          if (!isRefusal(heard.outcome) || heard.outcome === 'REFUSED:conflicting_payload') return heard;
          const settled = await settledOutcome(stores, effectId);
          return settled === null || settled === heard.outcome ? heard : ({ effectId, outcome: settled } as EffectAnswer);
        },
      });
    },
    /**
     * Closes the producer. Its connection waits out outages (BullMQ needs that), so a QUIT to a Redis that stopped
     * answering waits as long as Redis does: a command that must end gives it `withinMs` and has the connection dropped
     * after that, or drops it at once (`drop`) when its own commands failed (closeConnection).
     */
    async close(how: { withinMs?: number; drop?: boolean } = {}): Promise<void> {
      rechecked.close();
      await events.close();
      await queue.close();
      await closeConnection(connection, how);
    },
  };
}

export type EffectsQueue = ReturnType<typeof createEffectsQueue>;

/** A completed job's answer, as the event stream carries it (BullMQ sends it as JSON). */
function answerOf(returnvalue: unknown): EffectAnswer {
  return (typeof returnvalue === 'string' ? JSON.parse(returnvalue) : returnvalue) as EffectAnswer;
}

export type EffectsWorkerOptions = {
  concurrency?: number;
  /**
   * How a job whose submit failed before the gate judged its effect (a premise read Stripe did not answer, Redis
   * not answering or not durable) is tried again: see TRANSIENT_RETRY.
   */
  transientRetry?: Partial<TransientRetry>;
  /**
   * At most this many jobs per second across every worker of the queue (BullMQ's limiter is the queue's, and
   * Stripe's limit is the account's: about 100 requests/s live, 25 in test mode).
   */
  ratePerSecond?: number | null;
  /** How long the queue pauses after Stripe rate-limited a call without naming a Retry-After. */
  rateLimitBackoffMs?: number;
  /**
   * Called with each answer (metrics) and awaited before the job finishes, so whoever hears the job's completion
   * sees what it counted. It must not throw; a failure of its own is its to log.
   */
  onAnswer?: (answer: EffectAnswer) => void | Promise<void>;
};

/**
 * Retrying a job that failed before its effect was judged. The wait doubles from `firstDelayMs` up to `maxDelayMs`,
 * so a blip costs a second and an outage is asked about every few minutes; the job gives up (fails for good, and a
 * not_judged alert is raised) only once the failures have lasted `forMs`. BullMQ's own attempts (8, exponential from
 * 1 s) would give up after two to four minutes, and a few minutes of Stripe 5xx would leave the proposal unjudged.
 * Six hours outlasts the Stripe and Redis outages worth waiting for; past that a person should know. Units: ms.
 */
export type TransientRetry = { firstDelayMs: number; maxDelayMs: number; forMs: number };
export const TRANSIENT_RETRY: TransientRetry = { firstDelayMs: 1_000, maxDelayMs: 5 * 60_000, forMs: 6 * 3_600_000 };

/** Where a job's failures before judging stand (kept in the job's data); `failingSince` is Redis time (redisNow), ms. */
export type TransientFailures = { failures: number; failingSince: number };

/**
 * Redis's time now, ms, as a worker reads it most cheaply: the journal's estimate from its recent script replies
 * (clock.ts: late by at most a round trip), or TIME when it has none. A retry window kept in a job's data is counted
 * on it, since the job's next run may be on another worker, whose own clock may differ by any amount.
 */
export async function redisNow(stores: Stores): Promise<number> {
  return journalOf(stores).clock.estimate() ?? (await stores.journal.serverTime());
}

/**
 * The instant Job.moveToDelayed expects for a retry due at `at` on Redis's clock (read as `now`). BullMQ (6.7) takes the
 * delay as that instant less this process's Date.now() and keeps the job delayed until a worker's Date.now() passes its
 * own clock plus the delay (moveToDelayed-11.lua, promoteDelayedJobs: Redis's TIME is never asked), so only the wait is
 * carried over, onto the local clock.
 */
export function delayedUntil(at: number, now: number): number {
  return Date.now() + Math.max(0, at - now);
}

/**
 * After one more failure at `now` (Redis time, ms: redisNow): when to try again (`at`, Redis time), or give up. Pure.
 * A job that has failed since `failingSince` gives up once `forMs` has passed; a retry due after that point is still
 * made, at that point, so the last try comes at the end of the window, not before it.
 */
export function afterTransientFailure(before: TransientFailures | null, now: number, policy: TransientRetry): { kind: 'retry'; at: number; state: TransientFailures } | { kind: 'give-up'; state: TransientFailures } {
  const state = { failures: (before?.failures ?? 0) + 1, failingSince: before?.failingSince ?? now };
  const deadline = state.failingSince + policy.forMs;
  if (now >= deadline) return { kind: 'give-up', state };
  const delay = Math.min(policy.maxDelayMs, policy.firstDelayMs * 2 ** Math.min(state.failures - 1, 40));
  return { kind: 'retry', at: Math.min(now + delay, deadline), state };
}

/**
 * The effect an effects job's id names: the effect id itself, or that id, a dot and a suffix for a follow-up job (the
 * producer's proposal number; an older producer's was base 36). Null for any other id: no producer queued that job.
 */
export function effectOfJob(jobId: string | undefined): string | null {
  return /^([0-9a-f]{64})(?:\.[0-9a-z]+)?$/.exec(jobId ?? '')?.[1] ?? null;
}

/** An effects worker's name: its sender's worker id and boot nonce (the nonce is hex, so the last colon splits them). */
function holderName(heartbeat: Sender['heartbeat']): string {
  return `${heartbeat.workerId}:${heartbeat.nonce}`;
}

/** BullMQ's limiter with no limit of its own (see below why one is always set). */
const UNLIMITED_JOBS_PER_SECOND = 1_000_000;

/**
 * What a job comes to, from the gate's answer: done, ask again at an instant, or retry with backoff. An UNRESOLVED
 * answer (recovery itself failed: Stripe or its lookup not answering) is asked again after the transient policy's
 * first delay, doubling with each such answer in a row (`unresolvedBefore`), up to its longest: during a Stripe outage
 * every stuck effect asking each second would only add to the load the outage already has.
 */
export function disposition(answer: EffectAnswer, unresolvedBefore = 0, policy: Pick<TransientRetry, 'firstDelayMs' | 'maxDelayMs'> = TRANSIENT_RETRY): { kind: 'done' } | { kind: 'later'; at: number } {
  if (answer.outcome === 'IN_FLIGHT') return { kind: 'later', at: Date.now() + Math.max(50, answer.retryAfterMs ?? 1_000) };
  if (answer.outcome.startsWith('UNRESOLVED:')) return { kind: 'later', at: Date.now() + Math.min(policy.maxDelayMs, policy.firstDelayMs * 2 ** Math.min(unresolvedBefore, 30)) };
  return { kind: 'done' };
}

/**
 * The effects worker. Lock and stall settings: a job's lock lasts 60 s and is renewed while its submit runs (a send
 * takes at most the send timeout, 30 s by default), and a job whose worker died is handed to another worker once
 * the lock lapses. That is slow on purpose: the gate's heartbeat takeover settles a dead worker's effect within
 * seconds, and the re-delivered job then only finds it settled. A job is never failed for stalling (a high
 * maxStalledCount): a stall is a worker's death, which the gate recovers from, not a fault of the effect.
 */
/**
 * Pauses the queue `worker` takes jobs from for `ms`, unless a pause already in force lasts longer: a 429 that names no
 * Retry-After (or a shorter one) must not cut short the pause another worker, or a recovery pass, set for a longer one.
 * A pause is BullMQ's limiter key holding Number.MAX_SAFE_INTEGER (Worker.rateLimit), which getRateLimitTtl(that
 * number) reads; the INTERLOCK_STRIPE_RATE limiter's count in the same key reads as none (queues/recovery.ts reads it
 * so too). Read, then set: two workers racing may both set theirs, the later winning, as before.
 */
export async function pauseAtLeast(worker: { backend: { getRateLimitTtl(maxJobs?: number): Promise<number> }; rateLimit(ms: number): Promise<void> }, ms: number): Promise<void> {
  if ((await worker.backend.getRateLimitTtl(Number.MAX_SAFE_INTEGER)) >= ms) return;
  await worker.rateLimit(ms);
}

/**
 * The longest the effects queue's limiter key is ever set for by the service itself (README "Rate limits"): a pause
 * for Stripe's Retry-After, read as at most LONGEST_RETRY_AFTER_MS (15 min), or for INTERLOCK_RATE_LIMIT_BACKOFF_MS (at
 * most 10 min) when it names none; the INTERLOCK_STRIPE_RATE limiter's count lasts a second. With a minute's margin.
 * A key with longer left was written by someone else (BullMQ's Queue.rateLimit from a script, or a SET on the key), and
 * honoured as it stands it would hold every effects worker and every recovery pass for as long as it says.
 */
export const LONGEST_OWN_PAUSE_MS = LONGEST_RETRY_AFTER_MS + 60_000;

/**
 * Cuts a pause of the effects queue longer than the service ever sets (LONGEST_OWN_PAUSE_MS) to LONGEST_RETRY_AFTER_MS,
 * so the workers and recovery honour it that long at most, and logs an error naming the key, what it had left and how
 * to clear it. PEXPIRE LT is one step that only shortens: a pause a 429 set meanwhile (never longer than the cut) is
 * kept. Answers what the pause had left when it was cut (ms) and its key, or null when the key held none so long.
 * `by`: who found it, for the log.
 */
export async function cutHandSetPause(queue: { toKey(type: string): string }, connection: ReturnType<Stores['queueConnection']>, logger: Stores['logger'], by: string): Promise<{ leftMs: number; key: string } | null> {
  const key = queue.toKey('limiter');
  const leftMs = await connection.pttl(key);
  if (leftMs <= LONGEST_OWN_PAUSE_MS) return null;
  await connection.pexpire(key, LONGEST_RETRY_AFTER_MS, 'LT');
  const longestMin = LONGEST_RETRY_AFTER_MS / 60_000;
  logger.error(
    { key, leftMs, leftHours: Math.round((leftMs / 3_600_000) * 10) / 10, cutToMs: LONGEST_RETRY_AFTER_MS, by },
    `the effects queue's rate-limit key held a pause longer than any the service sets (a 429's is at most ${longestMin} min): someone set it by hand (BullMQ Queue.rateLimit, or a SET on the key), and it held every effects worker and recovery pass, no money sent and no effect recovered. It was cut to ${longestMin} min; to clear it now: redis-cli DEL ${key}. To hold the effects queue on purpose, pause it (Queue.pause, the dashboard's Pause), which /readyz and interlock_queue_paused report; and look at who can write the queue keys`,
  );
  return { leftMs, key };
}

/**
 * Whether the queue is paused (BullMQ Queue.pause: what the dashboard's Pause, or `queue.pause()` in a script, does): its
 * meta hash holds `paused`. A paused queue's workers take none of its jobs, however many wait, until it is resumed.
 */
export function queuePaused(queue: { backend: { hasQueueMetaField(field: string): Promise<boolean> } }): Promise<boolean> {
  return queue.backend.hasQueueMetaField('paused');
}

export function startEffectsWorker(stores: Stores, sender: Sender, options: EffectsWorkerOptions = {}) {
  const { gate, heartbeat } = sender;
  const { logger } = stores;
  const transientRetry: TransientRetry = { ...TRANSIENT_RETRY, ...options.transientRetry };
  const connection = stores.queueConnection();
  const worker = new Worker<EffectJob, EffectAnswer>(
    stores.queues.effects,
    async (job: Job<EffectJob, EffectAnswer>, token?: string) => {
      running.add(job.id ?? '');
      try {
        return await runJob(job, token);
      } finally {
        running.delete(job.id ?? '');
      }
    },
    {
      connection,
      ...stores.bullmq,
      concurrency: options.concurrency ?? 16,
      lockDuration: 60_000,
      stalledInterval: 30_000,
      maxStalledCount: 1_000,
      // What BullMQ keeps on each job it hands this worker (processedBy): the process's heartbeat, by which a worker
      // starting up tells a live holder's job from a dead one's (byHolder).
      name: holderName(heartbeat),
      // A limiter is always set: BullMQ honours a manual pause (rateLimit below) only on a queue with one.
      limiter: { max: options.ratePerSecond ?? UNLIMITED_JOBS_PER_SECOND, duration: 1_000 },
      // Started below, once the jobs other workers hold are known (see adoptOrphans).
      autorun: false,
    },
  );
  /** The jobs this worker's processor is running now. */
  const running = new Set<string>();
  const logRateLimit = limitedErrorLog(logger, 'Stripe rate-limited a call; pausing the effects queue', { level: 'warn' });

  async function runJob(job: Job<EffectJob, EffectAnswer>, token: string | undefined): Promise<EffectAnswer> {
    let answer: EffectAnswer;
    // What this run itself did, for onAnswer (metrics): a run again after a stall answers its caller with how the first
    // run settled the effect (ownAnswer), which the first run counted already.
    let ran: EffectAnswer;
    // A job runs only the effect its id names; one under an id no producer makes (added by hand) runs nothing, and
    // as it names no effect, its failure raises no alert (notJudged).
    const effectId = effectOfJob(job.id);
    if (effectId === null) {
      throw new UnrecoverableError(`invalid_effect: job id "${(job.id ?? '').slice(0, 100)}" names no effect (an effects job's id is an effect id, 64 lowercase hex characters, alone or followed by a dot and a follow-up number); nothing was run`);
    }
    try {
      // The latest proposal recorded for the effect (a re-decision after a refusal included). A job whose effect has
      // none recorded (added to the queue by hand: every producer records first) is refused, invalid_proposal, and
      // fails for good with nothing recorded or sent; the job's own copy never stands in for a recorded proposal.
      // A job that comes back after its proposal was refused (it stalled, and recovery refused the effect
      // meanwhile) is done: the refusal is its answer, and judging it again would record a second one.
      // Only a job's first run can expect the chain its producer left; a job that ran before reads the chain.
      const firstRun = job.attemptsMade === 0 && job.attemptsStarted <= 1 && job.data.transient === undefined;
      const latest = await gate.submitLatest(effectId, job.data.proposal, firstRun ? (job.data.onlyEntry ?? null) : null);
      if (!latest.judged) {
        await judged(job, effectId);
        await keepAfterAnswer(job);
        outboxDone(job);
        logger.info({ effectId, outcome: latest.answer.outcome }, 'effect job finished: its proposal was refused already');
        return latest.answer;
      }
      ran = latest.answer;
      answer = await ownAnswer(job, effectId, ran);
    } catch (error) {
      const slowDown = slowDownOf(error);
      if (slowDown !== null) return slowDownQueue(job, slowDown, 'read');
      // Retry is a classification: only what may succeed later is retried. Redis not answering is such a case
      // (the proposal is recorded, so failing the job for good would leave an acknowledged effect unsettled).
      if (isRetryable(error) || isRedisOutage(error)) return retryLater(job, token, error);
      throw new UnrecoverableError(`${errorCode(error)}: ${errorMessage(error)}`);
    }
    await judged(job, answer.effectId);
    await options.onAnswer?.(ran);
    // A rate-limited send kept its claim (its outcome is unknown); the job comes back once the pause is over and
    // settles the effect under the same key.
    if (answer.slowDown !== undefined) {
      await keepAfterAnswer(job, job.data.unresolved);
      return slowDownQueue(job, answer.slowDown, 'send');
    }
    const unresolved = answer.outcome.startsWith('UNRESOLVED:');
    const next = disposition(answer, unresolved ? (job.data.unresolved ?? 0) : 0, transientRetry);
    await keepAfterAnswer(job, next.kind === 'later' && unresolved ? (job.data.unresolved ?? 0) + 1 : undefined);
    if (next.kind === 'later') {
      await job.moveToDelayed(next.at, token);
      throw new DelayedError();
    }
    outboxDone(job);
    logger.info({ effectId: answer.effectId, outcome: answer.outcome }, 'effect job finished');
    return answer;
  }

  /**
   * What the job's data keeps once the gate answered it (judged it, or said to ask again): its failures before judging
   * end there, so a failure after the answer starts a window of its own (a job kept waiting by IN_FLIGHT or UNRESOLVED
   * answers is not failing, and giving up on its first blip, counted from an old failure, would leave it unjudged);
   * `unresolved` counts the UNRESOLVED answers in a row (their backoff), and any other answer starts that count again.
   * Written only when it changes, so a job that never failed takes no write.
   */
  async function keepAfterAnswer(job: Job<EffectJob, EffectAnswer>, unresolved?: number): Promise<void> {
    const { transient, unresolved: before, ...rest } = job.data;
    if (transient === undefined && before === unresolved) return;
    await job.updateData(unresolved === undefined ? rest : { ...rest, unresolved });
  }

  /**
   * DUPLICATE_IGNORED tells a second request for a settled effect that nothing was sent again. A job is the request
   * itself: one run again after a stall, or after its first run's answer was lost (BullMQ's lock lapsed while it
   * sent), finds the effect its own first run settled, and whoever waits on the request must hear how it settled, not
   * "duplicate". A fresh job's first run cannot have settled it, and takes no read.
   */
  async function ownAnswer(job: Job<EffectJob, EffectAnswer>, effectId: string, answer: EffectAnswer): Promise<EffectAnswer> {
    const ranBefore = job.attemptsMade > 0 || job.attemptsStarted > 1 || (job.stalledCounter ?? 0) > 0 || job.data.transient !== undefined || job.data.unresolved !== undefined;
    if (answer.outcome !== 'DUPLICATE_IGNORED' || !ranBefore) return answer;
    const settled = await settledOutcome(stores, effectId);
    return settled === null ? answer : { effectId: answer.effectId, outcome: settled, sentence: explainOutcome(settled) };
  }

  /**
   * Stripe answered 429 (a premise read, a lookup or a send): the whole queue pauses for Stripe's Retry-After, or the
   * configured backoff, and the job goes back to waiting without using up an attempt. Every worker of the queue
   * sees the pause, so the fleet slows down together instead of hammering an account that is over its limit.
   * Logged as an outage is: the first at once, then at most one line per REPEATED_ERROR_LOG_MS saying how many jobs
   * were put back since (every running job meets the 429 of a pause, and a limit that lasts pauses again and again).
   */
  async function slowDownQueue(job: Job<EffectJob, EffectAnswer>, slowDown: SlowDown, what: 'read' | 'send'): Promise<never> {
    // Never longer than the longest Retry-After the service honours: a longer pause reads as one set by hand (cutHandSetPause).
    const pauseMs = Math.min(LONGEST_RETRY_AFTER_MS, Math.max(50, slowDown.retryAfterMs ?? options.rateLimitBackoffMs ?? 1_000));
    logRateLimit(undefined, { effectId: job.id, pauseMs, call: what });
    await pauseAtLeast(worker, pauseMs);
    throw Worker.RateLimitError();
  }
  /**
   * A submit that failed before the gate judged the effect, for a reason that may pass: the job waits (delayed, not
   * using up a BullMQ attempt) as afterTransientFailure says, and fails for good once the failures have lasted the
   * whole window. Where the job cannot be moved (Redis went away again), the error goes to BullMQ as before: its
   * attempts, or the lock lapsing, bring the job back. Said once per job per outage, as the decisions worker says a
   * case's: an outage of the whole window retries each job some 80 times, and every waiting job would log each one.
   * The first failure (the job's data holds no failures: a fresh job, or one the gate answered since) is a warning;
   * each retry after it is at debug; the give-up fails the job, logged and alerted as every failure for good is.
   */
  async function retryLater(job: Job<EffectJob, EffectAnswer>, token: string | undefined, error: unknown): Promise<never> {
    // The window is counted on Redis's clock: the job's next run may be on a worker whose own clock is hours off.
    let now: number;
    try {
      now = await redisNow(stores);
    } catch {
      throw error;
    }
    const next = afterTransientFailure(job.data.transient ?? null, now, transientRetry);
    const failedFor = Math.round((now - next.state.failingSince) / 1_000);
    if (next.kind === 'give-up') throw new UnrecoverableError(`${errorCode(error)} for ${failedFor} s, ${next.state.failures} tries: ${errorMessage(error)}`);
    try {
      await job.updateData({ ...job.data, transient: next.state });
      await job.moveToDelayed(delayedUntil(next.at, now), token);
    } catch {
      throw error;
    }
    const noted = { effectId: job.id, code: errorCode(error), error: errorMessage(error), failures: next.state.failures, failingForS: failedFor, retryAt: next.at, givesUpAt: next.state.failingSince + transientRetry.forMs };
    if (next.state.failures === 1) logger.warn(noted, 'effect job could not be judged yet: it is tried again until it is (further tries are logged at debug)');
    else logger.debug(noted, 'effect job could not be judged yet, still: trying again later');
    throw new DelayedError();
  }

  /**
   * A run of the job ended with the effect's answer for good (judged now, or found judged in the journal), or the job
   * failed for good and its not_judged alert was raised: the producer's outbox entry the job carries goes (EffectJob
   * `outbox`). Not on an answer that says to ask again (IN_FLIGHT, UNRESOLVED): one of those comes without anything
   * written (waiting for another refund on the payment), and a job removed while it waits must be queued again.
   */
  function outboxDone(job: Job<EffectJob, EffectAnswer>): void {
    const effectId = effectOfJob(job.id);
    if (job.data.outbox !== undefined && effectId !== null) proposalJudged(stores, effectId, job.data.outbox);
  }

  /**
   * The effect was judged (or found settled): a not_judged alert raised for it earlier is resolved. Only a job that
   * failed for good raises one (notJudged), so only a job that may follow such a failure looks for it: one revived
   * by the same request sent again, one retried after failing (BullMQ's retry, from the queue's board), one run again,
   * and a follow-up job (`effectId.N`) of an effect whose first job may have failed. A fresh job's first run skips the
   * read, which was a Redis round trip on every effect's way to its answer.
   */
  async function judged(job: Job<EffectJob, EffectAnswer>, effectId: string): Promise<void> {
    const mayFollowFailure = job.data.revived === true || job.attemptsMade > 0 || job.attemptsStarted > 1 || (job.id ?? '').includes('.');
    if (!mayFollowFailure) return;
    try {
      const alert = await stores.alerts.get(`not_judged:${effectId}`);
      if (alert !== null && alert.resolvedAt === null) await stores.alerts.resolve(alert.id, 'effects worker: the effect was judged');
    } catch (error) {
      logger.warn({ err: error, effectId }, 'could not resolve the not_judged alert of a judged effect');
    }
  }

  /**
   * A job failed for good (BullMQ sets finishedOn only then; a retry keeps it unset) before the gate judged its
   * effect: nothing was sent, recovery never sees it (no dispatch is open) and no job will run it again. That is
   * money a person must hear about, so it raises a not_judged alert (redis/alerts.ts): what failed and what to do.
   * An effect that is settled, or whose dispatch is open (recovery settles it), needs none; nor does a job whose id
   * names no effect, or whose effect holds no proposal (nothing was recorded: a job added by hand).
   */
  async function notJudged(job: Job<EffectJob, EffectAnswer>, error: Error): Promise<void> {
    const effectId = effectOfJob(job.id);
    if (effectId === null) return;
    // When the job failed (Redis time, read first): the raise says so, so a raise that lands late is told from a newer
    // failure (redis/alerts.ts newerFailure).
    const failedAt = await redisNow(stores);
    if ((await settledOutcome(stores, effectId)) !== null) return;
    const partition = await stores.journal.partitionOf(effectId);
    if (partition !== null && (await stores.journal.readState(partition, effectId)).state.open) return;
    const proposal = await latestProposal(stores, effectId);
    if (proposal === null) {
      // Nothing of the effect is recorded, so there is nothing to judge and no alert: the job was added to the queue
      // by someone other than Interlock's producers (they record first). An operator hears of it here, by its id.
      logger.error({ effectId, jobId: job.id, error: error.message }, 'effect job failed for good: no proposal of its effect is recorded, so nothing was recorded or sent; the job was not queued by Interlock (remove it, and look at who can write the queue keys)');
      return;
    }
    const { kind, subject, amount } = describeEffect(proposal.effect);
    // The effect's currency as proposed (it was never judged), read as every item and alert reads it
    // (currencyOfEffectOrCredit); a proposal no chain holds yet: a credit's is the configured currency, a refund's is
    // unknown (moneyText), never dollars.
    const recorded = partition === null ? null : currencyOfEffectOrCredit(await stores.journal.entries(partition, effectId), stores.config.creditCurrency);
    const currency = recorded ?? (kind === 'credit' ? stores.config.creditCurrency : null);
    const misconfigured = error.message.startsWith('target_misconfigured');
    const cause = misconfigured ? 'the Stripe key or account the worker uses (Stripe refused it)' : 'what kept Stripe or Redis from answering';
    const { alert } = await stores.alerts.raise({
      kind: 'not_judged',
      effectId,
      subject,
      centsAtStake: amount,
      currency,
      refund: null,
      disputes: [],
      sentence: `Proposal ${effectId} (${subject}, ${moneyText(amount, currency)}) was recorded but not judged: its job failed for good (${error.message}). Nothing was sent, and nothing will be on its own.`,
      action: `Fix ${cause}, then send the same request again (the same request_id): it is queued again and judged, and its money moves at most once.`,
      occurredAt: failedAt,
    });
    // Judged meanwhile (another job of the effect, queued again, ran between the check above and the raise, and its
    // resolution came first): the raise opened an alert about an effect that no longer needs a person; resolved again.
    if ((await settledOutcome(stores, effectId)) !== null) {
      await stores.alerts.resolve(alert.id, 'effects worker: the effect was judged');
      logger.info({ effectId, alert: alert.id }, 'a not_judged alert raised as its effect was judged was resolved again');
      return;
    }
    logger.error({ effectId, alert: alert.id, error: error.message }, 'effect job failed for good before its effect was judged; alert raised');
  }
  /** The alerts being raised, awaited on close. */
  const raising = new Set<Promise<void>>();
  worker.on('failed', (job, error) => {
    logger.warn({ effectId: job?.id, error: error.message }, 'effect job failed');
    if (job === undefined || job.finishedOn === undefined) return;
    const raised = notJudged(job, error)
      .then(() => outboxDone(job))
      .catch((cause: unknown) => logger.error({ err: cause, effectId: job.id, error: error.message }, 'effect job failed for good before its effect was judged, and its alert could not be raised'))
      .finally(() => raising.delete(raised));
    raising.add(raised);
  });
  logWorkerErrors(worker, logger, 'effects worker error');

  /**
   * A worker that died after taking a job but before dispatching its effect leaves nothing open in the journal, so
   * recovery has nothing to settle, and BullMQ hands the job to another worker only once its lock lapses (up to
   * lockDuration + stalledInterval, 90 s). At start, this worker runs the latest proposal of every active job whose
   * holder is gone (byHolder) and whose effect was never dispatched through the gate itself. An effect with an open
   * dispatch is left to recovery, which settles it as soon as the holder's death is proven: running it here too would
   * hold it busy and make recovery's pass skip it. A job a live worker holds is left to that worker: running it here
   * too would read its premises at Stripe a second time and, landing first, turn the answer of the holder's run (which
   * whoever waits on the request hears) into DUPLICATE_IGNORED. A holder that looks alive is looked at again once its
   * heartbeat would have lapsed had its process stopped (at most the heartbeat TTL), so one that died just before this
   * worker started is not taken for a live one. Running a live holder's job all the same (its heartbeat lapsed for a
   * moment) is safe: the dispatch is atomic, so one of the two sends and the other hears IN_FLIGHT; the job, when it
   * runs again, finds the effect settled. The active jobs are listed before this worker takes any, so its own jobs are
   * never among them.
   *
   * A Redis that restarts leaves the same kind of job: one whose taking Redis stored but never answered (the worker
   * does not know it has it), or one whose worker could not report its failure while Redis was down. So after the
   * connection comes back, the worker does the same for the jobs taken before it came back that no processor of
   * its own is running (their holders' heartbeats say nothing there: a live worker may hold a job it never heard of).
   */
  async function adoptOrphans(when: { takenBefore: number } | 'start'): Promise<number> {
    const at = when === 'start' ? 'at start' : 'after Redis came back';
    let active: Job<EffectJob>[] = [];
    try {
      active = await activeJobs<EffectJob>(stores, stores.queues.effects);
    } catch (error) {
      logger.warn({ err: error }, `could not list the active jobs ${at}; their jobs come back when their locks lapse`);
    }
    if (when !== 'start') return runEffects(orphansOf(active, running, when.takenBefore), at);
    if (!stopping.signal.aborted) worker.run().catch((error: unknown) => worker.emit('error', error instanceof Error ? error : new Error(String(error))));
    const first = await byHolder(active);
    let adopted = await runEffects(first.gone, at);
    if (first.alive.length === 0 || stopping.signal.aborted) return adopted;
    // A few ms past the lapse: Redis keeps a key until its TTL has passed, not when it reaches it.
    await sleep(first.lapseMs + 10, undefined, { signal: stopping.signal }).catch(() => undefined);
    if (stopping.signal.aborted) return adopted;
    // Listed again: meanwhile a job may have finished, or been taken by another worker or by this one's processor
    // (its run is the job's own; running it here too would turn that run's answer into DUPLICATE_IGNORED).
    const waited = new Set(first.alive.map((job) => job.id));
    let still: Job<EffectJob>[] = [];
    try {
      still = (await activeJobs<EffectJob>(stores, stores.queues.effects)).filter((job) => waited.has(job.id) && !running.has(job.id ?? ''));
    } catch (error) {
      logger.warn({ err: error }, `could not list the active jobs ${at} again; their jobs come back when their locks lapse`);
    }
    adopted += await runEffects((await byHolder(still)).gone, at);
    return adopted;
  }

  /**
   * Active jobs by whether their holder is alive. BullMQ keeps on a job the name of the worker that took it
   * (processedBy), and an effects worker is named after its sender's heartbeat (holderName): a holder is alive while
   * its heartbeat key holds the nonce it was named with (a restart under the same worker id beats with another). A job
   * with no such name (taken by an older worker) counts as a dead holder's, and so does one whose holder could not be
   * asked. `lapseMs`: how long until the heartbeats of the holders found alive lapse, should they stop beating.
   */
  async function byHolder(jobs: readonly Job<EffectJob>[]): Promise<{ gone: Job<EffectJob>[]; alive: Job<EffectJob>[]; lapseMs: number }> {
    const gone: Job<EffectJob>[] = [];
    const alive: Job<EffectJob>[] = [];
    let lapseMs = 0;
    const probes = new Map<string, Promise<{ alive: boolean; ttlMs: number } | null>>();
    for (const job of jobs) {
      const holder = job.processedBy ?? '';
      const split = holder.lastIndexOf(':');
      let probe = probes.get(holder);
      if (probe === undefined && split > 0) {
        probe = heartbeat.probe(holder.slice(0, split), holder.slice(split + 1)).catch(() => null);
        probes.set(holder, probe);
      }
      const liveness = probe === undefined ? null : await probe;
      if (liveness?.alive !== true) {
        gone.push(job);
        continue;
      }
      alive.push(job);
      lapseMs = Math.max(lapseMs, liveness.ttlMs);
    }
    return { gone, alive, lapseMs };
  }

  /** Runs the latest proposal of each of the jobs' effects that is neither settled nor open; answers how many it ran. */
  async function runEffects(jobs: readonly Job<EffectJob>[], at: string): Promise<number> {
    let adopted = 0;
    try {
      // Run as the connection comes back: the sender sends nothing until its durability re-check of the Redis reached
      // now has answered (DurabilityMonitor.awaitingRecheck), which a submit made first would meet as a refusal,
      // leaving these jobs to their locks' lapse.
      if (jobs.length > 0) await sender.durabilityMonitor.rechecked(10_000);
      for (const effectId of new Set(jobs.map((job) => effectOfJob(job.id)).filter((id) => id !== null))) {
        if (stopping.signal.aborted) break;
        if ((await settledOutcome(stores, effectId)) !== null) continue;
        const partition = await stores.journal.partitionOf(effectId);
        if (partition !== null && (await stores.journal.readState(partition, effectId)).state.open) continue;
        const proposal = await latestProposal(stores, effectId);
        if (proposal === null) continue;
        const answer = await gate.submit(proposal, { recorded: true });
        await options.onAnswer?.(answer);
        adopted += 1;
        logger.info({ effectId, outcome: answer.outcome }, `ran an active job's effect ${at} (its holder may have lost it before dispatching)`);
      }
    } catch (error) {
      logger.warn({ err: error }, `could not run the active jobs ${at}; their jobs come back when their locks lapse`);
    }
    return adopted;
  }
  /**
   * What holds the queue this worker serves, looked at once as it starts: a pause longer than the service sets is cut
   * (cutHandSetPause, which logs it), and a paused queue is logged: the worker takes no job, and proposals are recorded
   * but none is judged or sent, until someone resumes it. Recovery's passes cut such a pause again whenever they find one.
   */
  async function lookAtQueue(): Promise<void> {
    try {
      await cutHandSetPause(worker, connection, logger, 'effects worker at start');
      if (await queuePaused(worker)) logger.warn({ queue: stores.queues.effects }, "the effects queue is paused (BullMQ Queue.pause: the dashboard's Pause, or a script): this worker takes none of its jobs, and proposals are recorded but none is judged or sent, until it is resumed (Queue.resume, or the dashboard's Resume). /readyz says so while it lasts, and interlock_queue_paused reads 1");
    } catch (error) {
      logger.warn({ err: error }, 'could not tell at start whether the effects queue is paused');
    }
  }
  const lookedAtQueue = lookAtQueue();
  /** Aborted on close: no adoption starts after it, and the start's wait for heartbeats to lapse ends. */
  const stopping = new AbortController();
  const adopting = adoptOrphans('start');
  // One run at a time, after the start's.
  const outages = afterOutages(connection, (takenBefore) => adoptOrphans({ takenBefore }), adopting);

  return {
    worker,
    /** Settles when the start-up run of active jobs' effects is over, with how many it ran. */
    adopting,
    /** Settles when the start's look at the queue (lookAtQueue: a pause set by hand cut, the queue paused) is over. */
    lookedAtQueue,
    /** How many active jobs' effects this worker ran after its Redis connection came back. */
    adoptedAfterOutages: outages.count,
    /** Stops taking jobs and waits for the ones running (each ends within its send deadline). */
    async close(force = false): Promise<void> {
      stopping.abort();
      // The start's run and every run after an outage (chained after it).
      await outages.stop();
      await closeWorker(worker, connection, force);
      // After the connection closed: a look still waiting on a Redis that is away ends with it.
      await lookedAtQueue;
      await Promise.all([...raising]);
    },
  };
}

export type EffectsWorker = ReturnType<typeof startEffectsWorker>;
