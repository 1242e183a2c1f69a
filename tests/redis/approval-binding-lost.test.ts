// Rule: an approval that can still move money can always be revoked by the operator. A grant writes the id's binding
// (the index's slot) apart from the approval (its subject's): on a cluster, a failover of the index's master can lose
// the binding alone, while a dispatch still reads the approval on its own master. Named with its subject (its scope),
// the approval is found there, shown, revoked, and its id bound to it again; nothing is then sent under it.
// The failover is simulated by deleting the binding field, which is what a replica that missed the HSETNX holds.
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { refundProposal, type World } from '../support/harness.js';
import { gateWorld, grant, PAYMENT } from '../gate/gate-support.js';

let world: World;
let redis: Redis | undefined;
afterEach(async () => {
  await redis?.quit();
  redis = undefined;
  await world.close();
});

describe('an approval whose id binding was lost', () => {
  it('is found on its subject, revoked there with its id bound again, and nothing is sent under it after', async () => {
    world = await gateWorld();
    const node = await world.node('a');
    const terms = await grant(node, { capCents: 5_000, maxUses: 5 });
    redis = new Redis(world.config.redisUrl);
    expect(await redis.hdel(node.stores.keys.approvalPartitions, terms.id)).toBe(1);

    // Through the id alone it is not found; on its subject it is, and said to be unbound.
    expect((await node.approvals.describe(terms.id)).snapshot).toBeNull();
    const onSubject = await node.approvals.describe(terms.id, PAYMENT);
    expect({ id: onSubject.snapshot?.id, revoked: onSubject.snapshot?.revoked, unbound: onSubject.unbound }).toEqual({ id: terms.id, revoked: false, unbound: true });
    // Describing writes nothing: the binding is still gone.
    expect(await redis.hget(node.stores.keys.approvalPartitions, terms.id)).toBeNull();

    const revoked = await node.approvals.revoke(terms.id, 'lee', PAYMENT);
    expect({ alreadyRevoked: revoked.alreadyRevoked, revokedBy: revoked.revokedBy, rebound: revoked.rebound }).toEqual({ alreadyRevoked: false, revokedBy: 'lee', rebound: true });
    expect(await redis.hget(node.stores.keys.approvalPartitions, terms.id)).toBe(PAYMENT);
    const described = await node.approvals.describe(terms.id);
    expect({ revoked: described.snapshot?.revoked, revokedBy: described.revokedBy }).toEqual({ revoked: true, revokedBy: 'lee' });

    const answer = await node.gate.submit(refundProposal({ approval: terms.id }));
    expect(world.target.landedCount(answer.effectId)).toBe(0);
  });

  it('is not found on another subject, and nothing is revoked or bound there', async () => {
    world = await gateWorld();
    const node = await world.node('a');
    const terms = await grant(node);
    redis = new Redis(world.config.redisUrl);
    await redis.hdel(node.stores.keys.approvalPartitions, terms.id);
    await expect(node.approvals.revoke(terms.id, 'lee', 'payment:pi_other')).rejects.toMatchObject({ code: 'unknown_approval', message: `No approval ${terms.id} on payment:pi_other.` });
    await expect(node.approvals.revoke(terms.id, 'lee', 'pi_1')).rejects.toMatchObject({ code: 'invalid_approval' });
    expect(await redis.hget(node.stores.keys.approvalPartitions, terms.id)).toBeNull();
    expect((await node.approvals.describe(terms.id, PAYMENT)).snapshot?.revoked).toBe(false);
  });

  it('with its binding in place, is revoked on the subject given as without one, its binding untouched', async () => {
    world = await gateWorld();
    const node = await world.node('a');
    const terms = await grant(node);
    const revoked = await node.approvals.revoke(terms.id, 'lee', PAYMENT);
    expect({ alreadyRevoked: revoked.alreadyRevoked, rebound: revoked.rebound }).toEqual({ alreadyRevoked: false, rebound: false });
    expect((await node.approvals.describe(terms.id, PAYMENT)).unbound).toBe(false);
    expect((await node.approvals.revoke(terms.id, 'kim')).alreadyRevoked).toBe(true);
  });
});
