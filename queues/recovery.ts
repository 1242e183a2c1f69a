// Recovery, event-driven (issue 9 §3): a pass at worker start (this worker's dead claims from a previous boot, and
// any dead worker's), a delayed job at each instant a pass says more can be done (a heartbeat that will lapse, a
// send deadline plus the settle margin), and a slow timer as a safety net. Nothing polls in between.
import { randomUUID } from 'node:crypto';
import { Queue, Worker } from 'bullmq';
import { closeConnection, InterlockError, LONGEST_RETRY_AFTER_MS, repairReapprovals, withinRedisTimeout, type ProposeNow, type ReapprovalRepair, type RecoveryReport, type Sender, type Stores } from '../src/interlock.js';
import { closeWorker } from './closing.js';
import { cutHandSetPause } from './effects.js';
import { logWorkerErrors } from './worker-errors.js';

/** Scheduled passes are grouped into slots this long. */
const SLOT_MS = 100;

export type RecoveryOptions = {
  /** The safety net: a pass at least this often even if nothing was scheduled. */
  safetyIntervalMs?: number;
  onReport?: (report: RecoveryReport) => void;
  /**
   * Re-approvals a process closed and never proposed (repairReapprovals), proposed through `propose` at start and with
   * every safety pass, once their note is `graceMs` old (a re-approval on its way takes far less).
   */
  reapprovals?: { propose: ProposeNow; graceMs?: number; onRepair?: (repair: ReapprovalRepair) => void };
  /**
   * The producers' outbox: a proposal recorded and not judged (its producer stopped, or lost Redis, before queuing it,
   * or its job was removed) is queued through this (the effects queue's requeue) once its entry is OUTBOX_GRACE_MS old,
   * at the next pass. True when a job stands for it (added now or there already): its entry is kept for another grace.
   */
  requeue?: (effectId: string) => Promise<boolean>;
  /**
   * The cases' outbox: a case stored and never queued (its submission stopped, or lost Redis, in between) is queued
   * through this (the decisions queue's requeueUnqueued) at start and with every safety pass.
   */
  requeueCases?: () => Promise<{ queued: string[]; failed: string[] }>;
};

/** The job ids of the passes operators asked for on a process without the worker role (createRecoveryRequests). */
const REQUESTED_PASS_PREFIX = 'requested-';

/** A pass an operator asked for, queued for whichever worker process takes it first (POST /v1/recover's 202). */
export type QueuedPass = { object: 'recovery_queued'; job_id: string };

/**
 * What POST /v1/recover does in a process without the worker role (compose's `api`): it adds a pass job to the
 * recovery queue, one per request under an id of its own, and a worker process's recovery runs it as it runs the
 * scheduled ones, logging the report under that job id. Nothing waits for the pass: until a worker runs, the job waits.
 */
export function createRecoveryRequests(stores: Stores) {
  const connection = stores.queueConnection();
  const queue = new Queue(stores.queues.recovery, { connection, ...stores.bullmq });
  logWorkerErrors(queue, stores.logger, 'recovery queue error');
  return {
    async request(): Promise<QueuedPass> {
      const jobId = `${REQUESTED_PASS_PREFIX}${randomUUID()}`;
      // Bounded as every Redis call a route waits on: a Redis down answers 503 redis_unavailable, not a hung request.
      const ms = stores.config.redisCommandTimeoutMs;
      await withinRedisTimeout(queue.add('pass', { at: null }, { jobId, removeOnComplete: true, removeOnFail: 100 }), ms, `Redis did not answer within ${ms} ms, so no recovery pass was queued`);
      return { object: 'recovery_queued', job_id: jobId };
    },
    async close(): Promise<void> {
      await queue.close();
      await closeConnection(connection);
    },
  };
}

/** How old a re-approval's note must be before the repair takes it for one whose process stopped. */
export const REAPPROVAL_GRACE_MS = 30_000;

