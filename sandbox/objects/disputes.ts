// Disputes and their two state machines (stripe-facts §5, scenarios.md §2.7):
//   inquiry:    warning_needs_response ─submit─▶ warning_under_review ─▶ warning_closed
//                        └──── escalate_inquiry_evidence (same id) ────▶ needs_response
//   chargeback: needs_response ─submit─▶ under_review ─▶ won | lost         (close: ─▶ lost)
// A chargeback withdraws the full charge amount plus the dispute fee, whatever was refunded before; a win
// reinstates the amount. Stripe has no create endpoint: test cards (and the control API) open disputes.
import { snapshot } from '../core/diff.js';
import { automatic } from '../core/event-bus.js';
import { invalidRequest, requireObject } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { listParams, paginate, requireFilterIds } from '../core/list.js';
import { bool, mergeMetadata, metadata, object, oneOf, str } from '../core/params.js';
import { route } from '../http/router.js';
import type { Core } from '../core/core.js';
import type { EventOrigin } from '../core/event-bus.js';
import type { Parsed } from '../core/params.js';
import type { Collection, StripeObject } from '../core/store.js';
import type { Route } from '../http/router.js';
import type { BalanceTransaction, BalanceTransactions } from './balance-transactions.js';
import type { Charge, Charges } from './charges.js';
import type { TestCard } from './payment-methods.js';
import type { Refunds } from './refunds.js';

export const disputeStatuses = ['warning_needs_response', 'warning_under_review', 'warning_closed', 'needs_response', 'under_review', 'won', 'lost', 'prevented'] as const;
export type DisputeStatus = (typeof disputeStatuses)[number];

export const disputeKinds = ['inquiry', 'chargeback'] as const;
export type DisputeKind = (typeof disputeKinds)[number];

export const disputeReasons = ['fraudulent', 'product_not_received', 'duplicate', 'general', 'product_unacceptable', 'subscription_canceled', 'unrecognized', 'credit_not_processed'] as const;
export type DisputeReason = (typeof disputeReasons)[number];

const evidenceTextFields = [
  'access_activity_log', 'billing_address', 'cancellation_policy_disclosure', 'cancellation_rebuttal', 'customer_email_address',
  'customer_name', 'customer_purchase_ip', 'duplicate_charge_explanation', 'duplicate_charge_id', 'product_description',
  'refund_policy_disclosure', 'refund_refusal_explanation', 'service_date', 'shipping_address', 'shipping_carrier',
  'shipping_date', 'shipping_tracking_number', 'uncategorized_text',
] as const;
const evidenceFileFields = [
  'cancellation_policy', 'customer_communication', 'customer_signature', 'duplicate_charge_documentation', 'receipt',
  'refund_policy', 'service_documentation', 'shipping_documentation', 'uncategorized_file',
] as const;
type EvidenceField = (typeof evidenceTextFields)[number] | (typeof evidenceFileFields)[number];

export type Evidence = Record<EvidenceField, string | null> & { enhanced_evidence: Record<string, never> };

/** Magic values of `evidence[uncategorized_text]` that decide a test-mode dispute (stripe-facts §5.4). */
export const magicEvidence = { win: 'winning_evidence', lose: 'losing_evidence', escalate: 'escalate_inquiry_evidence' } as const;

export interface Dispute extends StripeObject {
  object: 'dispute';
  amount: number;
  balance_transactions: BalanceTransaction[];
  charge: string;
  currency: string;
  enhanced_eligibility_types: string[];
  evidence: Evidence;
  evidence_details: {
    due_by: number;
    enhanced_eligibility: Record<string, never>;
    has_evidence: boolean;
    past_due: boolean;
    submission_count: number;
    submission_method: 'manual' | 'not_submitted';
  };
  intended_submission_method: string | null;
  is_charge_refundable: boolean;
  livemode: false;
  metadata: Record<string, string>;
  network_reason_code: string;
  payment_intent: string | null;
  payment_method_details: { card: { brand: string; case_type: 'inquiry' | 'chargeback'; network: string; network_reason_code: string }; type: 'card' };
  reason: DisputeReason;
  status: DisputeStatus;
}

