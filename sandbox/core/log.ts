// Structured logs to stderr (stdout is reserved for the line that announces the URL). INTERLOCK_LOG_LEVEL=silent
// mutes them, as the test configuration does; set but empty (an env file's `INTERLOCK_LOG_LEVEL=`) it is unset, as
// the service's configuration reads it (pino refuses the level '').
import { pino } from 'pino';
import type { Logger } from 'pino';

export type { Logger };

export function createLogger(level = process.env['INTERLOCK_LOG_LEVEL'] ?? ''): Logger {
  return pino({ name: 'stripe-sandbox', level: level === '' ? 'info' : level }, pino.destination(2));
}
