// Rule: an effect reaches Stripe at most once, and when the gate cannot tell whether it landed it says AMBIGUOUS; it
// never guesses (DESIGN §3; refund-target.ts header, unlabelledRefund). Metadata is edited freely in the Dashboard, not
// only deleted: a refund of the effect's amount made since its first dispatch (less DISPATCH_SKEW_MS) may be its own
// when its interlock_effect_id names no effect (missing, empty, or not a well-formed effect id: a ticket number written
// over it), whatever keys were added (a note), so recovery's lookup throws lookup_blind and the effect settles
// AMBIGUOUS, never resent as a second refund once Stripe forgot the key. A refund carrying a well-formed effect id is
// that effect's: another Interlock refund of the same amount on the payment is no lookalike, and the effect is sent.
import type Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import { errorCode } from '../../src/core/errors.js';
import { currentOutcome } from '../../src/core/verify.js';
import type { Target } from '../../src/core/target.js';
import { createRefundTarget, unlabelledRefund } from '../../src/stripe/refund-target.js';
import { approvalTerms } from '../support/harness.js';
import { effectIdFor, gateOnStripe, pay, recoverUntilSettled, sleep } from './stripe-support.js';

const TIMING: Partial<Config> = { sendTimeoutMs: 1_000, settleMarginMs: 150, claimTtlMs: 2_500, heartbeatMs: 100, heartbeatTtlMs: 500, dedupMarginMs: 1_500 };
const READ = { timeoutMs: 2_000 };
const WINDOW_MS = 3_000;

const { world, config, node, target } = gateOnStripe(TIMING, {
  // The key window shortened to stand for Stripe's 24 hours (the sandbox's keys are aged past it below).
  target: (opened, settings): Target => ({ ...createRefundTarget(opened.client, { sendTimeoutMs: settings.sendTimeoutMs }), dedupWindowMs: WINDOW_MS }),
});

const refund = (paymentIntent: string, amount = 2_000) => ({ kind: 'refund' as const, paymentIntent, amount });
const blind = (query: Promise<unknown>) => query.then((found) => ({ found }), (error: unknown) => ({ code: errorCode(error), message: error instanceof Error ? error.message : String(error) }));

describe('unlabelledRefund, over metadata changed rather than deleted', () => {
  const made = (metadata: Record<string, string>) => ({ id: 're_1', object: 'refund', amount: 2_000, created: 1_000, currency: 'usd', status: 'succeeded', metadata }) as unknown as Stripe.Refund;
  const lookalike = (metadata: Record<string, string>) => unlabelledRefund([made(metadata)], 2_000, 0)?.id ?? null;

  it('takes a refund whose id was overwritten, or cleared with a key added, for possibly the effect\'s own', () => {
    expect(lookalike({ interlock_effect_id: 'T-1234' }), 'the id overwritten with a ticket number').toBe('re_1');
    expect(lookalike({ interlock_effect_id: 'T-1234', interlock_request: 'case-1', note: 'checked' }), 'overwritten, a note added').toBe('re_1');
    expect(lookalike({ note: 'refunded for the outage' }), 'the interlock keys cleared and a note added').toBe('re_1');
    expect(lookalike({ interlock_effect_id: '', zendesk_ticket: '4711' }), 'the id emptied and a key added').toBe('re_1');
    expect(lookalike({ interlock_effect_id: 'F'.repeat(64) }), 'not a well-formed effect id (upper case)').toBe('re_1');
    expect(lookalike({ interlock_effect_id: 'f'.repeat(63) }), 'not a well-formed effect id (63 characters)').toBe('re_1');
  });

  it("leaves a refund carrying another effect's well-formed id alone, whatever else it carries", () => {
    expect(lookalike({ interlock_effect_id: 'f'.repeat(64) }), "another effect's refund").toBeNull();
    expect(lookalike({ interlock_effect_id: 'f'.repeat(64), note: 'second case' }), "another effect's refund with a note").toBeNull();
  });
});

describe('the refund lookup told the first dispatch', () => {
  it('a refund of its amount made since then whose id is a ticket number: lookup_blind saying what it carries', async () => {
    const { paymentIntent } = await pay(world.stripe);
    const dispatchedAt = Date.now();
    const edited = await world.stripe.refunds.create({ payment_intent: paymentIntent, amount: 2_000, metadata: { interlock_effect_id: 'T-1234', note: 'see ticket' } });
    const answer = await blind(target.query(effectIdFor('ticket'), refund(paymentIntent), { ...READ, dispatchedAt }));
    expect(answer).toMatchObject({ code: 'lookup_blind' });
    const message = 'message' in answer ? answer.message : '';
    expect(message).toContain(edited.id);
    expect(message).toContain('carries interlock_effect_id = "T-1234", which is no effect id');
  });

  it('one whose id was cleared: the message says it carries none', async () => {
    const { paymentIntent } = await pay(world.stripe);
    const dispatchedAt = Date.now();
    await world.stripe.refunds.create({ payment_intent: paymentIntent, amount: 2_000, metadata: { note: 'tidied' } });
    const answer = await blind(target.query(effectIdFor('none'), refund(paymentIntent), { ...READ, dispatchedAt }));
    expect('message' in answer ? answer.message : '').toContain('carries no interlock_effect_id');
  });

  it("another effect's refund of the same amount (its well-formed id) is no lookalike: nothing landed", async () => {
    const { paymentIntent } = await pay(world.stripe);
    const dispatchedAt = Date.now();
    await world.stripe.refunds.create({ payment_intent: paymentIntent, amount: 2_000, metadata: { interlock_effect_id: effectIdFor('other'), interlock_request: 'case-other' } });
    expect(await target.query(effectIdFor('mine'), refund(paymentIntent), { ...READ, dispatchedAt })).toBeNull();
  });
});

