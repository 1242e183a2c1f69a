// Test wiring: a gate on the machine's Redis under a private key prefix, with an in-memory target and a fresh
// signing key. Nothing is flushed, so test files can share one Redis in parallel.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { loadConfig, type Config } from '../../src/config.js';
import { signingKeyFromPem, publicKeySet, type PublicKeySet, type SigningKey } from '../../src/core/signing.js';
import type { Target } from '../../src/core/target.js';
import { createInterlock, type Interlock } from '../../src/interlock.js';
import type { RedisClient } from '../../src/redis/client.js';
import { generateSigningKeyPem } from '../../src/keys/key-store.js';
import { createMemoryTarget, type MemoryTarget, type MemoryTargetOptions } from '../../src/targets/memory-target.js';
import type { ApprovalTerms } from '../../src/core/approval.js';
import { recorded } from './outcomes.js';

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/**
 * Removes what a service started under `prefixes` left on the shared Redis: its own keys (`<prefix>:*`) and its
 * BullMQ queues (`{<prefix>-queues}:*`). For tests that spawn `serve` and cannot reach its stores to close them.
 */
export async function removePrefixes(prefixes: readonly string[]): Promise<void> {
  if (prefixes.length === 0) return;
  const redis = new Redis(REDIS_URL);
  try {
    for (const prefix of prefixes) {
      for (const pattern of [`${prefix}:*`, `{${prefix}-queues}:*`]) {
        for await (const keys of redis.scanStream({ match: pattern, count: 1_000 }) as AsyncIterable<string[]>) if (keys.length > 0) await redis.del(...keys);
      }
    }
  } finally {
    redis.disconnect();
  }
}

export function testKey(): { key: SigningKey; publicKeys: PublicKeySet; publicPem: string; privatePem: string } {
  const { privatePem, publicPem } = generateSigningKeyPem();
  return { key: signingKeyFromPem(privatePem), publicKeys: publicKeySet([publicPem]), publicPem, privatePem };
}

export function testConfig(overrides: Partial<Config> = {}): Config {
  return {
    ...loadConfig({}),
    redisUrl: REDIS_URL,
    keyPrefix: `t${randomBytes(6).toString('hex')}`,
    unsafeDurability: true,
    sendWatchdog: false,
    claimTtlMs: 3_000,
    settleMarginMs: 300,
    dedupMarginMs: 10_000,
    sendTimeoutMs: 1_000,
    heartbeatMs: 200,
    heartbeatTtlMs: 800,
    logLevel: 'silent',
    ...overrides,
  };
}

export type TestNode = Interlock & { config: Config; target: Target };

/** One gate instance ("a worker process"). Several nodes may share a prefix and a target. */
export async function startNode(options: { config: Config; target: Target; key: SigningKey; workerId?: string; redis?: RedisClient }): Promise<TestNode> {
  // A caller may hand in the connection (e.g. one speaking RESP2); the node owns and closes it either way.
  const redis = options.redis ?? new Redis(options.config.redisUrl, { maxRetriesPerRequest: 1 });
  const config = { ...options.config, workerId: options.workerId ?? `w-${randomBytes(4).toString('hex')}` };
  const interlock = await createInterlock({ config, target: options.target, signingKey: options.key, logger: pino({ level: 'silent' }), redis });
  return {
    ...interlock,
    gate: recorded(interlock.gate),
    config,
    target: options.target,
    async close(closeOptions) {
      await interlock.close(closeOptions);
      await redis.quit();
    },
  };
}

/** A node's sudden death: no more heartbeats and its key gone, as after SIGKILL plus a few seconds. */
export async function kill(node: TestNode): Promise<void> {
  await node.heartbeat.stop({ clear: true });
}

export type World = { config: Config; target: MemoryTarget; key: ReturnType<typeof testKey>; nodes: TestNode[]; node(workerId?: string): Promise<TestNode>; close(): Promise<void> };

