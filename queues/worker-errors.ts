// A BullMQ worker reports an error for every reconnect attempt of each of its connections while Redis is away, about
// one a second per worker at first: four workers filled the log with the same line. Each worker's errors are logged
// the first at once, then at most one line per interval, saying how many came since the last one logged.
import type { Stores } from '../src/interlock.js';

type Logger = Stores['logger'];

/** Something that reports errors as BullMQ workers do. */
type ErrorSource = { on(event: 'error', listener: (error: Error) => void): unknown };

export const WORKER_ERROR_LOG_MS = 10_000;

export function logWorkerErrors(worker: ErrorSource, logger: Logger, message: string, options: { everyMs?: number; now?: () => number } = {}): void {
  const everyMs = options.everyMs ?? WORKER_ERROR_LOG_MS;
  const now = options.now ?? Date.now;
  let lastLogged = -Infinity;
  let since = 0;
  worker.on('error', (error) => {
    if (now() - lastLogged < everyMs) {
      since += 1;
      return;
    }
    lastLogged = now();
    logger.error(since > 0 ? { err: error, notLogged: since } : { err: error }, since > 0 ? `${message} (${since} more since the last logged)` : message);
    since = 0;
  });
}