let count = 0;

/**
 * A refund of $20 submitted through the gate, decided on chargebacks alone (no premise names the payment's other
 * refunds, so only the lookup can stop a resend). `lost`: `after`, its create lands and the answer is lost; `before`,
 * it never reaches Stripe. Then `meanwhile` at Stripe (given the refund that landed, if any), Stripe forgets the key
 * and the gate's window passes, and recovery runs until the effect settles.
 */
async function recoveredAfterTheWindow(lost: 'before' | 'after', meanwhile: (paymentIntent: string, landed: Stripe.Refund | undefined) => Promise<void>) {
  count += 1;
  const { paymentIntent } = await pay(world.stripe);
  const terms = approvalTerms({ scope: `payment:${paymentIntent}`, capCents: 10_000 });
  await node.approvals.grant(terms);
  const draft = { requestId: `case-edited-${count}-${config.keyPrefix}`, agent: 'support-bot', approval: terms.id, premises: {}, effect: refund(paymentIntent) };
  const effectId = node.gate.effectIdOf(draft);
  const premises = await target.readFacts(effectId, refund(paymentIntent), ['chargebacks'], READ);
  // The create's request (and the SDK's one retry) dropped: run and its answer lost, or not run at all.
  await world.sandbox.control.dropNext({ path: '/v1/refunds', method: 'POST', when: lost, count: 2 });
  expect((await node.gate.submit({ ...draft, premises })).outcome).toBe('IN_FLIGHT');
  await world.sandbox.control.clearFaults();
  const [landed] = (await world.stripe.refunds.list({ payment_intent: paymentIntent })).data;
  if (lost === 'after') expect(landed?.metadata).toMatchObject({ interlock_effect_id: effectId });
  await meanwhile(paymentIntent, landed);
  await world.sandbox.control.ageIdempotencyKeys(25 * 3_600);
  await sleep(WINDOW_MS);

  const { outcome } = await recoverUntilSettled(node, effectId, 20_000);
  const refunds = (await world.stripe.refunds.list({ payment_intent: paymentIntent })).data;
  const entries = await node.journal.entries(`payment:${paymentIntent}`, effectId);
  const ambiguous = entries.find((entry) => entry.kind === 'AMBIGUOUS');
  return {
    outcome,
    journal: currentOutcome(entries),
    refunds: refunds.map((item) => ({ id: item.id, amount: item.amount, effect: item.metadata?.['interlock_effect_id'] ?? null })),
    landed,
    effectId,
    reason: ambiguous && 'reason' in ambiguous ? ambiguous.reason : '',
    reserved: (await node.approvals.describe(terms.id)).snapshot?.reservedCents ?? 0,
  };
}

describe('a refund that landed unanswered and whose metadata a person changed, recovered after Stripe forgot the key', () => {
  it('interlock_effect_id overwritten with a ticket number: AMBIGUOUS naming that refund, no second refund', async () => {
    const result = await recoveredAfterTheWindow('after', async (_, landed) => {
      await world.stripe.refunds.update(landed?.id ?? '', { metadata: { interlock_effect_id: 'T-1234' } });
    });
    expect({ outcome: result.outcome, refunds: result.refunds.map((item) => item.id) }).toEqual({ outcome: 'AMBIGUOUS', refunds: [result.landed?.id] });
    expect(result.journal).toBe('AMBIGUOUS');
    expect(result.reason).toContain(result.landed?.id ?? 'the refund');
    expect(result.reason).toContain('"T-1234"');
    expect(result.reserved, 'the approval holds the refund that may have landed').toBe(2_000);
  }, 40_000);

  it('interlock_effect_id cleared and a note key added: AMBIGUOUS, no second refund', async () => {
    const result = await recoveredAfterTheWindow('after', async (_, landed) => {
      await world.stripe.refunds.update(landed?.id ?? '', { metadata: { interlock_effect_id: '', note: 'customer called, refund checked' } });
    });
    expect({ outcome: result.outcome, refunds: result.refunds.map((item) => item.id) }).toEqual({ outcome: 'AMBIGUOUS', refunds: [result.landed?.id] });
    expect(result.reserved).toBe(2_000);
  }, 40_000);
});

describe("a refund that never reached Stripe, another effect's refund of the same amount landing meanwhile", () => {
  it('is sent: the other refund, labelled with its well-formed effect id, is not taken for a lookalike', async () => {
    const other = effectIdFor('other-case');
    const result = await recoveredAfterTheWindow('before', async (paymentIntent, landed) => {
      expect(landed, 'nothing of the effect landed').toBeUndefined();
      await world.stripe.refunds.create({ payment_intent: paymentIntent, amount: 2_000, metadata: { interlock_effect_id: other, interlock_request: 'case-other' } });
    });
    expect({ outcome: result.outcome, journal: result.journal }).toEqual({ outcome: 'REAPPLIED_AFTER_QUERY', journal: 'REAPPLIED_AFTER_QUERY' });
    expect(result.refunds.map((item) => item.effect).sort()).toEqual([other, result.effectId].sort());
  }, 40_000);
});
