// The decisions queue: one BullMQ job per support case, its id derived from the case id (the effect id of the
// case's request, `case:<case id>`), so a case submitted twice is queued once. The worker reads the facts the
// decider's tools return through the target's fact reader, asks the decider, checks the decision against the
// approval and the facts and, only when it stays inside both, records the proposal and queues it on the effects queue.
// A decision outside its approval, or money on facts that show it went back already (MODEL_DEVIATED), is recorded
// already refused, never queued, and opens an inbox item: a person re-approves the amount the model asked for under a
// new approval, or dismisses it (only dismisses it when the model chose another kind of money than the case asks for).
//
// A case is decided at most once into money: the proposal's request id is the case's, so the first PROPOSED binds
// the payload (I5). A worker that died after recording it and before noting it on the case leaves the case to be
// run again; that run finds the recorded proposal and adopts it instead of asking the decider a second time.
//
// A case written failed (nothing proposed) opens a case_failed inbox item, once per failure: what failed it and what a
// person does (submit it again, or under a new case id). The case decided later closes it; failing again supersedes it.
import { createHash } from 'node:crypto';
import { DelayedError, Queue, Worker, type Job } from 'bullmq';
import { closeWorker } from './closing.js';
import { logWorkerErrors } from './worker-errors.js';
import { jobEvents, waitForJob } from './job-events.js';
import { queueRecorded } from './recorded.js';
import { delayedUntil, redisNow } from './effects.js';
import {
  approvalRoom,
  caseFailureItem,
  caseFailureItemId,
  caseScope,
  checkDecision,
  closeConnection,
  createProposalRecorder,
  effectIdFor,
  errorCode,
  firstRecordedProposal,
  InterlockError,
  isFinalCase,
  mayReopenCase,
  isRetryable,
  MAX_AMOUNT_CENTS,
  MODEL_DEVIATED,
  openInboxItem,
  proposalDecision,
  proposalFields,
  refusalOfLatestProposal,
  requestIdOf,
  RULES_MODEL,
  StripeUnavailable,
  type CaseDecision,
  type CaseRecord,
  type CaseStatus,
  type CaseSubmission,
  type ApprovalSnapshot,
  type SubjectCap,
  type LeftBy,
  type Decider,
  type Decision,
  type DecisionCase,
  type Effect,
  type EffectKind,
  type ErrorCode,
  type Proposal,
  type Recorded,
  type CaseStatusWritten,
  type Stores,
} from '../src/interlock.js';

export type DecisionJob = { caseId: string; deciderOutage?: DeciderOutage };


/**
 * The SHA-256 of a case's story (hex), as the model was given it: the proposal's `request` carries it, so the signed
 * receipt commits to the customer's words the decision was made on (a copy of the story can be checked against it;
 * the case record that holds the text is not exported with the receipt).
 */
export function storyDigest(story: string): string {
  return createHash('sha256').update(story, 'utf8').digest('hex');
}
/**
 * The decisions queue's backoff (a BullMQ custom strategy, named on every job and given to the worker): exponential
 * from the job's delay, or as long as the failure asked when that is longer. The Messages API answers a 429 or 529
 * with `retry-after`; the SDK honours it for its own retries, and a case still undecided after them used to be tried
 * again on the exponential schedule alone (2, 4, 8, 16 s), so an API asking for a minute failed the case in half of
 * one. A wait asked for is honoured up to MAX_ASKED_WAIT_MS. Each of these waits counts as one of the job's attempts;
 * a decider outage is waited out apart, using up none (afterDeciderOutage).
 */
export const DECISION_BACKOFF = 'interlock-asked-or-exponential';

/** The longest wait a failure's retry-after is honoured for (a longer one is taken as this). */
export const MAX_ASKED_WAIT_MS = 15 * 60_000;

/**
 * The wait an error, or one of its causes, asks for before a retry (its `retryAfterMs`), or null. An endless one
 * (Infinity: a header of many digits) is the longest honoured, MAX_ASKED_WAIT_MS, not a wait nobody asked for.
 */
export function askedWaitOf(error: unknown): number | null {
  let current: unknown = error;
  for (let depth = 0; depth < 8 && current instanceof Error; depth += 1) {
    const asked = (current as Error & { retryAfterMs?: unknown }).retryAfterMs;
    if (asked === Number.POSITIVE_INFINITY) return MAX_ASKED_WAIT_MS;
    if (typeof asked === 'number' && Number.isFinite(asked) && asked >= 0) return asked;
    current = current.cause;
  }
  return null;
}

/**
 * Waiting out a decider outage (the Messages API refusing connections, timing out, answering 5xx, 529 or 429:
 * `decider_unavailable`). The job's attempts (5, from 2 s: about 30 s in all) would fail a case accepted during an
 * outage of a minute for good. Like an effect not judged yet (queues/effects.ts), the job is delayed instead, using
 * up no attempt: the wait doubles from the job's backoff delay up to `maxDelayMs` (INTERLOCK_RETRY_MAX_DELAY_MS), or
 * is the wait the API asked for when longer (up to MAX_ASKED_WAIT_MS), and the case fails with `decider_unavailable`
 * only once the outage has lasted `forMs` (INTERLOCK_RETRY_FOR_MS) from the case's first failure. Units: ms.
 */
type DeciderRetry = { firstDelayMs: number; maxDelayMs: number; forMs: number };

/**
 * Where a case's decider outage stands (kept in its job's data): failures in a row, since when (Redis time, ms: the
 * next run may be on another worker, whose own clock may differ), and the job's `attemptsStarted` of the run that
 * noted the last one. A run that started no later than that is a job run again afresh (a resubmission retries it with
 * its attempts reset): its outage starts anew.
 */
export type DeciderOutage = { failures: number; failingSince: number; started: number };

/**
 * After one more decider failure at `now` (Redis time, ms: redisNow), in the job's run number `started` (its
 * attemptsStarted), with the API having asked for `askedMs` (or null): when to try again (`at`, Redis time), or give
 * up. Pure. A retry due after the window's end is made at its end, so the last try comes at the end of the window.
 */
export function afterDeciderOutage(
  before: DeciderOutage | null,
  now: number,
  started: number,
  askedMs: number | null,
  policy: DeciderRetry,
): { kind: 'retry'; at: number; state: DeciderOutage } | { kind: 'give-up'; state: DeciderOutage } {
  const ongoing = before !== null && started > before.started ? before : null;
  const state = { failures: (ongoing?.failures ?? 0) + 1, failingSince: ongoing?.failingSince ?? now, started };
  const deadline = state.failingSince + policy.forMs;
  if (now >= deadline) return { kind: 'give-up', state };
  const doubled = Math.min(policy.maxDelayMs, policy.firstDelayMs * 2 ** Math.min(state.failures - 1, 40));
  const delay = askedMs === null ? doubled : Math.max(doubled, Math.min(Math.ceil(askedMs), MAX_ASKED_WAIT_MS));
  return { kind: 'retry', at: Math.min(now + delay, deadline), state };
}

/** Whether an error is the decider's API being unavailable (a failure that passes), not a fault of the case. */
function isDeciderOutage(error: unknown): boolean {
  return error instanceof InterlockError && error.code === 'decider_unavailable' && error.retryable;
}

