// Issue 6: each way an outside review broke the contract, as the rule it broke. Every test here failed on the gate
// before the fix (or fails when the fix is removed) and states the rule, not the example.
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { effectIdFor } from '../../src/core/effect-id.js';
import { ProposalError } from '../../src/core/proposal.js';
import type { Target } from '../../src/core/target.js';
import { verify } from '../../src/core/verify.js';
import type { Approvals } from '../../src/redis/approvals.js';
import { keysWrittenUnder, kill, refundProposal, sleep, type TestNode, type World } from '../support/harness.js';
import { FACTS, PAYMENT, crashedBeforeSend, entryKinds, gateWith, gateWorld, grant, openState, submitAndCrash, untilRedisTime, verifiedReceipt } from './gate-support.js';

let world: World;
afterEach(async () => {
  await world.close();
});

async function keysWritten(): Promise<string[]> {
  const redis = new Redis(world.config.redisUrl);
  try {
    return (await keysWrittenUnder(redis, world.config.keyPrefix));
  } finally {
    await redis.quit();
  }
}

/** A target whose premise reads fail until `heal()`: a proposal dies before its dispatch step. */
function failingReads(node: TestNode): Target & { heal(): void } {
  let failing = true;
  return {
    ...node.target,
    async readFacts(effectId, effect, names, context) {
      if (failing) throw new Error('Stripe is unreachable');
      return node.target.readFacts(effectId, effect, names, context);
    },
    heal() {
      failing = false;
    },
  };
}

/** A world with one node and an approval on each of two payments, pi_A and pi_B. */
async function twoPayments() {
  world = await gateWorld();
  const a = await world.node('a');
  const onA = await grant(a, { scope: 'payment:pi_A' });
  const onB = await grant(a, { scope: 'payment:pi_B', capCents: 9_000 });
  world.target.world.set('payment:pi_A', { ...FACTS });
  world.target.world.set('payment:pi_B', { ...FACTS });
  return { a, onA, onB };
}

