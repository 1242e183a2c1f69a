// The facts queue (issue 10 §1-3): the webhook route adds each verified Stripe event as a job whose id is the event
// id, so an event Stripe delivers twice is queued once; the facts worker appends what it says to the receipts it
// concerns. The reconciler re-reads, on a schedule and on demand, every effect still worth watching, so receipts
// reach the same final answer when webhooks were missed.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { DelayedError, Job, Queue, UnrecoverableError, Worker } from 'bullmq';
import { activeJobs, afterOutages, orphansOf } from './after-outages.js';
import { closeWorker } from './closing.js';
import { logWorkerErrors } from './worker-errors.js';
import { closeConnection, createCoalescer, errorCode, errorMessage, InterlockError, isRedisOutage, journalOf, LONGEST_RECONCILE_SINCE_MS, LONGEST_RETRY_AFTER_MS, MAX_JSON_DEPTH, nestsDeeperThan, reconcileLease, Rejected, repairExposures, slowDownOf, watchedWithPositions, type Applied, type FactsApplier, type SlowDown, type Stores, type ReconcileTurn, type StripeEvent, type WatchPosition, watchAgain, withinRedisTimeout } from '../src/interlock.js';

/**
 * Every facts job: retried while Stripe cannot answer its re-read; once done, kept 7 days but only the newest 100,000
 * (a bound on Redis memory, which an account of 35,000 events a day passes within Stripe's 3 days of redeliveries:
 * a redelivery is known by its event's marker instead, EVENT_MARKER_MS); 30 days once failed for good (a redelivery
 * runs it again).
 */
const FACT_JOB_OPTIONS = { attempts: 10, backoff: { type: 'exponential', delay: 1_000 }, removeOnComplete: { age: 7 * 24 * 3_600, count: 100_000 }, removeOnFail: { age: 30 * 24 * 3_600 } };

/**
 * How long an event's marker (keys.eventQueued) says its job was queued: longer than the 3 days Stripe redelivers an
 * event it was not answered 200 for, whatever became of the job, so such a redelivery is a duplicate, applied once.
 */
export const EVENT_MARKER_MS = 7 * 24 * 3_600_000;

/**
 * Which of a batch's jobs exist, in one command (exists-n.lua). Sent whole with EVAL, never EVALSHA: a Redis that
 * lost its scripts would answer NOSCRIPT, and the retry would reach Redis after the batch's adds and find every job.
 */
const EXISTS_N = readFileSync(new URL('./exists-n.lua', import.meta.url), 'utf8');

/**
 * Most events in one batch: a burst read in one turn reaches Redis in parts this size, and Redis runs the first part
 * (about 50 µs of Lua per add, then an fsync) while Node still reads the rest. Smaller parts cost Node more per event
 * (each part is one more check, pipeline, write and reply to handle).
 */
const MAX_BATCH = 16;

/**
 * How long a webhook request waits for its event to be stored before it is answered 503 (Stripe delivers it again).
 * The queue's connection waits out a Redis outage instead of failing its commands (BullMQ needs that), so without
 * a bound a request would hang for as long as Redis is away. Well under the time Stripe waits for an answer.
 */
export const FACTS_ACCEPT_TIMEOUT_MS = 5_000;

/** Connection states in which Redis is known to be away: an event is refused at once rather than after the timeout. */
const AWAY = new Set(['reconnecting', 'close', 'end']);

/** What a webhook request refused for want of Redis is told (the route answers 503). */
function refusal(reason: string): string {
  return `The facts queue cannot take the event: ${reason}. Stripe delivers it again.`;
}

function unavailable(reason: string): InterlockError {
  return new InterlockError('redis_unavailable', refusal(reason));
}

/** What an event's answer rests on (createFactsQueue): its job, or, for a duplicate whose job is gone, its marker. */
type Stored = { duplicate: boolean; on: 'job' | 'marker' };

