// The effects queue: one BullMQ job per gated effect, its id the effect id (so a second enqueue of one effect is a
// no-op), its data the recorded proposal. The worker hands each job to gate.submit. BullMQ is at-least-once; the
// gate's claims and recovery, not BullMQ's lock, are what make an effect reach Stripe at most once.
import { DelayedError, Queue, QueueEvents, UnrecoverableError, Worker, type Job } from 'bullmq';
import { createProposalRecorder, errorCode, isRetryable, latestProposal, settledOutcome, slowDownOf, type GateResult, type Recorded, type Sender, type SlowDown, type Stores } from '../src/interlock.js';

export type EffectJob = { proposal: unknown; recordedAt: number };
export type EffectAnswer = GateResult;

export type EffectsQueueOptions = {
  /** Attempts for a job whose submit failed retryably (a premise read Stripe did not answer, a Redis hiccup). */
  attempts?: number;
  backoffMs?: number;
};

/** Producer side: records a proposal (I5 at the edge) and queues it; `waitFor` hears the outcome without polling. */
export function createEffectsQueue(stores: Stores, options: EffectsQueueOptions = {}) {
  const connection = stores.queueConnection();
  const queue = new Queue<EffectJob, EffectAnswer>(stores.queues.effects, { connection, prefix: stores.queues.prefix });
  const record = createProposalRecorder(stores);
  let events: QueueEvents | null = null;
  let eventsConnection: ReturnType<Stores['queueConnection']> | null = null;
  let ready: Promise<QueueEvents> | null = null;

  /** The queue's event stream, subscribed before any job is looked at, so no completion can slip between. */
  function eventsOf(): Promise<QueueEvents> {
    ready ??= (async () => {
      // A connection of its own (it blocks on the event stream), closed with the queue: BullMQ leaves a connection
      // it was given open.
      eventsConnection = stores.queueConnection();
      events = new QueueEvents(stores.queues.effects, { connection: eventsConnection, prefix: stores.queues.prefix });
      await events.waitUntilReady();
      return events;
    })();
    return ready;
  }

  return {
    queue,
    /**
     * Records the proposal and queues it, unless recording refused it (another payload under this request id) or
     * it is already settled. The facts it carries as premises were read by the caller at decision time.
     */
    async propose(proposal: unknown): Promise<Recorded & { queued: boolean }> {
      const recorded = await record(proposal);
      if (recorded.status === 'conflict' || (recorded.status === 'exists' && recorded.outcome !== null && !recorded.open)) return { ...recorded, queued: false };
      // A job runs the effect's latest recorded proposal (the worker reads it from the journal). One that is
      // waiting or delayed will pick up a proposal recorded now; one that already ran, or is running, will not, so
      // a newly recorded proposal (re-decided after a refusal) gets a follow-up job of its own.
      const state = await queue.getJobState(recorded.effectId);
      const followUp = recorded.status === 'recorded' && (state === 'completed' || state === 'failed' || state === 'active');
      await queue.add('effect', { proposal, recordedAt: Date.now() }, {
        jobId: followUp ? `${recorded.effectId}.${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}` : recorded.effectId,
        attempts: options.attempts ?? 8,
        backoff: { type: 'exponential', delay: options.backoffMs ?? 1_000 },
        // Receipts keep the record; finished jobs are kept a while for operators, then dropped.
        removeOnComplete: { age: 24 * 3_600, count: 10_000 },
        removeOnFail: { age: 7 * 24 * 3_600 },
      });
      return { ...recorded, queued: true };
    },
    /**
     * The effect's answer once a job of it finished with one (heard on the queue's event stream, no polling), or
     * at once when the journal already holds the outcome; null when neither happened within `timeoutMs`.
     */
    async waitFor(effectId: string, timeoutMs: number): Promise<EffectAnswer | null> {
      const stream = await eventsOf();
      const ours = (jobId: string) => jobId === effectId || jobId.startsWith(`${effectId}.`);
      return new Promise<EffectAnswer | null>((resolve) => {
        const finish = (answer: EffectAnswer | null) => {
          stream.off('completed', onCompleted);
          stream.off('failed', onFailed);
          clearTimeout(timer);
          resolve(answer);
        };
        const onCompleted = ({ jobId, returnvalue }: { jobId: string; returnvalue: unknown }) => {
          if (!ours(jobId)) return;
          finish((typeof returnvalue === 'string' ? JSON.parse(returnvalue) : returnvalue) as EffectAnswer);
        };
        // A job that failed for good (bad input the gate refused to take) has no answer; the caller reads the journal.
        const onFailed = ({ jobId }: { jobId: string }) => {
          if (ours(jobId)) finish(null);
        };
        const timer = setTimeout(() => finish(null), timeoutMs);
        // Subscribed first, then the journal is asked: an outcome cannot slip in between.
        stream.on('completed', onCompleted);
        stream.on('failed', onFailed);
        settledOutcome(stores, effectId).then(
          (outcome) => {
            if (outcome !== null) finish({ effectId, outcome } as EffectAnswer);
          },
          () => undefined,
        );
      });
    },
    async close(): Promise<void> {
      await events?.close();
      await eventsConnection?.quit().catch(() => undefined);
      await queue.close();
      await connection.quit().catch(() => undefined);
    },
  };
}