export function startRecovery(stores: Stores, sender: Sender, options: RecoveryOptions = {}) {
  const { logger } = stores;
  const connection = stores.queueConnection();
  const queue = new Queue(stores.queues.recovery, { connection, ...stores.bullmq });
  logWorkerErrors(queue, logger, 'recovery queue error');
  // The effects queue's pause for Stripe's rate limit (README "Rate limits"), which every pass honours and extends.
  const effects = new Queue(stores.queues.effects, { connection, ...stores.bullmq, skipMetasUpdate: true });
  logWorkerErrors(effects, logger, 'recovery: effects queue error');
  /**
   * What is left of the effects queue's pause, in ms (0: none). A pause is the limiter key set to the largest count
   * (BullMQ's rateLimit); asked with that count, the jobs a second INTERLOCK_STRIPE_RATE allows never read as one.
   */
  const pausedMs = async () => Math.max(0, await effects.getRateLimitTtl(Number.MAX_SAFE_INTEGER));
  /** The pause set by hand this process cut last, and when (this process's clock) the cut one ends. */
  let cut: { endsAt: number; setByHand: { leftMs: number; key: string } } | null = null;
  const rateLimit = {
    /**
     * The pause as a pass honours it: one longer than the service ever sets is no 429's (someone wrote the key), and
     * is cut to Stripe's longest Retry-After first (cutHandSetPause logs it), so it never holds the workers and the
     * passes longer than that; every pass looks, so one written again is cut again. While the pause in force is the
     * one cut (it ends when that does, within a second), the passes still say it was set by hand, not blame Stripe.
     */
    async remaining() {
      const setByHand = await cutHandSetPause(effects, connection, logger, 'recovery');
      const ms = await pausedMs();
      if (setByHand !== null) cut = { endsAt: Date.now() + ms, setByHand };
      else if (cut !== null && (ms === 0 || Math.abs(Date.now() + ms - cut.endsAt) > 1_000)) cut = null;
      return cut === null || ms === 0 ? { ms } : { ms, setByHand: cut.setByHand };
    },
    // Never shortens a longer pause (a Retry-After another worker heard), and never sets one longer than a 429's.
    async pause(ms: number) {
      const pauseMs = Math.min(ms, LONGEST_RETRY_AFTER_MS);
      if ((await pausedMs()) < pauseMs) await effects.rateLimit(pauseMs);
    },
    backoffMs: stores.config.rateLimitBackoffMs,
  };
  const workerConnection = stores.queueConnection();
  let closed = false;

  /**
   * Schedules a pass for the Redis-clock instant `at`: one job per 100 ms slot (a burst of reports adds one), run at
   * the slot's end, so it never runs before `at`. A pass that asks for the slot it is itself running in (its job id
   * is still taken, and adding it again would be dropped) gets the next slot: a wake-up is never lost.
   */
  async function schedule(at: number | null, runningSlot: number | null): Promise<void> {
    if (at === null || closed) return;
    const slot = Math.max(Math.ceil(at / SLOT_MS), runningSlot === null ? 0 : runningSlot + 1);
    const delay = Math.max(0, slot * SLOT_MS - (await stores.journal.serverTime()));
    await queue.add('pass', { at }, { delay, jobId: `pass-${slot}`, removeOnComplete: true, removeOnFail: 100 });
  }

  /**
   * Every pass in progress, whoever started it (the start, the safety timer, a pass job, a caller of `pass`), with
   * what follows it: close() waits for them all, since a pass may be resending an effect, and the sender and the
   * stores must outlive that send (its answer recorded, the heartbeat kept while it is on the wire).
   */
  const passing = new Set<Promise<unknown>>();
  function tracked<T>(work: Promise<T>): Promise<T> {
    const settled: Promise<void> = work
      .then(
        () => undefined,
        () => undefined,
      )
      .finally(() => passing.delete(settled));
    passing.add(settled);
    return work;
  }

  async function runPass(runningSlot: number | null): Promise<RecoveryReport> {
    const { requeue } = options;
    const report = await sender.gate.recover({ rateLimit, ...(requeue ? { requeue: (effectId: string) => requeue(effectId) } : {}) });
    options.onReport?.(report);
    await schedule(report.nextAt, runningSlot);
    return report;
  }

  /** One pass now (an operator's POST /v1/recover); refused once close() has begun. */
  function pass(runningSlot: number | null = null): Promise<RecoveryReport> {
    if (closed) return Promise.reject(new InterlockError('not_available', 'This process is stopping, so it starts no recovery pass; run it on another worker, or once this one runs again.'));
    return tracked(runPass(runningSlot));
  }

  const worker = new Worker(
    stores.queues.recovery,
    async (job) => {
      const slot = /^pass-(\d+)$/.exec(job.id ?? '')?.[1];
      // A job taken before close() began is run (close() waits for it); the closed worker takes none after.
      const report = await tracked(runPass(slot === undefined ? null : Number(slot)));
      // An operator's pass queued by a process without the worker role: this log line is its answer.
      if (job.id?.startsWith(REQUESTED_PASS_PREFIX) === true) logRequested(job.id, report);
    },
    { connection: workerConnection, ...stores.bullmq, concurrency: 1 },
  );
  logWorkerErrors(worker, logger, 'recovery worker error');

  function logRequested(jobId: string, report: RecoveryReport): void {
    const counts = { settled: report.settled.length, waiting: report.waiting.length, unresolved: report.unresolved.length, skipped: report.skipped.length };
    logger.info({ jobId, ...counts, settledEffects: report.settled.map(({ effectId, outcome }) => ({ effectId, outcome })), unresolvedEffects: report.unresolved.map(({ effectId, error }) => ({ effectId, error })) }, `the recovery pass an operator asked for (POST /v1/recover, job ${jobId}) ran: ${counts.settled} effect(s) settled, ${counts.waiting} waiting, ${counts.unresolved} unresolved, ${counts.skipped} passed over; \`interlock effect show EFFECT_ID\` shows each`);
  }

  let repairing: Promise<ReapprovalRepair | null> | null = null;
  /** The re-approval repair, one at a time; a failure is logged and left to the next safety pass, never failing recovery. */
  function repair(): Promise<ReapprovalRepair | null> {
    repairing ??= repairOnce().finally(() => {
      repairing = null;
    });
    return repairing;
  }

  async function repairOnce(): Promise<ReapprovalRepair | null> {
    const reapprovals = options.reapprovals;
    if (reapprovals === undefined || closed) return null;
    try {
      const done = await repairReapprovals({ inbox: stores.inbox, journal: stores.journal, propose: reapprovals.propose }, { graceMs: reapprovals.graceMs ?? REAPPROVAL_GRACE_MS });
      if (done.proposed.length > 0) logger.warn({ items: done.proposed }, 're-approvals closed by a process that stopped before proposing them were proposed now, on the premises their approvers saw');
      if (done.unproposable.length > 0) logger.error({ items: done.unproposable }, 're-approvals a stopped process left can no longer be proposed; their items are closed as re-approved, so read each item and its effect');
      if (done.failed.length > 0) logger.error({ failed: done.failed }, 'could not propose re-approvals a stopped process left; the next safety pass tries again');
      reapprovals.onRepair?.(done);
      return done;
    } catch (error) {
      logger.error({ err: error }, 'could not read the re-approvals a stopped process may have left; the next safety pass tries again');
      return null;
    }
  }

  /** The cases' outbox swept; a failure is logged and left to the next safety pass, never failing recovery. */
  async function sweepCases(): Promise<void> {
    const requeueCases = options.requeueCases;
    if (requeueCases === undefined || closed) return;
    try {
      const done = await requeueCases();
      if (done.queued.length > 0) logger.warn({ cases: done.queued }, 'cases stored by a submission that stopped before queuing them were queued now');
    } catch (error) {
      logger.error({ err: error }, 'could not read the cases a stopped submission may have left unqueued; the next safety pass tries again');
    }
  }

  /** What every safety pass, and the pass at start, does after the gate's recovery. */
  const afterPass = () => Promise.all([repair(), sweepCases()]);

  const safety = setInterval(() => {
    if (closed) return;
    void tracked(
      runPass(null)
        .catch((error: unknown) => logger.error({ err: error }, 'recovery pass failed; the next one retries'))
        .finally(afterPass),
    );
  }, options.safetyIntervalMs ?? 60_000);
  safety.unref();

  // The pass at start: what this worker's previous boot left open, and what any dead worker left.
  const started = tracked(
    runPass(null)
      .catch((error: unknown) => {
        logger.error({ err: error }, 'recovery pass at start failed; the safety timer retries');
        return null;
      })
      .finally(afterPass),
  );

  return {
    started,
    pass,
    /** The BullMQ worker that runs the scheduled passes (a readiness check asks it). */
    worker,
    async close(): Promise<void> {
      closed = true;
      clearInterval(safety);
      // The worker first, so it takes no other pass job (it waits for the one it runs), then every other pass.
      await closeWorker(worker, workerConnection);
      await Promise.all([...passing]);
      await repairing;
      await queue.close();
      await effects.close();
      await closeConnection(connection);
    },
  };
}

export type Recovery = ReturnType<typeof startRecovery>;