const closedStatuses: ReadonlySet<DisputeStatus> = new Set(['won', 'lost', 'warning_closed', 'prevented']);
const inquiryStatuses: ReadonlySet<DisputeStatus> = new Set(['warning_needs_response', 'warning_under_review', 'warning_closed']);

/** Visa reason codes as test mode reports them: 10 for a fraud inquiry, 10.4 / 13.1 once charged back. */
function networkReasonCode(kind: DisputeKind, reason: DisputeReason): string {
  if (kind === 'inquiry') return '10';
  return reason === 'product_not_received' ? '13.1' : '10.4';
}

const evidenceParams = Object.fromEntries([...evidenceTextFields, ...evidenceFileFields].map((name) => [name, str()])) as Record<EvidenceField, ReturnType<typeof str>>;
const updateParams = { evidence: object(evidenceParams), metadata: metadata(), submit: bool(), intended_submission_method: str() };

export interface DisputeDeps {
  charges: Charges;
  ledger: BalanceTransactions;
  refunds: Refunds;
}

export interface Disputes {
  readonly collection: Collection<Dispute>;
  isChargeRefundable(charge: Charge): boolean;
  /**
   * Opens the disputes a test card promises, inside the request that confirms (or captures) the payment, so they
   * are listable when it returns; their webhooks go out after Stripe's observed lag.
   */
  openForTestCard(charge: Charge, card: TestCard, moment: 'confirm' | 'capture'): void;
  open(charge: Charge, kind: DisputeKind, reason: DisputeReason, origin: EventOrigin, deliverAfterMs?: number): Dispute;
  escalate(dispute: Dispute, origin: EventOrigin): void;
  require(id: string): Dispute;
  routes: Route[];
}