export function createFactsQueue(stores: Stores) {
  // Every webhook request adds through this one connection; the adds coalesce themselves (below).
  const connection = stores.queueConnection();
  const queue = new Queue<StripeEvent>(stores.queues.facts, { connection, ...stores.bullmq });
  logWorkerErrors(queue, stores.logger, 'facts queue error');
  /**
   * An event delivered again whose job failed for good (Stripe refused its re-read with a 401 while a key was being
   * rotated, or its retries ran out during an outage): its job runs again, with its retries back, instead of the
   * redelivery being taken as a duplicate of a job that applied nothing. Stripe stops redelivering once it was
   * answered 200, so a person's redelivery (Dashboard "Resend", `stripe events resend`) is the way such an event gets
   * applied after the reconciler's horizon. Its job keeps its start count, so the applier raises the alerts of facts a
   * run before it may have recorded. A job another delivery ran again first is left as it is.
   */
  async function runAgain(event: StripeEvent): Promise<void> {
    const job = await Job.fromId<StripeEvent>(queue, event.id);
    if (!job) return;
    try {
      await job.retry('failed', { resetAttemptsMade: true });
    } catch (error) {
      if ((await job.getState()) !== 'failed') return;
      throw error;
    }
    stores.logger.info({ event: event.id, type: event.type }, 'an event whose facts job had failed for good was delivered again: its job runs again');
  }
  /**
   * The events of one event-loop turn are queued together, at most MAX_BATCH at a time, in three steps on this
   * connection: one check of which of their jobs exist (one command) and which of them have a marker (another); one
   * addBulk of the events that have neither, which Redis makes durable by one fsync before it answers; then the markers
   * of the events now queued. A marker is written only once its event's job is stored, so an event is never answered
   * `duplicate` unless its job was queued; a process that dies between the add and the marker leaves the job, which a
   * redelivery finds. An event delivered again while this process is still storing it waits for that storing and is
   * a duplicate of it (two processes racing may both take it as new: only the count is wrong, the add of a known id
   * changes nothing). A failed step fails the batch (addBulk answers for all of it): the events answered so are
   * delivered again by Stripe, and are found known then if they were queued after all.
   */
  const adds = createCoalescer<StripeEvent, Stored>(async (events) => {
    const markers = events.map((event) => stores.keys.eventQueued(event.id));
    const [found, marked] = await Promise.all([
      connection.eval(EXISTS_N, events.length + 1, ...events.map((event) => queue.toKey(event.id)), queue.toKey('failed'), ...events.map((event) => event.id)),
      connection.mget(...markers),
    ]);
    if (!Array.isArray(found) || found.length !== events.length) throw new Error(`Redis answered ${String(JSON.stringify(found)).slice(0, 200)} when asked which of ${events.length} jobs exist.`);
    // A marker without its job: the job was queued within EVENT_MARKER_MS and is gone since (completed, then removed).
    const known = events.map((_, index) => found[index] === 1 || (found[index] === 0 && marked[index] !== null));
    const fresh = events.filter((_, index) => found[index] === 0 && marked[index] === null);
    if (fresh.length > 0) await queue.addBulk(fresh.map((event) => ({ name: event.type, data: event, opts: { ...FACT_JOB_OPTIONS, jobId: event.id } })));
    await Promise.all(events.filter((_, index) => found[index] === 2).map((event) => runAgain(event)));
    await Promise.all(markers.filter((_, index) => marked[index] === null).map((marker) => connection.set(marker, '1', 'PX', EVENT_MARKER_MS, 'NX')));
    return known.map((duplicate, index) => ({ duplicate, on: found[index] === 0 && duplicate ? 'marker' : 'job' }));
  }, { maxBatch: MAX_BATCH });
  const replicas = stores.config.redisMinReplicas;
  const waitMs = stores.config.redisWaitMs;
  /**
   * With INTERLOCK_REDIS_MIN_REPLICAS=N, `stored`'s answer, once N replicas of the master holding what it rests on hold
   * it too: its job (a field of the job's hash, on the master of the queue's slot), or, for a duplicate whose job is
   * gone, its marker (on the index's master). Stripe, answered 200, never sends the event again, so a failover to a
   * replica that missed it would lose the event for good. Not held within INTERLOCK_REDIS_WAIT_MS: refused
   * (redis_not_durable, so the route answers 503 and Stripe delivers it again), and that delivery, found queued, waits
   * for the replicas again. The WAIT is asked with a proof (replica-wait.ts), so a master that lacks the write answers no.
   */
  async function heldByReplicas(event: StripeEvent, stored: Stored): Promise<{ duplicate: boolean }> {
    if (replicas === 0) return { duplicate: stored.duplicate };
    const ask =
      stored.on === 'job'
        ? { proof: { key: queue.toKey(event.id), field: 'name', value: event.type }, mark: stores.keys.replicaMarkOf(stores.queues.prefix.slice(1, -1)) }
        : { proof: { key: stores.keys.eventQueued(event.id), value: '1' }, mark: stores.keys.replicaMark };
    // Asked of the master this queue's connection wrote them to.
    const acknowledged = await journalOf(stores).replicasHolding({ ...ask, replicas, timeoutMs: waitMs }, connection);
    if (acknowledged >= replicas) return { duplicate: stored.duplicate };
    throw new InterlockError('redis_not_durable', refusal(`only ${acknowledged} of the ${replicas} Redis replicas required (INTERLOCK_REDIS_MIN_REPLICAS) acknowledged its ${stored.on} within ${waitMs} ms, so a failover could still lose it`));
  }
  // The wait for replicas comes on top of the storing (it is bounded by INTERLOCK_REDIS_WAIT_MS itself).
  const acceptTimeoutMs = FACTS_ACCEPT_TIMEOUT_MS + (replicas > 0 ? waitMs : 0);
  // The answers of the events this process is storing now, by event id (see above).
  const storing = new Map<string, Promise<{ duplicate: boolean }>>();
  return {
    queue,
    /**
     * Durably queues a verified event; a redelivered event (same id) is a no-op, answered `duplicate` when its job
     * or its marker is known (an EXISTS on the job's hash, whatever the backlog: BullMQ's getJobState scans the
     * waiting list, so it grew with every event not yet applied). With INTERLOCK_REDIS_MIN_REPLICAS, answered only once
     * the replicas hold it (heldByReplicas). Answered within FACTS_ACCEPT_TIMEOUT_MS (and INTERLOCK_REDIS_WAIT_MS, with
     * replicas) or refused (the route answers 503); the storing goes on, and a redelivery meanwhile waits for it.
     */
    accept(event: StripeEvent): Promise<{ duplicate: boolean }> {
      if (AWAY.has(connection.status)) return Promise.reject(unavailable(`Redis is unreachable (the connection is ${connection.status})`));
      // Refused alone, before it joins a batch: a job that cannot be serialised would fail the whole batch's add, and
      // with it every event delivered in the same turn (the route's verifier refuses such bodies first).
      if (nestsDeeperThan(event.data.object, MAX_JSON_DEPTH)) return Promise.reject(new InterlockError('invalid_request', `Event ${event.id}'s object nests deeper than ${MAX_JSON_DEPTH} levels; it cannot be queued.`));
      try {
        stores.keys.eventQueued(event.id);
      } catch (error) {
        return Promise.reject(new InterlockError('invalid_request', `${errorMessage(error)} It cannot be queued.`));
      }
      const first = storing.get(event.id);
      let stored: Promise<{ duplicate: boolean }>;
      if (first === undefined) {
        stored = adds.submit(event).then((answer) => heldByReplicas(event, answer));
        storing.set(event.id, stored);
        const forget = () => storing.delete(event.id);
        void stored.then(forget, forget);
      } else {
        stored = first.then(() => ({ duplicate: true }));
      }
      return withinRedisTimeout(stored, acceptTimeoutMs, refusal(`Redis did not store it within ${acceptTimeoutMs} ms`));
    },
    async close(): Promise<void> {
      await queue.close();
      await closeConnection(connection);
    },
  };
}

export type FactsQueue = ReturnType<typeof createFactsQueue>;

/**
 * The durability monitor of the process the facts are recorded in (its sender's, or its own: src/main.ts). Nothing is
 * recorded while Redis is not durable, nor, once it lost its data (the deployment marker gone or changed), until the
 * process is restarted: what it lost would read as never recorded, and the process sends and records nothing more
 * (README "Redis"). A facts job refused so waits for it, delayed, using up none of its attempts (startFactsWorker,
 * waitForRedis); a reconciliation pass fails, and the next one starts where it did.
 */
export type FactsDurability = { assertDurable(): void; rechecked(withinMs: number): Promise<void> };

/**
 * Whether `error` is a refusal to record because Redis is not durable, or lost its data (`redis_not_durable`: the
 * monitor's, or a binding script's that found the deployment marker gone). It says nothing of the event, only of Redis.
 */
function refusedForDurability(error: unknown): boolean {
  return errorCode(error) === 'redis_not_durable';
}

/**
 * Whether a run failed for Redis, not for its event: refused for durability, or Redis not answering (a dropped
 * connection, a timeout). Either passes with Redis, so the job waits for it (waitForRedis) and spends no attempt: ten
 * attempts go within minutes of an outage, and the event, answered 200 at Stripe, is not sent again.
 */
function failedForRedis(error: unknown): boolean {
  return refusedForDurability(error) || isRedisOutage(error) || errorCode(error) === 'redis_unavailable';
}

/**
 * Waiting out a durability refusal, in ms: the wait doubles from `firstDelayMs` up to `maxDelayMs` (by default
 * INTERLOCK_RETRY_MAX_DELAY_MS, as an effect not judged yet waits), with no end: a refused job is never failed for it.
 */
export type DurabilityWait = { firstDelayMs: number; maxDelayMs: number };

/** How long a job refused `refusals` times in a row (1 the first) waits before it is tried again, in ms. Pure. */
export function durabilityDelay(refusals: number, wait: DurabilityWait): number {
  return Math.min(wait.maxDelayMs, wait.firstDelayMs * 2 ** Math.min(Math.max(refusals, 1) - 1, 40));
}


/** A facts job's run that recorded its facts on the Redis masters, but too few of their replicas acknowledged them. */
class FactsUnheld extends InterlockError {
  constructor(message: string) {
    super('redis_not_durable', message);
  }
}

/**
 * With INTERLOCK_REDIS_MIN_REPLICAS=N, returns once N replicas of each effect's master hold its chain as a facts job's
 * run left it: what the run appended, and what it found appended already (by an earlier run of the job, which may have
 * stopped at this very wait, or by another event or a re-read). Its event was answered 200, so Stripe never sends it
 * again: a failover to a replica that missed the facts would lose them for good. The proof asked with the WAIT
 * (replica-wait.ts) is the chain's head (the effect state's `head`), the hash that ends a chain over every entry before
 * it, written in the same step as the entries: a master that holds it holds them all. Another job appending meanwhile
 * moves the head (the proof then fails): it is read again and asked again (for twice the wait at most). Throws FactsUnheld
 * (redis_not_durable) naming the effects not held within INTERLOCK_REDIS_WAIT_MS: the job waits for Redis, and applies
 * its event again later (applying is idempotent). An alert the run raised lives on the index's master (on a cluster,
 * another one) and is not waited for: it is derived from the chain, and the reconciler's re-reads raise it again.
 */
