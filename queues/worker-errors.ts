// A BullMQ worker reports an error for every reconnect attempt of each of its connections while Redis is away, about
// one a second per worker at first: four workers filled the log with the same line. Each worker's errors are logged
// the first at once, then at most one line per interval, saying how many came since the last one logged.
import { limitedErrorLog, type Stores } from '../src/interlock.js';

type Logger = Stores['logger'];

/** Something that reports errors as BullMQ workers do. */
type ErrorSource = { on(event: 'error', listener: (error: Error) => void): unknown };

export function logWorkerErrors(worker: ErrorSource, logger: Logger, message: string, options: { everyMs?: number; now?: () => number } = {}): void {
  worker.on('error', limitedErrorLog(logger, message, options));
}
