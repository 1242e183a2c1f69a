// Rule: an effect reaches Stripe at most once, and when the gate cannot tell whether it landed it says AMBIGUOUS; it
// never guesses (DESIGN §3). The refund target's lookup finds a refund by its labels (findOwn); told the effect's first
// dispatch (ReadContext.dispatchedAt, recovery's lookups), it does not answer "nothing landed" while the payment holds a
// refund of the effect's amount made since then (less DISPATCH_SKEW_MS) whose interlock_effect_id names no effect
// (missing, empty, or not a well-formed effect id), whatever other keys it carries: it may be this effect's refund with
// its labels cleared in the Dashboard, so the lookup throws lookup_blind naming it, and recovery settles the effect
// AMBIGUOUS instead of sending a second refund once Stripe forgot the key (REAPPLIED_AFTER_QUERY), as the credit target
// does for a credit (credit-marker-edited.test.ts). Overwritten ids: refund-lookalike-edited.test.ts.
import { describe, expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import { errorCode } from '../../src/core/errors.js';
import { currentOutcome } from '../../src/core/verify.js';
import type { Target } from '../../src/core/target.js';
import { DISPATCH_SKEW_MS } from '../../src/stripe/credit-target.js';
import { createRefundTarget } from '../../src/stripe/refund-target.js';
import { approvalTerms } from '../support/harness.js';
import { effectIdFor, gateOnStripe, pay, recoverUntilSettled, sleep } from './stripe-support.js';

const TIMING: Partial<Config> = { sendTimeoutMs: 1_000, settleMarginMs: 150, claimTtlMs: 2_500, heartbeatMs: 100, heartbeatTtlMs: 500, dedupMarginMs: 1_500 };
const READ = { timeoutMs: 2_000 };
const WINDOW_MS = 3_000;

const { world, config, node, target } = gateOnStripe(TIMING, {
  // The key window shortened to stand for Stripe's 24 hours (the sandbox's keys are aged past it below).
  target: (opened, settings): Target => ({ ...createRefundTarget(opened.client, { sendTimeoutMs: settings.sendTimeoutMs }), dedupWindowMs: WINDOW_MS }),
});

const refund = (paymentIntent: string, amount = 2_000, metadata?: Record<string, string>) => ({ kind: 'refund' as const, paymentIntent, amount, ...(metadata === undefined ? {} : { metadata }) });
const blind = (query: Promise<unknown>) => query.then((found) => ({ found }), (error: unknown) => ({ code: errorCode(error), message: error instanceof Error ? error.message : String(error) }));

describe('the refund lookup told the first dispatch', () => {
  it('an unlabelled refund of its amount made since the dispatch: lookup_blind naming it; untold, nothing landed as before', async () => {
    const { paymentIntent } = await pay(world.stripe);
    const dispatchedAt = Date.now();
    const made = await world.stripe.refunds.create({ payment_intent: paymentIntent, amount: 2_000 });
    const answer = await blind(target.query(effectIdFor('cleared'), refund(paymentIntent), { ...READ, dispatchedAt }));
    expect(answer).toMatchObject({ code: 'lookup_blind' });
    expect('message' in answer ? answer.message : '').toContain(made.id);
    expect('message' in answer ? answer.message : '').toContain('$20.00');
    expect(await target.query(effectIdFor('cleared'), refund(paymentIntent), READ)).toBeNull();
  });

  it('one whose interlock_effect_id alone was cleared (interlock_request and the effect\'s own metadata kept) is a lookalike too', async () => {
    const { paymentIntent } = await pay(world.stripe);
    const dispatchedAt = Date.now();
    await world.stripe.refunds.create({ payment_intent: paymentIntent, amount: 2_000, metadata: { interlock_request: 'case-1', ticket: 'T-9' } });
    expect(await blind(target.query(effectIdFor('half'), refund(paymentIntent, 2_000, { ticket: 'T-9' }), { ...READ, dispatchedAt }))).toMatchObject({ code: 'lookup_blind' });
  });

  // A key the send never writes does not rule a refund out: the Dashboard adds keys as freely as it clears them, so a
  // person tidying the effect's refund may have added it.
  it('one whose interlock_effect_id was cleared and that carries a key the send never writes is a lookalike too', async () => {
    const { paymentIntent } = await pay(world.stripe);
    const dispatchedAt = Date.now();
    const noted = await world.stripe.refunds.create({ payment_intent: paymentIntent, amount: 2_000, metadata: { zendesk_ticket: '4711' } });
    const answer = await blind(target.query(effectIdFor('noted'), refund(paymentIntent), { ...READ, dispatchedAt }));
    expect(answer).toMatchObject({ code: 'lookup_blind' });
    expect('message' in answer ? answer.message : '').toContain(noted.id);
  });

  it('no lookalike: another amount, another effect\'s id, or made before the dispatch less the margin', async () => {
    const { paymentIntent } = await pay(world.stripe);
    const dispatchedAt = Date.now() - 1_000;
    await world.stripe.refunds.create({ payment_intent: paymentIntent, amount: 1_999 });
    await world.stripe.refunds.create({ payment_intent: paymentIntent, amount: 2_000, metadata: { interlock_effect_id: 'f'.repeat(64) } });
    expect(await target.query(effectIdFor('others'), refund(paymentIntent), { ...READ, dispatchedAt })).toBeNull();
    // A refund made ten minutes more than the margin for clock skew (a day) before the dispatch.
    const earlier = await pay(world.stripe);
    await world.stripe.refunds.create({ payment_intent: earlier.paymentIntent, amount: 2_000 });
    expect(await target.query(effectIdFor('earlier'), refund(earlier.paymentIntent), { ...READ, dispatchedAt: Date.now() + DISPATCH_SKEW_MS + 10 * 60 * 1000 })).toBeNull();
  });

  it('its own labelled refund is found as before, whatever lookalike sits beside it', async () => {
    const { paymentIntent } = await pay(world.stripe);
    const effectId = effectIdFor('labelled');
    const dispatchedAt = Date.now();
    await world.stripe.refunds.create({ payment_intent: paymentIntent, amount: 2_000 });
    const own = await world.stripe.refunds.create({ payment_intent: paymentIntent, amount: 2_000, metadata: { interlock_effect_id: effectId } });
    expect(await target.query(effectId, refund(paymentIntent), { ...READ, dispatchedAt })).toMatchObject({ id: own.id });
  });
});

describe('a refund that landed unanswered and whose labels a person cleared, recovered after Stripe forgot the key', () => {
  it('settles AMBIGUOUS naming that refund, and no second refund is sent', async () => {
    const { paymentIntent } = await pay(world.stripe);
    const terms = approvalTerms({ scope: `payment:${paymentIntent}`, capCents: 10_000 });
    await node.approvals.grant(terms);
    const draft = { requestId: `case-cleared-${config.keyPrefix}`, agent: 'support-bot', approval: terms.id, premises: {}, effect: refund(paymentIntent) };
    const effectId = node.gate.effectIdOf(draft);
    // Decided on chargebacks alone: no premise names the payment's other refunds, so only the lookup can stop a resend.
    const premises = await target.readFacts(effectId, refund(paymentIntent), ['chargebacks'], READ);
    // The create lands; its answer is lost (and the SDK's one retry's after the closed connection).
    await world.sandbox.control.dropNext({ path: '/v1/refunds', method: 'POST', when: 'after', count: 2 });
    expect((await node.gate.submit({ ...draft, premises })).outcome).toBe('IN_FLIGHT');
    const [landed] = (await world.stripe.refunds.list({ payment_intent: paymentIntent })).data;
    expect(landed?.metadata).toMatchObject({ interlock_effect_id: effectId });
    // Someone tidies the refund's metadata in the Dashboard; then Stripe forgets the key and the gate's window passes.
    await world.stripe.refunds.update(landed?.id ?? '', { metadata: { interlock_effect_id: '', interlock_request: '' } });
    await world.sandbox.control.ageIdempotencyKeys(25 * 3_600);
    await sleep(WINDOW_MS);

    const { outcome } = await recoverUntilSettled(node, effectId, 20_000);
    const refunds = (await world.stripe.refunds.list({ payment_intent: paymentIntent })).data;
    expect({ outcome, refunds: refunds.map((item) => item.id) }).toEqual({ outcome: 'AMBIGUOUS', refunds: [landed?.id] });
    const entries = await node.journal.entries(`payment:${paymentIntent}`, effectId);
    expect(currentOutcome(entries)).toBe('AMBIGUOUS');
    const ambiguous = entries.find((entry) => entry.kind === 'AMBIGUOUS');
    expect(ambiguous && 'reason' in ambiguous ? ambiguous.reason : '').toContain(landed?.id ?? 'the refund');
    // The approval keeps the refund's cents: it may have landed.
    expect((await node.approvals.describe(terms.id)).snapshot?.reservedCents).toBe(2_000);
  }, 40_000);
});