async function factsHeld(stores: Stores, applied: readonly Applied[]): Promise<void> {
  const replicas = stores.config.redisMinReplicas;
  if (replicas === 0 || applied.length === 0) return;
  const journal = journalOf(stores);
  const timeoutMs = stores.config.redisWaitMs;
  // A head that moved between its read and the round's proof is read and asked again, until the wait's own time has
  // passed once more: on an effect other jobs append to all the time (a burst of events for one dispute), a fixed
  // number of tries gave up on healthy replicas, and the job waited and warned that they were behind.
  const deadline = Date.now() + 2 * timeoutMs;
  const unheld = async (effectId: string): Promise<{ effectId: string; acknowledged: number } | null> => {
    const partition = await journal.partitionOf(effectId);
    if (partition === null) return null;
    let head = (await journal.readState(partition, effectId)).state.head;
    while (head !== '') {
      const acknowledged = await journal.replicasHolding({ proof: { key: stores.keys.state(partition, effectId), field: 'head', value: head }, mark: stores.keys.replicaMarkOf(partition), replicas, timeoutMs });
      if (acknowledged >= replicas) return null;
      const now = (await journal.readState(partition, effectId)).state.head;
      if (now === head || Date.now() >= deadline) return { effectId, acknowledged };
      head = now;
    }
    return null;
  };
  const behind = (await Promise.all([...new Set(applied.map((one) => one.effectId))].map(unheld))).filter((one) => one !== null);
  if (behind.length === 0) return;
  const fewest = Math.min(...behind.map((one) => one.acknowledged));
  throw new FactsUnheld(`The facts of effect${behind.length === 1 ? '' : 's'} ${behind.map((one) => one.effectId).join(', ')} are recorded on their Redis master, but only ${fewest} of the ${replicas} Redis replicas required (INTERLOCK_REDIS_MIN_REPLICAS) acknowledged them within ${timeoutMs} ms, so a failover could still lose them; the job waits, and applies its event again once they catch up.`);
}

/** How many jobs' failed runs in a row a facts worker keeps (startFactsWorker, `refused`). */
const REFUSALS_KEPT = 10_000;

/** What a facts job failed for good whose effects could not be watched is logged with. */
const UNWATCHED = "facts job failed for good, and its effects could not be put on the reconciler's watch list: run `interlock reconcile` once Redis answers, or resend the event from Stripe";

export type FactsWorkerOptions = {
  concurrency?: number;
  /**
   * How long a job stays with a worker that stopped renewing its lock (a killed process) before another worker
   * takes it again (BullMQ's lock duration and stalled check). The event is queued, so it is not lost meanwhile.
   */
  lockMs?: number;
  onApplied?: (event: StripeEvent, applied: Applied[]) => void;
  /** Asked before anything is recorded (FactsDurability). */
  durability?: FactsDurability;
  /** How a job refused for durability waits (DurabilityWait). Default: from 1 s up to INTERLOCK_RETRY_MAX_DELAY_MS. */
  durabilityWait?: Partial<DurabilityWait>;
  /**
   * A run refused for durability (redis_not_durable: Redis not durable now, its data lost, or too few replicas
   * acknowledged what the run recorded, with INTERLOCK_REDIS_MIN_REPLICAS), its job put back to wait; once per run, not
   * for a run that failed because Redis did not answer.
   */
  onNotDurable?: () => void;
};

