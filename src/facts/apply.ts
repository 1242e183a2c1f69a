// Post-send facts (DESIGN §8, issue 10 §2): a Stripe event, or a re-read, becomes OBSERVED entries on the receipts
// it concerns, so a receipt's final-money answer follows the money. Events arrive late, twice and out of order, so
// before anything is appended the object is re-read from Stripe (on by default): the fact recorded is the
// object's state now, and its own lifecycle decides (final-money.ts), never the order events came in.
import type { Logger } from 'pino';
import { alertsFor } from '../core/alert-rules.js';
import { firstProposal } from '../core/decisions.js';
import type { Draft, EntryFields } from '../core/entries.js';
import { sha256Hex, canonicalJson } from '../core/json.js';
import { verify } from '../core/verify.js';
import { FACT_EVENTS, REFUND_EVENTS, type DisputeFact, type RefundFact, type StripeEvent, type StripeReader } from '../core/post-send.js';
import type { Alerts } from '../redis/alerts.js';
import type { Journal } from '../redis/journal.js';

export { DISPUTE_EVENTS, FACT_EVENTS, REFUND_EVENTS, type DisputeFact, type RefundFact, type StripeEvent, type StripeReader } from '../core/post-send.js';

export type Applied = { effectId: string; appended: number; duplicates: number; alerts: string[] };

const str = (value: unknown): string | null => (typeof value === 'string' && value.length > 0 ? value : null);
const num = (value: unknown): number | null => (typeof value === 'number' && Number.isFinite(value) ? value : null);
const idOf = (value: unknown): string | null => str(value) ?? (typeof value === 'object' && value !== null ? str((value as { id?: unknown }).id) : null);

function refundFromObject(object: Record<string, unknown>): RefundFact | null {
  const id = str(object.id);
  if (id === null || object.object !== 'refund') return null;
  const metadata = typeof object.metadata === 'object' && object.metadata !== null ? (object.metadata as Record<string, unknown>) : {};
  return { id, status: str(object.status) ?? 'unknown', amount: num(object.amount) ?? 0, charge: idOf(object.charge), paymentIntent: idOf(object.payment_intent), failureReason: str(object.failure_reason), effectId: str(metadata.interlock_effect_id), created: num(object.created) };
}

function disputeFromObject(object: Record<string, unknown>): DisputeFact | null {
  const id = str(object.id);
  if (id === null || object.object !== 'dispute') return null;
  return { id, status: str(object.status) ?? 'unknown', amount: num(object.amount) ?? 0, charge: idOf(object.charge), paymentIntent: idOf(object.payment_intent), reason: str(object.reason), created: num(object.created) };
}

type Observed = EntryFields['OBSERVED'];

function refundObserved(source: Observed['source'], eventId: string | null, eventType: string, refund: RefundFact): Draft<'OBSERVED'> {
  return { kind: 'OBSERVED', source, eventId, eventType, objectType: 'refund', objectId: refund.id, status: refund.status, failureReason: refund.failureReason, amount: refund.amount, charge: refund.charge, disputeStatus: null, disputeReason: null, created: refund.created };
}

function disputeObserved(source: Observed['source'], eventId: string | null, eventType: string, dispute: DisputeFact): Draft<'OBSERVED'> {
  return { kind: 'OBSERVED', source, eventId, eventType, objectType: 'dispute', objectId: dispute.id, status: dispute.status, failureReason: null, amount: dispute.amount, charge: dispute.charge, disputeStatus: dispute.status, disputeReason: dispute.reason, created: dispute.created };
}

/** The key a fact is recorded under once: what it says about which object (re-reads that find nothing new add nothing). */
function fingerprint(draft: Draft<'OBSERVED'>): string {
  return `f:${sha256Hex(canonicalJson([draft.objectType, draft.objectId, draft.status, draft.failureReason, draft.amount, draft.disputeStatus])).slice(0, 32)}`;
}

