// The composition root for the gate: builds the Redis adapters, heartbeat and gate from one config and target.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { Config } from './config.js';
import type { SigningKey } from './core/signing.js';
import type { Target } from './core/target.js';
import { createGate, type Gate } from './gate/gate.js';
import { createSendWatchdog } from './gate/send-watchdog.js';
import { createRedisApprovals, type Approvals } from './redis/approvals.js';
import { createDurabilityMonitor, requireDurability, type Durability, type DurabilityMonitor } from './redis/durability.js';
import { createHeartbeat, type Heartbeat } from './redis/heartbeat.js';
import { createRedisJournal, type Journal } from './redis/journal.js';
import { createThreadSigner } from './keys/signer.js';
import { createKeys } from './redis/keys.js';
import { createRedisClient, type RedisClient } from './redis/client.js';

export type Interlock = {
  gate: Gate;
  journal: Journal;
  approvals: Approvals;
  heartbeat: Heartbeat;
  redis: RedisClient;
  /** The reading at start. */
  durability: Durability;
  /** Re-checks durability while running; `assertDurable()` throws while Redis is not durable (unless opted out). */
  durabilityMonitor: DurabilityMonitor;
  close(options?: { clearHeartbeat?: boolean }): Promise<void>;
};

export function defaultWorkerId(): string {
  return `${hostname().replace(/[^A-Za-z0-9_.-]/g, '-')}:${process.pid}`;
}

export async function createInterlock(deps: { config: Config; target: Target; signingKey: SigningKey; logger: Logger; redis?: RedisClient }): Promise<Interlock> {
  const { config, target, signingKey, logger } = deps;
  const redis = deps.redis ?? createRedisClient(config);
  const durability = await requireDurability(redis, config.unsafeDurability);
  if (durability.optedOut) logger.warn({ durability }, `Redis is not durable (${durability.problems.join('; ')}); sending anyway because INTERLOCK_UNSAFE_DURABILITY is set`);
  else logger.info({ appendonly: durability.appendonly, appendfsync: durability.appendfsync, maxmemoryPolicy: durability.maxmemoryPolicy }, 'Redis durability checked');
  const durabilityMonitor = createDurabilityMonitor({ redis, optOut: config.unsafeDurability, intervalMs: config.durabilityCheckMs, logger, initial: durability });
  const keys = createKeys(config.keyPrefix);
  const signer = config.signingThread ? createThreadSigner(signingKey) : null;
  const journal = createRedisJournal({ redis, keys, signingKey, ...(signer ? { signer } : {}) });
  const approvals = createRedisApprovals({ redis, keys });
  const heartbeat = createHeartbeat({
    redis,
    keys,
    workerId: config.workerId ?? defaultWorkerId(),
    nonce: randomBytes(8).toString('hex'),
    intervalMs: config.heartbeatMs,
    ttlMs: config.heartbeatTtlMs,
    onError: (error) => logger.error({ err: error }, 'heartbeat failed'),
  });
  await heartbeat.start();
  // Half the settle margin: a stalled sender dies well before another worker may trust an empty lookup.
  const watchdog = config.sendWatchdog ? createSendWatchdog({ graceMs: Math.floor(config.settleMarginMs / 2) }) : undefined;
  const gate = createGate({
    journal,
    approvals,
    heartbeat,
    target,
    logger,
    timing: { claimTtlMs: config.claimTtlMs, settleMarginMs: config.settleMarginMs, dedupMarginMs: config.dedupMarginMs, minReplicas: config.redisMinReplicas, replicaWaitMs: config.redisWaitMs },
    durability: durabilityMonitor,
    ...(watchdog ? { watchdog } : {}),
  });
  // Started last, so a failed start leaves no timer behind.
  durabilityMonitor.start();
  return {
    gate,
    journal,
    approvals,
    heartbeat,
    redis,
    durability,
    durabilityMonitor,
    async close(options = {}) {
      await journal.flushIndex().catch((error: unknown) => logger.warn({ err: error }, 'could not drop finished entries of the open index; recovery will'));
      await durabilityMonitor.stop();
      await heartbeat.stop({ clear: options.clearHeartbeat ?? true });
      await watchdog?.close();
      await signer?.close();
      if (!deps.redis) await redis.quit();
    },
  };
}
