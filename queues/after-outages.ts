// What a worker does once Redis is back. A Redis that restarts can leave a job active with nobody running it: a
// worker took it (Redis stored the taking) but never heard so, or could not report its end while Redis was down, and
// BullMQ gives such a job out again only when its lock lapses (up to lockDuration + stalledInterval). So each time a
// worker's connection comes back ('close', then 'ready'), it looks at the active jobs taken before that instant that
// no processor of its own is running, and does their work itself (effects.ts, facts.ts say why that is safe there).
import { Queue, type Job } from 'bullmq';
import { closeConnection, type Stores } from '../src/interlock.js';
import { logWorkerErrors } from './worker-errors.js';

type Connection = ReturnType<Stores['queueConnection']>;

/** Active jobs a worker lists at most, at start or after an outage. */
export const ACTIVE_JOBS_LISTED = 1_000;

/** The active jobs of `queueName`, listed on a connection of their own. */
export async function activeJobs<T>(stores: Stores, queueName: string): Promise<Job<T>[]> {
  const connection = stores.queueConnection();
  const queue = new Queue<T>(queueName, { connection, ...stores.bullmq });
  logWorkerErrors(queue, stores.logger, `${queueName} queue error`);
  try {
    return await queue.getActive(0, ACTIVE_JOBS_LISTED - 1);
  } finally {
    await queue.close();
    await closeConnection(connection);
  }
}

/** The jobs taken before `backAt` (ms) that no processor of this worker is running. */
export function orphansOf<T>(jobs: readonly Job<T>[], running: ReadonlySet<string>, backAt: number): Job<T>[] {
  return jobs.filter((job) => !running.has(job.id ?? '') && (job.processedOn ?? 0) < backAt);
}

/**
 * Runs `run` each time `connection` is back after Redis went away, with the instant it came back: one run at a time,
 * the first after `first` (a worker's own run at start, if it has one). `run` answers how many jobs it took care of
 * and never throws (a failed run counts none).
 */
export function afterOutages(connection: Connection, run: (backAt: number) => Promise<number>, first: Promise<number> = Promise.resolve(0)) {
  let stopped = false;
  let lost = false;
  let count = 0;
  let chain: Promise<unknown> = first;
  connection.on('close', () => {
    if (!stopped) lost = true;
  });
  connection.on('ready', () => {
    if (!lost || stopped) return;
    lost = false;
    const backAt = Date.now();
    chain = chain.then(() => run(backAt)).then(
      (done) => (count += done),
      () => 0,
    );
  });
  return {
    /** How many jobs the runs after outages took care of (counted once each run is over). */
    count: () => count,
    /** No run starts from now on; settles once the one running, and `first`, are over. */
    async stop(): Promise<void> {
      stopped = true;
      await chain;
    },
  };
}
