// Rule: the Stripe adapter classifies every known dispute status as a chargeback exactly as the project's money model
// does (src/core/final-money.ts; a status Stripe adds later counts for the premise only, the safe side): a `prevented` dispute (Stripe API 2026-10-28.endive `Dispute.status`, a chargeback stopped
// upstream, e.g. Visa RDR; no withdrawal) is not a chargeback, so it is not listed in the refund premise `chargebacks`
// nor summarised with `chargeback: true`.
import { describe, expect, it } from 'vitest';
import { isChargeback as moneyModel } from '../../src/core/final-money.js';
import { disputeSummary, isChargeback as adapter } from '../../src/stripe/summaries.js';
import { refundFigures } from '../../src/stripe/refund-target.js';
import type Stripe from 'stripe';

const dispute = (status: string) => ({ id: `du_${status}`, object: 'dispute', status, amount: 1000, currency: 'usd', charge: 'ch_1', payment_intent: 'pi_1', reason: 'fraudulent', is_charge_refundable: false, created: 1 }) as unknown as Stripe.Dispute;

describe('dispute statuses of the pinned API version', () => {
  it('every status the SDK types list is classified the same by the adapter and the money model', () => {
    const statuses = ['appeal_needs_response', 'appeal_under_review', 'lost', 'needs_response', 'prevented', 'under_review', 'warning_closed', 'warning_needs_response', 'warning_under_review', 'won'];
    const disagree = statuses.filter((status) => adapter({ status } as Stripe.Dispute) !== moneyModel(status));
    expect(disagree).toEqual([]);
  });

  it('a prevented dispute is not a chargeback in the refund premise', () => {
    const charge = { id: 'ch_1', status: 'succeeded', captured: true, amount: 1000, amount_captured: 1000 } as Stripe.Charge;
    const figures = refundFigures({ currency: 'usd', charge, refunds: [], disputes: [dispute('prevented')] }, 'e'.repeat(64), 100);
    expect(figures.chargebacks).toEqual([]);
    expect(disputeSummary(dispute('prevented')).chargeback).toBe(false);
  });

  it('a status Stripe adds later counts as a chargeback for the premise (refusing is the safe side)', () => {
    expect(adapter({ status: 'some_new_status' } as unknown as Stripe.Dispute)).toBe(true);
    expect(adapter({ status: 'charge_refunded' } as unknown as Stripe.Dispute)).toBe(false);
  });
});
