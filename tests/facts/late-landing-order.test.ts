// A late landing read in any order (DESIGN §8): a refund carrying a refused effect's id exists at Stripe because the
// send reached it, whatever Stripe did with it afterwards. A refund that has already failed (or was canceled) when
// the facts first read it (the facts worker was down, or refund.failed was handled first) is still the landing;
// what became of the money is the OBSERVED facts' to say. So the receipt, and what the approval counts as used, are
// the same whichever of the refund's states the facts saw first. And two facts of one landing handled at the same
// moment record it once: late-5.lua refuses a second LATE_RESULT in the step that would write it. A facts worker that
// died between recording the fact and recording the landing leaves the landing to its event's next run.
import { afterEach, describe, expect, it } from 'vitest';
import { createFacts, type RefundFact, type StripeEvent, type StripeReader } from '../../src/interlock.js';
import { verify } from '../../src/core/verify.js';
import type { Journal } from '../../src/redis/journal.js';
import { kill, refundProposal, type TestNode, type World } from '../support/harness.js';
import { FACTS, PAYMENT, gateWorld, grant, recoverUntilSettled, submitAndCrash } from '../gate/gate-support.js';

let world: World;
afterEach(async () => {
  await world.close();
});

/** Stripe's refunds as the facts re-read them: each one as it is now. */
function stripeRefunds() {
  const refunds = new Map<string, RefundFact>();
  const reader: StripeReader = {
    refund: async (id) => refunds.get(id) ?? null,
    refundsOf: async (paymentIntent) => [...refunds.values()].filter((refund) => refund.paymentIntent === paymentIntent),
    disputesOf: async () => [],
    creditsOf: async () => [],
  };
  /** The refund `id` for `effectId`, now in `status`. */
  const set = (id: string, effectId: string, status: string) => {
    refunds.set(id, { id, status, amount: 2_000, charge: 'ch_1', paymentIntent: 'pi_1', failureReason: status === 'failed' ? 'expired_or_canceled_card' : null, effectId, created: 1 });
  };
  return { reader, set };
}

const refundEvent = (id: string, type: string, refund: string): StripeEvent => ({ id, type, data: { object: { id: refund, object: 'refund' } } });

/**
 * A $20 refund whose sender froze before its send and was given up: recovery found a chargeback and refused it (the
 * reservation given back). Its request may still reach Stripe afterwards: the late landing the facts catch.
 */
async function refusedAtRecovery(recoverer: TestNode, name: string): Promise<{ effectId: string; approval: string }> {
  world.target.world.set(PAYMENT, { ...FACTS });
  const frozen = await world.node(name);
  const { id } = await grant(frozen);
  world.target.inject({ kind: 'crash-before-send' });
  const effectId = await submitAndCrash(frozen, refundProposal({ approval: id }));
  world.target.world.set(PAYMENT, { ...FACTS, chargebacks: ['dp_1'] });
  await kill(frozen);
  expect((await recoverUntilSettled(recoverer, effectId)).settled).toEqual([expect.objectContaining({ outcome: 'REFUSED:stale_premise_at_recovery' })]);
  expect((await recoverer.approvals.describe(id)).snapshot?.reservedCents).toBe(0);
  return { effectId, approval: id };
}

async function answer(node: TestNode, effectId: string, approval: string) {
  const receipt = await node.journal.receipt(effectId);
  const verification = verify(JSON.parse(JSON.stringify(receipt)), { publicKeys: world.key.publicKeys });
  const kinds = receipt?.entries.map((entry) => entry.kind) ?? [];
  return {
    valid: verification.valid,
    problems: verification.problems,
    happened: verification.happened,
    answer: verification.answer,
    finalMoney: verification.finalMoney.status,
    failureReason: verification.finalMoney.failureReason,
    answerMatchesFinalMoney: verification.answerMatchesFinalMoney,
    lateLanding: verification.lateLanding?.evidence ?? null,
    lateResults: kinds.filter((kind) => kind === 'LATE_RESULT').length,
    reservedCents: (await node.approvals.describe(approval)).snapshot?.reservedCents,
    alerts: (await node.stores.alerts.list()).filter((alert) => alert.effectId === effectId).map((alert) => alert.kind).sort(),
  };
}

