// Structured logs (pino) to stderr, so stdout stays free for command output.
import { pino, type Logger } from 'pino';

export function createLogger(level: string = process.env.INTERLOCK_LOG_LEVEL ?? 'info', name = 'interlock'): Logger {
  return pino({ name, level, base: { pid: process.pid } }, pino.destination(2));
}