describe('authority and binding', () => {
  it('item 1: an effect id bound to one payment is never sent on another, even when its first dispatch died before the send', async () => {
    const { a, onA, onB } = await twoPayments();
    // The first proposal binds the request to pi_A in its dispatch step, then the worker dies before sending.
    world.target.inject({ kind: 'crash-before-send' });
    const first = refundProposal({ requestId: 'case-bound', approval: onA.id, paymentIntent: 'pi_A' });
    const effectId = await submitAndCrash(a, first);
    await kill(a);
    const b = await world.node('b');
    const second = await b.gate.submit(refundProposal({ requestId: 'case-bound', approval: onB.id, paymentIntent: 'pi_B', amount: 2_000 }));
    expect(second).toMatchObject({ outcome: 'REFUSED:conflicting_payload', reason: expect.stringContaining('bound to payment:pi_A') });
    expect(world.target.landings).toEqual([]);
    expect((await b.approvals.describe(onB.id)).snapshot).toMatchObject({ reservedCents: 0, uses: 0 });
    // The request is still the first one's: recovery sends it on pi_A.
    await b.gate.recover();
    expect(world.target.landedCount(effectId)).toBe(1);
    expect(world.target.landings.map((landing) => landing.effect)).toEqual([expect.objectContaining({ paymentIntent: 'pi_A' })]);
  });

  it('item 1: a proposal that fails before its dispatch step leaves no binding, so the request id goes to the first proposal recorded, once', async () => {
    const { a, onA, onB } = await twoPayments();
    const flaky = failingReads(a);
    const dying = gateWith(a, { target: flaky });
    const first = refundProposal({ requestId: 'case-unbound', approval: onA.id, paymentIntent: 'pi_A' });
    await expect(dying.submit(first)).rejects.toMatchObject({ code: 'premise_read_failed' });
    expect(await a.journal.partitionOf(a.gate.effectIdOf(first))).toBeNull();
    const second = await a.gate.submit(refundProposal({ requestId: 'case-unbound', approval: onB.id, paymentIntent: 'pi_B', amount: 2_000 }));
    expect(second.outcome).toBe('COMMITTED');
    flaky.heal();
    const again = await dying.submit(first);
    expect(again).toMatchObject({ outcome: 'REFUSED:conflicting_payload', reason: expect.stringContaining('bound to payment:pi_B') });
    expect(world.target.landings.map((landing) => landing.effect)).toEqual([expect.objectContaining({ paymentIntent: 'pi_B' })]);
    expect((await a.approvals.describe(onA.id)).snapshot).toMatchObject({ reservedCents: 0, uses: 0 });
  });

  it('item 1: a resubmit is answered from its chain even while its premises cannot be read: a duplicate, or a conflict on another payment', async () => {
    const { a, onA, onB } = await twoPayments();
    const proposal = refundProposal({ requestId: 'case-again', approval: onA.id, paymentIntent: 'pi_A' });
    expect((await a.gate.submit(proposal)).outcome).toBe('COMMITTED');
    const unreadable = gateWith(a, { target: failingReads(a) });
    expect((await unreadable.submit(proposal)).outcome).toBe('DUPLICATE_IGNORED');
    const elsewhere = await unreadable.submit(refundProposal({ requestId: 'case-again', approval: onB.id, paymentIntent: 'pi_B', amount: 2_000 }));
    expect(elsewhere).toMatchObject({ outcome: 'REFUSED:conflicting_payload', reason: expect.stringContaining('bound to payment:pi_A') });
    expect(world.target.landings).toHaveLength(1);
  });

  it('item 1: a proposal is validated whole before anything is written, so a hostile string late in it leaves no binding behind', async () => {
    world = await gateWorld();
    const a = await world.node('a');
    for (const hostile of [{ agent: 'bot\ud800' }, { decision: { model: 'm', text: 'x\udc00' } }, { approval: 'ap_\ud800' }, { premises: { chargebacks: [[[[[[[[[[[]]]]]]]]]]] } }]) {
      const proposal = { ...refundProposal({ requestId: 'case-hostile', approval: 'ap_1', paymentIntent: 'pi_A' }), ...hostile };
      await expect(a.gate.submit(proposal)).rejects.toBeInstanceOf(ProposalError);
    }
    expect(await keysWritten()).toEqual([]);
  });

  it('item 2: recovery never resends under an approval revoked while it re-read the premises', async () => {
    world = await gateWorld();
    const { b, approval: id, effectId } = await crashedBeforeSend(world);
    // The approval is live when recovery reads it, and revoked while the slow premise read runs.
    const slow: Target = {
      ...b.target,
      async readFacts(effectId2, effect, names, context) {
        await b.approvals.revoke(id, 'lee@risk');
        return b.target.readFacts(effectId2, effect, names, context);
      },
    };
    const recoverer = gateWith(b, { target: slow });
    const first = await recoverer.recover({ only: [effectId] });
    expect(first.settled).toEqual([]);
    expect(world.target.landings).toEqual([]);
    if (first.nextAt !== null) await untilRedisTime(b, first.nextAt);
    expect((await b.gate.recover({ only: [effectId] })).settled).toEqual([expect.objectContaining({ effectId, outcome: 'REFUSED:lease_at_recovery' })]);
    expect(world.target.landings).toEqual([]);
    expect(await verifiedReceipt(world, b, effectId)).toMatchObject({ happened: false, refused: { code: 'REFUSED:lease_at_recovery' } });
  });

  it('item 2: recovery never resends under an approval that expired while it re-read the premises', async () => {
    // The gate cuts a read at its read budget (the send timeout): this one's is long enough for the slow read below.
    world = await gateWorld({ config: { sendTimeoutMs: 1_500 } });
    const [a, b] = [await world.node('a'), await world.node('b')];
    const expiresAt = (await a.journal.serverTime()) + 800;
    const { id } = await grant(a, { expiresAt });
    world.target.inject({ kind: 'crash-before-send' });
    const effectId = await submitAndCrash(a, refundProposal({ approval: id }));
    await kill(a);
    const slow: Target = {
      ...b.target,
      async readFacts(effectId2, effect, names, context) {
        await untilRedisTime(b, expiresAt + 5);
        return b.target.readFacts(effectId2, effect, names, context);
      },
    };
    await gateWith(b, { target: slow }).recover({ only: [effectId] });
    expect(world.target.landings).toEqual([]);
    const settled = await b.gate.recover({ only: [effectId] });
    expect([...settled.settled, ...settled.waiting].map((item) => item.effectId)).toEqual([effectId]);
    expect(world.target.landings).toEqual([]);
  });

  it('item 3: only the accepted payload\'s proposals supply premises; a refused payload\'s facts never judge a later dispatch', async () => {
    world = await gateWorld();
    const a = await world.node('a');
    const { id } = await grant(a);
    // The chargeback is there: the facts have moved since the $20 decision.
    world.target.world.set(PAYMENT, { ...FACTS, chargebacks: ['du_1'] });
    const recorded = await a.gate.submit(refundProposal({ requestId: 'case-3', approval: 'ap_never', amount: 2_000 }));
    expect(recorded.outcome).toBe('REFUSED:lease');
    // Another payload under the real approval, carrying the current facts, is refused as a conflict...
    const other = await a.gate.submit({ ...refundProposal({ requestId: 'case-3', approval: id, amount: 3_000 }), premises: { chargebacks: ['du_1'], refunded_by_others: 0 } });
    expect(other.outcome).toBe('REFUSED:conflicting_payload');
    // ...and its facts do not stand in for the $20 proposal's own, which the chargeback contradicts.
    const retry = await a.gate.submit(refundProposal({ requestId: 'case-3', approval: id, amount: 2_000 }));
    expect(retry.outcome).toBe('REFUSED:stale_premise');
    expect(world.target.landings).toEqual([]);
    expect(await entryKinds(a, recorded.effectId)).toEqual(['PROPOSED', 'REFUSED', 'REFUSED', 'PROPOSED', 'AUTHORIZED', 'REFUSED']);
    expect(await verifiedReceipt(world, a, recorded.effectId)).toMatchObject({ outcome: 'REFUSED:stale_premise', happened: false });
  });

  it('item 4: a subject cap counts what the gate moved on the subject before the cap was set', async () => {
    world = await gateWorld();
    const a = await world.node('a');
    const { id } = await grant(a, { capCents: 10_000, maxUses: 10 });
    expect((await a.gate.submit(refundProposal({ approval: id, amount: 2_000 }))).outcome).toBe('COMMITTED');
    expect(await a.approvals.setSubjectCap(PAYMENT, 3_000)).toEqual({ limitCents: 3_000, movedCents: 2_000 });
    expect((await a.gate.submit(refundProposal({ approval: id, amount: 2_000 }))).outcome).toBe('REFUSED:over_cap');
    expect((await a.gate.submit(refundProposal({ approval: id, amount: 1_000 }))).outcome).toBe('COMMITTED');
    expect((await a.gate.submit(refundProposal({ approval: id, amount: 1 }))).outcome).toBe('REFUSED:over_cap');
    expect(world.target.landings.reduce((sum, landing) => sum + landing.effect.amount, 0)).toBe(3_000);
  });

  it('item 5: an approval id spelled like another key is just an approval; neither it nor the approval it names is disturbed', async () => {
    world = await gateWorld();
    const a = await world.node('a');
    const plain = await grant(a, { id: 'ap_x', capCents: 2_000, maxUses: 1 });
    const lookalike = await grant(a, { id: 'ap_x:reserved', capCents: 3_000, maxUses: 1 });
    expect((await a.gate.submit(refundProposal({ approval: lookalike.id, amount: 3_000 }))).outcome).toBe('COMMITTED');
    expect((await a.gate.submit(refundProposal({ approval: plain.id, amount: 2_000 }))).outcome).toBe('COMMITTED');
    expect((await a.approvals.describe(plain.id)).snapshot).toMatchObject({ reservedCents: 2_000, uses: 1, capCents: 2_000 });
    expect((await a.approvals.describe(lookalike.id)).snapshot).toMatchObject({ reservedCents: 3_000, uses: 1, capCents: 3_000 });
  });
});

