// Structured logs to stderr (stdout is reserved for the line that announces the URL). INTERLOCK_LOG_LEVEL=silent
// mutes them, as the test configuration does; set but empty or only whitespace (an env file's `INTERLOCK_LOG_LEVEL=`)
// it is unset, as the service's configuration reads it (pino refuses the level '').
import { InvalidArgumentError } from 'commander';
import { pino } from 'pino';
import type { Logger } from 'pino';

export type { Logger };

/**
 * The levels INTERLOCK_LOG_LEVEL may name, the same the service's configuration takes (LOG_LEVELS in src/config.ts;
 * the sandbox imports nothing from src/, and a test holds the two lists together): a level the service refuses is
 * refused here too, not taken by one process and not the other.
 */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

const isLogLevel = (value: string): value is LogLevel => (LOG_LEVELS as readonly string[]).includes(value);

/**
 * A logger at `level` (INTERLOCK_LOG_LEVEL when not given; `info` when that is unset). A level that is not one of
 * LOG_LEVELS is refused naming the variable, as a usage error (the `interlock sandbox` command exits 2), instead of
 * with pino's own sentence. The value is not repeated: a swapped line of an env file can put a secret there.
 */
export function createLogger(level = process.env['INTERLOCK_LOG_LEVEL'] ?? ''): Logger {
  const chosen = level.trim() === '' ? 'info' : level;
  if (!isLogLevel(chosen)) throw new InvalidArgumentError(`INTERLOCK_LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')} (lowercase), or unset for info.`);
  return pino({ name: 'stripe-sandbox', level: chosen }, pino.destination(2));
}

/**
 * The scheme and the user information of an absolute URL: up to the last `@` before the path, as the service reads it
 * (src/core/redact.ts), so a password holding `?`, `#` or `@` unencoded is masked whole.
 */
const USER_INFO = /^([a-z][a-z0-9+.-]*:\/\/)([^\s/]*)@/i;

/**
 * A URL as the sandbox shows it (logs, the start-up lines, the deliveries the control API lists): a password in it
 * is `…` (`http://hook:…@host/x`), a user with no password (often a token written there) is `…@`. The sandbox
 * imports nothing from src/, so this is its own copy of the service's URL masking (src/core/redact.ts).
 */
export function shownUrl(url: string): string {
  return url.replace(USER_INFO, (_all, scheme: string, userInfo: string) => {
    const colon = userInfo.indexOf(':');
    return colon === -1 ? `${scheme}…@` : `${scheme}${userInfo.slice(0, colon)}:…@`;
  });
}
