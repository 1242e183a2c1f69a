// The queues an operator looks at (the dashboard and the queue-depth gauges): effects, facts and decisions, opened
// on one connection of their own. Nothing here adds, retries or removes a job; the dashboard is read-only.
import { Queue } from 'bullmq';
import { closeConnection, limitedErrorLog, type Stores } from '../../src/interlock.js';

export const WATCHED_QUEUES = ['effects', 'facts', 'decisions'] as const;
export type WatchedQueue = (typeof WATCHED_QUEUES)[number];

export type OpsQueues = { queues: readonly { name: WatchedQueue; queue: Queue }[]; close(): Promise<void> };

export function openOpsQueues(stores: Stores): OpsQueues {
  const connection = stores.queueConnection();
  const queues = WATCHED_QUEUES.map((name) => ({ name, queue: new Queue(stores.queues[name], { connection, ...stores.bullmq }) }));
  // BullMQ prints a queue's connection errors (every reconnect attempt) to the console when nobody listens.
  const logError = limitedErrorLog(stores.logger, 'dashboard queues error');
  for (const { queue } of queues) queue.on('error', logError);
  return {
    queues,
    async close() {
      await Promise.all(queues.map((item) => item.queue.close()));
      await closeConnection(connection);
    },
  };
}