export function startFactsWorker(stores: Stores, facts: FactsApplier, options: FactsWorkerOptions = {}) {
  const connection = stores.queueConnection();
  // The jobs this worker's processor is running, by id (see adoptOrphans).
  const running = new Set<string>();
  const wait: DurabilityWait = { firstDelayMs: options.durabilityWait?.firstDelayMs ?? 1_000, maxDelayMs: options.durabilityWait?.maxDelayMs ?? stores.config.retryMaxDelayMs };
  /**
   * The failed runs in a row of each job this worker delayed for Redis, by job id (waitForRedis). Kept here, not in
   * the job: its data is the Stripe event as delivered, and the failure is this process's own reading of Redis (a
   * restart, which a loss calls for, starts afresh). A job's count goes only when a run of it here is not refused: one
   * job's outage (a cluster master down for its slots, a command timing out on its keys) is not over because another
   * job's facts were applied, and its wait keeps doubling and its warning is said once. At most REFUSALS_KEPT: a job
   * delayed here and then run by another process leaves its count behind, and past that many they are dropped.
   */
  const refused = new Map<string, number>();
  const apply = async (event: StripeEvent, again: boolean): Promise<Applied[]> => {
    options.durability?.assertDurable();
    const applied = await facts.applyEvent(event, { again });
    await factsHeld(stores, applied);
    options.onApplied?.(event, applied);
    if (applied.length > 0) stores.logger.info({ event: event.id, type: event.type, effects: applied.map((item) => item.effectId), appended: applied.reduce((sum, item) => sum + item.appended, 0) }, 'facts appended');
    return applied;
  };
  const worker = new Worker<StripeEvent, Applied[]>(
    stores.queues.facts,
    async (job: Job<StripeEvent, Applied[]>, token?: string) => {
      const id = job.id ?? '';
      running.add(id);
      try {
        // A job started before (its run failed, or its worker stopped mid-run) may have recorded its facts without
        // their alerts: the applier raises them for facts it finds recorded already.
        const applied = await apply(job.data, job.attemptsStarted > 1 || job.attemptsMade > 0);
        refused.delete(id);
        return applied;
      } catch (error) {
        if (failedForRedis(error)) return await waitForRedis(job, token, error);
        refused.delete(id);
        // Stripe's definite no to a re-read (a 4xx) or a bad key does not change on a retry: the reconciler re-reads later.
        const failure = error instanceof InterlockError && !error.retryable ? new UnrecoverableError(`${errorCode(error)}: ${error.message}`) : error instanceof Error ? error : new Error(errorMessage(error));
        if (failure instanceof UnrecoverableError || job.attemptsMade + 1 >= (job.opts.attempts ?? 1)) await beforeFailingForGood(job, token, failure);
        throw failure;
      } finally {
        running.delete(id);
      }
    },
    { connection, ...stores.bullmq, concurrency: options.concurrency ?? 8, lockDuration: options.lockMs ?? 30_000, stalledInterval: options.lockMs ?? 30_000 },
  );
  logWorkerErrors(worker, stores.logger, 'facts worker error');
  /**
   * A job that failed for good leaves its event's facts unrecorded, and Stripe, answered 200 at the delivery, never
   * sends it again. The reconciler re-reads only what was bound or settled within its horizon, and a chargeback comes
   * weeks after its refund: so the effects the event concerns (found from the event and the journal alone) go on the
   * reconciler's watch list from now, and its next passes re-read them from Stripe, append what the event would have,
   * and raise its alerts.
   */
  async function watchInstead(event: StripeEvent, error: Error): Promise<void> {
    let effectIds: string[];
    try {
      effectIds = await facts.concerned(event);
    } catch (cause) {
      if (isRedisOutage(cause) || errorCode(cause) === 'redis_unavailable') throw cause;
      // A dispute naming only its charge is routed by reading the charge, which Stripe may not answer now either (the
      // job most likely failed in that outage): the effects cannot be told, which is not the same as none.
      stores.logger.error(
        { err: cause, event: event.id, type: event.type, error: error.message },
        `facts job failed for good, and the effects its event concerns cannot be told (${errorCode(cause)}: ${errorMessage(cause)}): nothing was put on the reconciler's watch list; resend the event from Stripe once it answers`,
      );
      return;
    }
    if (effectIds.length === 0) {
      stores.logger.warn({ event: event.id, type: event.type, error: error.message }, 'facts job failed for good; its event concerns no effect the gate made');
      return;
    }
    options.durability?.assertDurable();
    await watchAgain(stores, effectIds);
    stores.logger.error({ event: event.id, type: event.type, effects: effectIds, error: error.message }, "facts job failed for good; the effects its event concerns are on the reconciler's watch list, and its next passes re-read them from Stripe");
  }
  /**
   * Refused to record because Redis is not durable, or lost its data, or failed because Redis did not answer (failedForRedis):
   * nothing is wrong with the event, so the job waits (delayed, using up no attempt: BullMQ's 10 would all go within
   * minutes of such a Redis, and the event, answered 200 and never sent again, with them) and is tried again, the wait
   * doubling up to DurabilityWait's longest, for as long as it lasts: after a loss, until the process is restarted,
   * whose worker then applies it. The move waits out an outage on the worker's connection, as BullMQ's own moves do.
   * Where the job cannot be moved (its lock lapsed meanwhile), the refusal goes to BullMQ as any failure does: its
   * attempts, or the lock lapsing, bring the job back. `failure`, when given, is the run's own failure for good, whose watch was
   * refused (beforeFailingForGood): it is what BullMQ gets then. Said once per job per outage, as the effects worker says
   * an effect's: the first refusal at warn, with why and when the job is tried again; each after it at debug.
   */
  async function waitForRedis(job: Job<StripeEvent, Applied[]>, token: string | undefined, refusal: unknown, failure?: Error): Promise<never> {
    const id = job.id ?? '';
    if (refusedForDurability(refusal)) options.onNotDurable?.();
    const refusals = (refused.get(id) ?? 0) + 1;
    const retryAt = Date.now() + durabilityDelay(refusals, wait);
    try {
      if (token === undefined) throw new Error('the job was handed over without a lock token');
      await job.moveToDelayed(retryAt, token);
    } catch {
      refused.delete(id);
      throw failure ?? refusal;
    }
    if (refused.size >= REFUSALS_KEPT) refused.clear();
    refused.set(id, refusals);
    const noted = { event: job.id, type: job.name, code: errorCode(refusal), error: errorMessage(refusal), ...(failure === undefined ? {} : { failure: failure.message }), refusals, retryAt };
    if (refusals === 1 && refusal instanceof FactsUnheld) stores.logger.warn(noted, "facts job applied on the Redis masters, but too few of their replicas acknowledged it (INTERLOCK_REDIS_MIN_REPLICAS): the job waits, using up none of its attempts, and applies its event again (applying is idempotent) until they hold it; further tries are logged at debug");
    else if (refusals === 1) stores.logger.warn(noted, 'facts job not applied: Redis is not durable now, lost its data, or did not answer, so nothing is recorded; the job waits, using up none of its attempts, and is tried again until Redis is durable and answers (after a loss, once this process is restarted); further tries are logged at debug');
    else stores.logger.debug(noted, 'facts job not applied again: Redis is still not durable, or not answering; tried again later');
    throw new DelayedError();
  }

  /**
   * The failures whose job's effects were put on the watch list (or could not be) before the job was failed for good:
   * the `failed` listener leaves them alone. By the error object, which BullMQ hands the listener as it was thrown.
   */
  const handedOver = new WeakSet<Error>();

  /**
   * A run about to fail its job for good puts the effects its event concerns on the watch list first (watchInstead), so
   * a job never ends failed with neither its facts nor a watch recorded. Refused for durability, the job waits for it
   * instead (waitForRedis), attempts untouched: once Redis is durable, its run applies the event, or fails it for good
   * again and watches then.
   */
  async function beforeFailingForGood(job: Job<StripeEvent, Applied[]>, token: string | undefined, failure: Error): Promise<void> {
    try {
      await watchInstead(job.data, failure);
    } catch (cause) {
      if (failedForRedis(cause)) await waitForRedis(job, token, cause, failure);
      stores.logger.error({ err: cause, event: job.id, type: job.name, error: failure.message }, UNWATCHED);
    }
    handedOver.add(failure);
  }

  const watching = new Set<Promise<void>>();
  worker.on('failed', (job, error) => {
    if (handedOver.has(error)) return;
    const final = error instanceof UnrecoverableError || (job !== undefined && job.attemptsMade >= (job.opts.attempts ?? 1));
    if (!final || job === undefined) {
      stores.logger.warn({ event: job?.id, type: job?.name, error: error.message }, 'facts job failed; it is retried');
      return;
    }
    // Failed for good without its run's say (it stalled too often, or its refusal could not be delayed): watched now,
    // or, refused for durability, run again, where its run waits for Redis to be durable.
    const handed = watchInstead(job.data, error)
      .catch(async (cause: unknown) => {
        if (!failedForRedis(cause)) throw cause;
        await job.retry('failed');
        stores.logger.warn({ event: job.id, type: job.name, error: error.message, refusal: errorMessage(cause) }, "facts job failed for good while Redis was not durable, so its effects could not be put on the reconciler's watch list: it runs again, and waits for Redis to be durable");
      })
      .catch((cause: unknown) => stores.logger.error({ err: cause, event: job.id, type: job.name, error: error.message }, UNWATCHED))
      .finally(() => watching.delete(handed));
    watching.add(handed);
  });

  /**
   * After Redis came back: the events of the active jobs taken before then that this worker is not running (a job
   * whose taking Redis stored but never answered, or whose worker could not report its end while Redis was down),
   * applied here and now instead of when their locks lapse. Safe whoever holds the job: facts are recorded once per
   * event id, so the job, when it runs again, appends nothing.
   */
  let closing = false;
  async function adoptOrphans(takenBefore: number): Promise<number> {
    let orphans: Job<StripeEvent>[];
    try {
      orphans = orphansOf(await activeJobs<StripeEvent>(stores, stores.queues.facts), running, takenBefore);
    } catch (error) {
      stores.logger.warn({ err: error }, 'could not list the active jobs after Redis came back; their jobs come back when their locks lapse');
      return 0;
    }
    let adopted = 0;
    // Applied as the connection comes back: nothing is recorded until the durability re-check of the Redis reached now
    // has answered (DurabilityMonitor.awaitingRecheck), and an event applied first would meet that refusal, its job
    // left to its lock's lapse.
    if (orphans.length > 0) await options.durability?.rechecked(10_000);
    for (const job of orphans) {
      if (closing) break;
      try {
        // Another worker held it: it may have recorded the facts and not their alerts.
        await apply(job.data, true);
        adopted += 1;
        stores.logger.info({ event: job.data.id, type: job.data.type }, "applied an active job's event after Redis came back (its holder may have lost it)");
      } catch (error) {
        stores.logger.warn({ err: error, event: job.data.id }, "could not apply an active job's event after Redis came back; its job comes back when its lock lapses");
      }
    }
    return adopted;
  }
  const outages = afterOutages(connection, adoptOrphans);

  return {
    worker,
    /** How many active jobs' events this worker applied after its Redis connection came back. */
    adoptedAfterOutages: outages.count,
    async close(): Promise<void> {
      closing = true;
      await outages.stop();
      // The failed listener's watches (and its retries) run on the worker's connection: they end before it closes,
      // or a job failed for good would be left with neither its facts nor a watch. Bounded: Redis may not answer.
      await closeWorker(worker, connection, false, () => withinRedisTimeout(Promise.all(watching), stores.config.redisCommandTimeoutMs * 2, 'the facts worker\'s watches did not end').catch(() => undefined));
    },
  };
}

