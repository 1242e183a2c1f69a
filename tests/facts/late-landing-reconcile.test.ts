// A late landing whose webhooks were all missed (issue 10 §2 and §3): an effect the target refused after its send
// (REFUSED:target_error: its first send's answer was lost and its resend refused, refusedAfterLostAnswer) later has a
// refund at Stripe carrying its id (the first request landed after all). With no event delivered, reconciliation
// alone must find it: the reconciler lists effects settled after a send, not only committed ones, so the receipt comes
// to say the money moved. One refused before any send is never re-read.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { reconcileAll } from '../../queues/facts.js';
import { watchedEffects } from '../../src/interlock.js';
import { approvalTerms } from '../support/harness.js';
import { pay, refusedAfterLostAnswer, sharedFactsRig } from './facts-rig.js';

// The sandbox forwards no event: every webhook is missed.
const rig = sharedFactsRig({ forward: false });

describe('a late landing with every webhook missed', () => {
  it('is found by reconciliation for an effect the target refused after its send', async () => {
    const { paymentIntent } = await pay(rig.stripe, 'pm_card_visa', 10_000);
    const terms = approvalTerms({ scope: `payment:${paymentIntent}`, capCents: 4_000, maxUses: 2 });
    await rig.stores.approvals.grant(terms);
    const proposal = (premises: { refunded_by_others: number }) => ({ requestId: `case-${randomBytes(4).toString('hex')}`, agent: 'support-bot', approval: terms.id, premises: { chargebacks: [], ...premises }, effect: { kind: 'refund', paymentIntent, amount: 2_000, reason: 'requested_by_customer' } });
    await refusedAfterLostAnswer(rig, '/v1/refunds', { status: 402, code: 'card_declined', message: 'Your card was declined.' });
    const sent = await rig.effects.propose(proposal({ refunded_by_others: 0 }));
    expect(await rig.effects.waitFor(sent.effectId, 30_000)).toMatchObject({ outcome: 'REFUSED:target_error' });
    // Refused before any send (decided on a refund by someone else that Stripe does not show).
    const unsent = await rig.effects.propose(proposal({ refunded_by_others: 500 }));
    expect(await rig.effects.waitFor(unsent.effectId, 15_000)).toMatchObject({ outcome: 'REFUSED:stale_premise' });

    const refund = await rig.stripe.refunds.create({ payment_intent: paymentIntent, amount: 2_000, metadata: { interlock_effect_id: sent.effectId } });
    const since = (await rig.stores.journal.serverTime()) - 3_600_000;
    const listed = (await watchedEffects(rig.stores, since)).effectIds;
    expect(listed).toContain(sent.effectId);
    expect(listed).not.toContain(unsent.effectId);
    const report = await reconcileAll(rig.stores, rig.facts, since);
    expect(report).toMatchObject({ unread: 0, stopped: null });
    expect(report.appended).toBeGreaterThan(0);
    const verification = await rig.receipt(sent.effectId);
    expect(verification.lateLanding).toMatchObject({ evidence: refund.id });
    expect(verification).toMatchObject({ valid: true, happened: true });
  }, 60_000);
});
