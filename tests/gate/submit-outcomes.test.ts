// Every outcome submit() can answer (DESIGN §4), each produced by the rule that calls for it, on real Redis
// with the in-memory target. Each receipt is verified offline as well.
import { afterEach, describe, expect, it } from 'vitest';
import { Rejected, type Target } from '../../src/core/target.js';
import type { Journal } from '../../src/redis/journal.js';
import type { MemoryTarget } from '../../src/targets/memory-target.js';
import { kill, refundProposal, startNode, type World } from '../support/harness.js';
import { FACTS, PAYMENT, entryKinds, gateWith, gateWorld, grant, submitAndCrash, submitSlowly, verifiedReceipt } from './gate-support.js';

let world: World;
afterEach(async () => {
  await world.close();
});

/** A target whose first send lands but answers with a definite no, as when a proxy fails after Stripe acted. */
function rejectsAfterLanding(inner: MemoryTarget): Target {
  let armed = true;
  return {
    ...inner,
    async apply(effectId, effect, options) {
      const landed = await inner.apply(effectId, effect, options);
      if (!armed) return landed;
      armed = false;
      throw new Rejected('the refund could not be created', { code: 'charge_already_refunded', status: 400 });
    },
  };
}

/** The journal as seen by a submit that read the effect's chain before anything was written to it. */
function readingBeforeEverything(journal: Journal): Journal {
  let first = true;
  return {
    ...journal,
    async entries(partition, effectId) {
      if (!first) return journal.entries(partition, effectId);
      first = false;
      return [];
    },
  };
}