/**
 * What a reconciliation pass did: effects read, facts appended, alerts raised, and the effects whose re-read failed
 * (`unread`, with the first few and why), which the pass went past: they are read again when the passes come round.
 * `stopped` says why a pass gave up before its end: the re-reads failed for several effects in a row, which is the
 * source (Stripe being unavailable, its key) failing rather than one payment; Stripe rate-limited a re-read; the
 * process lost the reconciliation lease; or the process is stopping. The next pass goes on right after the last effect
 * this one finished.
 */
export type ReconcileReport = { effects: number; appended: number; alerts: string[]; unread: number; failures: { effectId: string; error: string }[]; stopped: string | null };

/**
 * A scheduled reconciler's pass: its report, or, with `skipped` saying why, no pass at all (another process holds the
 * lease; on the schedule, the last pass began less than the interval ago or Stripe's Retry-After still lasts).
 */
export type ReconcilePass = ReconcileReport & { skipped: string | null };

/**
 * Failed re-reads in a row after which a pass stops: the source is failing, not one effect. Only failures of the
 * source count (Stripe unavailable, its key refused, anything unknown); Stripe's definite no about one object does not.
 */
const FAILED_IN_A_ROW = 5;
/** Failures a report lists (the count is whole). */
const FAILURES_LISTED = 20;
/** How long a scheduled pass holds its lease without renewing it: a process that dies mid-pass holds the next one back this long at most. */
export const RECONCILE_LEASE_MS = 30_000;
/** How often the pass at start asks again for the lease another process holds: it runs right after that pass. */
const TURN_POLL_MS = 1_000;
function samePlace(a: WatchPosition | null, b: WatchPosition | null): boolean {
  return a === null || b === null ? a === b : a.list === b.list && a.score === b.score && a.member === b.member;
}
/** Whether `place` comes at or before `position` in the passes' sequence: the watch list's, then the bound list's. */
function atOrBefore(place: WatchPosition, position: WatchPosition): boolean {
  if (place.list !== position.list) return place.list === 'watch';
  return place.score !== position.score ? place.score < position.score : place.member <= position.member;
}

/** The longest Retry-After `interlock reconcile` waits out between passes; a longer one ends it (run it again later). */
const LONGEST_RATE_LIMIT_WAIT_MS = 60_000;

/** Why an effect's re-read failed, as the pass treats it. */
function failureKind(error: unknown): 'rate-limited' | 'refused' | 'source' {
  if (slowDownOf(error) !== null) return 'rate-limited';
  // Stripe's definite no about this object (400/402/404: a payment it no longer knows): Stripe answered.
  if (error instanceof Rejected) return 'refused';
  return 'source';
}

/**
 * One reconciliation pass: up to `limit` effects committed since `since` (Redis ms) re-read from Stripe, from where
 * the pass before stopped (`after`); `next` is where this one stopped, null when it reached the last (the next pass
 * starts over). Passes that carry `next` along re-read every committed effect in turn, however many there are.
 * `failedInARow` carries the failures the pass before ended on into this one. An effect whose re-read fails is
 * counted and passed over, so it never holds back the effects after it. A failure of the source (Stripe unavailable or
 * refusing the key, or anything unknown) counts toward FAILED_IN_A_ROW, which stops the pass; Stripe's definite no
 * about one object (`Rejected`: a payment it no longer knows) does not, since Stripe answered. A rate limit ends the
 * pass at once, with `slowDown` saying how long Stripe asked to wait. A pass that ends early answers as `next` the
 * place of the last effect it finished, so the next pass tries the failing run again without reading what came
 * before it. `holding`, when given, is asked before each effect: false ends the pass (the process lost its lease).
 * `stopping`, when given, ends the pass once it aborts (the process is stopping), without waiting for the re-read in
 * progress (`cutShort`): `next` is the last effect finished, so the next pass starts at the one it was reading.
 * `durability`, when given, is asked before each effect: its refusal (FactsDurability) fails the pass there.
 * `sourceFailed` names every effect whose re-read the source failed (not Stripe's definite no), however many, with
 * its place in the sequence.
 * Redis going away fails the pass, which then starts again where it did.
 */