describe('a late landing whatever state its refund is in when the facts first read it', () => {
  it('a refund that succeeded and then failed gives the same valid receipt whether it was read as it went or only once it had failed', async () => {
    world = await gateWorld();
    const node = await world.node('recoverer');
    const stripe = stripeRefunds();
    const facts = createFacts(node.stores, stripe.reader);

    // Handled as it went: succeeded, then failed (the card's bank sent it back).
    const prompt = await refusedAtRecovery(node, 'frozen-1');
    stripe.set('re_prompt', prompt.effectId, 'succeeded');
    await facts.applyEvent(refundEvent('evt_p1', 'refund.created', 're_prompt'));
    stripe.set('re_prompt', prompt.effectId, 'failed');
    await facts.applyEvent(refundEvent('evt_p2', 'refund.failed', 're_prompt'));

    // Read only once it had failed: refund.failed handled first, refund.created after (both re-read as failed).
    const late = await refusedAtRecovery(node, 'frozen-2');
    stripe.set('re_late', late.effectId, 'failed');
    await facts.applyEvent(refundEvent('evt_l2', 'refund.failed', 're_late'));
    await facts.applyEvent(refundEvent('evt_l1', 'refund.created', 're_late'));

    const asItWent = await answer(node, prompt.effectId, prompt.approval);
    expect(asItWent).toEqual({
      valid: true, problems: [], happened: true, answer: 'returned', finalMoney: 'not_returned', failureReason: 'expired_or_canceled_card',
      answerMatchesFinalMoney: false, lateLanding: 're_prompt', lateResults: 1, reservedCents: 0, alerts: ['failed_after_landed', 'late_landing'],
    });
    expect(await answer(node, late.effectId, late.approval)).toEqual({ ...asItWent, lateLanding: 're_late' });
  });

  // A landing that failed for good gives its cents back to the approval, as any committed refund that fails does.
  it.each([
    ['pending', 'pending', 2_000],
    ['succeeded', 'returned', 2_000],
    ['failed', 'not_returned', 0],
    ['canceled', 'not_returned', 0],
  ] as const)('a refund first read %s is recorded as the landing; the final money says %s, and the approval holds %i cents of it', async (status, finalMoney, reservedCents) => {
    world = await gateWorld();
    const node = await world.node('recoverer');
    const stripe = stripeRefunds();
    const { effectId, approval } = await refusedAtRecovery(node, 'frozen');
    stripe.set('re_1', effectId, status);
    await createFacts(node.stores, stripe.reader).applyEvent(refundEvent('evt_1', 'refund.updated', 're_1'));
    expect(await answer(node, effectId, approval)).toMatchObject({ valid: true, problems: [], happened: true, finalMoney, lateLanding: 're_1', lateResults: 1, reservedCents });
  });
  it('two facts of one late landing handled at once (two workers) write one LATE_RESULT', async () => {
    world = await gateWorld();
    const node = await world.node('recoverer');
    const stripe = stripeRefunds();
    const { effectId, approval } = await refusedAtRecovery(node, 'frozen');
    // refund.created read pending and refund.updated read succeeded: two facts, each a landing, read at the same moment.
    const states = ['pending', 'succeeded'];
    let reads = 0;
    let bothRead: () => void = () => undefined;
    const together = new Promise<void>((resolve) => {
      bothRead = resolve;
    });
    const reader: StripeReader = {
      ...stripe.reader,
      async refund(id) {
        const status = states[reads] ?? 'succeeded';
        reads += 1;
        stripe.set(id, effectId, status);
        const fact = await stripe.reader.refund(id);
        if (reads === 2) bothRead();
        await together;
        return fact;
      },
    };
    await Promise.all([
      createFacts(node.stores, reader).applyEvent(refundEvent('evt_1', 'refund.created', 're_1')),
      createFacts(node.stores, reader).applyEvent(refundEvent('evt_2', 'refund.updated', 're_1')),
    ]);
    expect(await answer(node, effectId, approval)).toMatchObject({ valid: true, problems: [], happened: true, finalMoney: 'returned', lateLanding: 're_1', lateResults: 1, reservedCents: 2_000 });
  });

  it('a worker that died after the fact and before the landing: the event run again records the landing', async () => {
    world = await gateWorld();
    const node = await world.node('recoverer');
    const stripe = stripeRefunds();
    const { effectId, approval } = await refusedAtRecovery(node, 'frozen');
    stripe.set('re_1', effectId, 'succeeded');
    // The facts' journal is the stores' own (typed there as a reader).
    const journal = node.stores.journal as unknown as Pick<Journal, 'lateLanding'>;
    const lateLanding = journal.lateLanding.bind(journal);
    journal.lateLanding = async () => {
      throw new Error('the facts worker died here');
    };
    const facts = createFacts(node.stores, stripe.reader);
    await expect(facts.applyEvent(refundEvent('evt_1', 'refund.created', 're_1'))).rejects.toThrow('died here');
    journal.lateLanding = lateLanding;
    expect(await answer(node, effectId, approval)).toMatchObject({ lateResults: 0, valid: false });
    // The job runs again (its lock lapsed): the fact is a duplicate now, the landing is still recorded, and alerted.
    await facts.applyEvent(refundEvent('evt_1', 'refund.created', 're_1'));
    expect(await answer(node, effectId, approval)).toMatchObject({ valid: true, problems: [], happened: true, lateLanding: 're_1', lateResults: 1, reservedCents: 2_000, alerts: ['late_landing'] });
  });
});
