// Rule: on a Redis Cluster an approval the service cannot find through its id is never said not to exist. The id's
// binding (the index's slot) and the approval (its subject's) sit on different masters, and a grant waits for no
// replica, so a failover of the index's master can lose the binding alone while the approval still authorizes money.
// The answer says so and how to find it; named with its subject it is revoked, and its id bound to it again.
// The failover is simulated by deleting the binding field, which is what a replica that missed the HSETNX holds.
import { randomBytes } from 'node:crypto';
import { Redis, type Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisApprovals, type Approvals } from '../../src/redis/approvals.js';
import { createRedisClient } from '../../src/redis/client.js';
import { createKeys, type Keys } from '../../src/redis/keys.js';
import { approvalTerms } from '../support/harness.js';
import type { PrivateRedis } from '../support/private-redis.js';
import { ownerOf, startCluster } from '../support/private-cluster.js';

describe('an approval whose id binding a cluster lost', () => {
  let servers: PrivateRedis[] = [];
  let client: Cluster;
  let keys: Keys;
  let approvals: Approvals;
  beforeAll(async () => {
    servers = await startCluster([[], [], []]);
    client = createRedisClient({ redisUrl: servers[0]?.url ?? '', redisCluster: true, redisCommandTimeoutMs: 5_000 }) as Cluster;
    client.on('error', () => undefined);
    keys = createKeys(`abl${randomBytes(5).toString('hex')}`);
    approvals = createRedisApprovals({ redis: client, keys });
  }, 90_000);
  afterAll(async () => {
    client.disconnect();
    await Promise.all(servers.map((server) => server.stop()));
  });

  it('is answered unknown with how to find it on its subject, then found, revoked and bound again there', async () => {
    // A subject served by another master than the index: the case a failover of the index's master splits.
    const admin = new Redis(servers[0]?.url ?? '');
    const index = await ownerOf(admin, keys.approvalPartitions);
    let subject = '';
    for (let n = 0; subject === ''; n += 1) {
      const candidate = `payment:pi_split${n}`;
      if ((await ownerOf(admin, keys.subject(candidate))).master !== index.master) subject = candidate;
    }
    admin.disconnect();
    const terms = approvalTerms({ scope: subject });
    await approvals.grant(terms);
    expect(await client.hdel(keys.approvalPartitions, terms.id)).toBe(1);

    const refused = await approvals.revoke(terms.id, 'lee').then(() => null, (error: unknown) => error as { code?: string; message?: string });
    expect(refused?.code).toBe('unknown_approval');
    expect(refused?.message).toContain(`npx interlock approvals revoke ${terms.id} --by <who> --subject payment:pi_`);
    expect(approvals.notFound(terms.id).message).toContain('failover');

    expect((await approvals.describe(terms.id, subject)).unbound).toBe(true);
    const revoked = await approvals.revoke(terms.id, 'lee', subject);
    expect({ alreadyRevoked: revoked.alreadyRevoked, rebound: revoked.rebound }).toEqual({ alreadyRevoked: false, rebound: true });
    const described = await approvals.describe(terms.id);
    expect({ revoked: described.snapshot?.revoked, revokedBy: described.revokedBy, unbound: described.unbound }).toEqual({ revoked: true, revokedBy: 'lee', unbound: false });
  });
});