describe('what landed is recorded', () => {
  it.each([
    ['a numeric id', 424_242],
    ['no id at all', null],
  ] as const)('item 6: a lookup that returns an object means found, whatever its id looks like (%s)', async (_what, id) => {
    for (const tier of [1, 2] as const) {
      world = await gateWorld({ target: { tier, dedupWindowMs: tier === 1 ? 1_400 : 24 * 3_600_000 }, config: tier === 1 ? { dedupMarginMs: 800 } : {} });
      const [a, b] = [await world.node('a'), await world.node('b')];
      const { id: approval } = await grant(a, { capCents: 2_000, maxUses: 5 });
      world.target.inject({ kind: 'crash-after-send' });
      const effectId = await submitAndCrash(a, refundProposal({ approval, amount: 2_000 }));
      await kill(a);
      // Tier 1 past its key window and tier 2 both decide by lookup.
      if (tier === 1) await sleep(700);
      world.target.inject({ kind: 'odd-id', id });
      const report = await b.gate.recover({ only: [effectId] });
      expect(report.settled).toEqual([expect.objectContaining({ effectId, outcome: 'COMMITTED_ON_QUERY' })]);
      expect(world.target.landedCount(effectId)).toBe(1);
      const receipt = await verifiedReceipt(world, b, effectId);
      expect(receipt).toMatchObject({ happened: true, happenedOnce: true, evidence: id === null ? null : String(id) });
      // The reservation stands, so the approval's last cents cannot be spent a second time.
      expect((await b.gate.submit(refundProposal({ approval, amount: 100 }))).outcome).toBe('REFUSED:over_cap');
      await world.close();
    }
    world = await gateWorld();
  });

  it('item 7: a fenced-out sender\'s definite refusal is the truth: the effect is refused, never sent again', async () => {
    world = await gateWorld({ target: { tier: 2 } });
    const [a, b] = [await world.node('a'), await world.node('b')];
    const { id } = await grant(a);
    world.target.inject({ kind: 'slow-answer', delayMs: 300, answer: 'rejected' });
    const proposal = refundProposal({ approval: id });
    const effectId = a.gate.effectIdOf(proposal);
    const sending = a.gate.submit(proposal);
    await sleep(60);
    // a's heartbeat lapses while its request is on the wire; b takes over and must wait out the quiet period.
    await kill(a);
    const first = await b.gate.recover({ only: [effectId] });
    expect(first.waiting).toEqual([expect.objectContaining({ effectId })]);
    await sending;
    expect(await entryKinds(b, effectId)).toContain('LATE_RESULT');
    if (first.nextAt !== null) await untilRedisTime(b, first.nextAt);
    expect((await b.gate.recover({ only: [effectId] })).settled).toEqual([expect.objectContaining({ effectId, outcome: 'REFUSED:target_error' })]);
    expect(world.target.landings).toEqual([]);
    expect(await verifiedReceipt(world, b, effectId)).toMatchObject({ happened: false, refused: { code: 'REFUSED:target_error' } });
  });

  it('item 7: a fenced-out sender\'s landing settles what recovery left AMBIGUOUS (tier 3)', async () => {
    world = await gateWorld({ target: { tier: 3 } });
    const [a, b] = [await world.node('a'), await world.node('b')];
    const { id } = await grant(a);
    world.target.inject({ kind: 'slow-answer', delayMs: 300, answer: 'landed' });
    const proposal = refundProposal({ approval: id });
    const effectId = a.gate.effectIdOf(proposal);
    const sending = a.gate.submit(proposal);
    await sleep(60);
    await kill(a);
    expect((await b.gate.recover({ only: [effectId] })).settled).toEqual([expect.objectContaining({ effectId, outcome: 'AMBIGUOUS' })]);
    await sending;
    expect(world.target.landedCount(effectId)).toBe(1);
    // The state says so too, so even a dispatch script that races a stale read of the chain will not send it.
    expect((await openState(b, effectId)).state.committed).toBe(true);
    expect(await verifiedReceipt(world, b, effectId)).toMatchObject({ outcome: 'COMMITTED_ON_QUERY', happened: true, lateLanding: { after: 'AMBIGUOUS' } });
    expect((await b.gate.submit(proposal)).outcome).toBe('DUPLICATE_IGNORED');
  });

  it('item 8: a landed effect settles while its premises can never be re-read (the lookup still runs)', async () => {
    world = await gateWorld({ target: { tier: 2 } });
    const [a, b] = [await world.node('a'), await world.node('b')];
    const { id } = await grant(a);
    world.target.inject({ kind: 'crash-after-send' });
    const effectId = await submitAndCrash(a, refundProposal({ approval: id }));
    await kill(a);
    world.target.inject({ kind: 'premise-down' });
    expect((await b.gate.recover({ only: [effectId] })).settled).toEqual([expect.objectContaining({ effectId, outcome: 'COMMITTED_ON_QUERY' })]);
    expect(world.target.landedCount(effectId)).toBe(1);
  });

  it('item 9: a refusal or a commit is always writable, whatever the facts or the landed object it quotes', async () => {
    world = await gateWorld();
    const a = await world.node('a');
    const { id } = await grant(a, { maxUses: 5 });
    let deep: unknown = 'bottom';
    for (let level = 0; level < 2_000; level += 1) deep = [deep];
    const hostile = { chargebacks: [deep, 'x\ud800y', Number.NaN], refunded_by_others: 'z'.repeat(100_000) };
    const odd: Target = {
      ...a.target,
      async readFacts() {
        return hostile as never;
      },
    };
    const refused = await gateWith(a, { target: odd }).submit(refundProposal({ approval: id }));
    expect(refused.outcome).toBe('REFUSED:stale_premise');
    expect((await openState(a, refused.effectId)).state.open).toBe(false);
    await verifiedReceipt(world, a, refused.effectId);

    const landsOddly: Target = {
      ...a.target,
      async apply(effectId, effect, context) {
        await a.target.apply(effectId, effect, context);
        return { id: 're_odd', nested: deep, text: '\udfff', big: 'y'.repeat(100_000) } as never;
      },
    };
    const committed = await gateWith(a, { target: landsOddly }).submit(refundProposal({ approval: id }));
    expect(committed.outcome).toBe('COMMITTED');
    expect(await verifiedReceipt(world, a, committed.effectId)).toMatchObject({ happened: true, evidence: 're_odd' });
  });
});

