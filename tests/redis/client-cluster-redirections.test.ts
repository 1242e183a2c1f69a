// Rule: README "Redis" last bullet: a Redis that turns commands away for a while (`TRYAGAIN`, `CLUSTERDOWN`, a cluster
// moving a slot) is an outage, retried as any Redis outage is (the effects job retries, the API answers 503
// redis_unavailable), not failed at the first refusal. On a cluster, ioredis gives such a command up after its
// redirections and rejects with a plain Error, "Too many Cluster redirections. Last error: ReplyError: TRYAGAIN …",
// which is classed by that last error: TRYAGAIN, CLUSTERDOWN, MOVED and ASK are refusals (the node ran nothing), a
// timeout is a timeout, and the command's own error is no outage. The gate's cluster client follows a moving slot
// longer than ioredis's default before it gives up.
import { randomBytes } from 'node:crypto';
import { Cluster, type Command, Redis, ReplyError } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMemoryTarget } from '../../src/targets/memory-target.js';
import { createRedisClient, isRedisOutage, isRedisTimeout, redisTurnedAway } from '../../src/redis/client.js';
import { isRetryable } from '../../src/core/errors.js';
import { createKeys } from '../../src/redis/keys.js';
import { keySlot } from '../../src/redis/key-slot.js';
import { asApiError, REDIS_TIMED_OUT } from '../../webhooks/api/errors.js';
import { approvalTerms, refundProposal, startNode, testConfig, testKey, type TestNode } from '../support/harness.js';
import type { PrivateRedis } from '../support/private-redis.js';
import { startCluster } from '../support/private-cluster.js';

/** The error ioredis's cluster client rejects a command with when `last` is the error of its last redirection allowed. */
function givenUp(last: Error): Error {
  let rejected: Error | undefined;
  const handleError = Cluster.prototype.handleError as (this: unknown, error: Error, ttl: { value?: number }, handlers: Record<string, (error?: Error) => void>) => void;
  handleError.call({ options: { maxRedirections: 16 } }, last, { value: 1 }, {
    maxRedirections: (error) => {
      rejected = error;
    },
  });
  if (rejected === undefined) throw new Error('ioredis did not give the command up');
  return rejected;
}

function replyError(message: string): Error {
  return new ReplyError(message) as Error;
}

describe('a command a cluster client gave up redirecting', () => {
  it('is classed by its last error: a refusal is an outage (503), a timeout a timeout, the command\'s own error neither', () => {
    const refusals = {
      TRYAGAIN: 'TRYAGAIN Multiple keys request during rehashing of slot',
      CLUSTERDOWN: 'CLUSTERDOWN The cluster is down',
      MOVED: 'MOVED 4242 127.0.0.1:7001',
      ASK: 'ASK 4242 127.0.0.1:7001',
    };
    for (const [word, message] of Object.entries(refusals)) {
      const error = givenUp(replyError(message));
      expect(error.message).toBe(`Too many Cluster redirections. Last error: ReplyError: ${message}`);
      const api = asApiError(error);
      expect({ word: redisTurnedAway(error), outage: isRedisOutage(error), api: api.code, said: api.message.includes(`(${word}: the cluster is`) }, message).toEqual({ word, outage: true, api: 'redis_unavailable', said: true });
    }
    // A refusal that is no redirection, met on the last try.
    expect(redisTurnedAway(givenUp(replyError('OOM command not allowed when used memory > maxmemory')))).toBe('OOM');

    const timedOut = givenUp(new Error('Command timed out'));
    expect({ timeout: isRedisTimeout(timedOut), outage: isRedisOutage(timedOut), api: asApiError(timedOut).message }).toEqual({ timeout: true, outage: true, api: REDIS_TIMED_OUT });
    const closed = givenUp(new Error('Connection is closed.'));
    expect({ outage: isRedisOutage(closed), api: asApiError(closed).code }).toEqual({ outage: true, api: 'redis_unavailable' });

    // The script ran and failed: it may have written, and running it again fails the same way.
    const own = givenUp(replyError('ERR user_script:12: Script attempted to access a non local key'));
    expect({ word: redisTurnedAway(own), outage: isRedisOutage(own), timeout: isRedisTimeout(own), api: asApiError(own).code }).toEqual({ word: null, outage: false, timeout: false, api: 'internal' });
    // A redirection answered to a client of one server is REDIS_URL reaching a cluster node, not a passing refusal.
    expect(isRedisOutage(replyError('MOVED 4242 127.0.0.1:7001'))).toBe(false);
    // The program's own error that only quotes the words is not one.
    expect(isRedisOutage(new Error('Unexpected: Too many Cluster redirections. Last error: ReplyError: TRYAGAIN'))).toBe(false);
  });
});

