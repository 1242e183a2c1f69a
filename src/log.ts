// Structured logs (pino) to stderr, so stdout stays free for command output. Every record is passed through
// redactDeep, and error messages too, so no Stripe key, webhook secret or API token is ever written to a log.
import { pino, type Logger } from 'pino';
import { redactDeep, redactSecrets } from './core/redact.js';

export function createLogger(level: string = process.env.INTERLOCK_LOG_LEVEL ?? 'info', name = 'interlock'): Logger {
  return pino(
    {
      name,
      level,
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