/** The advice that ends a decider_unavailable error (src/decider/anthropic.ts), for a case failed: not for one waiting. */
const DECIDE_AGAIN_LATER = / Case \S+ was not decided and nothing was proposed; decide it again later: submit the case again \(the same id and payload\) once the Messages API answers\.$/;

/** A fact read that timed out (readFacts' own timer): Stripe not answering, as StripeUnavailable is. */
class FactReadTimeout extends Error {}

/**
 * Whether an error is Stripe unavailable while the case's facts were read (a 429, a 5xx, a dropped connection, no
 * answer in time: StripeUnavailable.passing): an outage that passes, waited out as the decider's is. A read Stripe
 * refused (a payment it does not know), an answer that is not Stripe's (STRIPE_API_BASE names another service) or any
 * other failure keeps the job's attempts.
 */
function isFactsOutage(error: unknown): boolean {
  return error instanceof InterlockError && error.code === 'premise_read_failed' && ((error.cause instanceof StripeUnavailable && error.cause.passing) || error.cause instanceof FactReadTimeout);
}

/** How long before attempt `attemptsMade + 1` of a job whose backoff delay is `delayMs`, after `error`. */
export function decisionBackoff(attemptsMade: number, delayMs: number, error: unknown): number {
  const exponential = Math.round(2 ** Math.max(0, attemptsMade - 1) * delayMs);
  const asked = askedWaitOf(error);
  return asked === null ? exponential : Math.max(exponential, Math.min(Math.ceil(asked), MAX_ASKED_WAIT_MS));
}

/** Reads named facts about an effect's subject now (the target's premise reads); absent or null when unknown. */
export type CaseFactReader = (effect: Effect, names: readonly string[], context: { effectId: string; timeoutMs: number }) => Promise<Record<string, unknown>>;

/** The effects queue's producer side, as the worker proposes through it. */
export type ProposalSink = { propose(proposal: unknown, options?: { firstOnly?: boolean }): Promise<Recorded & { queued: boolean }> };

export type DecisionsQueueOptions = {
  /**
   * Attempts for a case whose decision failed retryably (a fact read failed, Redis); the model's API unavailable,
   * or Stripe unavailable for the facts, uses up none (DecisionsWorkerOptions.deciderRetry).
   */
  attempts?: number;
  backoffMs?: number;
};

/** The effect id a case proposes under (and the decisions job id): that of its request, `case:<case id>`. */
export function caseEffectId(caseId: string): string {
  return effectIdFor({ requestId: requestIdOf(caseId), effect: {} });
}

/** How a decided case was decided, as the closure of its failure's inbox items says it; null for a case not decided. */
function decidedHow(status: CaseStatus): string | null {
  if (status.state === 'declined') return 'the decider declined it';
  if (status.state === 'deviated') return `MODEL_DEVIATED${status.effectId === null ? '' : `, recorded refused on effect ${status.effectId}`}`;
  if (status.state === 'proposed') return `proposed as effect ${status.effectId ?? 'not named'}`;
  return null;
}

/**
 * Why the item of a case's failure at `failedAt` must not stay open, the case standing as `now` reads: decided (no
 * failure of it is open then), failed again (the latest failure's item stands for it) or no longer stored. Null while
 * the case stands at that failure, or is being decided again: the run that ends it closes the item, or supersedes it.
 */
function staleFailureNote(caseId: string, failedAt: number, now: CaseRecord | null): string | null {
  if (now === null) return `Case ${caseId} is no longer stored.`;
  const how = decidedHow(now.status);
  if (how !== null) return `Case ${caseId} was decided after this failure: ${how}.`;
  if (now.status.state !== 'failed' || now.status.updatedAt === failedAt) return null;
  return `The case failed again; item ${caseFailureItemId(caseId, now.status.updatedAt)} stands for its latest failure.`;
}

/**
 * Opens the inbox item of a case written failed (caseFailureItem, named by when the failure was written: the same
 * failure met again opens nothing new, and a new one supersedes an earlier one still open). False when the case is not
 * failed as written. Opened once the run that wrote the failure has completed (the decisions worker's 'completed'
 * hook), not before: the run ends as soon as the case is written. Until then the case's note in the cases' outbox
 * stays, so a process that stops in between leaves it to the sweep, which opens the item (requeueUnqueued).
 *
 * The case is read again once the item is open: decided or failed again since `record` was read (submitted again
 * meanwhile), it no longer stands at this failure, and the item is closed. The case and the inbox are apart (another
 * slot on a Redis Cluster), so no one step holds both; but whoever writes the case decided closes its open items after
 * writing it (closeFailureItemsOf), and a later failure's item supersedes older ones as it opens: an item opened before
 * that write is closed by it, and one opened after it is closed here. A late item never supersedes a newer one.
 */
async function openFailureItemOf(stores: Stores, record: CaseRecord): Promise<boolean> {
  const { submission, status } = record;
  if (status.state !== 'failed' || status.error === null) return false;
  const { caseId } = submission;
  const opened = await stores.inbox.openCaseFailure(
    caseFailureItem({ caseId, subject: caseScope(submission), approval: submission.approval, code: status.error.code, message: status.error.message, failedAt: status.updatedAt, attempts: status.attempts }),
  );
  const stale = staleFailureNote(caseId, status.updatedAt, await stores.cases.get(caseId));
  if (stale !== null) {
    // At debug: the closure is kept in the inbox index, saying why.
    if (await stores.inbox.closeCaseFailure(opened.item.id, stale)) stores.logger.debug({ caseId, item: opened.item.id }, "the case moved on while its failure's inbox item was being opened: the item is closed");
    return true;
  }
  // At debug: the case's failure is logged already, and the item's opening (or a closure) is kept in the inbox index.
  if (opened.created) stores.logger.debug({ caseId, item: opened.item.id, superseded: opened.superseded }, 'case failed: its inbox item is open');
  return true;
}

/**
 * Closes the open items of a decided case's failures (declined, deviated or proposed: a failed case submitted again,
 * or one another run's proposal binds), saying how; nothing for a case not decided. Run after every write that leaves
 * the case decided, whether or not it failed before (a run that read it before another run failed it writes over that
 * failure). The ids it closed.
 */
async function closeFailureItemsOf(stores: Stores, decided: CaseRecord): Promise<string[]> {
  const how = decidedHow(decided.status);
  if (how === null) return [];
  const { caseId } = decided.submission;
  const closed = await stores.inbox.closeCaseFailures(caseEffectId(caseId), `Case ${caseId} was decided after this failure: ${how}.`);
  // At debug: each closure is kept in the inbox index, naming the worker and how the case was decided.
  if (closed.length > 0) stores.logger.debug({ caseId, items: closed }, "the case was decided: its failure's inbox items are closed");
  return closed;
}

/**
 * Drops the cases' outbox note of a final case once the inbox stands as the case does: a failed case's item open, a
 * decided case's failure items closed. The note is what brings a case whose inbox could not be brought in step (Redis
 * failed in between, the process stopped) back to the sweep, so a failure here throws with the note kept.
 */
async function dropNoteOfFinal(stores: Stores, record: CaseRecord): Promise<void> {
  if (record.status.state === 'failed') await openFailureItemOf(stores, record);
  else await closeFailureItemsOf(stores, record);
  await stores.cases.queued(record.submission.caseId);
}