export function createFactsApplier(deps: { journal: Journal; alerts: Alerts; reader: StripeReader | null; logger: Logger; rereadBeforeAppend?: boolean }) {
  const { journal, alerts, reader, logger } = deps;
  const reread = deps.rereadBeforeAppend ?? true;

  /** Appends `drafts` to one effect; raises what its receipt now calls for. */
  async function appendTo(effectId: string, drafts: Draft<'OBSERVED'>[], eventId: string | null): Promise<Applied> {
    const partition = await journal.partitionOf(effectId);
    const applied: Applied = { effectId, appended: 0, duplicates: 0, alerts: [] };
    if (partition === null) return applied;
    for (const draft of drafts) {
      // One webhook may carry several facts (a re-read refund list): each is recorded once per event and per content.
      const key = eventId === null ? fingerprint(draft) : `${eventId}:${draft.objectId}`;
      const seenAlready = (await journal.observe(partition, effectId, draft, key)).status !== 'OK';
      if (seenAlready) applied.duplicates += 1;
      else applied.appended += 1;
      // A refund with this effect's id that landed while the journal says it did not: the money moved after all.
      if (!seenAlready && draft.objectType === 'refund' && draft.status !== 'failed' && draft.status !== 'canceled') await noteLateLanding(partition, effectId, draft);
    }
    if (applied.appended > 0) applied.alerts = await raiseAlerts(partition, effectId);
    return applied;
  }

  async function noteLateLanding(partition: string, effectId: string, draft: Draft<'OBSERVED'>): Promise<void> {
    const { state } = await journal.readState(partition, effectId);
    if (state.committed || state.open || state.count === 0) return;
    const entries = await journal.entries(partition, effectId);
    if (!firstProposal(entries)) return;
    await journal.late(partition, effectId, { kind: 'LATE_RESULT', owner: 'facts', epoch: state.epoch, outcome: 'landed', result: { id: draft.objectId, object: 'refund', status: draft.status, amount: draft.amount, charge: draft.charge }, error: null }, state.approvalId);
    logger.warn({ effectId, refund: draft.objectId }, 'a refund landed for an effect the journal had settled without it');
  }

  async function raiseAlerts(partition: string, effectId: string): Promise<string[]> {
    const entries = await journal.entries(partition, effectId);
    const verification = verify({ format: 'interlock.receipt/v2', effectId, entries, head: { format: 'interlock.receipt-head/v1', effectId, count: entries.length, lastHash: entries.at(-1)?.hash ?? null, signedAt: 0, kid: 'unchecked', sig: '' } });
    const raised: string[] = [];
    for (const draft of alertsFor(verification)) {
      const { alert, created } = await alerts.raise({ ...draft, effectId, subject: partition });
      raised.push(alert.id);
      if (created) logger.warn({ alert: alert.id, effectId, centsAtStake: alert.centsAtStake, action: alert.action }, alert.sentence);
    }
    return raised;
  }

  /** Refund facts: to the effect whose id the refund's metadata carries. */
  async function applyRefund(source: Observed['source'], eventId: string | null, eventType: string, refund: RefundFact): Promise<Applied[]> {
    const current = reread && reader ? ((await reader.refund(refund.id)) ?? refund) : refund;
    if (current.effectId === null) return [];
    return [await appendTo(current.effectId, [refundObserved(source, eventId, eventType, current)], eventId)];
  }

  /** Dispute facts: to every effect that committed on the payment. */
  async function applyDisputes(source: Observed['source'], eventId: string | null, eventType: string, paymentIntent: string, disputes: DisputeFact[]): Promise<Applied[]> {
    const effects = await journal.effectsOn(`payment:${paymentIntent}`);
    if (effects.length === 0) return [];
    const current = reread && reader ? await reader.disputesOf(paymentIntent) : disputes;
    const drafts = current.map((dispute) => disputeObserved(source, eventId, eventType, dispute));
    return Promise.all(effects.map((effectId) => appendTo(effectId, drafts, eventId)));
  }

  return {
    /** Applies one verified Stripe event; events about payments the gate never touched append nothing. */
    async applyEvent(event: StripeEvent): Promise<Applied[]> {
      if (!FACT_EVENTS.includes(event.type)) return [];
      const object = event.data.object;
      if ((REFUND_EVENTS as readonly string[]).includes(event.type)) {
        const refund = refundFromObject(object);
        if (refund) return applyRefund('webhook', event.id, event.type, refund);
        // charge.refunded carries the charge: every refund on its payment is read.
        const paymentIntent = idOf(object.payment_intent);
        if (object.object === 'charge' && paymentIntent !== null && reader) {
          const results: Applied[] = [];
          for (const found of await reader.refundsOf(paymentIntent)) if (found.effectId !== null) results.push(await appendTo(found.effectId, [refundObserved('webhook', event.id, event.type, found)], event.id));
          return results;
        }
        return [];
      }
      const dispute = disputeFromObject(object);
      const paymentIntent = dispute?.paymentIntent ?? null;
      if (!dispute || paymentIntent === null) return [];
      return applyDisputes('webhook', event.id, event.type, paymentIntent, [dispute]);
    },

    /** Re-reads one effect's refund and disputes (the reconciler, or on demand), appending what changed. */
    async reread(effectId: string): Promise<Applied[]> {
      if (!reader) return [];
      const partition = await journal.partitionOf(effectId);
      if (partition === null || !partition.startsWith('payment:')) return [];
      const paymentIntent = partition.slice('payment:'.length);
      const results: Applied[] = [];
      const refunds = (await reader.refundsOf(paymentIntent)).filter((refund) => refund.effectId === effectId);
      if (refunds.length > 0) results.push(await appendTo(effectId, refunds.map((refund) => refundObserved('reread', null, 'refund.reread', refund)), null));
      const disputes = await reader.disputesOf(paymentIntent);
      if (disputes.length > 0) results.push(await appendTo(effectId, disputes.map((dispute) => disputeObserved('reread', null, 'dispute.reread', dispute)), null));
      return results;
    },
  };
}

export type FactsApplier = ReturnType<typeof createFactsApplier>;
