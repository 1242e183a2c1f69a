// Refuses to send on a Redis that can lose an acknowledged DISPATCHED (I1): without AOF, or with an fsync
// policy other than `always`, a crash of Redis itself can forget that a send was about to happen.
import type { Redis } from 'ioredis';
import { writableNodes, type RedisClient } from './client.js';

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

async function inspectNode(redis: Redis, optOut: boolean): Promise<Durability> {
  const info = String(await redis.info('persistence'));
  const aofEnabled = /aof_enabled:(\d)/.exec(info)?.[1] === '1';
  const appendonly = (await configValue(redis, 'appendonly')) ?? (aofEnabled ? 'yes' : 'no');
  const appendfsync = (await configValue(redis, 'appendfsync')) ?? 'unknown';
  const problems: string[] = [];
  if (appendonly !== 'yes' || !aofEnabled) problems.push('append-only file is off');
  if (appendfsync !== 'always') problems.push(`appendfsync is ${appendfsync}, not always`);
  return { durable: problems.length === 0, appendonly, appendfsync, problems, optedOut: optOut && problems.length > 0 };
}

/** The persistence of every server that acknowledges writes (each master of a cluster); the weakest decides. */
export async function inspectDurability(client: RedisClient, optOut: boolean): Promise<Durability> {
  const nodes = writableNodes(client);
  if (nodes.length === 0) return { durable: false, appendonly: 'unknown', appendfsync: 'unknown', problems: ['no Redis server could be reached'], optedOut: optOut };
  const results = await Promise.all(nodes.map((node) => inspectNode(node, optOut)));
  if (results.length === 1 && results[0]) return results[0];
  const problems = results.flatMap((result, index) => result.problems.map((problem) => `${nodeName(nodes[index])}: ${problem}`));
  const weakest = results.find((result) => !result.durable) ?? results[0];
  return { durable: problems.length === 0, appendonly: weakest?.appendonly ?? 'unknown', appendfsync: weakest?.appendfsync ?? 'unknown', problems, optedOut: optOut && problems.length > 0 };
}

function nodeName(node: Redis | undefined): string {
  return node ? `${node.options.host ?? '?'}:${node.options.port ?? '?'}` : 'unknown node';
}

/** Throws unless Redis is durable or the operator opted out; either way the caller logs the result. */
export async function requireDurability(redis: RedisClient, optOut: boolean): Promise<Durability> {
  const durability = await inspectDurability(redis, optOut);
  if (!durability.durable && !optOut) throw new DurabilityError(durability);
  return durability;
}