/**
 * What a case may still ask for under `snapshot` (CaseApproval centsLeft), and what holds it below the cap: every use
 * spent leaves nothing; otherwise the less of what the approval's cap and the cap set on its scope leave.
 */
export function roomOf(snapshot: ApprovalSnapshot, subjectCap: SubjectCap): { centsLeft: number; leftBy?: LeftBy } {
  // The time only says whether the approval is live, which the worker checked before (approvalEndedDecline) and the gate
  // checks again at dispatch; the room does not depend on it.
  const room = approvalRoom(snapshot, 0, subjectCap);
  if (room.usesLeft === 0) return { centsLeft: 0, leftBy: 'uses' };
  if (room.subjectCentsLeft !== null && room.subjectCentsLeft < room.centsLeft) return { centsLeft: room.subjectCentsLeft, leftBy: 'subject_cap' };
  return room.centsLeft < snapshot.capCents ? { centsLeft: room.centsLeft, leftBy: 'approval' } : { centsLeft: room.centsLeft };
}

/** How old a note in the cases' outbox must be before a recovery pass takes its submission for one that stopped. */
export const CASE_OUTBOX_GRACE_MS = 30_000;
/** Most notes one sweep of the cases' outbox takes; the next pass takes the rest. */
const CASE_OUTBOX_BATCH = 200;

/**
 * What a sweep of the cases' outbox did: cases queued (no job stood for them), cases left to the job that stands for
 * them (`kept`), notes dropped (no such case, or final), notes it could not take.
 */
export type CaseOutboxSweep = { queued: string[]; kept: string[]; dropped: string[]; failed: string[] };

/** Producer side: stores the case (once per id) and queues it; `waitFor` hears the decision without polling. */
export function createDecisionsQueue(stores: Stores, options: DecisionsQueueOptions = {}) {
  const connection = stores.queueConnection();
  const queue = new Queue<DecisionJob>(stores.queues.decisions, { connection, ...stores.bullmq });
  logWorkerErrors(queue, stores.logger, 'decisions queue error');
  const events = jobEvents(stores, stores.queues.decisions);

  /**
   * A case not decided whose job failed (its worker's catch could not run or could not write the case: a crash, a
   * Redis outage on the last attempt) would stay undecided for ever, since adding a job under a kept failed job's id
   * is a no-op: that job is retried, with its attempts afresh. Two submissions at once retry it once; the other finds
   * it no longer failed.
   */
  async function requeueFailed(jobId: string, also: 'completed' | null = null): Promise<void> {
    const job = await queue.getJob(jobId);
    if (job === undefined) return;
    const state = (await job.isFailed()) ? 'failed' : also !== null && (await job.isCompleted()) ? also : null;
    if (state === null) return;
    try {
      await job.retry(state, { resetAttemptsMade: true, resetAttemptsStarted: true });
    } catch (error) {
      if (state === 'failed' ? await job.isFailed() : await job.isCompleted()) throw error;
    }
  }

  /**
   * Adds the case's decisions job (its id derived from the case: a no-op while one waits or runs), and runs again one
   * that failed, or, for a case queued again (`rerun`), one that completed: a job that ended without deciding it.
   */
  async function queueCase(caseId: string, rerun: boolean): Promise<void> {
    const jobId = caseEffectId(caseId);
    await queue.add('case', { caseId }, {
      jobId,
      attempts: options.attempts ?? 5,
      backoff: { type: DECISION_BACKOFF, delay: options.backoffMs ?? 2_000 },
      removeOnComplete: { age: 24 * 3_600, count: 10_000 },
      removeOnFail: { age: 7 * 24 * 3_600 },
    });
    await requeueFailed(jobId, rerun ? 'completed' : null);
  }

  /**
   * The note of a case submitted again that is final goes, once the inbox stands as the case does (dropNoteOfFinal):
   * a failed case's item opened first, since the note is what brings it back to the sweep when the worker could not
   * open it. Not brought in step, the note stays for the sweep; the submission is answered as the case stands.
   */
  async function dropNote(record: CaseRecord): Promise<void> {
    try {
      await dropNoteOfFinal(stores, record);
    } catch (error) {
      stores.logger.warn({ err: error, caseId: record.submission.caseId }, "the case is final, but its inbox items could not be brought in step with it; its outbox note stays for the recovery pass's sweep");
    }
  }

  return {
    queue,
    /**
     * Stores the case and queues it. The same case again (same payload) is answered as it stands and queued again
     * only while it is not decided (a no-op while its job waits or runs; its failed job is retried); another
     * payload under its id is a conflict.
     */
    async submit(submission: CaseSubmission, submittedBy: string) {
      // Noted in the cases' outbox first, and the note stays until the case is final (the worker drops it then): a
      // process that stops (or loses Redis) after storing the case and before its job is added, or a job removed
      // before it decided the case, leaves the note, and a recovery pass queues the case (requeueUnqueued).
      await stores.cases.queueing(submission.caseId, await stores.journal.serverTime());
      let created = await stores.cases.create(submission, submittedBy);
      if (created.status === 'conflict') {
        // The note is the stored case's as well: it stays while that case waits for its decision.
        if (isFinalCase(created.record.status)) await dropNote(created.record);
        return created;
      }
      // A case that failed while the Messages API was unavailable, or on an answer that was no decision (its error
      // said to submit it again; nothing was recorded for it), is queued again; its job, which ended with the failure
      // written, runs again and asks the decider afresh.
      let reopened = false;
      if (created.status === 'exists' && mayReopenCase(created.record.status)) {
        const written = await stores.cases.reopen(submission.caseId);
        created = { status: 'exists', record: written.record };
        reopened = written.written;
      }
      if (!isFinalCase(created.record.status)) {
        // Stored: a failure to queue it is never answered as "nothing was stored" (queues/recorded.ts).
        await queueRecorded(() => queueCase(submission.caseId, reopened), stores.config.redisCommandTimeoutMs, {
          done: `Case ${submission.caseId} was stored`,
          retry: 'Submit the same case again',
          again: 'a case submitted again with the same case_id and payload is answered as it stands and queued if it is not decided, and it is decided at most once.',
        });
      } else {
        await dropNote(created.record);
      }
      return created;
    },
    /**
     * The cases' outbox swept: each case noted `graceMs` or more ago (Redis time) and not final (its submission's
     * process stopped, or lost Redis, before adding its job; its job was removed before deciding it; or it waits) is
     * queued as its submission would have queued it when no job stands for it (none, or a finished one, which runs
     * again), and is left to its job when one waits, is delayed or runs (`kept`); its note stays, timed now, so it is
     * looked at again once per grace until the worker drops it. A note whose case was never stored, or is final, is
     * dropped. Run by the recovery passes (queues/recovery.ts).
     */
    async requeueUnqueued(graceMs: number = CASE_OUTBOX_GRACE_MS): Promise<CaseOutboxSweep> {
      const sweep: CaseOutboxSweep = { queued: [], kept: [], dropped: [], failed: [] };
      const now = await stores.journal.serverTime();
      for (const caseId of await stores.cases.unqueued(now - graceMs, CASE_OUTBOX_BATCH)) {
        try {
          const record = await stores.cases.get(caseId);
          if (record === null || isFinalCase(record.status)) {
            // A final case's note is kept until the inbox stands as it does: its worker stopped (or lost Redis) before
            // opening a failed case's item, or closing a decided case's failure items.
            if (record === null) await stores.cases.queued(caseId);
            else await dropNoteOfFinal(stores, record);
            sweep.dropped.push(caseId);
            continue;
          }
          const state = await (await queue.getJob(caseEffectId(caseId)))?.getState();
          if (state === 'waiting' || state === 'delayed' || state === 'active' || state === 'prioritized' || state === 'waiting-children') {
            sweep.kept.push(caseId);
          } else {
            await queueCase(caseId, true);
            sweep.queued.push(caseId);
          }
          await stores.cases.queuedLater(caseId, now);
        } catch (error) {
          sweep.failed.push(caseId);
          stores.logger.error({ err: error, caseId }, 'could not queue a case its submission left unqueued; the next recovery pass tries again');
        }
      }
      return sweep;
    },
    /**
     * The case once it is decided (or cannot be), heard on the queue's events; as it stands after `timeoutMs`. `signal`
     * ends the wait (waitForJob).
     */
    async waitFor(caseId: string, timeoutMs: number, signal?: AbortSignal): Promise<CaseRecord | null> {
      const jobId = caseEffectId(caseId);
      return waitForJob<CaseRecord | null>(events, {
        ours: (id) => id === jobId,
        timeoutMs,
        ...(signal === undefined ? {} : { signal }),
        // Subscribed first, then the record is read: a decision cannot slip in between.
        settled: async () => {
          const record = await stores.cases.get(caseId);
          return record !== null && isFinalCase(record.status) ? record : null;
        },
        answer: () => stores.cases.get(caseId),
      });
    },
    /**
     * Closes the producer. Its connection waits out outages (BullMQ needs that), so a QUIT to a Redis that stopped
     * answering waits as long as Redis does: a command that must end gives it `withinMs` and has the connection dropped
     * after that, or drops it at once (`drop`) when its own commands failed (closeConnection).
     */
    async close(how: { withinMs?: number; drop?: boolean } = {}): Promise<void> {
      await events.close();
      await queue.close();
      await closeConnection(connection, how);
    },
  };
}

