// Hearing a queue's jobs finish without polling: the queue's event stream on a connection of its own (it blocks on
// the stream; BullMQ leaves a connection it was given open, so it is closed here), and a wait that subscribes
// before it asks the store, so no completion can slip between the question and the subscription.
import { QueueEvents } from 'bullmq';
import type { Stores } from '../src/interlock.js';
import { logWorkerErrors } from './worker-errors.js';

export type JobEvents = {
  /** The stream, opened on first use. */
  stream(): Promise<QueueEvents>;
  close(): Promise<void>;
};

export function jobEvents(stores: Stores, queueName: string): JobEvents {
  let events: QueueEvents | null = null;
  let connection: ReturnType<Stores['queueConnection']> | null = null;
  let ready: Promise<QueueEvents> | null = null;
  return {
    stream() {
      ready ??= (async () => {
        connection = stores.queueConnection();
        events = new QueueEvents(queueName, { connection, prefix: stores.queues.prefix });
        // Every waiting caller holds a pair of listeners until its wait ends (waitForJob): a busy API has more than
        // Node's default ten at once by design, and its warning would be a line outside the JSON logs.
        events.setMaxListeners(0);
        logWorkerErrors(events, stores.logger, `${queueName} queue events error`);
        await events.waitUntilReady();
        return events;
      })();
      return ready;
    },
    async close() {
      if (events === null || connection === null) return;
      // The stream's close stops its read loop at once, and is not waited for: BullMQ then disconnects the connection
      // and waits for an 'end' that ioredis never emits for a connection waiting to reconnect (Redis is away, or
      // just came back), and now and then not for one that was back either. The connection is this module's own
      // and only read from, so it is dropped here, which ends the pending read; nothing is lost by not quitting.
      void events.close().catch(() => undefined);
      connection.disconnect();
    },
  };
}

/**
 * The store asked again every `everyMs` about each key some wait watches: one read per key per interval, however many
 * waits in this process watch it (waitForJob `recheck`). The read's non-null answer is handed to every wait on the key;
 * a read still under way when the next is due is not doubled, and a read that failed is tried at the next interval. A
 * key's timer stops when its last wait stops watching it, and every timer on close.
 */
export type Recheck<T> = {
  watch(key: string, heard: (value: T) => void): () => void;
  close(): void;
};

export function createRecheck<T>(everyMs: number, read: (key: string) => Promise<T | null>): Recheck<T> {
  type Watched = { heard: Set<(value: T) => void>; timer: NodeJS.Timeout; reading: boolean };
  const watched = new Map<string, Watched>();
  const ask = async (key: string, watching: Watched) => {
    if (watching.reading) return;
    watching.reading = true;
    try {
      const value = await read(key);
      if (value !== null) for (const heard of [...watching.heard]) heard(value);
    } catch {
      // Asked again at the next interval; the wait's own timeout bounds it.
    } finally {
      watching.reading = false;
    }
  };
  return {
    watch(key, heard) {
      let watching = watched.get(key);
      if (watching === undefined) {
        const created: Watched = { heard: new Set(), reading: false, timer: setInterval(() => void ask(key, created), everyMs) };
        // The waits' own timeouts keep the process up while anyone waits; this timer alone must not.
        created.timer.unref();
        watched.set(key, created);
        watching = created;
      }
      const mine = watching;
      mine.heard.add(heard);
      return () => {
        mine.heard.delete(heard);
        if (mine.heard.size > 0) return;
        clearInterval(mine.timer);
        if (watched.get(key) === mine) watched.delete(key);
      };
    },
    close() {
      for (const watching of watched.values()) clearInterval(watching.timer);
      watched.clear();
    },
  };
}

export type JobFinish = { kind: 'completed'; returnvalue: unknown } | { kind: 'failed' } | { kind: 'timeout' };
/** A job's own finish, heard on the stream (not the wait's timeout). */
export type HeardFinish = Exclude<JobFinish, { kind: 'timeout' }>;

