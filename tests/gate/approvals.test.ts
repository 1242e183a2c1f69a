// Approvals (I4) and the caps they share (I6): grant, revoke and describe on real Redis; revocation ordered
// against dispatch; a refusal that resolves a dispatch gives its reservation back.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { createRedisApprovals, type Approvals } from '../../src/redis/approvals.js';
import { createKeys } from '../../src/redis/keys.js';
import { countCommands } from '../support/count-commands.js';
import { approvalTerms, kill, REDIS_URL, refundProposal, type TestNode, type World } from '../support/harness.js';
import { FACTS, PAYMENT, gateWith, gateWorld, grant, recoverUntilSettled, submitAndCrash, submitSlowly, verifiedReceipt } from './gate-support.js';

let world: World;
afterEach(async () => {
  await world.close();
});

describe('approvals store', () => {
  it('describes an approval on the Redis clock with its reservations and uses', async () => {
    world = await gateWorld();
    const a = await world.node('a');
    const terms = await grant(a, { capCents: 4_000, maxUses: 3 });
    const before = await a.approvals.describe(terms.id);
    expect(Math.abs(before.now - Date.now())).toBeLessThan(1_000);
    expect(before.snapshot).toEqual({ ...terms, revoked: false, revokedAt: null, reservedCents: 0, uses: 0 });
    await a.gate.submit(refundProposal({ approval: terms.id, amount: 1_500 }));
    expect((await a.approvals.describe(terms.id)).snapshot).toMatchObject({ reservedCents: 1_500, uses: 1 });
    expect((await a.approvals.describe('ap_unknown')).snapshot).toBeNull();
  });

  it('reads the terms in the partition the caller expects in one command, and anywhere else through the id\'s binding, with the same answer', async () => {
    world = await gateWorld();
    const redis = new Redis(REDIS_URL);
    const commands = countCommands(redis);
    const prefix = `t${randomBytes(6).toString('hex')}`;
    const approvals = createRedisApprovals({ redis, keys: createKeys(prefix) });
    try {
      const terms = approvalTerms({ scope: PAYMENT });
      const elsewhere = approvalTerms({ scope: 'payment:pi_other' });
      await approvals.grant(terms);
      await approvals.grant(elsewhere);
      const counted = async (read: () => Promise<unknown>) => {
        const start = commands.read();
        const answer = await read();
        return { answer, sent: commands.read() - start };
      };
      const viaIndex = await counted(() => approvals.terms(terms.id));
      const likely = await counted(() => approvals.terms(terms.id, PAYMENT));
      expect(likely.answer).toEqual(viaIndex.answer);
      expect(likely.answer).toMatchObject({ id: terms.id, partition: PAYMENT });
      expect([likely.sent, viaIndex.sent]).toEqual([1, 2]);
      // An approval of another payment, asked for where the effect's payment is: found through its binding, so the
      // gate can say what it covers.
      expect(await approvals.terms(elsewhere.id, PAYMENT)).toMatchObject({ scope: 'payment:pi_other', partition: 'payment:pi_other' });
      expect(await approvals.terms('ap_unknown', PAYMENT)).toBeNull();
    } finally {
      const stale = await redis.keys(`${prefix}:*`);
      if (stale.length > 0) await redis.del(...stale);
      await redis.quit();
    }
  });

  // Rule (redis/approvals.ts grant): a grant again under a granted id is the same grant only with the same terms and
  // an expiry no earlier than the one that stands.
  it('grants idempotently, and never lets a granted approval change its terms, scope or expiry', async () => {
    world = await gateWorld();
    const a = await world.node('a');
    const terms = await grant(a);
    expect(await a.approvals.grant(terms)).toMatchObject({ created: false });
    // A retry asks later, so for a later expiry: that is the same grant. An earlier one is not (the approval would stay
    // live longer than just asked).
    expect(await a.approvals.grant({ ...terms, expiresAt: terms.expiresAt + 5_000 })).toMatchObject({ created: false });
    await expect(a.approvals.grant({ ...terms, expiresAt: terms.expiresAt - 60_000 })).rejects.toMatchObject({ code: 'approval_conflict', message: expect.stringContaining('Revoke it') });
    await expect(a.approvals.grant({ ...terms, capCents: terms.capCents + 1 })).rejects.toMatchObject({ code: 'approval_conflict' });
    await expect(a.approvals.grant({ ...terms, scope: 'payment:pi_2' })).rejects.toMatchObject({ code: 'approval_conflict' });
    await expect(a.approvals.grant({ ...terms, id: 'ap_bad', capCents: 0 })).rejects.toMatchObject({ code: 'invalid_approval' });
  });

  it('revokes once; revoking again or revoking an unknown approval says so', async () => {
    world = await gateWorld();
    const a = await world.node('a');
    const { id } = await grant(a);
    const first = await a.approvals.revoke(id, 'lee@risk');
    expect(first).toMatchObject({ alreadyRevoked: false, mayStillLand: [] });
    expect((await a.approvals.describe(id)).snapshot).toMatchObject({ revoked: true, revokedAt: first.revokedAt });
    expect(await a.approvals.revoke(id, 'lee@risk')).toMatchObject({ alreadyRevoked: true, revokedAt: first.revokedAt });
    await expect(a.approvals.revoke('ap_unknown', 'lee@risk')).rejects.toMatchObject({ code: 'unknown_approval' });
  });
});