export type DecisionsQueue = ReturnType<typeof createDecisionsQueue>;

export type DecisionsWorkerOptions = {
  decider: Decider;
  effects: ProposalSink;
  readFacts: CaseFactReader;
  /** The premise names read for each kind (the target's own names): the facts the decider sees and the proposal records. */
  premises: Record<EffectKind, readonly string[]>;
  factTimeoutMs?: number;
  concurrency?: number;
  /**
   * How long a job's lock lasts, and how often stalled jobs are looked for, in ms (default 30 s each): a job whose
   * worker died is given to another worker once its lock lapses.
   */
  lockMs?: number;
  /**
   * Waiting out a decider outage (DeciderRetry): the longest wait between tries and how long the outage may last
   * before the case fails, in ms. Default: INTERLOCK_RETRY_MAX_DELAY_MS and INTERLOCK_RETRY_FOR_MS, the settings an
   * effect waits out a Stripe or Redis outage with. The first wait is the job's backoff delay.
   */
  deciderRetry?: { maxDelayMs?: number; forMs?: number };
  /**
   * Called once a case is recorded as MODEL_DEVIATED (refused, nothing sent, its inbox item open): the seam for
   * whatever else tells a person (a page, a chat message). Its failure is logged and does not change the case.
   */
  onDeviation?: (record: CaseRecord) => void | Promise<void>;
  /**
   * Called once this worker records a case failed (nothing proposed), with the failure's code: the seam for counting
   * cases a person must submit again or look into (the metrics). Its failure is logged and does not change the case.
   */
  onFailed?: (caseId: string, code: string) => void;
};

const LOOKUP_OF: Record<EffectKind, 'get_payment' | 'get_account'> = { refund: 'get_payment', credit: 'get_account' };

/** The effect a case's facts are read for: the subject and incident are the case's; the amount is not read. */
function probeEffect(submission: CaseSubmission, capCents: number): Effect {
  return submission.kind === 'refund'
    ? { kind: 'refund', paymentIntent: submission.subject, amount: capCents }
    : { kind: 'credit', customer: submission.subject, amount: capCents, incident: submission.incident ?? '' };
}

function decisionOf(proposal: Proposal): CaseDecision {
  const effect = proposal.effect as { kind?: unknown; amount?: unknown };
  // A deviation is recorded on the case's kind of effect whatever the model chose (a credit on a refund case): what it
  // chose is kept beside the problems, and read back here, so a case noted again says what the model decided.
  const decided = deviationOf(proposal)?.action ?? null;
  return {
    model: proposal.decision?.model ?? proposal.agent,
    text: proposal.decision?.text ?? '',
    action: decided ?? (effect.kind === 'credit' ? 'credit' : 'refund'),
    amountCents: typeof effect.amount === 'number' ? effect.amount : null,
  };
}

/**
 * What the decider was told the case may still ask for (roomOf: the CaseApproval's centsLeft), in cents, and what held
 * it below the approval's cap (null: nothing did).
 */
type Left = { cents: number; by: LeftBy | null };

type Deviation = { problems: string[]; approvedCents: number; left: Left | null; action: 'refund' | 'credit' | null };

const LEFT_BY_KEPT: readonly string[] = ['approval', 'subject_cap', 'uses'] satisfies readonly LeftBy[];

/** What a deviation recorded refused keeps in its proposal's `request` (recordDeviation): the problems, the cap and what was left. */
function deviationOf(proposal: Proposal): Deviation | null {
  const request = proposal.request;
  if (typeof request !== 'object' || request === null || Array.isArray(request)) return null;
  const deviated = request['deviated'];
  if (typeof deviated !== 'object' || deviated === null || Array.isArray(deviated)) return null;
  const { problems, approved_cents: approvedCents, left_cents: leftCents, left_by: leftBy, decided_action: decidedAction } = deviated;
  if (!Array.isArray(problems) || typeof approvedCents !== 'number') return null;
  // Deviations recorded before the decided action (or what was left) was kept have none: the effect's kind stands in.
  const left = typeof leftCents === 'number' ? { cents: leftCents, by: typeof leftBy === 'string' && LEFT_BY_KEPT.includes(leftBy) ? (leftBy as LeftBy) : null } : null;
  return { problems: problems.map(String), approvedCents, left, action: decidedAction === 'refund' || decidedAction === 'credit' ? decidedAction : null };
}

/**
 * Whether a proposal recorded under the case's request id is the case's own (its accepted decision or its deviation):
 * only the decisions worker names the case in the proposal's `request` (`case_id`), under the case's agent and
 * approval. Callers may not propose under `case:` ids now; one recorded before that is not the case's decision.
 */
function recordedByCase(proposal: Proposal, submission: CaseSubmission): boolean {
  const request = proposal.request;
  if (typeof request !== 'object' || request === null || Array.isArray(request)) return false;
  return request['case_id'] === submission.caseId && proposal.agent === submission.agent && proposal.approval === submission.approval;
}