describe('receipts', () => {
  it('item 11: a refusal of another payload never changes the outcome of an effect that is AMBIGUOUS or in flight', async () => {
    world = await gateWorld({ target: { tier: 3 } });
    const [a, b] = [await world.node('a'), await world.node('b')];
    const { id } = await grant(a);
    world.target.inject({ kind: 'crash-after-send' });
    const effectId = await submitAndCrash(a, refundProposal({ requestId: 'case-11', approval: id }));
    // While it is in flight, and again once it is AMBIGUOUS, another payload is refused without touching it.
    expect((await b.gate.submit(refundProposal({ requestId: 'case-11', approval: id, amount: 3_000 }))).outcome).toBe('REFUSED:conflicting_payload');
    await kill(a);
    expect((await b.gate.recover({ only: [effectId] })).settled).toEqual([expect.objectContaining({ outcome: 'AMBIGUOUS' })]);
    expect((await b.gate.submit(refundProposal({ requestId: 'case-11', approval: id, amount: 4_000 }))).outcome).toBe('REFUSED:conflicting_payload');
    expect(await verifiedReceipt(world, b, effectId)).toMatchObject({ outcome: 'AMBIGUOUS', happened: 'unknown', refused: null });
    expect((await b.gate.submit(refundProposal({ requestId: 'case-11', approval: id }))).outcome).toBe('AMBIGUOUS');
  });

  it('item 12: a chain re-sealed with any key is never valid: unauthenticated without keys, invalid with them', async () => {
    world = await gateWorld();
    const a = await world.node('a');
    const { id } = await grant(a);
    const committed = await a.gate.submit(refundProposal({ approval: id }));
    const receipt = JSON.parse(JSON.stringify(await a.gate.receipt(committed.effectId))) as { entries: { effect?: { amount: number } }[] };
    const forged = JSON.parse(JSON.stringify(receipt).replaceAll('"amount":2000', '"amount":200')) as unknown;
    const resealed = verify(forged);
    expect(resealed.valid).not.toBe(true);
    expect(verify(receipt).valid).toBeNull();
    expect(verify(receipt, { publicKeys: world.key.publicKeys }).valid).toBe(true);
  });
});

