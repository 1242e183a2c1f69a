// Journal entries (DESIGN §5). Every entry is chained to the previous entry of the same effect by `prev`,
// hashed over its RFC 8785 form without `hash` and `sig`, and signed (Ed25519 over the hash).
import { assertJson, canonicalJson, sha256Hex, type Json, type JsonObject } from './json.js';
import { signText, type SigningKey } from './signing.js';

export const ENTRY_VERSION = 1;

export const ENTRY_KINDS = ['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED', 'REFUSED', 'AMBIGUOUS', 'LATE_RESULT', 'OBSERVED'] as const;
export type EntryKind = (typeof ENTRY_KINDS)[number];

/** What an approval looked like when a check read it. Amounts in cents, times in ms since the epoch (Redis clock). */
export type ApprovalSnapshot = {
  id: string;
  approver: string;
  capCents: number;
  expiresAt: number;
  maxUses: number;
  scope: string;
  revoked: boolean;
  revokedAt: number | null;
  reservedCents: number;
  uses: number;
};

export type PremiseChange = { field: string; was: Json; now: Json };

/** The checks that ran before a dispatch or a resend. */
export type Checks = {
  approvalLive: boolean;
  approval: ApprovalSnapshot | null;
  approvalProblems: string[];
  violations: string[];
  changes: PremiseChange[];
};

export type CommitVia = 'send' | 'retry-idempotent' | 'recovery-query' | 'recovery-reapply' | 'failed-but-landed';
export type ObservedSource = 'webhook' | 'reread';

export type Decision = { model: string; text: string };

export type EntryFields = {
  PROPOSED: { agent: string; approval: string | null; premises: JsonObject; effect: JsonObject; request: Json; decision: Decision | null };
  AUTHORIZED: { approval: ApprovalSnapshot };
  DISPATCHED: { effect: JsonObject; approval: string; premises: JsonObject; checks: Checks; owner: string; epoch: number; sendDeadline: number };
  COMMITTED: { via: CommitVia; result: Json; found: string | null; rechecked: Checks | null; epoch: number };
  REFUSED: { code: string; reason: string; checks: Checks | null; rechecked: Checks | null; changes: PremiseChange[]; resolves: boolean };
  AMBIGUOUS: { reason: string; rechecked: Checks | null; epoch: number };
  LATE_RESULT: { owner: string; epoch: number; outcome: 'landed' | 'rejected' | 'unknown'; result: Json; error: string | null };
  OBSERVED: {
    source: ObservedSource;
    eventId: string | null;
    eventType: string;
    objectType: 'refund' | 'dispute' | 'charge' | 'customer_balance_transaction' | 'credit_note';
    objectId: string;
    status: string | null;
    failureReason: string | null;
    amount: number | null;
    charge: string | null;
    disputeStatus: string | null;
    disputeReason: string | null;
    created: number | null;
  };
};

export type Envelope<K extends EntryKind> = {
  v: typeof ENTRY_VERSION;
  kind: K;
  effectId: string;
  at: number;
  prev: string | null;
  kid: string;
  hash: string;
  sig: string;
};

export type EntryOf<K extends EntryKind> = Envelope<K> & EntryFields[K];
export type Entry = { [K in EntryKind]: EntryOf<K> }[EntryKind];
export type Draft<K extends EntryKind> = { kind: K } & EntryFields[K];
export type AnyDraft = { [K in EntryKind]: Draft<K> }[EntryKind];

/** The hash input: the entry without `hash` and `sig`. */
export function entryHash(entry: Record<string, unknown>): string {
  const rest: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(entry)) if (key !== 'hash' && key !== 'sig') rest[key] = value;
  return sha256Hex(canonicalJson(rest));
}

/** Seals a draft into an entry at a position in the chain: `at` is Redis server time, `prev` the chain head. */
export function sealEntry<K extends EntryKind>(draft: Draft<K>, place: { effectId: string; at: number; prev: string | null }, key: SigningKey): EntryOf<K> {
  const unsealed = { ...draft, v: ENTRY_VERSION, effectId: place.effectId, at: place.at, prev: place.prev, kid: key.kid };
  const plain = assertJson(unsealed) as Record<string, Json>;
  const hash = entryHash(plain);
  return { ...(plain as unknown as Omit<EntryOf<K>, 'hash' | 'sig'>), hash, sig: signText(hash, key) } as EntryOf<K>;
}

export function isEntryKind(value: unknown): value is EntryKind {
  return typeof value === 'string' && (ENTRY_KINDS as readonly string[]).includes(value);
}
