// Refuses to send on a Redis that can lose an acknowledged DISPATCHED (I1): without AOF, or with an fsync
// policy other than `always`, a crash of Redis itself can forget that a send was about to happen.
import type { Redis } from 'ioredis';

export const UNSAFE_DURABILITY_ENV = 'INTERLOCK_UNSAFE_DURABILITY';

export type Durability = { durable: boolean; appendonly: string; appendfsync: string; problems: string[]; optedOut: boolean };

export class DurabilityError extends Error {
  readonly code = 'redis_not_durable';
  constructor(readonly durability: Durability) {
    super(
      `Redis can lose an acknowledged DISPATCHED entry (${durability.problems.join('; ')}), so Interlock will not send. ` +
        `Run Redis with \`appendonly yes\` and \`appendfsync always\` (the compose file does), or set ${UNSAFE_DURABILITY_ENV}=1 to accept the risk on a test machine.`,
    );
    this.name = 'DurabilityError';
  }
}

async function configValue(redis: Redis, name: string): Promise<string | null> {
  try {
    const reply = (await redis.config('GET', name)) as unknown;
    if (Array.isArray(reply)) return reply.length >= 2 ? String(reply[1]) : null;
    if (reply && typeof reply === 'object') return String((reply as Record<string, unknown>)[name] ?? '') || null;
    return null;
  } catch {
    // Managed Redis services often disable CONFIG; INFO persistence still says whether AOF is on.
    return null;
  }
}

export async function inspectDurability(redis: Redis, optOut: boolean): Promise<Durability> {
  const info = String(await redis.info('persistence'));
  const aofEnabled = /aof_enabled:(\d)/.exec(info)?.[1] === '1';
  const appendonly = (await configValue(redis, 'appendonly')) ?? (aofEnabled ? 'yes' : 'no');
  const appendfsync = (await configValue(redis, 'appendfsync')) ?? 'unknown';
  const problems: string[] = [];
  if (appendonly !== 'yes' || !aofEnabled) problems.push('append-only file is off');
  if (appendfsync !== 'always') problems.push(`appendfsync is ${appendfsync}, not always`);
  return { durable: problems.length === 0, appendonly, appendfsync, problems, optedOut: optOut && problems.length > 0 };
}

/** Throws unless Redis is durable or the operator opted out; either way the caller logs the result. */
export async function requireDurability(redis: Redis, optOut: boolean): Promise<Durability> {
  const durability = await inspectDurability(redis, optOut);
  if (!durability.durable && !optOut) throw new DurabilityError(durability);
  return durability;
}