/** How many times each command is sent to a node of `cluster` from now on (a redirected command is sent again). */
function sendsPerCommand(cluster: Cluster): { most(): number } {
  const sends = new Map<Command, number>();
  const watch = (node: Redis): void => {
    const send = node.sendCommand.bind(node);
    node.sendCommand = ((command: Command, ...rest: unknown[]) => {
      sends.set(command, (sends.get(command) ?? 0) + 1);
      return (send as (...args: unknown[]) => unknown)(command, ...rest);
    }) as Redis['sendCommand'];
  };
  for (const node of cluster.nodes('all')) watch(node);
  cluster.on('+node', watch);
  return { most: () => Math.max(0, ...sends.values()) };
}

describe('a slot half-way through a reshard', () => {
  let servers: PrivateRedis[] = [];
  const nodes: TestNode[] = [];
  beforeAll(async () => {
    servers = await startCluster([['--appendonly', 'no'], ['--appendonly', 'no'], ['--appendonly', 'no']]);
  }, 60_000);
  afterAll(async () => {
    for (const node of nodes) await node.close().catch(() => undefined);
    await Promise.all(servers.map((server) => server.stop()));
  });

  it('is waited out for longer than ioredis\'s default, then reported as a Redis outage (retryable, 503), not an internal error that fails the job for good', async () => {
    const keyPrefix = `tryagain-${randomBytes(3).toString('hex')}`;
    const keys = createKeys(keyPrefix);
    const config = testConfig({ redisUrl: servers[0]?.url ?? '', redisCluster: true, keyPrefix });
    const target = createMemoryTarget({ tier: 1, sendTimeoutMs: config.sendTimeoutMs });
    const redis = createRedisClient(config);
    const node = await startNode({ config, target, key: testKey().key, redis });
    nodes.push(node);
    const pi = 'pi_tryagain';
    const subject = `payment:${pi}`;
    target.world.set(subject, { chargebacks: [], refunded_by_others: 0 });
    const terms = approvalTerms({ scope: subject, capCents: 100_000, maxUses: 100 });
    await node.approvals.grant(terms);
    expect((await node.gate.submit(refundProposal({ approval: terms.id, paymentIntent: pi, amount: 100 }))).outcome).toBe('COMMITTED');

    const slot = keySlot(keys.subject(subject));
    const admin = new Redis(servers[0]?.url ?? '');
    const slots = (await admin.cluster('SLOTS')) as unknown as [number, number, [string, number, string]][];
    admin.disconnect();
    const range = slots.find(([from, to]) => slot >= from && slot <= to);
    const srcPort = Number(range?.[2][1]);
    const dstRange = slots.find((r) => Number(r[2][1]) !== srcPort);
    const src = new Redis(srcPort, '127.0.0.1');
    const dst = new Redis(Number(dstRange?.[2][1]), '127.0.0.1');
    try {
      await dst.cluster('SETSLOT', slot, 'IMPORTING', String(range?.[2][2]));
      await src.cluster('SETSLOT', slot, 'MIGRATING', String(dstRange?.[2][2]));
      // Move one key of the slot only: the slot's multi-key scripts now meet TRYAGAIN until the move ends.
      const [one] = (await src.cluster('GETKEYSINSLOT', slot, 1)) as string[];
      await src.call('MIGRATE', '127.0.0.1', String(dstRange?.[2][1]), '', '0', '5000', 'KEYS', one ?? '');
      const sends = sendsPerCommand(redis as Cluster);

      const caught = await node.gate.submit(refundProposal({ approval: terms.id, paymentIntent: pi, amount: 100 })).then(
        (answer) => ({ answer: answer.outcome }),
        (error: unknown) => ({ error }),
      );
      expect('error' in caught, JSON.stringify(caught)).toBe(true);
      const error = (caught as { error: Error }).error;
      const api = asApiError(error);
      // The last try may have been sent to the node the slot moves to (ASK), then to another at random (MOVED).
      expect({ message: error.message, outage: isRedisOutage(error) || isRetryable(error), api: api.code }).toEqual({
        message: expect.stringMatching(/^Too many Cluster redirections\. Last error: ReplyError: (TRYAGAIN|MOVED|ASK) /) as unknown as string,
        outage: true,
        api: 'redis_unavailable',
      });
      // ioredis's default gives a command up at its 17th try (16 redirections after the first).
      expect(sends.most()).toBeGreaterThan(17);
    } finally {
      src.disconnect();
      dst.disconnect();
    }
  }, 120_000);
});
