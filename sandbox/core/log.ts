// Structured logs to stderr (stdout is reserved for the line that announces the URL). INTERLOCK_LOG_LEVEL=silent
// mutes them, as the test configuration does.
import { pino } from 'pino';
import type { Logger } from 'pino';

export type { Logger };

export function createLogger(level = process.env['INTERLOCK_LOG_LEVEL'] ?? 'info'): Logger {
  return pino({ name: 'stripe-sandbox', level }, pino.destination(2));
}