describe('submit', () => {
  it('COMMITTED: sends a proposal under a live approval on facts that still hold, once', async () => {
    world = await gateWorld();
    const a = await world.node('a');
    const { id } = await grant(a);
    const proposal = refundProposal({ approval: id });
    const result = await a.gate.submit(proposal);
    expect(result).toMatchObject({ outcome: 'COMMITTED', evidence: expect.stringMatching(/^obj_/) });
    expect(world.target.landedCount(result.effectId)).toBe(1);
    expect(await entryKinds(a, result.effectId)).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED']);
    const receipt = await verifiedReceipt(world, a, result.effectId);
    expect(receipt).toMatchObject({ outcome: 'COMMITTED', happened: true, happenedOnce: true, authorizedWhenFired: true, assumptionsHeld: true, refused: null, recheckedAtRecovery: null, approvedBy: 'dana@support' });
  });

  it('DUPLICATE_IGNORED: a request that already committed is not sent again, from any node', async () => {
    world = await gateWorld();
    const [a, b] = [await world.node('a'), await world.node('b')];
    const { id } = await grant(a);
    const proposal = refundProposal({ approval: id });
    const first = await a.gate.submit(proposal);
    const again = await b.gate.submit(proposal);
    expect(again).toMatchObject({ outcome: 'DUPLICATE_IGNORED', evidence: first.evidence });
    expect(world.target.landedCount(first.effectId)).toBe(1);
  });

  it('IN_FLIGHT: a live slow sender on another node keeps its claim; the caller gets the holder and a retry-after', async () => {
    world = await gateWorld();
    const [a, b] = [await world.node('a'), await world.node('b')];
    const { id } = await grant(a);
    const proposal = refundProposal({ approval: id });
    const { effectId, sending: slow } = await submitSlowly(world, a, proposal);
    const now = await b.journal.serverTime();
    const second = await b.gate.submit(proposal);
    expect(second).toMatchObject({ outcome: 'IN_FLIGHT', holder: a.heartbeat.workerId });
    expect(second.retryAt).toBeGreaterThan(now);
    expect(second.retryAfterMs).toBeGreaterThan(0);
    expect(second.retryAfterMs).toBeLessThanOrEqual((second.retryAt ?? 0) - now);
    expect((await slow).outcome).toBe('COMMITTED');
    expect(world.target.landedCount(effectId)).toBe(1);
  });

  it('I2: the same request submitted by four nodes at once lands once; the others hear IN_FLIGHT or DUPLICATE_IGNORED', async () => {
    world = await gateWorld();
    const nodes = await Promise.all(['a', 'b', 'c', 'd'].map((name) => world.node(name)));
    const { id } = await grant(nodes[0]!);
    const proposal = refundProposal({ approval: id });
    const outcomes = (await Promise.all(nodes.map((node) => node.gate.submit(proposal)))).map((result) => result.outcome);
    expect(outcomes.filter((outcome) => outcome === 'COMMITTED')).toHaveLength(1);
    expect(outcomes.filter((outcome) => outcome !== 'COMMITTED').every((outcome) => outcome === 'IN_FLIGHT' || outcome === 'DUPLICATE_IGNORED')).toBe(true);
    expect(world.target.landedCount(nodes[0]!.gate.effectIdOf(proposal))).toBe(1);
    await verifiedReceipt(world, nodes[0]!, nodes[0]!.gate.effectIdOf(proposal));
  });

  it('I5: two payloads for one request id submitted at once: the first recorded proposal wins, the other is refused', async () => {
    world = await gateWorld();
    const [a, b] = [await world.node('a'), await world.node('b')];
    const { id } = await grant(a);
    const [twenty, thirty] = await Promise.all([
      a.gate.submit(refundProposal({ requestId: 'case-race', approval: id, amount: 2_000 })),
      b.gate.submit(refundProposal({ requestId: 'case-race', approval: id, amount: 3_000 })),
    ]);
    expect([twenty.outcome, thirty.outcome].sort()).toEqual(['COMMITTED', 'REFUSED:conflicting_payload']);
    const partition = await a.journal.partitionOf(twenty.effectId);
    const first = (await a.journal.entries(partition ?? '', twenty.effectId)).find((entry) => entry.kind === 'PROPOSED');
    expect(world.target.landings.map((landing) => landing.effect.amount)).toEqual([first?.kind === 'PROPOSED' ? first.effect.amount : null]);
  });

  it('AMBIGUOUS: a tier-3 effect whose sender died after the send is never resent, and a resubmit says so', async () => {
    world = await gateWorld({ target: { tier: 3 } });
    const [a, b] = [await world.node('a'), await world.node('b')];
    const { id } = await grant(a);
    const proposal = refundProposal({ approval: id });
    world.target.inject({ kind: 'crash-after-send' });
    const effectId = await submitAndCrash(a, proposal);
    await kill(a);
    const report = await b.gate.recover();
    expect(report.settled).toEqual([expect.objectContaining({ effectId, outcome: 'AMBIGUOUS' })]);
    expect((await b.gate.submit(proposal)).outcome).toBe('AMBIGUOUS');
    expect(world.target.landedCount(effectId)).toBe(1);
    const receipt = await verifiedReceipt(world, b, effectId);
    expect(receipt).toMatchObject({ outcome: 'AMBIGUOUS', happened: 'unknown', refused: null });
  });

  describe('REFUSED:conflicting_payload (I5)', () => {
    it('refuses a re-decided $30 for a request recorded at $20, even after the $20 committed', async () => {
      world = await gateWorld();
      const a = await world.node('a');
      const { id } = await grant(a);
      const twenty = await a.gate.submit(refundProposal({ requestId: 'case-42', approval: id, amount: 2_000 }));
      const thirty = await a.gate.submit(refundProposal({ requestId: 'case-42', approval: id, amount: 3_000 }));
      expect(thirty).toMatchObject({ effectId: twenty.effectId, outcome: 'REFUSED:conflicting_payload' });
      expect(world.target.landings.map((landing) => landing.effect.amount)).toEqual([2_000]);
      const receipt = await verifiedReceipt(world, a, twenty.effectId);
      expect(receipt).toMatchObject({ outcome: 'COMMITTED', happened: true, happenedOnce: true });
    });

    it('refuses a re-decided payload before anything was sent: the first proposal fixes it', async () => {
      world = await gateWorld();
      const a = await world.node('a');
      const { id } = await grant(a);
      world.target.world.set(PAYMENT, { ...FACTS, refunded_by_others: 500 });
      expect((await a.gate.submit(refundProposal({ requestId: 'case-7', approval: id, amount: 2_000 }))).outcome).toBe('REFUSED:stale_premise');
      const redecided = await a.gate.submit(refundProposal({ requestId: 'case-7', approval: id, amount: 3_000, premises: { ...FACTS, refunded_by_others: 500 } }));
      expect(redecided.outcome).toBe('REFUSED:conflicting_payload');
      expect(world.target.landings).toEqual([]);
    });

    it('recovery sends only the recorded $20 when a retry re-decides $30 during the outage', async () => {
      world = await gateWorld();
      const [a, b] = [await world.node('a'), await world.node('b')];
      const { id } = await grant(a);
      world.target.inject({ kind: 'crash-before-send' });
      const effectId = await submitAndCrash(a, refundProposal({ requestId: 'case-9', approval: id, amount: 2_000 }));
      await kill(a);
      expect((await b.gate.submit(refundProposal({ requestId: 'case-9', approval: id, amount: 3_000 }))).outcome).toBe('REFUSED:conflicting_payload');
      const report = await b.gate.recover();
      expect(report.settled).toEqual([expect.objectContaining({ effectId, outcome: 'COMMITTED_BY_RETRY' })]);
      expect(world.target.landings.map((landing) => landing.effect.amount)).toEqual([2_000]);
    });
  });

  describe('REFUSED:lease (I4): the approval is checked at dispatch', () => {
    it.each([
      ['revoked', { revoke: true }],
      ['expired', { terms: { expiresAt: Date.now() - 1_000 } }],
      ['out of scope', { terms: { scope: 'payment:pi_other' } }],
      ['below the amount', { terms: { capCents: 1_000 } }],
    ] as const)('refuses under an approval that is %s, and sends nothing', async (_name, setup) => {
      world = await gateWorld();
      const a = await world.node('a');
      const terms = await grant(a, 'terms' in setup ? setup.terms : {});
      if ('revoke' in setup) await a.approvals.revoke(terms.id, 'lee@risk');
      const result = await a.gate.submit(refundProposal({ approval: terms.id }));
      expect(result.outcome).toBe('REFUSED:lease');
      expect(world.target.landings).toEqual([]);
      const receipt = await verifiedReceipt(world, a, result.effectId);
      expect(receipt).toMatchObject({ outcome: 'REFUSED:lease', happened: false, refused: { code: 'REFUSED:lease' }, authorizedWhenFired: null });
    });

    it('refuses under an approval nobody granted', async () => {
      world = await gateWorld();
      const a = await world.node('a');
      const result = await a.gate.submit(refundProposal({ approval: 'ap_never_granted' }));
      expect(result).toMatchObject({ outcome: 'REFUSED:lease', reason: 'approval ap_never_granted does not exist' });
      expect(world.target.landings).toEqual([]);
    });

    it('refuses once the approval has used up its uses', async () => {
      world = await gateWorld();
      const a = await world.node('a');
      const { id } = await grant(a, { maxUses: 1 });
      expect((await a.gate.submit(refundProposal({ approval: id, amount: 500 }))).outcome).toBe('COMMITTED');
      const second = await a.gate.submit(refundProposal({ approval: id, amount: 500 }));
      expect(second.outcome).toBe('REFUSED:lease');
      expect(second.reason).toContain('used all 1');
      expect(world.target.landings).toHaveLength(1);
    });
  });

  it('REFUSED:stale_premise: a retry under the same approval is held to the facts the approver saw; a new approval brings its own', async () => {
    world = await gateWorld();
    const a = await world.node('a');
    const first = await grant(a);
    const moved = { ...FACTS, refunded_by_others: 500 };
    world.target.world.set(PAYMENT, moved);
    expect((await a.gate.submit(refundProposal({ requestId: 'case-3', approval: first.id }))).outcome).toBe('REFUSED:stale_premise');
    expect((await a.gate.submit(refundProposal({ requestId: 'case-3', approval: first.id, premises: moved }))).outcome).toBe('REFUSED:stale_premise');
    const second = await grant(a, { approver: 'sam@support' });
    expect((await a.gate.submit(refundProposal({ requestId: 'case-3', approval: second.id, premises: moved }))).outcome).toBe('COMMITTED');
    expect(world.target.landings).toHaveLength(1);
  });

  it('REFUSED:stale_premise (I3): a chargeback that arrived after the decision stops the send', async () => {
    world = await gateWorld();
    const a = await world.node('a');
    const { id } = await grant(a);
    world.target.world.set(PAYMENT, { ...FACTS, chargebacks: ['dp_1'] });
    const result = await a.gate.submit(refundProposal({ approval: id }));
    expect(result).toMatchObject({ outcome: 'REFUSED:stale_premise', changes: [{ field: 'chargebacks', was: [], now: ['dp_1'] }] });
    expect(world.target.landings).toEqual([]);
    const receipt = await verifiedReceipt(world, a, result.effectId);
    expect(receipt).toMatchObject({ outcome: 'REFUSED:stale_premise', happened: false, refused: { code: 'REFUSED:stale_premise' }, assumptionsHeld: null });
  });

  describe('REFUSED:over_cap (I6)', () => {
    it('two effects share one approval cap: the second one that would pass it is refused', async () => {
      world = await gateWorld();
      const a = await world.node('a');
      const { id } = await grant(a, { capCents: 3_000 });
      expect((await a.gate.submit(refundProposal({ approval: id, amount: 2_000 }))).outcome).toBe('COMMITTED');
      const second = await a.gate.submit(refundProposal({ approval: id, amount: 2_000 }));
      expect(second.outcome).toBe('REFUSED:over_cap');
      expect(second.reason).toContain('approval:');
      expect((await a.gate.submit(refundProposal({ approval: id, amount: 1_000 }))).outcome).toBe('COMMITTED');
      expect(world.target.landings.reduce((sum, landing) => sum + Number(landing.effect.amount), 0)).toBe(3_000);
    });

    it('a subject cap binds every approval on that payment', async () => {
      world = await gateWorld();
      const a = await world.node('a');
      await a.approvals.setSubjectCap(PAYMENT, 2_500);
      const first = await grant(a);
      const second = await grant(a, { approver: 'sam@support' });
      expect((await a.gate.submit(refundProposal({ approval: first.id, amount: 2_000 }))).outcome).toBe('COMMITTED');
      const over = await a.gate.submit(refundProposal({ approval: second.id, amount: 1_000 }));
      expect(over.outcome).toBe('REFUSED:over_cap');
      expect(over.reason).toContain(`subject:${PAYMENT}`);
      expect((await a.gate.submit(refundProposal({ approval: second.id, amount: 500 }))).outcome).toBe('COMMITTED');
    });
  });

  describe('REFUSED:target_error', () => {
    it('a definite refusal from the target is settled and never resent, by recovery or by a resubmit', async () => {
      world = await gateWorld();
      const [a, b] = [await world.node('a'), await world.node('b')];
      const { id } = await grant(a);
      const proposal = refundProposal({ approval: id });
      world.target.inject({ kind: 'reject', code: 'amount_too_large', message: 'Refund amount is greater than the unrefunded amount' });
      const result = await a.gate.submit(proposal);
      expect(result).toMatchObject({ outcome: 'REFUSED:target_error', reason: expect.stringContaining('greater than') });
      expect((await b.gate.recover()).settled).toEqual([]);
      expect((await b.gate.submit(proposal)).outcome).toBe('REFUSED:target_error');
      expect(world.target.landings).toEqual([]);
      const receipt = await verifiedReceipt(world, a, result.effectId);
      expect(receipt).toMatchObject({ outcome: 'REFUSED:target_error', happened: false, refused: { code: 'REFUSED:target_error' } });
    });

    it('a resubmit that read the chain before the refusal settled is still stopped by the dispatch script', async () => {
      world = await gateWorld();
      const a = await world.node('a');
      const { id } = await grant(a);
      const proposal = refundProposal({ approval: id });
      world.target.inject({ kind: 'reject' });
      expect((await a.gate.submit(proposal)).outcome).toBe('REFUSED:target_error');
      const late = gateWith(a, { journal: readingBeforeEverything(a.journal) });
      expect((await late.submit(proposal)).outcome).toBe('REFUSED:target_error');
      expect(world.target.landings).toEqual([]);
    });
  });

  it('COMMITTED_ON_QUERY: a send answered with a refusal that had in fact landed is recorded as landed', async () => {
    world = await gateWorld();
    const target = rejectsAfterLanding(world.target);
    const a = await startNode({ config: world.config, target, key: world.key.key, workerId: 'a' });
    world.nodes.push(a);
    const { id } = await grant(a);
    const result = await a.gate.submit(refundProposal({ approval: id }));
    expect(result).toMatchObject({ outcome: 'COMMITTED_ON_QUERY', evidence: world.target.landings[0]?.id });
    expect(world.target.landedCount(result.effectId)).toBe(1);
    const receipt = await verifiedReceipt(world, a, result.effectId);
    expect(receipt).toMatchObject({ outcome: 'COMMITTED_ON_QUERY', happened: true, assumptionsHeld: true, refused: null });
  });
});