/**
 * Waits for the first job `ours` accepts to complete or fail, or for `timeoutMs`, and answers what `answer` makes
 * of it. `settled` is asked once, after subscribing: a non-null answer there ends the wait at once. `recheck`, when
 * given, is watched from then on until the wait ends (a store asked again on a timer, createRecheck): what it hears
 * ends the wait as `settled` does. It answers a wait whose answer reached the store with no job of it finishing (a
 * dead worker's effect settled by recovery while BullMQ still counts its job as running). `answers`, when
 * given, is asked about each finish `ours` accepted (it may read the store): one it turns down leaves the wait going
 * on, and one it cannot tell about (its read failed) ends it, as without it. `signal` (an HTTP client's hang-up): once
 * it aborts, the wait ends at once, its listeners off the stream and its timer cleared, and rejects with the signal's
 * reason without asking the store anything more. Only the waiting stops; the job runs on as it would have.
 * `timeoutMs` and `signal` bound the opening of the stream too (the first wait of a process opens it): its connection
 * waits out a Redis outage, however long, so a wait whose time runs out before it opened ends as a timeout then, and
 * one whose caller leaves, at once.
 */
export async function waitForJob<T>(
  events: JobEvents,
  options: {
    ours: (jobId: string) => boolean;
    timeoutMs: number;
    settled: () => Promise<T | null>;
    recheck?: (heard: (value: T) => void) => () => void;
    answer: (finish: JobFinish) => T | Promise<T>;
    answers?: (finish: HeardFinish) => Promise<boolean>;
    signal?: AbortSignal;
  },
): Promise<T> {
  const gone = options.signal;
  gone?.throwIfAborted();
  return new Promise<T>((resolve, reject) => {
    let done = false;
    // Null until the stream has opened: the timer and the signal run from the start, not from the opening.
    let stream: QueueEvents | null = null;
    let unwatch: () => void = () => undefined;
    const end = (finish: JobFinish | { kind: 'settled'; value: T } | { kind: 'gone' } | { kind: 'broken'; error: unknown }) => {
      if (done) return;
      done = true;
      stream?.off('completed', onCompleted);
      stream?.off('failed', onFailed);
      clearTimeout(timer);
      unwatch();
      gone?.removeEventListener('abort', onGone);
      // Nobody is left to hear the answer: the store is not asked for it.
      if (finish.kind === 'gone') reject(gone?.reason as Error);
      else if (finish.kind === 'broken') reject(finish.error as Error);
      else if (finish.kind === 'settled') resolve(finish.value);
      else Promise.resolve(options.answer(finish)).then(resolve, reject);
    };
    const onGone = () => end({ kind: 'gone' });
    const heard = (finish: HeardFinish) => {
      const { answers } = options;
      if (answers === undefined) {
        end(finish);
        return;
      }
      void answers(finish).then(
        (yes) => {
          if (yes) end(finish);
        },
        () => end(finish),
      );
    };
    const onCompleted = ({ jobId, returnvalue }: { jobId: string; returnvalue: unknown }) => {
      if (options.ours(jobId)) heard({ kind: 'completed', returnvalue });
    };
    const onFailed = ({ jobId }: { jobId: string }) => {
      if (options.ours(jobId)) heard({ kind: 'failed' });
    };
    const timer = setTimeout(() => end({ kind: 'timeout' }), options.timeoutMs);
    gone?.addEventListener('abort', onGone, { once: true });
    const onSettled = (value: T) => end({ kind: 'settled', value });
    events.stream().then(
      (opened) => {
        // The wait ended (its time ran out, its caller left) while the stream was opening: it is not subscribed for.
        if (done) return;
        stream = opened;
        opened.on('completed', onCompleted);
        opened.on('failed', onFailed);
        if (options.recheck !== undefined) {
          unwatch = options.recheck(onSettled);
          // A recheck that answered at once ended the wait before its unwatch was known.
          if (done) unwatch();
        }
        options.settled().then(
          (value) => {
            if (value !== null) onSettled(value);
          },
          () => undefined,
        );
      },
      (error: unknown) => end({ kind: 'broken', error }),
    );
  });
}