export async function createWorld(options: { target?: Partial<MemoryTargetOptions>; config?: Partial<Config> } = {}): Promise<World> {
  const config = testConfig(options.config);
  const target = createMemoryTarget({ tier: 1, sendTimeoutMs: config.sendTimeoutMs, ...options.target });
  const key = testKey();
  const nodes: TestNode[] = [];
  return {
    config,
    target,
    key,
    nodes,
    async node(workerId) {
      const node = await startNode({ config, target, key: key.key, ...(workerId === undefined ? {} : { workerId }) });
      nodes.push(node);
      return node;
    },
    async close() {
      await Promise.all(nodes.map((node) => node.close().catch(() => undefined)));
      const redis = new Redis(config.redisUrl);
      const stale = await redis.keys(`${config.keyPrefix}:*`);
      for (let i = 0; i < stale.length; i += 500) await redis.del(...stale.slice(i, i + 500));
      await redis.quit();
    },
  };
}

/**
 * A world with one node, and a Redis connection of the test's own to look into (or tamper with) what the node wrote;
 * `close` ends the connection and then the world.
 */
export async function worldWithNode(): Promise<{ world: World; node: TestNode; redis: Redis; close(): Promise<void> }> {
  const world = await createWorld();
  const node = await world.node();
  const redis = new Redis(world.config.redisUrl);
  return {
    world,
    node,
    redis,
    async close() {
      await redis.quit();
      await world.close();
    },
  };
}

export function approvalTerms(overrides: Partial<ApprovalTerms> = {}): ApprovalTerms {
  return { id: `ap_${randomBytes(4).toString('hex')}`, approver: 'dana@support', capCents: 5_000, expiresAt: Date.now() + 3_600_000, maxUses: 5, scope: 'payment:pi_1', ...overrides };
}

export function refundProposal(overrides: { requestId?: string; approval: string; amount?: number; paymentIntent?: string; premises?: Record<string, unknown> }) {
  return {
    requestId: overrides.requestId ?? `case-${randomBytes(4).toString('hex')}`,
    agent: 'support-bot',
    approval: overrides.approval,
    premises: overrides.premises ?? { chargebacks: [], refunded_by_others: 0 },
    effect: { kind: 'refund', paymentIntent: overrides.paymentIntent ?? 'pi_1', amount: overrides.amount ?? 2_000, reason: 'requested_by_customer' },
  };
}

/**
 * `count` refunds submitted at once by `node`, each on a payment and under an approval of its own (named after
 * `name`), with facts that agree: what one busy worker does, so their batches are sealed in the same turns.
 */
export async function refundsSubmittedTogether(world: World, node: TestNode, count: number, name: string) {
  return Promise.all(
    Array.from({ length: count }, async (_, index) => {
      const paymentIntent = `pi_${name}_${index}`;
      world.target.world.set(`payment:${paymentIntent}`, { chargebacks: [], refunded_by_others: 0 });
      const terms = approvalTerms({ id: `ap_${name}_${index}`, scope: `payment:${paymentIntent}` });
      await node.approvals.grant(terms);
      return node.gate.submit(refundProposal({ requestId: `case-${name}-${index}`, approval: terms.id, paymentIntent }));
    }),
  );
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** What a process writes under its prefix as it starts (its heartbeat, the deployment's marker, signing keys and credit currency), whatever it is asked. */
function writtenAtStart(key: string): boolean {
  return key.includes(':heartbeat:') || key.endsWith(':deployment') || key.endsWith(':signing-kids') || key.endsWith(':signing-kid-newest') || key.endsWith(':credit-currency');
}

/** Every key under `prefix` but those a process writes as it starts: what requests wrote. */
export async function keysWrittenUnder(redis: Redis, prefix: string): Promise<string[]> {
  return (await redis.keys(`${prefix}:*`)).filter((key) => !writtenAtStart(key));
}