function failure(code: ErrorCode, message: string): InterlockError {
  return new InterlockError(code, message);
}

/** The head of the text of a case declined because its approval is no longer live (as the rules decider's texts are headed). */
const APPROVAL_ENDED_HEAD = `${RULES_MODEL}: declined, the approval is no longer live.`;

/**
 * The decline of a case whose approval is not live when its decision is due (revoked or expired; `now` on the Redis
 * clock, as describe reads it; `revokedBy`: who revoked it, null when not recorded), or null while it is live. The
 * support API refuses a new case under such an approval; one stored before it was revoked or expired (waiting in the
 * queue, or failed and submitted again), or queued by `interlock case`, meets it here. The gate refuses any money under
 * it (REFUSED:lease) with the case's request id spent, so no decider is asked, and no model call is paid for: the case
 * is declined as the rules decider declines a case with nothing left (nothingLeft), saying what a person does next.
 */
export function approvalEndedDecline(submission: CaseSubmission, snapshot: ApprovalSnapshot, now: number, revokedBy: string | null): Extract<Decision, { action: 'decline' }> | null {
  if (approvalRoom(snapshot, now, { limitCents: null, movedCents: 0 }).live) return null;
  const { caseId, kind } = submission;
  const why = snapshot.revoked
    ? `Approval ${snapshot.id} was revoked${revokedBy === null ? '' : ` by ${revokedBy}`}${snapshot.revokedAt === null ? '' : ` at ${new Date(snapshot.revokedAt).toISOString()}`}`
    : `Approval ${snapshot.id} expired at ${new Date(snapshot.expiresAt).toISOString()}`;
  const reason = `${why}, so no ${kind} was proposed for case ${caseId} and no model was asked. Nothing was sent, and case ${caseId} is spent (submitted again, it is answered as it stands): if the customer is still owed money, a person grants a new approval that covers ${snapshot.scope} and submits a new case, under a new case id, with it.`;
  return { action: 'decline', reason, model: RULES_MODEL, text: `${APPROVAL_ENDED_HEAD} ${reason}` };
}

/**
 * The decisions worker. The model's API unavailable after the SDK's own retries, or Stripe unavailable for the
 * facts, delays the job, using up no attempt, until the outage has lasted INTERLOCK_RETRY_FOR_MS, then fails the case
 * (afterDeciderOutage). Other retryable failures (a fact read that failed otherwise, Redis) retry the job with backoff
 * and fail the case after the last attempt; a decision
 * that is not one (`decision_invalid`: the error is raised not retryable, so the job does not ask the model again by
 * itself, but the case submitted again is) or a configuration the API refused fails it at once. Nothing is proposed
 * from a failed, declined or deviated case.
 */