export function createDisputes(core: Core, deps: DisputeDeps): Disputes {
  const { store, clock, events, settings } = core;
  const { charges, ledger, refunds } = deps;
  const collection = store.collection<Dispute>('dispute');

  const require = (id: string): Dispute => requireObject(collection, 'dispute', id, 'dispute');

  const dueBy = (): number => {
    const day = 86_400;
    return (Math.floor(clock.nowSeconds() / day) + settings.disputeDueDays + 1) * day - 1;
  };

  const withdraw = (dispute: Dispute, charge: Charge): void => {
    dispute.is_charge_refundable = false;
    dispute.balance_transactions.push(
      ledger.record({
        amount: -dispute.amount,
        currency: dispute.currency,
        source: dispute.id,
        type: 'adjustment',
        reportingCategory: 'dispute',
        description: `Chargeback withdrawal for ${charge.id}`,
        fee: { amount: settings.disputeFee, description: 'Dispute fee' },
      }),
    );
  };

  const open = (charge: Charge, kind: DisputeKind, reason: DisputeReason, origin: EventOrigin, deliverAfterMs = 0): Dispute => {
    // Only money that was taken can be disputed, and not once all of it went back (stripe-facts §4.4, §5.1).
    if (charge.status !== 'succeeded') throw invalidRequest(`Charge ${charge.id} has a status of ${charge.status}; only a successful charge can be disputed.`);
    if (charge.refunded) throw invalidRequest(`Charge ${charge.id} has been fully refunded; a fully refunded charge can no longer be disputed.`);
    const code = networkReasonCode(kind, reason);
    const dispute = collection.insert({
      id: newId('du'),
      object: 'dispute',
      amount: charge.amount,
      balance_transactions: [],
      charge: charge.id,
      created: clock.nowSeconds(),
      currency: charge.currency,
      enhanced_eligibility_types: [],
      evidence: { ...(Object.fromEntries([...evidenceTextFields, ...evidenceFileFields].map((name) => [name, null])) as Record<EvidenceField, null>), enhanced_evidence: {} },
      evidence_details: { due_by: dueBy(), enhanced_eligibility: {}, has_evidence: false, past_due: false, submission_count: 0, submission_method: 'not_submitted' },
      intended_submission_method: null,
      is_charge_refundable: true,
      livemode: false,
      metadata: {},
      network_reason_code: code,
      payment_intent: charge.payment_intent,
      payment_method_details: {
        card: { brand: charge.payment_method_details.card.brand, case_type: kind, network: charge.payment_method_details.card.network, network_reason_code: code },
        type: 'card',
      },
      reason,
      status: kind === 'inquiry' ? 'warning_needs_response' : 'needs_response',
    });
    if (kind === 'chargeback') withdraw(dispute, charge);
    const lag = { deliverAfterMs };
    events.emit('charge.dispute.created', dispute, origin, lag);
    if (kind === 'chargeback') events.emit('charge.dispute.funds_withdrawn', dispute, origin, lag);
    if (!charge.disputed) {
      const before = snapshot(charge);
      charge.disputed = true;
      events.emit('charge.updated', charge, origin, { before, ...lag });
    }
    if (kind === 'chargeback') refunds.failRecentOnChargeback(charge);
    return dispute;
  };

  const escalate = (dispute: Dispute, origin: EventOrigin): void => {
    if (!inquiryStatuses.has(dispute.status) || dispute.status === 'warning_closed') {
      throw invalidRequest(`Dispute ${dispute.id} is ${dispute.status}; only an open inquiry can be escalated.`);
    }
    const charge = charges.require(dispute.charge);
    const before = snapshot(dispute);
    const code = networkReasonCode('chargeback', dispute.reason);
    dispute.status = 'needs_response';
    dispute.network_reason_code = code;
    dispute.payment_method_details.card = { ...dispute.payment_method_details.card, case_type: 'chargeback', network_reason_code: code };
    dispute.evidence_details.due_by = dueBy();
    withdraw(dispute, charge);
    events.emit('charge.dispute.updated', dispute, origin, { before });
    events.emit('charge.dispute.funds_withdrawn', dispute, origin, { before });
    refunds.failRecentOnChargeback(charge);
  };

  /**
   * Stripe follows evidence and a close with `charge.updated` on the disputed charge (stripe-facts §5.4, §6.2). No
   * field of the charge the sandbox keeps moves then (`disputed` turned true when the dispute opened), so the
   * event carries no `previous_attributes`.
   */
  const announceOnCharge = (dispute: Dispute, origin: EventOrigin): void => {
    events.emit('charge.updated', charges.require(dispute.charge), origin);
  };

  const decide = (dispute: Dispute, outcome: 'won' | 'lost'): void => {
    const before = snapshot(dispute);
    if (inquiryStatuses.has(dispute.status)) {
      dispute.status = 'warning_closed';
      events.emit('charge.dispute.closed', dispute, automatic, { before });
      announceOnCharge(dispute, automatic);
      return;
    }
    dispute.status = outcome;
    if (outcome === 'won') {
      const charge = charges.require(dispute.charge);
      dispute.is_charge_refundable = true;
      const fee = settings.reinstateDisputeFeeOnWin ? settings.disputeFee : 0;
      dispute.balance_transactions.push(
        ledger.record({
          amount: dispute.amount,
          currency: dispute.currency,
          source: dispute.id,
          type: 'adjustment',
          reportingCategory: 'dispute_reversal',
          description: `Chargeback reversal for ${charge.id}`,
          ...(fee === 0 ? {} : { fee: { amount: -fee, description: 'Dispute fee refund' } }),
        }),
      );
      events.emit('charge.dispute.funds_reinstated', dispute, automatic, { before });
    }
    events.emit('charge.dispute.closed', dispute, automatic, { before });
    announceOnCharge(dispute, automatic);
  };

  const refuseIfClosed = (dispute: Dispute): void => {
    if (closedStatuses.has(dispute.status)) throw invalidRequest('This dispute is already closed');
  };

  const whenStill = (dispute: Dispute, status: DisputeStatus, task: () => void) => () => {
    if (dispute.status === status) task();
  };

  const update = (dispute: Dispute, params: Parsed<typeof updateParams>, origin: EventOrigin): Dispute => {
    refuseIfClosed(dispute);
    const before = snapshot(dispute);
    dispute.metadata = mergeMetadata(dispute.metadata, params.metadata);
    const evidence = params.evidence ?? {};
    for (const [name, value] of Object.entries(evidence)) {
      if (value !== undefined) dispute.evidence[name as EvidenceField] = value;
    }
    if (Object.keys(evidence).length > 0) dispute.evidence_details.has_evidence = true;
    if (params.intended_submission_method !== undefined) dispute.intended_submission_method = params.intended_submission_method;
    if (params.submit ?? true) submit(dispute);
    events.emit('charge.dispute.updated', dispute, origin, { before });
    announceOnCharge(dispute, origin);
    return dispute;
  };

  const submit = (dispute: Dispute): void => {
    dispute.evidence_details.submission_count += 1;
    dispute.evidence_details.submission_method = 'manual';
    if (dispute.status === 'needs_response') dispute.status = 'under_review';
    if (dispute.status === 'warning_needs_response') dispute.status = 'warning_under_review';
    const inquiry = inquiryStatuses.has(dispute.status);
    switch (dispute.evidence.uncategorized_text) {
      case magicEvidence.win:
        clock.after('evidenceDecides', whenStill(dispute, dispute.status, () => decide(dispute, 'won')));
        return;
      case magicEvidence.lose:
        clock.after('evidenceDecides', whenStill(dispute, dispute.status, () => decide(dispute, 'lost')));
        return;
      case magicEvidence.escalate:
        if (inquiry) clock.after('inquiryEscalates', whenStill(dispute, dispute.status, () => escalate(dispute, automatic)));
        return;
      default:
        // Plain evidence never settles by itself in test mode.
        return;
    }
  };

  const close = (dispute: Dispute, origin: EventOrigin): Dispute => {
    refuseIfClosed(dispute);
    const before = snapshot(dispute);
    dispute.status = inquiryStatuses.has(dispute.status) ? 'warning_closed' : 'lost';
    events.emit('charge.dispute.closed', dispute, origin, { before });
    announceOnCharge(dispute, origin);
    return dispute;
  };

  const openForTestCard = (charge: Charge, card: TestCard, moment: 'confirm' | 'capture'): void => {
    const chargebackLag = clock.delayMs(moment === 'confirm' ? 'chargebackOpens' : 'chargebackOpensAfterCapture');
    switch (card.dispute) {
      case 'none':
        return;
      case 'inquiry':
        open(charge, 'inquiry', 'fraudulent', automatic, clock.delayMs('inquiryOpens'));
        return;
      case 'fraudulent':
      case 'product_not_received':
        open(charge, 'chargeback', card.dispute, automatic, chargebackLag);
        return;
      case 'multiple':
        open(charge, 'chargeback', 'fraudulent', automatic, chargebackLag);
        open(charge, 'chargeback', 'fraudulent', automatic, clock.delayMs('secondDisputeOpens'));
        return;
      default: {
        const unreachable: never = card.dispute;
        throw new Error(`unknown dispute behaviour ${String(unreachable)}`);
      }
    }
  };

  const routes = [
    route({ method: 'GET', path: '/v1/disputes/:id', params: {}, handle: (_params, path) => require(path['id'] ?? '') }),
    route({ method: 'POST', path: '/v1/disputes/:id', params: updateParams, handle: (params, path, ctx) => update(require(path['id'] ?? ''), params, ctx.origin) }),
    route({ method: 'POST', path: '/v1/disputes/:id/close', params: {}, handle: (_params, path, ctx) => close(require(path['id'] ?? ''), ctx.origin) }),
    route({
      method: 'GET',
      path: '/v1/disputes',
      params: { ...listParams, charge: str(), payment_intent: str() },
      handle: (params) => {
        requireFilterIds(store, { charge: params.charge, payment_intent: params.payment_intent });
        const items = collection
          .newestFirst()
          .filter((d) => (params.charge === undefined || d.charge === params.charge) && (params.payment_intent === undefined || d.payment_intent === params.payment_intent));
        return paginate(items, params, '/v1/disputes');
      },
    }),
    route({
      method: 'GET',
      path: '/v1/charges/:charge/dispute',
      params: {},
      handle: (_params, path) => {
        const charge = charges.require(path['charge'] ?? '', 'charge');
        return collection.newestFirst().find((d) => d.charge === charge.id) ?? fail(`Charge ${charge.id} has no dispute.`);
      },
    }),
  ];

  return {
    collection,
    isChargeRefundable: (charge) => collection.newestFirst().every((d) => d.charge !== charge.id || d.is_charge_refundable),
    openForTestCard,
    open,
    escalate,
    require,
    routes,
  };
}

function fail(message: string): never {
  throw invalidRequest(message, {}, 404);
}

export const disputeKindParam = oneOf(disputeKinds);
export const disputeReasonParam = oneOf(disputeReasons);
