// Structured logs (pino) to stderr, so stdout stays free for command output. Every record is passed through
// redactDeep, and error messages too, so no Stripe key, webhook secret or API token is ever written to a log.
import { performance } from 'node:perf_hooks';
import { pino, type Logger } from 'pino';
import { redactDeep, redactSecrets } from './core/redact.js';

/** `level` read as loadConfig reads INTERLOCK_LOG_LEVEL: without the spaces around it, and empty (or unset) is `info`. */
export function createLogger(level: string = process.env.INTERLOCK_LOG_LEVEL ?? '', name = 'interlock'): Logger {
  const given = level.trim();
  return pino(
    {
      name,
      level: given === '' ? 'info' : given,
      base: { pid: process.pid },
      formatters: { log: (record) => redactDeep(record) as Record<string, unknown> },
      serializers: { err: (error: unknown) => (error instanceof Error ? { type: error.name, message: redactSecrets(error.message), code: (error as { code?: unknown }).code } : redactDeep(error)) },
      hooks: {
        logMethod(args, method) {
          const redacted = args.map((arg) => (typeof arg === 'string' ? redactSecrets(arg) : arg)) as Parameters<typeof method>;
          method.apply(this, redacted);
        },
      },
    },
    pino.destination(2),
  );
}

// Errors that repeat while something is away (Redis, mostly): the first is logged at once, then at most one line per
// interval, saying how many came since the last one logged. A worker's reconnect attempts or a heartbeat a second
// would otherwise fill the log with the same line for as long as the outage lasts. The interval is measured on a
// monotonic clock: on the wall clock, a step back of an hour (NTP, a VM restored from a snapshot) kept every line of
// that hour out of the log, and the step that makes things fail is the one time they must be seen.
export const REPEATED_ERROR_LOG_MS = 10_000;

/**
 * Whether a line limited to one per `everyMs` may be written at `at`, the last written at `lastLogged` (ms, on the
 * same clock). A clock that went back since (one given that is a wall clock) counts as the interval over: a line more
 * after a step, never none for as long as the step.
 */
export function logIntervalOver(at: number, lastLogged: number, everyMs: number): boolean {
  return at < lastLogged || at - lastLogged >= everyMs;
}

/**
 * A listener that logs the errors it is given as `message`, at most one line per `everyMs` (ms of `now`, a monotonic
 * clock unless told): the first at once, then the next one `everyMs` after the last logged, saying how many came in
 * between (`notLogged`). `level`: `error`
 * unless told (a condition expected to pass by itself, Stripe's rate limit, is a `warn`). `fields`: what the line
 * says about this occurrence besides the error (the effect, the pause); an `error` of undefined logs no `err`.
 */
export function limitedErrorLog(logger: Logger, message: string, options: { everyMs?: number; now?: () => number; level?: 'warn' | 'error' } = {}): (error: unknown, fields?: Record<string, unknown>) => void {
  const everyMs = options.everyMs ?? REPEATED_ERROR_LOG_MS;
  const now = options.now ?? (() => performance.now());
  const level = options.level ?? 'error';
  let lastLogged = -Infinity;
  let since = 0;
  return (error, fields = {}) => {
    const at = now();
    if (!logIntervalOver(at, lastLogged, everyMs)) {
      since += 1;
      return;
    }
    lastLogged = at;
    const record = { ...(error === undefined ? {} : { err: error }), ...fields, ...(since > 0 ? { notLogged: since } : {}) };
    logger[level](record, since > 0 ? `${message} (${since} more since the last logged)` : message);
    since = 0;
  };
}

/**
 * Ends the process, as Node would, on an exception nothing caught or a promise rejection nothing handled: both are
 * bugs, after which the process's state is not to be trusted, and recovery settles what it had in flight as after any
 * crash. What changes is what it leaves behind: one fatal log line, structured and with secrets masked like every
 * other line (Node's own report prints the error, message and stack, to stderr as they are: a Stripe key quoted in
 * an error message would be printed whole). `exit` is for tests.
 */
export function exitOnCrash(logger: Logger, exit: (code: number) => void = (code) => process.exit(code)): void {
  const crash = (what: string) => (error: unknown) => {
    // The stack too (the err serializer leaves it out): this line is what a bug report starts from. The logger masks it.
    logger.fatal({ err: error, stack: error instanceof Error ? error.stack : undefined }, `${what}: a bug in this process; exiting with 1, and recovery settles what was in flight`);
    exit(1);
  };
  process.on('uncaughtException', crash('uncaught exception'));
  process.on('unhandledRejection', crash('unhandled promise rejection'));
}
