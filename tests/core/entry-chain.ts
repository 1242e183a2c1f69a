// Hand-built journal chains, sealed and signed with the real code, so a test can produce a receipt that is
// correct in every respect but the one rule it checks. Amounts in cents; times in ms on a made-up Redis clock.
import { effectIdFor } from '../../src/core/effect-id.js';
import { sealEntry, type ApprovalSnapshot, type Checks, type Draft, type Entry, type EntryFields, type EntryKind } from '../../src/core/entries.js';
import type { JsonObject } from '../../src/core/json.js';
import { buildReceipt, type Receipt } from '../../src/core/receipt.js';
import type { SigningKey } from '../../src/core/signing.js';

export const T0 = 1_780_000_000_000;
export const APPROVAL_ID = 'ap_chain';
export const PREMISES: JsonObject = { chargebacks: [], refunded_by_others: 0 };
export const EFFECT: JsonObject = { kind: 'refund', paymentIntent: 'pi_chain', amount: 2_000, reason: 'requested_by_customer' };

export function chainEffectId(name: string): string {
  return effectIdFor({ requestId: name, effect: EFFECT });
}

export function snapshot(overrides: Partial<ApprovalSnapshot> = {}): ApprovalSnapshot {
  return { id: APPROVAL_ID, approver: 'dana@support', capCents: 5_000, expiresAt: T0 + 3_600_000, maxUses: 5, scope: 'payment:pi_chain', revoked: false, revokedAt: null, reservedCents: 0, uses: 0, ...overrides };
}

/** The checks of a dispatch or a re-check; by default everything held. */
export function checks(overrides: Partial<Checks> = {}): Checks {
  return { approvalLive: true, approval: snapshot(), approvalProblems: [], violations: [], changes: [], ...overrides };
}

export function refundObject(id: string, overrides: JsonObject = {}): JsonObject {
  return { id, object: 'refund', status: 'succeeded', amount: 2_000, charge: 'ch_chain', ...overrides };
}

export const drafts = {
  proposed: (): Draft<'PROPOSED'> => ({ kind: 'PROPOSED', agent: 'support-bot', approval: APPROVAL_ID, premises: PREMISES, effect: EFFECT, request: 'case-chain', decision: null }),
  authorized: (approval: ApprovalSnapshot = snapshot()): Draft<'AUTHORIZED'> => ({ kind: 'AUTHORIZED', approval }),
  dispatched: (epoch = 1, approval = APPROVAL_ID): Draft<'DISPATCHED'> => ({
    kind: 'DISPATCHED', effect: EFFECT, approval, premises: PREMISES, checks: checks(), owner: 'w-chain', epoch, sendDeadline: T0 + 30_000,
  }),
  committed: (refundId: string, overrides: Partial<EntryFields['COMMITTED']> = {}): Draft<'COMMITTED'> => ({
    kind: 'COMMITTED', via: 'send', result: refundObject(refundId), found: null, rechecked: null, epoch: 1, ...overrides,
  }),
  observed: (overrides: Partial<EntryFields['OBSERVED']> & Pick<EntryFields['OBSERVED'], 'objectType' | 'objectId'>): Draft<'OBSERVED'> => ({
    kind: 'OBSERVED', source: 'webhook', eventId: null, eventType: `${overrides.objectType}.updated`, status: null, failureReason: null, amount: null,
    charge: 'ch_chain', disputeStatus: null, disputeReason: null, created: null, ...overrides,
  }),
};

/** Seals drafts into one correctly linked chain, one millisecond apart. */
export function sealChain(effectId: string, list: readonly Draft<EntryKind>[], key: SigningKey, start = T0): Entry[] {
  const entries: Entry[] = [];
  let prev: string | null = null;
  list.forEach((draft, index) => {
    const entry = sealEntry(draft, { effectId, at: start + index, prev }, key) as Entry;
    entries.push(entry);
    prev = entry.hash;
  });
  return entries;
}

/** A receipt over hand-built drafts, with a correctly signed head: only the rule under test can fail. */
export function chainReceipt(name: string, list: readonly Draft<EntryKind>[], key: SigningKey): Receipt {
  const effectId = chainEffectId(name);
  return buildReceipt(effectId, sealChain(effectId, list, key), key, T0 + 60_000);
}