export async function reconcile(
  stores: Stores,
  facts: FactsApplier,
  since: number,
  options: { limit?: number; after?: WatchPosition | null; failedInARow?: number; holding?: () => boolean; stopping?: AbortSignal; durability?: FactsDurability } = {},
): Promise<ReconcileReport & { next: WatchPosition | null; failedInARow: number; slowDown: SlowDown | null; lastTried?: WatchPosition | null; cutShort?: boolean; sourceFailed: { effectId: string; place: WatchPosition }[] }> {
  const after = options.after ?? null;
  const carried = options.failedInARow ?? 0;
  const { effectIds, positions, next } = await watchedWithPositions(stores, since, options.limit ?? 10_000, after);
  const report: ReconcileReport & { sourceFailed: { effectId: string; place: WatchPosition }[] } = { effects: 0, appended: 0, alerts: [], unread: 0, failures: [], stopped: null, sourceFailed: [] };
  // A negative count is the scheduler's mark that the pass before stopped here without finishing anything (none failed).
  let inARow = Math.max(0, carried);
  // The place of the last effect read (or refused by Stripe), every failure before it passed over: where a pass that
  // ends early goes on from. The failures after it are read again then, so they are not carried.
  let finished = after;
  const resume = () => ({ next: finished, failedInARow: finished === after ? carried : 0 });
  const cutShort = (effectId: string) => {
    report.stopped = `this process is stopping, so the pass stopped at effect ${effectId}; the next pass, in this process or another, re-reads it and what comes after`;
    return { ...report, ...resume(), slowDown: null, cutShort: true };
  };
  for (const [index, effectId] of effectIds.entries()) {
    if (options.stopping?.aborted === true) return cutShort(effectId);
    if (options.holding !== undefined && !options.holding()) {
      report.stopped = 'this process lost the reconciliation lease (its renewals failed or came too late), so the pass stopped; the process that holds it now goes on';
      return { ...report, ...resume(), slowDown: null };
    }
    options.durability?.assertDurable();
    let applied: Applied[];
    try {
      const read = await unlessStopped(facts.reread(effectId), options.stopping);
      if (read === STOPPED) return cutShort(effectId);
      applied = read;
    } catch (error) {
      if (isRedisOutage(error)) throw error;
      const message = errorMessage(error);
      const kind = failureKind(error);
      if (kind === 'rate-limited') {
        const slowDown = slowDownOf(error) ?? { retryAfterMs: null };
        const wait = slowDown.retryAfterMs === null ? 'named no wait' : `asked to wait ${Math.ceil(slowDown.retryAfterMs / 1000)} s`;
        report.stopped = `Stripe rate-limited a re-read and ${wait} (${message}); the pass stopped there, and the next one starts at that effect`;
        stores.logger.warn({ effectId, retryAfterMs: slowDown.retryAfterMs }, 'Stripe rate-limited a reconciliation re-read; the pass stopped at that effect');
        return { ...report, ...resume(), slowDown };
      }
      report.unread += 1;
      if (report.failures.length < FAILURES_LISTED) report.failures.push({ effectId, error: message });
      if (kind === 'refused') {
        stores.logger.warn({ effectId, err: error }, 'Stripe refused the re-read of an effect (it answered about this object only); it is passed over and read again when the passes come round');
        inARow = 0;
        finished = positions[index] ?? finished;
        continue;
      }
      stores.logger.warn({ effectId, err: error }, 'reconciliation could not re-read an effect; it is read again when the passes come round');
      const place = positions[index];
      if (place !== undefined) report.sourceFailed.push({ effectId, place });
      inARow += 1;
      if (inARow >= FAILED_IN_A_ROW) {
        report.stopped = `the last ${inARow} re-reads failed (the last: ${message}); the source is failing, so the pass stopped and the next one takes them up again`;
        // `lastTried`: the place of the failure that stopped it, for a scheduler that must pass the run over.
        return { ...report, next: finished, failedInARow: 0, slowDown: null, lastTried: positions[index] ?? finished };
      }
      continue;
    }
    inARow = 0;
    finished = positions[index] ?? finished;
    report.effects += 1;
    for (const one of applied) {
      report.appended += one.appended;
      report.alerts.push(...one.alerts);
    }
  }
  return { ...report, next, failedInARow: Math.max(0, inARow), slowDown: null };
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

const STOPPED = Symbol('stopped');

/**
 * `work`, or STOPPED as soon as `stopping` aborts, without waiting for it: a re-read reads Stripe (up to its read
 * timeout, several reads in a row) and takes no signal, so a stop does not wait for it. What the re-read goes on to do
 * is what a process that died there would have left: facts are recorded once each, and the next pass, which starts at
 * that effect, reads it again as work that may have run before (its alerts are raised for facts found recorded).
 */
function unlessStopped<T>(work: Promise<T>, stopping: AbortSignal | undefined): Promise<T | typeof STOPPED> {
  if (stopping === undefined) return work;
  return new Promise((resolve, reject) => {
    const onStop = () => resolve(STOPPED);
    stopping.addEventListener('abort', onStop, { once: true });
    // Its failure after the stop is the next pass's to meet: handled here, so it is never an unhandled rejection.
    void work.then(resolve, reject).finally(() => stopping.removeEventListener('abort', onStop));
  });
}

/**
 * Every effect committed since `since`, in passes of `limit` (`interlock reconcile`): until a pass reaches the last,
 * or reaches effects bound after this call began (those came after the request; the scheduled passes take them), or
 * a pass stops because the re-reads keep failing (its report says so). A pass Stripe rate-limited is followed by the
 * next once its Retry-After (or INTERLOCK_RATE_LIMIT_BACKOFF_MS) has passed, at the effect it stopped at; a wait longer
 * than a minute, or FAILED_IN_A_ROW such passes that read nothing, end it. It runs whatever the scheduled reconcilers
 * do (no lease), from the oldest, and leaves their cursor as it is.
 */
export async function reconcileAll(stores: Stores, facts: FactsApplier, since: number, options: { limit?: number } = {}): Promise<ReconcileReport> {
  const began = await stores.journal.serverTime();
  const total: ReconcileReport = { effects: 0, appended: 0, alerts: [], unread: 0, failures: [], stopped: null };
  let after: WatchPosition | null = null;
  let failedInARow = 0;
  let limitedInARow = 0;
  for (;;) {
    const { next, failedInARow: trailing, slowDown, ...report } = await reconcile(stores, facts, since, { ...options, after, failedInARow });
    total.effects += report.effects;
    total.appended += report.appended;
    total.alerts.push(...report.alerts);
    total.unread += report.unread;
    total.failures.push(...report.failures.slice(0, FAILURES_LISTED - total.failures.length));
    after = next;
    failedInARow = trailing;
    if (slowDown !== null) {
      const waitMs = Math.max(50, slowDown.retryAfterMs ?? stores.config.rateLimitBackoffMs);
      limitedInARow = report.effects + report.unread > 0 ? 1 : limitedInARow + 1;
      if (waitMs > LONGEST_RATE_LIMIT_WAIT_MS || limitedInARow >= FAILED_IN_A_ROW) {
        total.stopped = report.stopped;
        break;
      }
      await sleep(waitMs);
      continue;
    }
    limitedInARow = 0;
    if (report.stopped !== null) {
      total.stopped = report.stopped;
      break;
    }
    if (after === null || (after.list === 'bound' && after.score > began)) break;
  }
  return total;
}

/**
 * Keeps a reconciliation lease while a pass runs: renewed every third of its TTL; `held()` turns false once a renewal
 * finds it gone, or once no renewal has succeeded for a whole TTL (Redis not answering: it may have lapsed).
 */
function keepLease(stores: Stores, lease: ReturnType<typeof reconcileLease>, token: string, leaseMs: number, askedAt: number): { held(): boolean; stop(): void } {
  let lost = false;
  // The lease's TTL runs from when Redis set it, before its answer reached this process (a pause, a late reply): counted
  // from the asking, never from the answer.
  let keptAt = askedAt;
  let renewing = false;
  const timer = setInterval(() => {
    if (renewing || lost) return;
    renewing = true;
    const sentAt = performance.now();
    lease
      .renew(token, leaseMs)
      .then((kept) => {
        if (kept) keptAt = sentAt;
        else lost = true;
      })
      .catch((error: unknown) => stores.logger.warn({ err: error }, 'could not renew the reconciliation lease; the pass stops if it is not renewed before it lapses'))
      .finally(() => {
        renewing = false;
      });
  }, Math.max(10, Math.floor(leaseMs / 3)));
  timer.unref();
  return {
    held: () => !lost && performance.now() - keptAt < leaseMs,
    stop: () => clearInterval(timer),
  };
}

/**
 * Reconciliation on a schedule: each pass re-reads what committed within the horizon, going on from where the last
 * pass stopped. The position lives in Redis (keys.reconcileCursor), so a process that restarts goes on too, and every
 * facts process shares it: a pass takes a lease first (keys.reconcileLease, `leaseMs`, renewed while it runs), so one
 * pass runs at a time across the deployment. A pass on the schedule that does not get it skips its turn (logged at
 * info; `pass()` answers `skipped`, `onPass` is not called). A pass on the schedule also waits until the last one,
 * whoever ran it, began an interval ago (less a tenth of it, at most 5 s, for timers), and until Stripe's Retry-After
 * of a rate-limited pass has passed: however many facts processes run, the account sees about one pass an interval.
 * The pass at start is the catch-up (catchUp below): it runs whenever the last pass ran, since nothing re-sends what
 * was missed while the process was down (`stripe listen` drops an event it could not forward), and waits its turn
 * rather than skipping it. `pass()` runs one now, whenever the last one ran.
 */
export function startReconciler(stores: Stores, facts: FactsApplier, options: { intervalMs: number; horizonMs: number; limit?: number; atStart?: boolean; leaseMs?: number; durability?: FactsDurability; onPass?: (report: ReconcileReport, finishedAt: number) => void }) {
  let running: Promise<unknown> | null = null;
  const lease = reconcileLease(stores);
  const leaseMs = options.leaseMs ?? RECONCILE_LEASE_MS;
  const gapMs = options.intervalMs - Math.min(options.intervalMs / 10, 5_000);
  /**
   * Exposures left half-closed by a process that died between closing an alert and its inbox item (repairExposures):
   * this process raises exposure alerts, opens their items and closes both when the facts undo them, so its pass is
   * where the other half is closed. A failure is logged and left to the next pass; it never fails the reconciliation.
   */
  const repairHalfClosed = async () => {
    try {
      const repaired = await repairExposures(stores);
      if (repaired.closedItems.length + repaired.resolvedAlerts.length > 0) stores.logger.warn({ closedItems: repaired.closedItems, resolvedAlerts: repaired.resolvedAlerts }, 'closed the other half of exposures left half-closed (an alert resolved with its inbox item open, or the reverse)');
    } catch (error) {
      stores.logger.error({ err: error }, 'could not repair half-closed exposures; the next reconciliation pass tries again');
    }
  };
  /**
   * Drops the watch-list entries older than any reconciliation can ask for (LONGEST_RECONCILE_SINCE_MS, or this
   * process's horizon when longer), as of `now` (Redis ms), so the list does not grow for the life of the deployment.
   * A failure is logged and left to the next pass.
   */
  const keepWatchMs = Math.max(LONGEST_RECONCILE_SINCE_MS, options.horizonMs);
  const trimWatch = async (now: number) => {
    try {
      const dropped = await journalOf(stores).trimWatch(now - keepWatchMs);
      if (dropped > 0) stores.logger.info({ dropped, olderThan: new Date(now - keepWatchMs).toISOString() }, "dropped watch-list entries older than any reconciliation reads");
    } catch (error) {
      stores.logger.warn({ err: error }, "could not trim the reconciler's watch list; the next pass tries again");
    }
  };
  // Aborted by close(): the pass running stops at once (see reconcile's `stopping`), and none starts after.
  const stop = new AbortController();
  const skippedPass = (skipped: string): ReconcilePass => ({ effects: 0, appended: 0, alerts: [], unread: 0, failures: [], stopped: null, skipped });
  /** Why `turn` gave this process no pass, in the words of its log line and of `pass()`'s `skipped`. */
  const whyNot = (turn: Exclude<ReconcileTurn, { status: 'OK' }>): string =>
    turn.status === 'HELD'
      ? 'another process is running a reconciliation pass (it holds the lease)'
      : turn.notBefore > turn.now
        ? `Stripe rate-limited the last pass; no pass before ${new Date(turn.notBefore).toISOString()}`
        : `the last pass began ${Math.round((turn.now - turn.startedAt) / 1000)} s ago, less than the interval`;
  /**
   * Asks for the lease with a fresh token (`gapMs` as lease.take's); null when this process is stopping. The catch-up
   * (`catchingUp`) opens the deployment's catch-up window with it, or, finding one open, keeps its start where that
   * lies further back; either way the passes start over at its oldest effect (take-reconcile-lease-2.lua).
   */
  const ask = async (gapMs: number | null, catchingUp = false): Promise<{ token: string; askedAt: number; turn: ReconcileTurn } | null> => {
    if (stop.signal.aborted) return null;
    // Refused before the lease is taken: a pass on a Redis that lost its data writes nothing there, not even its lease.
    options.durability?.assertDurable();
    const token = randomBytes(16).toString('hex');
    const askedAt = performance.now();
    return { token, askedAt, turn: await lease.take(token, leaseMs, gapMs, catchingUp ? { horizonMs: options.horizonMs, furthestMs: keepWatchMs } : null) };
  };
  const run = async (scheduled: boolean): Promise<ReconcilePass> => {
    const asked = await ask(scheduled ? gapMs : null);
    if (asked === null) return skippedPass('this process is stopping');
    const { token, askedAt, turn } = asked;
    if (turn.status !== 'OK') {
      const skipped = whyNot(turn);
      stores.logger.info({ reason: skipped }, 'reconciliation pass skipped');
      return skippedPass(skipped);
    }
    return passHolding(token, askedAt, turn);
  };
  /**
   * The pass of a process that holds the lease as `token` (taken at `turn`): from the cursor, over the horizon, or,
   * while the deployment's catch-up window is open (`turn.window`), back to its start, the horizon as of the last pass
   * that ended before a catch-up (or further back, the start of a window a catch-up found open), so that effects that
   * left the horizon while no pass ran (the whole deployment down longer than an interval) are re-read once more. The
   * window lives in the cursor's hash, not in this process: a pass stopped part way (Stripe's rate limit, the source's
   * failures, a lost lease), or another process's pass between two of its passes, goes on over it; a catch-up (a
   * restart) starts it over at its oldest effect; only a pass that reads through to the last effect closes it.
   */
  const passHolding = async (token: string, askedAt: number, turn: Extract<ReconcileTurn, { status: 'OK' }>): Promise<ReconcilePass> => {
    const kept = keepLease(stores, lease, token, leaseMs, askedAt);
    const { window } = turn;
    // A catch-up the version before left part way (it kept its window in memory only) is taken up from where it stood.
    // On the watch list, it had not come to the effects-by-time part of its window, whose start is known nowhere: the
    // window reads that part from the position's time on only.
    if (window?.takenUp != null) {
      if (window.takenUp.list === 'watch') stores.logger.warn({ stoodAt: window.takenUp, readsFrom: new Date(window.since).toISOString() }, "the reconciliation passes stood before the horizon, where a catch-up of the version before stopped part way; the catch-up's window reaches back to there, but effects bound before readsFrom that it had not come to are not re-read: run `npx interlock reconcile --since <window>` with a window reaching back to when the deployment went down");
      else stores.logger.info({ stoodAt: window.takenUp, readsFrom: new Date(window.since).toISOString() }, "the reconciliation passes stood before the horizon, where a catch-up of the version before stopped part way; the catch-up's window reaches back to there, so the effects it had not come to are re-read now");
    }
    if (window?.opened === true && window.lastEnded !== null && turn.now - window.lastEnded > options.intervalMs) stores.logger.info({ lastPassEnded: new Date(window.lastEnded).toISOString(), readsFrom: new Date(window.since).toISOString() }, 'no reconciliation pass ended for longer than the interval; the pass at start reads back to the horizon as of the last one (or to the start of a catch-up window left open, when further back), from its oldest effect, so the effects that left the horizon meanwhile are re-read too');
    let ended: { report: ReconcileReport; slowDown: SlowDown | null; cutShort: boolean; readThrough: boolean; position: WatchPosition | null; failedInARow: number };
    try {
      // Never further back than the watch list is kept (keepWatchMs), nor less far than the horizon.
      const since = window === null ? turn.now - options.horizonMs : Math.max(turn.now - keepWatchMs, Math.min(window.since, turn.now - options.horizonMs));
      const { next, failedInARow: trailing, slowDown, lastTried, cutShort, sourceFailed, ...report } = await reconcile(stores, facts, since, { after: turn.cursor.position, failedInARow: turn.cursor.failedInARow, holding: kept.held, stopping: stop.signal, ...(options.limit === undefined ? {} : { limit: options.limit }), ...(options.durability === undefined ? {} : { durability: options.durability }) });
      // Read through to the last effect: not stopped, not cut short, nothing left after it. That closes the catch-up
      // window (its passes, whichever process ran them, have read all of it since it opened at its oldest effect).
      const readThrough = cutShort !== true && report.stopped === null && next === null;
      // A pass the source's failures stopped before it finished anything is marked (a failure count of -1): the next one
      // takes the run up again (the source may be back). When that one stops there too without finishing anything, the
      // run may fail whatever the source does (a payment too large to page within the read's time, say): the pass after
      // goes on after the failures it stopped on, counted unread and read again when the passes come round. While the
      // source is down each pass still stops after FAILED_IN_A_ROW reads, and every other one moves past them.
      // A pass the stop cut short is none of those: the run it stopped in is as it found it.
      const noProgress = cutShort !== true && report.stopped !== null && slowDown === null && kept.held() && samePlace(next, turn.cursor.position);
      const stuck = noProgress && turn.cursor.failedInARow < 0;
      const position = stuck && lastTried !== undefined && lastTried !== null ? lastTried : next;
      const failedInARow = stuck ? 0 : noProgress ? -1 : trailing;
      ended = { report, slowDown, cutShort: cutShort === true, readThrough, position, failedInARow };
      // An effect of the window whose re-read the source failed, at a place beyond the horizon, is read by no pass once
      // the window closes: once the passes have gone past it (all of them for a pass that read through; else those up
      // to where the passes go on from, a run the pass before stopped on and this one passes over included), it goes on
      // the watch list from now, so the passes read it again for a whole horizon. Not the failures still ahead (the next
      // pass reads them), nor one found within the horizon. Put back, an effect is within the horizon where the watch
      // list holds it, so no pass finds it there to put back again (one put back from the bound list goes behind where
      // the passes go on from: the watch list comes first): it never stands again and again ahead of them, so a
      // failing run never keeps them from the effects after it, nor the window from closing. Before the pass is
      // recorded: a process that dies in between leaves the pass to redo.
      const beyond = turn.now - options.horizonMs;
      const watched = window === null ? [] : sourceFailed.filter(({ place }) => place.score < beyond && (readThrough || (position !== null && atOrBefore(place, position)))).map(({ effectId }) => effectId);
      if (window !== null && watched.length > 0) {
        await watchAgain(stores, watched);
        stores.logger.warn({ effectIds: watched.slice(0, FAILURES_LISTED), unread: watched.length, watchedUntil: new Date(turn.now + options.horizonMs).toISOString(), windowFrom: new Date(window.since).toISOString() }, "reconciliation could not re-read effects of the catch-up's window beyond the horizon; they are watched again, so the passes re-read them until watchedUntil. If they are still logged unread then, run `npx interlock reconcile --since <window>` with a window reaching back to windowFrom");
      }
    } catch (error) {
      kept.stop();
      await lease.release(token).catch((cause: unknown) => stores.logger.warn({ err: cause }, 'could not give the reconciliation lease up after a failed pass; it lapses by itself'));
      throw error;
    }
    kept.stop();
    const { report, slowDown, readThrough, position, failedInARow } = ended;
    const holdMs = slowDown === null ? 0 : Math.min(LONGEST_RETRY_AFTER_MS, Math.max(0, slowDown.retryAfterMs ?? stores.config.rateLimitBackoffMs));
    // A pass the stop cut short records where it got to, and gives the lease up, but neither that it began (a start of
    // 0) nor that it ended: another facts process's next pass on the schedule goes on from there, without waiting an
    // interval from this one, and the deployment's lag (interlock_reconciler_lag_seconds) still counts from the last
    // pass that ended (end-reconcile-pass-2.lua), so facts processes that keep being stopped mid-pass show it growing.
    if (!(await lease.end(token, { position, failedInARow }, ended.cutShort ? 0 : turn.now, holdMs, readThrough))) {
      stores.logger.warn('this process lost the reconciliation lease during its pass; where the pass stopped was not recorded (the process that holds the lease now goes on)');
    } else if (window !== null && readThrough) {
      stores.logger.info({ readFrom: new Date(window.since).toISOString() }, "the catch-up's window is read through; the passes read the horizon only from now");
    }
    if (ended.cutShort) {
      // Not a pass that ended (onPass is not called, and the upkeep below waits for the next one): the process is stopping.
      stores.logger.info({ effects: report.effects, appended: report.appended, reason: report.stopped }, 'reconciliation pass cut short by the stop; the next pass goes on from the last effect it finished');
      return { ...report, skipped: null };
    }
    if (slowDown !== null) stores.logger.warn({ unread: report.unread, retryAfterMs: slowDown.retryAfterMs, reason: report.stopped }, 'reconciliation pass stopped: Stripe rate-limited a re-read');
    else if (report.stopped !== null) stores.logger.error({ unread: report.unread, failures: report.failures, reason: report.stopped }, 'reconciliation pass stopped before its end');
    else if (report.unread > 0) stores.logger.warn({ unread: report.unread, failures: report.failures }, 'reconciliation passed over effects it could not re-read');
    if (report.appended > 0) stores.logger.info({ effects: report.effects, appended: report.appended, alerts: report.alerts }, 'reconciliation appended facts');
    await repairHalfClosed();
    await trimWatch(turn.now);
    options.onPass?.(report, await stores.journal.serverTime());
    return { ...report, skipped: null };
  };
  // The catch-up is owed from start until this process took the lease for it (the window it opened, or found open, is
  // the deployment's from then: every pass goes on over it), or a pass of another one began after this process first
  // asked (that pass read Stripe after everything missed while this one was down).
  let owed = options.atStart ?? true;
  // The Redis ms of the catch-up's first ask, and when (performance.now()) its answer came.
  let firstAsk: { now: number; answeredAt: number } | null = null;
  /**
   * The catch-up: a pass that runs whenever the last one ran, since nothing re-sends what was missed while this process
   * was down (`stripe listen` never re-sends an event it could not forward; Stripe's own retries may come hours later).
   * It still takes the lease (one pass at a time) and obeys Stripe's Retry-After, and it waits its turn instead of
   * skipping it: while another process holds the lease, it asks again every TURN_POLL_MS and runs right after that
   * pass, unless a pass began after its first ask (that one read Stripe after anything this process missed). A failure
   * before it took the lease leaves it owed: the next turn on the schedule is the catch-up again. Once taken, the
   * window it opened (or found open) is in Redis, and the passes after go on over it whatever becomes of this one.
   */
  const catchUp = async (): Promise<void> => {
    let gap = 0;
    let waitingFor: string | null = null;
    for (;;) {
      // Gap 0: Stripe's Retry-After still holds the pass back, the interval does not. Once a first ask answered, a gap
      // of the time since then (by this process's clock) answers EARLY for a pass that began after it, with its start.
      const asked = await ask(gap, true);
      if (asked === null) return;
      const { token, askedAt, turn } = asked;
      firstAsk ??= { now: turn.now, answeredAt: performance.now() };
      if (turn.status === 'OK') {
        // The window is open in Redis from this step on: a pass that does not read all of it leaves it to the passes
        // after it, this process's on the schedule or another's.
        owed = false;
        await passHolding(token, askedAt, turn);
        return;
      }
      if (turn.status === 'EARLY' && turn.notBefore <= turn.now) {
        if (turn.startedAt > firstAsk.now && turn.startedAt <= turn.now) {
          owed = false;
          stores.logger.info({ lastPassBegan: new Date(turn.startedAt).toISOString() }, "reconciliation pass at start not needed: another process's pass began after this process asked for it, and read Stripe after anything missed before");
          return;
        }
        // The pass that began within the gap began before the first ask (the clocks disagree): ask again at once, gap 0.
        gap = 0;
        continue;
      }
      const waitMs = turn.status === 'HELD' ? TURN_POLL_MS : turn.notBefore - turn.now;
      const reason = whyNot(turn);
      // Once per reason, not at every ask: another process's pass may hold the lease for minutes.
      if (reason !== waitingFor) stores.logger.info({ reason, askingAgainInMs: waitMs }, 'reconciliation pass at start waits its turn; it runs once the lease is free and no Retry-After holds it back');
      waitingFor = reason;
      await pause(waitMs);
      gap = Math.max(0, Math.floor(performance.now() - firstAsk.answeredAt));
    }
  };
  /** Resolves after `ms`, or at once when the process is stopping. */
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timeout);
        stop.signal.removeEventListener('abort', done);
        resolve();
      };
      const timeout = setTimeout(done, ms);
      timeout.unref();
      stop.signal.addEventListener('abort', done, { once: true });
    });
  const scheduled = () => {
    running ??= (owed ? catchUp() : run(true))
      .catch((error: unknown) => stores.logger.error({ err: error }, 'reconciliation pass failed; the next one retries'))
      .finally(() => {
        running = null;
      });
  };
  const timer = setInterval(scheduled, options.intervalMs);
  timer.unref();
  if (owed) scheduled();
  return {
    /** One pass now, whenever the last one ran; skipped only while another process runs one. */
    pass: (): Promise<ReconcilePass> => run(false),
    /**
     * Stops the pass running, if any, at once: it does not wait for its Stripe reads (see reconcile's `stopping`),
     * records where it got to and gives the lease up, so another facts process goes on from there.
     */
    async close(): Promise<void> {
      clearInterval(timer);
      stop.abort();
      await running;
    },
  };
}