export type EffectsQueue = ReturnType<typeof createEffectsQueue>;

export type EffectsWorkerOptions = {
  concurrency?: number;
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

/** BullMQ's limiter with no limit of its own (see below why one is always set). */
const UNLIMITED_JOBS_PER_SECOND = 1_000_000;

/** What a job comes to, from the gate's answer: done, ask again at an instant, or retry with backoff. */
export function disposition(answer: EffectAnswer): { kind: 'done' } | { kind: 'later'; at: number } {
  if (answer.outcome === 'IN_FLIGHT') return { kind: 'later', at: Date.now() + Math.max(50, answer.retryAfterMs ?? 1_000) };
  if (answer.outcome.startsWith('UNRESOLVED:')) return { kind: 'later', at: Date.now() + 1_000 };
  return { kind: 'done' };
}

/**
 * The effects worker. Lock and stall settings: a job's lock lasts 60 s and is renewed while its submit runs (a send
 * takes at most the send timeout, 30 s by default), and a job whose worker died is handed to another worker once
 * the lock lapses. That is slow on purpose: the gate's heartbeat takeover settles a dead worker's effect within
 * seconds, and the re-delivered job then only finds it settled. A job is never failed for stalling (a high
 * maxStalledCount): a stall is a worker's death, which the gate recovers from, not a fault of the effect.
 */
export function startEffectsWorker(stores: Stores, sender: Sender, options: EffectsWorkerOptions = {}) {
  const { gate } = sender;
  const { logger } = stores;
  const connection = stores.queueConnection();
  const worker = new Worker<EffectJob, EffectAnswer>(
    stores.queues.effects,
    async (job: Job<EffectJob, EffectAnswer>, token?: string) => {
      let answer: EffectAnswer;
      try {
        // The latest proposal recorded for the effect (a re-decision after a refusal included); the job's own copy
        // only when the journal has none (it was recorded by an older producer).
        const effectId = job.id?.split('.')[0] ?? '';
        answer = await gate.submit((await latestProposal(stores, effectId)) ?? job.data.proposal);
      } catch (error) {
        const slowDown = slowDownOf(error);
        if (slowDown !== null) return slowDownQueue(job, slowDown, 'read');
        // Retry is a classification: only what may succeed later is retried.
        if (isRetryable(error)) throw error;
        throw new UnrecoverableError(`${errorCode(error)}: ${error instanceof Error ? error.message : String(error)}`);
      }
      await options.onAnswer?.(answer);
      // A rate-limited send kept its claim (its outcome is unknown); the job comes back once the pause is over and
      // settles the effect under the same key.
      if (answer.slowDown !== undefined) return slowDownQueue(job, answer.slowDown, 'send');
      const next = disposition(answer);
      if (next.kind === 'later') {
        await job.moveToDelayed(next.at, token);
        throw new DelayedError();
      }
      logger.info({ effectId: answer.effectId, outcome: answer.outcome }, 'effect job finished');
      return answer;
    },
    {
      connection,
      prefix: stores.queues.prefix,
      concurrency: options.concurrency ?? 16,
      lockDuration: 60_000,
      stalledInterval: 30_000,
      maxStalledCount: 1_000,
      // A limiter is always set: BullMQ honours a manual pause (rateLimit below) only on a queue with one.
      limiter: { max: options.ratePerSecond ?? UNLIMITED_JOBS_PER_SECOND, duration: 1_000 },
    },
  );

  /**
   * Stripe answered 429 (a premise read, a lookup or a send): the whole queue pauses for Stripe's Retry-After, or the
   * configured backoff, and the job goes back to waiting without using up an attempt. Every worker of the queue
   * sees the pause, so the fleet slows down together instead of hammering an account that is over its limit.
   */
  async function slowDownQueue(job: Job<EffectJob, EffectAnswer>, slowDown: SlowDown, what: 'read' | 'send'): Promise<never> {
    const pauseMs = Math.max(50, slowDown.retryAfterMs ?? options.rateLimitBackoffMs ?? 1_000);
    logger.warn({ effectId: job.id, pauseMs, call: what }, 'Stripe rate-limited a call; pausing the effects queue');
    await worker.rateLimit(pauseMs);
    throw Worker.RateLimitError();
  }
  worker.on('failed', (job, error) => logger.warn({ effectId: job?.id, error: error.message }, 'effect job failed'));
  worker.on('error', (error) => logger.error({ err: error }, 'effects worker error'));
  return {
    worker,
    /** Stops taking jobs and waits for the ones running (each ends within its send deadline). */
    async close(force = false): Promise<void> {
      await worker.close(force);
      await connection.quit().catch(() => undefined);
    },
  };
}

export type EffectsWorker = ReturnType<typeof startEffectsWorker>;