export function startDecisionsWorker(stores: Stores, options: DecisionsWorkerOptions) {
  const { logger } = stores;
  const factTimeoutMs = options.factTimeoutMs ?? 10_000;
  const deciderRetry = { maxDelayMs: options.deciderRetry?.maxDelayMs ?? stores.config.retryMaxDelayMs, forMs: options.deciderRetry?.forMs ?? stores.config.retryForMs };
  const record = createProposalRecorder(stores);

  /**
   * A decision outside its approval, kept where a person can act on it: the case's effect with the amount the model
   * asked for, recorded already refused (REFUSED:lease, the deviation as its reason: no job, retry or redelivery
   * can send it), and a model_deviated inbox item on it. A decision with no usable amount is not recorded (there
   * is no effect to re-approve); the case alone says what happened. Answers the effect id, or null.
   */
  async function recordDeviation(submission: CaseSubmission, decision: Decision, approval: ApprovalSnapshot, left: Left, premises: Record<string, unknown>, reason: string, problems: string[]): Promise<string | null> {
    const amount = decision.action === 'decline' ? null : decision.amountCents;
    if (amount === null || !Number.isSafeInteger(amount) || amount <= 0 || amount > MAX_AMOUNT_CENTS) return null;
    const effect = { ...probeEffect(submission, amount), metadata: { case_id: submission.caseId } };
    // The cap, and beside it what the decider was told is left: an ask over what is left is a deviation under the cap.
    const deviated = { problems, approved_cents: approval.capCents, left_cents: left.cents, left_by: left.by, decided_action: decision.action };
    const recorded = await record(
      { requestId: requestIdOf(submission.caseId), agent: submission.agent, approval: submission.approval, premises, effect, request: { case_id: submission.caseId, story_sha256: storyDigest(submission.story), deviated }, decision: proposalDecision(decision) },
      // The case's first proposal binds it (firstOnly): a deviation another run recorded meanwhile, even of the same
      // amount, is not recorded a second time; the caller judges the case on the one recorded first.
      { refuse: { reason, approval }, firstOnly: true },
    );
    if (recorded.status !== 'recorded') return null;
    await openDeviationItem(recorded.effectId, submission, reason, amount, approval.capCents, left, decision.action, problems);
    return recorded.effectId;
  }

  /**
   * `left`: what the decider was told is left (null for a deviation recorded before it was kept). A deviation of
   * another kind than the case's (a credit the model chose on a refund case) is recorded as the case's effect, which
   * the model never decided, so its item offers no re-approval, only a dismissal (openInboxItem writes its actions by
   * core/inbox.ts itemActions, deviatedKind).
   */
  async function openDeviationItem(effectId: string, submission: CaseSubmission, reason: string, decidedCents: number, approvedCents: number, left: Left | null, decidedAction: string, problems: string[]): Promise<void> {
    await openInboxItem(stores, {
      effectId,
      happened: reason,
      centsAtStake: decidedCents,
      detail: { case_id: submission.caseId, decided_action: decidedAction, decided_cents: decidedCents, approved_cents: approvedCents, ...(left === null ? {} : { left_cents: left.cents, left_by: left.by }), problems },
    });
  }

  /** Writes the case's status unless another run decided it as the journal holds it (cases.setStatus says). */
  async function setStatus(caseId: string, status: Omit<CaseStatus, 'updatedAt'>): Promise<CaseStatusWritten> {
    return stores.cases.setStatus(caseId, status);
  }

  async function hooked(deviated: CaseRecord): Promise<CaseRecord> {
    try {
      await options.onDeviation?.(deviated);
    } catch (error) {
      logger.error({ err: error, caseId: deviated.submission.caseId }, 'the deviation hook failed; the case stays recorded as deviated');
    }
    return deviated;
  }

  /** A deviation recorded (refused) before the worker died: its item is opened (again, harmlessly) and the case noted. */
  async function finishRecordedDeviation(record: CaseRecord, proposal: Proposal, deviation: Deviation, effectId: string): Promise<CaseRecord> {
    const { problems } = deviation;
    const partition = (await stores.journal.partitionOf(effectId)) ?? '';
    const refusal = (await stores.journal.entries(partition, effectId)).findLast((entry) => entry.kind === 'REFUSED');
    const reason = refusal?.kind === 'REFUSED' ? refusal.reason : `${MODEL_DEVIATED}: ${problems.join('; ')}`;
    const noted = decisionOf(proposal);
    await openDeviationItem(effectId, record.submission, reason, noted.amountCents ?? 0, deviation.approvedCents, deviation.left, noted.action, problems);
    const deviated = await setStatus(record.submission.caseId, { ...record.status, state: 'deviated', decision: noted, effectId, problems, error: null });
    if (!deviated.written) return deviated.record;
    logger.warn({ caseId: record.submission.caseId, effectId }, 'MODEL_DEVIATED recorded before a restart: its inbox item is open and the case noted');
    return hooked(deviated.record);
  }

  /**
   * Notes a recorded proposal on the case and makes sure its effect is queued (a no-op while its job exists). A
   * proposal the case did not record is never adopted: it binds the request id (I5), so the case fails, undecided.
   */
  async function adopt(record: CaseRecord, proposal: Proposal, effectId: string): Promise<CaseRecord> {
    if (!recordedByCase(proposal, record.submission)) {
      throw failure(
        'conflicting_payload',
        `Request ${requestIdOf(record.submission.caseId)} already holds a proposal case ${record.submission.caseId} did not record (effect ${effectId}, by ${proposal.agent}): it is not this case's decision and is not adopted. Nothing was decided or proposed; submit the case under a new case id.`,
      );
    }
    await options.effects.propose(proposal);
    const adopted = await setStatus(record.submission.caseId, { ...record.status, state: 'proposed', decision: decisionOf(proposal), effectId, problems: [], error: null });
    if (adopted.written) logger.info({ caseId: record.submission.caseId, effectId }, 'case proposed');
    return adopted.record;
  }

  /**
   * The case as a proposal it recorded decides it (I5): a deviation recorded refused is finished, an accepted proposal
   * adopted. Whatever a run of the case concluded, a proposal recorded first under its effect id binds.
   */
  async function judgeRecorded(record: CaseRecord, proposal: Proposal, effectId: string): Promise<CaseRecord> {
    const deviation = deviationOf(proposal);
    if (deviation !== null && (await refusalOfLatestProposal(stores, effectId)) !== null) return finishRecordedDeviation(record, proposal, deviation, effectId);
    return adopt(record, proposal, effectId);
  }

  /**
   * A case's last attempt failed after its proposal was recorded (the effect's enqueue answered late, say, and a
   * job queued late sends it): the case is not failed ("nothing was proposed") but judged as the journal holds it.
   * When adopting fails again (the enqueue still unanswered), the case is noted proposed with that effect and the
   * error, since its effect may be queued and sent; the effect's own answer says whether it was.
   */
  async function judgeAfterFailure(caseId: string, proposal: Proposal, effectId: string): Promise<CaseRecord> {
    const record = await stores.cases.get(caseId);
    if (record === null) throw new Error(`case ${caseId} is not stored`);
    const deviation = deviationOf(proposal);
    if (deviation !== null && (await refusalOfLatestProposal(stores, effectId)) !== null) return finishRecordedDeviation(record, proposal, deviation, effectId);
    try {
      return await adopt(record, proposal, effectId);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      logger.warn({ caseId, effectId, err: error }, 'case proposed, but its effect could not be queued again; the effect answers whether it was');
      return (await setStatus(caseId, { ...record.status, state: 'proposed', decision: decisionOf(proposal), effectId, problems: [], error: { code: errorCode(error), message } })).record;
    }
  }

  async function readFacts(submission: CaseSubmission, effect: Effect, effectId: string): Promise<Record<string, unknown>> {
    const names = options.premises[submission.kind];
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new FactReadTimeout(`no answer within ${factTimeoutMs} ms`)), factTimeoutMs);
    });
    try {
      const facts = await Promise.race([options.readFacts(effect, names, { effectId, timeoutMs: factTimeoutMs }), timeout]);
      return Object.fromEntries(names.map((name) => [name, Object.hasOwn(facts, name) && facts[name] !== undefined ? facts[name] : null]));
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      throw new InterlockError('premise_read_failed', `Could not read the facts case ${submission.caseId} is decided on (${message}); nothing was asked or proposed.`, { cause: error });
    } finally {
      clearTimeout(timer);
    }
  }

  /** The case as a proposal recorded under its effect id since `record` was read decides it; null when none is. */
  async function recordedSince(record: CaseRecord, effectId: string): Promise<CaseRecord | null> {
    const first = await firstRecordedProposal(stores, effectId);
    return first === null ? null : judgeRecorded(record, first, effectId);
  }

  /**
   * A case final with no effect (declined, failed: by another run of the case, or by this one) as the journal holds
   * it: a proposal the case recorded under its effect id (the other run's, which may be queued and sent) binds it,
   * judged as after a failure; with none, the case stays as stored.
   */
  async function yieldToRecorded(stored: CaseRecord): Promise<CaseRecord> {
    if (!isFinalCase(stored.status) || stored.status.effectId !== null) return stored;
    const { caseId } = stored.submission;
    const recorded = await firstRecordedProposal(stores, caseEffectId(caseId));
    if (recorded === null || !recordedByCase(recorded, stored.submission)) return stored;
    logger.warn({ caseId, state: stored.status.state }, 'the case was ended with nothing proposed, but its proposal is recorded; it is noted as the journal holds it');
    return judgeAfterFailure(caseId, recorded, caseEffectId(caseId));
  }

  // Aborted when the worker is asked to stop: a model call in flight (up to INTERLOCK_MODEL_TIMEOUT_MS a try, and
  // its retries) ends at once instead of holding the stop past its deadline, and its case waits for the next worker.
  const stopping = new AbortController();

  /** Writes the case declined by `decision`, unless a proposal another run recorded meanwhile binds it (it then does). */
  async function declined(record: CaseRecord, decision: Extract<Decision, { action: 'decline' }>, attempts: number): Promise<CaseRecord> {
    const { caseId } = record.submission;
    const bound = await recordedSince(record, caseEffectId(caseId));
    if (bound !== null) return bound;
    const noted: CaseDecision = { model: decision.model, text: decision.text, action: 'decline', amountCents: null };
    const written = await setStatus(caseId, { decision: noted, effectId: null, error: null, attempts, state: 'declined', problems: [] });
    if (written.written) logger.info({ caseId, model: decision.model }, 'case declined by the decider');
    return written.record;
  }

  async function decide(record: CaseRecord): Promise<CaseRecord> {
    const { submission } = record;
    const { caseId } = submission;
    const effectId = caseEffectId(caseId);
    // I5: a proposal recorded for this case binds it, whatever a new decision would say.
    const recorded = await firstRecordedProposal(stores, effectId);
    // Recorded by a worker that died before noting it on the case: a deviation is finished, a proposal adopted.
    if (recorded !== null) return judgeRecorded(record, recorded, effectId);

    const attempts = record.status.attempts + 1;
    const deciding = await setStatus(caseId, { ...record.status, state: 'deciding', attempts });
    // Another run of the case (its job handed to a second worker) decided it meanwhile.
    if (!deciding.written) return deciding.record;
    const { snapshot, now, revokedBy } = await stores.approvals.describe(submission.approval);
    if (snapshot === null) throw failure('unknown_approval', `No approval ${submission.approval}: case ${caseId} cannot be decided and nothing was proposed. Grant the approval, then submit a new case.`);
    if (snapshot.scope !== caseScope(submission)) {
      throw failure('invalid_request', `Approval ${submission.approval} covers ${snapshot.scope}, not ${caseScope(submission)}: case ${caseId} cannot be decided under it and nothing was proposed.`);
    }
    // Revoked or expired since the case was stored: declined before the facts are read or any decider is asked.
    const ended = approvalEndedDecline(submission, snapshot, now, revokedBy);
    if (ended !== null) return declined(record, ended, attempts);
    const probe = probeEffect(submission, snapshot.capCents);
    const [premises, subjectCap] = await Promise.all([readFacts(submission, probe, effectId), stores.approvals.subjectCap(snapshot.scope)]);
    const subjectField = submission.kind === 'refund' ? { payment_intent: submission.subject } : { customer: submission.subject, incident: submission.incident };
    const room = roomOf(snapshot, subjectCap);
    const input: DecisionCase = {
      caseId,
      kind: submission.kind,
      story: submission.story,
      // What is left, as the gate counts it at dispatch (the approval's running reservedCents and uses, the subject's
      // cap): the decider asks at most this, not the whole cap of an approval other effects used, which the gate refuses.
      approval: { id: snapshot.id, capCents: snapshot.capCents, scope: snapshot.scope, approver: snapshot.approver, ...room },
      facts: { [LOOKUP_OF[submission.kind]]: { ...subjectField, ...premises } } as DecisionCase['facts'],
      ...(submission.incident === null ? {} : { incident: submission.incident }),
    };
    const decision = await options.decider.decide(input, { signal: stopping.signal });
    // Judged on the facts the decider was given as well as the approval: money on a payment refunded outside the case
    // or charged back, or for an incident compensated, is a deviation whichever decider decided it.
    const check = checkDecision(decision, input.approval, input.kind, input);
    const noted: CaseDecision = { model: decision.model, text: decision.text, action: decision.action, amountCents: decision.action === 'decline' ? null : decision.amountCents };
    const base = { decision: noted, effectId: null, error: null, attempts };
    if (check.verdict === 'declined') return declined(record, check.decision, attempts);
    if (check.verdict === MODEL_DEVIATED) {
      const deviatedEffect = await recordDeviation(submission, decision, snapshot, { cents: room.centsLeft, by: room.leftBy ?? null }, premises, check.message, check.problems);
      if (deviatedEffect === null) {
        // Not recorded: another run's proposal came first (it binds, an accepted one may be sent), or no amount to record.
        const bound = await recordedSince(record, effectId);
        if (bound !== null) return bound;
      }
      const deviated = await setStatus(caseId, { ...base, state: 'deviated', effectId: deviatedEffect, problems: check.problems });
      if (!deviated.written) return deviated.record;
      logger.warn({ caseId, model: decision.model, problems: check.problems, effectId: deviatedEffect }, 'MODEL_DEVIATED: the decision is outside its approval; recorded refused, nothing sent');
      return hooked(deviated.record);
    }
    const fields = proposalFields(check, input);
    const proposal: Proposal = {
      requestId: fields.requestId,
      agent: submission.agent,
      approval: fields.approval,
      premises: premises as Proposal['premises'],
      effect: fields.effect as unknown as Proposal['effect'],
      request: { case_id: caseId, token: record.submittedBy, story_sha256: storyDigest(submission.story) },
      decision: fields.decision,
    };
    const proposed = await options.effects.propose(proposal, { firstOnly: true });
    if (proposed.status !== 'recorded') {
      // Another decision of this case was recorded in between (a second worker on a redelivered job), with another
      // payload or the same one: it binds, judged as at the top (a deviation it recorded refused makes the case
      // deviated, an accepted proposal proposed), and this run adds nothing to its chain.
      const bound = await recordedSince(record, effectId);
      if (bound === null) throw new Error(`case ${caseId}: the effects queue reported a conflict, but no proposal is recorded for effect ${effectId}`);
      return bound;
    }
    const done = await setStatus(caseId, { ...base, state: 'proposed', effectId: proposed.effectId, problems: [] });
    if (done.written) logger.info({ caseId, effectId: proposed.effectId, model: decision.model, amount: noted.amountCents }, 'case proposed');
    return done.record;
  }

  /**
   * One run of a case's job: the case as the run leaves it (null: no such case). A case final before this run (a job
   * run again after its worker died before its inbox was brought in step) is left to ran(), as a run that ends it is.
   */
  async function runCase(job: Job<DecisionJob>, token?: string): Promise<CaseRecord | null> {
    const { caseId } = job.data;
    const record = await stores.cases.get(caseId);
    if (record === null) {
      logger.warn({ caseId }, 'a decisions job names a case that is not stored; dropped');
      return null;
    }
    if (isFinalCase(record.status)) return yieldToRecorded(record);
    try {
      return await decide(record);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      const code = errorCode(error);
      // What may succeed later is retried: the registry's retryable errors, and errors from outside the project
      // (a Redis hiccup); a decision that is not one, a refused key or a missing approval are not.
      const retry = isRetryable(error) || !(error instanceof InterlockError);
      const current = (await stores.cases.get(caseId))?.status ?? record.status;
      if (stopping.signal.aborted && token !== undefined && !isFinalCase(current)) {
        // Cut short by the stop, not by the case or the model: back in the queue as it stood, this attempt not
        // counted (a delayed job keeps its attempts), decided by whichever worker runs next.
        await setStatus(caseId, { ...current, state: 'queued' });
        await job.moveToDelayed(Date.now() + 1_000, token);
        logger.info({ caseId }, 'the worker is stopping: the case was put back in the queue undecided');
        throw new DelayedError();
      }
      const delay = typeof job.opts.backoff === 'object' ? (job.opts.backoff.delay ?? 0) : (job.opts.backoff ?? 0);
      // The decider's API unavailable, or Stripe while the facts were read: the job waits it out without using up an
      // attempt (DeciderRetry), and the case fails only once the outage has lasted the window. Said once per case per
      // outage; each retry at debug.
      let outageEnded: { state: DeciderOutage; at: number } | null = null;
      const stripeDown = isFactsOutage(error);
      if (retry && (isDeciderOutage(error) || stripeDown) && token !== undefined) {
        const now = await redisNow(stores);
        const next = afterDeciderOutage(job.data.deciderOutage ?? null, now, job.attemptsStarted, askedWaitOf(error), { firstDelayMs: Math.max(1, delay), ...deciderRetry });
        if (next.kind === 'give-up') {
          outageEnded = { state: next.state, at: now };
        } else {
          // While it waits, the case says so: not the error's advice to submit it again, which is for a case failed.
          const waiting = `${message.replace(DECIDE_AGAIN_LATER, '')} The case is tried again by itself until ${new Date(next.state.failingSince + deciderRetry.forMs).toISOString()} (INTERLOCK_RETRY_FOR_MS), and fails if it is still unavailable then.`;
          const queued = await setStatus(caseId, { ...current, state: 'queued', error: { code, message: waiting } });
          if (!queued.written) return yieldToRecorded(queued.record);
          let moved = true;
          try {
            await job.updateData({ ...job.data, deciderOutage: next.state });
            await job.moveToDelayed(delayedUntil(next.at, now), token);
          } catch {
            // Not delayed (Redis went away again): the job's own attempts and backoff bring it back.
            moved = false;
          }
          if (moved) {
            const noted = { caseId, code, failures: next.state.failures, failingForS: Math.round((now - next.state.failingSince) / 1_000), retryAt: next.at, givesUpAt: next.state.failingSince + deciderRetry.forMs };
            const what = stripeDown ? 'Stripe is unavailable for the facts' : 'the decider is unavailable';
            if (next.state.failures === 1) logger.warn(noted, `${what}: the case waits for it and is retried until it answers (further tries are logged at debug)`);
            else logger.debug(noted, `${what}, still: the case is retried later`);
            throw new DelayedError();
          }
        }
      }
      const last = outageEnded !== null || job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
      if (retry && !last) {
        // Decided meanwhile by another run of the case: nothing is left to retry (failed or declined, it yields to a
        // proposal the case recorded).
        const queued = await setStatus(caseId, { ...current, state: 'queued', error: { code, message } });
        if (!queued.written) return yieldToRecorded(queued.record);
        logger.warn({ caseId, code, attempt: job.attemptsMade + 1, retryInMs: decisionBackoff(job.attemptsMade + 1, delay, error), askedMs: askedWaitOf(error) }, 'case not decided yet; it is retried');
        throw error;
      }
      // A proposal the case recorded before the error binds it (the effect may be queued and sent): never failed.
      const recorded = await firstRecordedProposal(stores, caseEffectId(caseId));
      if (recorded !== null && recordedByCase(recorded, record.submission)) {
        logger.warn({ caseId, code }, 'the case failed after its proposal was recorded; it is noted as the journal holds it');
        return judgeAfterFailure(caseId, recorded, caseEffectId(caseId));
      }
      // An error the worker retried is no fault of the case: failed under a code that lets the same case, submitted
      // again, be decided (mayReopenCase), not `internal`, which would keep it failed for good under its id.
      const failure =
        retry && !isRetryable(error)
          ? { code: 'decision_interrupted' as const, message: `${message} (nothing was proposed; submit the case again to decide it)` }
          : outageEnded !== null
            ? { code, message: `${message} It was unavailable for ${Math.round((outageEnded.at - outageEnded.state.failingSince) / 1_000)} s (${outageEnded.state.failures} tries, INTERLOCK_RETRY_FOR_MS=${deciderRetry.forMs}).` }
            : { code, message };
      const failed = await setStatus(caseId, { ...current, state: 'failed', error: failure });
      if (failed.written) {
        logger.warn({ caseId, code: failure.code, ...(outageEnded === null ? {} : { failures: outageEnded.state.failures, failingSinceMs: outageEnded.state.failingSince }) }, 'case failed; nothing was proposed');
        try {
          options.onFailed?.(caseId, failure.code);
        } catch (hookError) {
          logger.warn({ err: hookError, caseId }, 'the case-failed hook threw; the case stays failed');
        }
      }
      return failed.record;
    }
  }

  /**
   * A run ended with the case decided or not stored: the decided case's failure items are closed (closeFailureItemsOf),
   * then its note in the cases' outbox goes. The note stays while the case waits for its decision, so a job removed
   * before then is queued again by the sweep; a job that failed for good without writing the case final (its catch
   * could not reach Redis) leaves it too, and the sweep runs that job again. A failed case's note goes once its inbox
   * item is open (the 'completed' hook below, or the sweep). A note that could not be dropped here (nor the items
   * closed) stays for the sweep, which does both for a final case.
   */
  async function ran(caseId: string, record: CaseRecord | null): Promise<void> {
    if (record !== null && (record.status.state === 'failed' || !isFinalCase(record.status))) return;
    try {
      if (record === null) await stores.cases.queued(caseId);
      else await dropNoteOfFinal(stores, record);
    } catch (error) {
      logger.warn({ err: error, caseId }, "could not close the decided case's failure items or drop its outbox note; the next sweep does");
    }
  }

  const connection = stores.queueConnection();
  const worker = new Worker<DecisionJob>(
    stores.queues.decisions,
    async (job: Job<DecisionJob>, token?: string): Promise<{ caseId: string; state: CaseStatus['state'] | null }> => {
      const { caseId } = job.data;
      const record = await runCase(job, token);
      await ran(caseId, record);
      return { caseId, state: record?.status.state ?? null };
    },
    // A job is never failed for stalling (a high maxStalledCount): a stall is a worker's death, not a fault of the
    // case, and BullMQ fails a job that stalled too often without running the catch above, which would leave the case
    // undecided (`deciding`) with nothing to run it again. A decision re-run after a stall adopts what was recorded.
    {
      connection,
      ...stores.bullmq,
      concurrency: options.concurrency ?? 8,
      lockDuration: options.lockMs ?? 30_000,
      stalledInterval: options.lockMs ?? 30_000,
      maxStalledCount: 1_000,
      settings: { backoffStrategy: (attemptsMade, _type, error, job) => decisionBackoff(attemptsMade, typeof job?.opts.backoff === 'object' ? (job.opts.backoff.delay ?? 0) : (job?.opts.backoff ?? 0), error) },
    },
  );
  logWorkerErrors(worker, logger, 'decisions worker error');
  // A case submitted again between its last attempt writing `failed` and its job completing was queued again (reopen)
  // while the job still ran, so the submission could not retry it (a running job is neither failed nor completed) and
  // adding it under its id was a no-op: once completed, nothing would ever run the case. The job that ended the case
  // failed looks again once it is completed, and runs again for a case queued meanwhile.
  //
  // A run that ended with the case failed also opens the failure's inbox item once it has completed (not before: the
  // run ends as soon as the case is written), then drops the case's outbox note, which it kept for this: a process
  // that stops in between leaves the note, and the sweep opens the item.
  worker.on('completed', (job: Job<DecisionJob>, result: unknown) => {
    if ((result as { state?: unknown } | null)?.state !== 'failed') return;
    void (async () => {
      const { caseId } = job.data;
      let record = await stores.cases.get(caseId);
      if (record?.status.state === 'failed') {
        try {
          await dropNoteOfFinal(stores, record);
        } catch (error) {
          logger.error({ err: error, caseId }, "the case failed, but its inbox item could not be opened yet; the cases' outbox sweep opens it");
          return;
        }
        // Submitted again meanwhile (its note, dropped just now, is noted again below).
        record = await stores.cases.get(caseId);
      }
      if (record?.status.state !== 'queued') return;
      // Its run, ending with the case failed, dropped the case's outbox note: noted again for the run to come.
      await stores.cases.queueing(job.data.caseId, await stores.journal.serverTime());
      try {
        await job.retry('completed', { resetAttemptsMade: true, resetAttemptsStarted: true });
        logger.info({ caseId: job.data.caseId }, 'the case was submitted again as its last attempt failed: it is decided again');
      } catch (error) {
        // Retried already by the submission, which found the job completed first.
        if (await job.isCompleted()) throw error;
      }
    })().catch((error: unknown) => logger.error({ err: error, caseId: job.data.caseId }, 'a case submitted again as its last attempt failed could not be queued again; submit it once more'));
  });
  return {
    worker,
    async close(force = false): Promise<void> {
      stopping.abort();
      await closeWorker(worker, connection, force);
    },
  };
}

export type DecisionsWorker = ReturnType<typeof startDecisionsWorker>;
