// Closing BullMQ workers whatever state Redis is in. A service asked to stop while Redis is away (or in the seconds
// after it came back, while connections wait to reconnect) must stop: BullMQ's graceful close waits for the 'end'
// of its blocking connection, which ioredis never emits for a connection waiting to reconnect, and a QUIT there
// waits for Redis to come back.
import type { Worker } from 'bullmq';
import { closeConnection, type Stores } from '../src/interlock.js';

type Connection = ReturnType<Stores['queueConnection']>;

/** The worker's blocking connection if it is open by now; undefined when it was never made or is still being made. */
async function blockingConnectionOf(worker: Worker): Promise<{ status: string } | undefined> {
  const made = worker.getBackend().blockingClient;
  if (made === undefined) return undefined;
  const notYet = new Promise<undefined>((resolve) => setImmediate(() => resolve(undefined)));
  return Promise.race([made, notYet]).catch(() => undefined);
}

/**
 * Closes `worker` and then its connection. With Redis up and no `force`, the jobs it runs finish first (each
 * within its own deadline). With a connection of the worker not up, no job could record its end anyway, so the
 * worker is closed at once (BullMQ's force: its connections are dropped, not quit); a send cut short that way is a
 * crash the gate's recovery settles, as it settles one in a process that died. `beforeConnectionCloses`: what must
 * still use the connection once the worker closed (its event listeners' work).
 */
export async function closeWorker(worker: Worker, connection: Connection, force = false, beforeConnectionCloses?: () => Promise<unknown>): Promise<void> {
  const blocking = await blockingConnectionOf(worker);
  const up = connection.status === 'ready' && blocking?.status === 'ready';
  await worker.close(force || !up);
  await beforeConnectionCloses?.();
  await closeConnection(connection);
}