describe('revocation is ordered against dispatch', () => {
  it('a revoke returns the effects already dispatched (they may still land); anything dispatched after it is refused', async () => {
    world = await gateWorld();
    const [a, b] = [await world.node('a'), await world.node('b')];
    const { id } = await grant(a);
    const early = refundProposal({ approval: id, amount: 1_000 });
    const { effectId, sending } = await submitSlowly(world, a, early);

    const revoked = await b.approvals.revoke(id, 'lee@risk');
    expect(revoked.mayStillLand).toEqual([effectId]);
    const late = await b.gate.submit(refundProposal({ approval: id, amount: 1_000 }));
    expect(late.outcome).toBe('REFUSED:lease');

    expect((await sending).outcome).toBe('COMMITTED');
    expect(world.target.landings.map((landing) => landing.effectId)).toEqual([effectId]);
    expect((await b.approvals.revoke(id, 'lee@risk')).mayStillLand).toEqual([]);
    const receipt = await verifiedReceipt(world, a, effectId);
    expect(receipt).toMatchObject({ happened: true, authorizedWhenFired: true });
  });

  it('a revoke that lands between the gate reading the approval and the dispatch is still enforced by the dispatch script', async () => {
    world = await gateWorld();
    const a = await world.node('a');
    const { id } = await grant(a);
    const gate = gateWith(a, { approvals: revokingAfterFirstRead(a) });
    const result = await gate.submit(refundProposal({ approval: id }));
    expect(result).toMatchObject({ outcome: 'REFUSED:lease', reason: `approval ${id} was revoked` });
    expect(world.target.landings).toEqual([]);
    expect(await verifiedReceipt(world, a, result.effectId)).toMatchObject({ happened: false, refused: { code: 'REFUSED:lease' } });
  });
});

describe('a resolving refusal releases the cap reservation', () => {
  it('an effect refused at recovery gives its amount back to the approval cap and the subject cap', async () => {
    world = await gateWorld();
    const [a, b] = [await world.node('a'), await world.node('b')];
    await a.approvals.setSubjectCap(PAYMENT, 3_000);
    const { id } = await grant(a, { capCents: 5_000 });
    world.target.inject({ kind: 'crash-before-send' });
    const stuck = await submitAndCrash(a, refundProposal({ approval: id, amount: 2_000 }));
    await kill(a);
    expect(await b.gate.submit(refundProposal({ approval: id, amount: 2_500 }))).toMatchObject({ outcome: 'REFUSED:over_cap', reason: expect.stringContaining(`subject:${PAYMENT}`) });

    const moved = { ...FACTS, refunded_by_others: 500 };
    world.target.world.set(PAYMENT, moved);
    expect((await recoverUntilSettled(b, stuck)).settled).toEqual([expect.objectContaining({ outcome: 'REFUSED:stale_premise_at_recovery' })]);
    expect((await b.approvals.describe(id)).snapshot).toMatchObject({ reservedCents: 0, uses: 0 });

    const fresh = await b.gate.submit(refundProposal({ approval: id, amount: 2_500, premises: moved }));
    expect(fresh.outcome).toBe('COMMITTED');
    expect(world.target.landings.map((landing) => landing.effect.amount)).toEqual([2_500]);
  });

  it('an effect the target refused gives its amount back; one that committed keeps it', async () => {
    world = await gateWorld();
    const a = await world.node('a');
    const { id } = await grant(a, { capCents: 2_000 });
    world.target.inject({ kind: 'reject' });
    expect((await a.gate.submit(refundProposal({ approval: id, amount: 2_000 }))).outcome).toBe('REFUSED:target_error');
    expect((await a.gate.submit(refundProposal({ approval: id, amount: 2_000 }))).outcome).toBe('COMMITTED');
    expect((await a.gate.submit(refundProposal({ approval: id, amount: 100 }))).outcome).toBe('REFUSED:over_cap');
  });
});

/** The approvals store as the gate sees it, with a revoke slipped in right after the gate's own check. */
function revokingAfterFirstRead(node: TestNode): Approvals {
  let armed = true;
  return {
    ...node.approvals,
    async terms(approvalId) {
      const seen = await node.approvals.terms(approvalId);
      if (armed) {
        armed = false;
        await node.approvals.revoke(approvalId, 'lee@risk');
      }
      return seen;
    },
  };
}
