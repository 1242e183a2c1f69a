// Rule: with INTERLOCK_REDIS_MIN_REPLICAS set, a cap replaced on its master by another cap set at the same moment (two
// operators capping one subject) is never answered "is set on its Redis master ... Set it again": setting it again
// would undo the other operator's cap. Once the replicas hold the later cap it answers that cap (the one in force);
// while they do not, its 503 names the later cap and does not ask for this one again.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InterlockError } from '../../src/core/errors.js';
import { createRedisApprovals } from '../../src/redis/approvals.js';
import { createKeys } from '../../src/redis/keys.js';
import type { PrivateRedis } from '../support/private-redis.js';
import { startReplicatedPair, type ReplicatedPair } from './replicated-pair.js';

const said = (answer: unknown) => (answer instanceof InterlockError ? `${answer.code}: ${answer.message}` : JSON.stringify(answer));

describe('two caps set on one subject at once under INTERLOCK_REDIS_MIN_REPLICAS', () => {
  let primary: PrivateRedis;
  let replica: PrivateRedis;
  let onPrimary: Redis;
  let onReplica: Redis;
  let pair: ReplicatedPair;
  beforeAll(async () => {
    pair = await startReplicatedPair();
    ({ primary, replica, onPrimary, onReplica } = pair);
  }, 60_000);
  afterAll(async () => {
    await pair.stop();
  });

  /** Sets 100 then 5000 on one subject at once: both scripts run on the master before either asks its replicas. */
  async function capBoth(replicaWaitMs: number) {
    const redis = new Redis(primary.url);
    const keys = createKeys(`cc${randomBytes(5).toString('hex')}`);
    const approvals = createRedisApprovals({ redis, keys, minReplicas: 1, replicaWaitMs });
    try {
      // The script loaded first, so the two calls' scripts go out together (no NOSCRIPT round between them); with the
      // replica stopped this one is answered 503, and only its loading matters.
      await approvals.setSubjectCap('payment:pi_ccwarm', 1).catch(() => undefined);
      const subject = 'payment:pi_cctwo';
      const [low, high] = await Promise.all([approvals.setSubjectCap(subject, 100).catch((error: unknown) => error), approvals.setSubjectCap(subject, 5_000).catch((error: unknown) => error)]);
      return { low, high, key: keys.subject(subject) };
    } finally {
      redis.disconnect();
    }
  }

  it('answers the cap replaced by a later one with the later cap, once the replica holds it', async () => {
    const { low, high, key } = await capBoth(5_000);
    // Both answered only once the replica acknowledged the cap of 5000, so it holds it now.
    expect({ low: said(low), high: said(high), onMaster: await onPrimary.hget(key, 'limit'), onReplica: await onReplica.hget(key, 'limit') }).toEqual({
      low: JSON.stringify({ limitCents: 5_000, movedCents: 0 }),
      high: JSON.stringify({ limitCents: 5_000, movedCents: 0 }),
      onMaster: '5000',
      onReplica: '5000',
    });
  });

  it('does not ask for the replaced cap again while the replica holds neither (redis_not_durable naming the later cap)', async () => {
    // The replica stops answering (a stalled host): it takes nothing more and acknowledges nothing.
    replica.process.kill('SIGSTOP');
    let answers: Awaited<ReturnType<typeof capBoth>>;
    try {
      answers = await capBoth(300);
    } finally {
      replica.process.kill('SIGCONT');
    }
    const { low, high } = answers;
    expect(low).toMatchObject({ code: 'redis_not_durable', status: 503, retryable: true });
    expect(said(low)).toMatch(/cap of 100 on payment:pi_cctwo was replaced on its Redis master by a cap of 5000 set since.*Setting 100 again would undo the cap of 5000/);
    expect(said(low)).not.toMatch(/Set it again/);
    expect(high).toMatchObject({ code: 'redis_not_durable', message: expect.stringMatching(/cap of 5000 on payment:pi_cctwo is set on its Redis master.*Set it again/) });
  });

  it('answers the cap in force, not its own, when a failover lost its set and the next set on the new master reached the same count', async () => {
    const subject = 'payment:pi_ccsame';
    const keys = createKeys(`ccsame${randomBytes(5).toString('hex')}`);
    const key = keys.subject(subject);
    const real = new Redis(primary.url);
    let armed = false;
    // The proof's round opens its connection with duplicate() right after the script answered: the "failover" is
    // made then. A replica that missed this set (count 1 there) became master, and another operator set 5000 on it:
    // the count this set's reply carried, under that call's token.
    const redis = new Proxy(real, {
      get(target, property, receiver) {
        if (property === 'duplicate') {
          return (...args: unknown[]) => {
            const connection = (target.duplicate as (...given: unknown[]) => Redis)(...args);
            if (armed) {
              armed = false;
              void connection.hset(key, 'limit', '5000', 'name', `subject:${subject}`, 'capSets', '2', 'capSet', '2.anothercall');
            }
            return connection;
          };
        }
        const value: unknown = Reflect.get(target, property, receiver);
        return typeof value === 'function' ? (value as (...given: unknown[]) => unknown).bind(target) : value;
      },
    });
    const approvals = createRedisApprovals({ redis: redis as unknown as Redis, keys, minReplicas: 1, replicaWaitMs: 5_000 });
    try {
      await approvals.setSubjectCap(subject, 3_000);
      armed = true;
      const answer = await approvals.setSubjectCap(subject, 100).then((value) => value, (error: unknown) => error);
      expect({ answer: said(answer), inForce: await onPrimary.hget(key, 'limit') }).toEqual({ answer: JSON.stringify({ limitCents: 5_000, movedCents: 0 }), inForce: '5000' });
    } finally {
      real.disconnect();
    }
  });
});