describe('small bad input (item 16)', () => {
  it('a lone surrogate in requestId is a ProposalError naming the field, and nothing is written', async () => {
    world = await gateWorld();
    const a = await world.node('a');
    const error = await a.gate.submit(refundProposal({ requestId: 'case-\ud800', approval: 'ap_1' })).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ProposalError);
    expect((error as ProposalError).fields).toEqual([expect.objectContaining({ path: 'requestId' })]);
    expect(await keysWritten()).toEqual([]);
  });

  it('a premise named after an Object property ("constructor") is a fact like any other: it reads as absent, never as Object\'s', async () => {
    world = await gateWorld();
    const a = await world.node('a');
    const { id } = await grant(a);
    const held = await a.gate.submit({ ...refundProposal({ approval: id }), premises: { constructor: null, toString: null } });
    expect(held.outcome).toBe('COMMITTED');
    const stale = await a.gate.submit({ ...refundProposal({ approval: id }), premises: { constructor: 'x' } });
    expect(stale).toMatchObject({ outcome: 'REFUSED:stale_premise', reason: 'constructor: was "x", now null' });
  });

  it('approvals refuse hostile terms with a readable problem', async () => {
    world = await gateWorld();
    const a = await world.node('a');
    const approvals: Approvals = a.approvals;
    for (const terms of [{ approver: 'x\ud800' }, { approver: 'a\u0007b' }, { scope: 'payment:{pi_1}' }, { scope: 'anything' }, { capCents: 1e21 }, { capCents: -5 }, { maxUses: 0.5 }]) {
      await expect(grant(a, terms)).rejects.toMatchObject({ code: 'invalid_approval' });
    }
    await expect(approvals.setSubjectCap(PAYMENT, -1)).rejects.toMatchObject({ code: 'invalid_approval' });
    expect(await approvals.setSubjectCap(PAYMENT, 0)).toEqual({ limitCents: 0, movedCents: 0 });
  });
});

it('effect ids are the keys of the request, so the binding test above used the same id twice', () => {
  const first = effectIdFor({ requestId: 'case-bound', effect: { kind: 'refund', paymentIntent: 'pi_A', amount: 2_000 } });
  const second = effectIdFor({ requestId: 'case-bound', effect: { kind: 'refund', paymentIntent: 'pi_B', amount: 2_000 } });
  expect(first).toBe(second);
});
