// Journal entries (DESIGN §5). Every entry is chained to the previous entry of the same effect by `prev` and
// hashed over its RFC 8785 form without `hash` and `sig`.
//
// Signing (v2, issue 8): the entries one worker writes in one atomic step form a batch, and one Ed25519
// signature over the batch's last entry covers all of them, since that entry's hash commits to the others
// through `prev`. The last entry says how many unsigned entries before it it covers (`covers`); the others carry
// `sig: null`. So a chain is authentic exactly when every unsigned entry belongs to the run a later signed entry
// claims to cover, and its last entry is signed. Version 1 entries (every entry signed) still verify.
//
// Sealing (v3): the same batches and the same `covers`, but the last entry's `sig` is a seal (seal.ts): its hash is
// one leaf of a tree of the batches the worker sealed at the same moment, and one signature covers the tree. A v2
// `sig` is a signature over the entry's own hash; a v3 `sig` is only ever read as a seal, since `v` is hashed.
import { canonicalFieldList, canonicalJson, canonicalJsonWithout, sha256Hex, type Json, type JsonObject } from './json.js';
import { decodeStored, encodeStoredField } from './stored-form.js';
import { sealLeaves } from './seal.js';
import { signText, type SigningKey } from './signing.js';

export const ENTRY_VERSION = 3;

export const ENTRY_KINDS = ['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED', 'REFUSED', 'AMBIGUOUS', 'LATE_RESULT', 'OBSERVED', 'RESOLVED'] as const;
export type EntryKind = (typeof ENTRY_KINDS)[number];

/**
 * What an approval looked like when a check read it. Amounts in cents, times in ms since the epoch (Redis clock).
 * `reservedCents` and `uses` are null when the check did not read them: the dispatch script enforces them
 * atomically, and a number read earlier would already be stale.
 */
export type ApprovalSnapshot = {
  id: string;
  approver: string;
  capCents: number;
  expiresAt: number;
  maxUses: number;
  scope: string;
  revoked: boolean;
  revokedAt: number | null;
  reservedCents: number | null;
  uses: number | null;
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

export type CommitVia = 'send' | 'retry-idempotent' | 'recovery-query' | 'recovery-reapply' | 'failed-but-landed' | 'late-result';
export type ObservedSource = 'webhook' | 'reread';

export type Decision = { model: string; text: string };

/** What a person did about an escalation inbox item (core/inbox.ts): re-approved it, resolved it or dismissed it. */
export type OperatorAction = 'reapprove' | 'resolve' | 'dismiss';
/** A person's finding about an AMBIGUOUS effect after checking Stripe. */
export type Resolution = 'landed' | 'did_not_land';
/** Who acted: the API token's name and role (or the CLI's `--by` and the role `cli`). */
export type Actor = { name: string; role: string };
/** The new request a re-approval proposed: its own request id (derived from the item), effect id and approval. */
export type Reapproval = { approval: string; requestId: string; effectId: string };

export type EntryFields = {
  PROPOSED: {
    agent: string;
    approval: string | null;
    premises: JsonObject;
    effect: JsonObject;
    request: Json;
    decision: Decision | null;
    /** The approved request's id, when the effect id was derived from one (absent when it was keyed by payload). */
    requestId?: string;
  };
  AUTHORIZED: { approval: ApprovalSnapshot };
  /**
   * v2 records only what the dispatch adds: the payload is the one the first PROPOSED bound (a version 1 entry
   * repeats it as `effect`), and `checks.approval` is null when the AUTHORIZED written in the same batch holds the
   * snapshot. The hash chain binds both, so nothing is lost and a committed effect stays within 2 KB in Redis.
   */
  DISPATCHED: { effect?: JsonObject; subject?: string; approval: string; premises: JsonObject; checks: Checks; owner: string; epoch: number; sendDeadline: number };
  COMMITTED: { via: CommitVia; result: Json; found: string | null; rechecked: Checks | null; epoch: number };
  /**
   * `proposal` is set on a refusal of another payload under this effect id (REFUSED:conflicting_payload): the
   * refused proposal is kept as evidence but never becomes a PROPOSED, so it can neither supply premises nor
   * change the effect's own outcome.
   */
  REFUSED: { code: string; reason: string; checks: Checks | null; rechecked: Checks | null; changes: PremiseChange[]; resolves: boolean; proposal?: Json };
  AMBIGUOUS: { reason: string; rechecked: Checks | null; epoch: number };
  LATE_RESULT: { owner: string; epoch: number; outcome: 'landed' | 'rejected' | 'unknown'; result: Json; error: string | null };
  /**
   * A fact read at Stripe after the send. `objectType` 'charge' with a refund's id as `objectId` is one refund of the
   * payment's charge as read beside its chargeback (the effect's own or another's, made by hand too): the receipts on
   * a payment share what its refunds and chargebacks returned twice, newest refund first (final-money.ts
   * deriveExposure), so each records every refund on the charge.
   */
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
    /**
     * Set on another party's compensation recorded on a credit (a credit note, or a balance credit not made by this
     * effect's send), and on a re-credit (a credit labelled with the effect that its send did not make): the incident
     * its metadata names when it was read (null for none), so a note billing re-tags to another incident stops counting
     * (final-money.ts). Never set on the effect's own balance credit, nor on facts recorded before it existed (those
     * read as naming the credit's incident).
     */
    incident?: string | null;
    /**
     * Set on a balance transaction labelled with the effect (its own credit, a debit taking it back, or a re-credit
     * undoing such a debit), and on another party's balance credit or debit for the incident in another currency than
     * the credit's (one in the credit's carries none): the currency Stripe holds it in (lowercase ISO code). Absent on
     * facts recorded before it existed. A re-credit is the labelled credit that carries a currency and no
     * `customerCurrency` (final-money.ts).
     */
    currency?: string | null;
    /**
     * Set on the effect's own balance credit: the currency the customer was billed in when it was read
     * (`customer.currency`; null while it has none). A credit in another currency sits in a balance of its own that the
     * customer's invoices never use (final-money.ts). Set too on another party's compensation in another currency than
     * the credit's, beside its `currency`: what tells it from a re-credit. Absent on facts recorded before it existed.
     */
    customerCurrency?: string | null;
    /**
     * Set on a dispute read with its charge: the charge's amount and what was refunded on it then (refunds not failed
     * or canceled, and what a partial capture released), in the charge's minor unit. A chargeback returns money twice
     * only where it overlaps the refunds (final-money.ts, deriveExposure). Absent on facts recorded before it existed,
     * which count the whole chargeback.
     */
    chargeAmount?: number;
    chargeRefunded?: number;
  };
  /**
   * A person's action on an inbox item of this effect, at most one per item (act-3.lua). Evidence of who decided
   * what, covered by the chain and signed by the service's key like every entry; it never sends anything.
   */
  RESOLVED: { item: string; action: OperatorAction; by: Actor; note: string; resolution: Resolution | null; reapproval: Reapproval | null };
};

export type Envelope<K extends EntryKind> = {
  v: 1 | 2 | 3;
  kind: K;
  effectId: string;
  at: number;
  prev: string | null;
  /** The signing key's id; a v2 entry covered by a later one has none of its own. */
  kid?: string;
  hash: string;
  /** v1/v2: Ed25519 over `hash`; v3: a seal (seal.ts); null on an entry covered by a later entry of its batch. */
  sig: string | null;
  /** v2, v3: how many unsigned entries right before this one its signature covers (absent for none). */
  covers?: number;
};

export type EntryOf<K extends EntryKind> = Envelope<K> & EntryFields[K];
export type Entry = { [K in EntryKind]: EntryOf<K> }[EntryKind];
export type Draft<K extends EntryKind> = { kind: K } & EntryFields[K];
export type AnyDraft = { [K in EntryKind]: Draft<K> }[EntryKind];

const NOT_HASHED = new Set(['hash', 'sig']);

/** The hash input: the entry without `hash` and `sig`. */
export function entryHash(entry: Record<string, unknown>): string {
  return sha256Hex(canonicalJsonWithout(entry, NOT_HASHED));
}

/** entryHash for an entry already checked to be plain JSON. */
export function entryHashOfChecked(entry: JsonObject): string {
  const rest: JsonObject = {};
  for (const key of Object.keys(entry)) if (key !== 'hash' && key !== 'sig') rest[key] = entry[key] as Json;
  return sha256Hex(canonicalJson(rest));
}

/** A batch sealed up to its signature: hashes known, stored forms ready but for the last entry's `sig`. */
export type PreparedBatch = { entries: Entry[]; stored: string[]; lastHash: string };

/**
 * Hashes drafts written in one atomic step into a chain segment: all at the same `at` (Redis time), the first
 * linked to `prev`, each to the one before; the last will carry the batch's one signature (`complete`). Each
 * field is serialised once, for the hash input and for the stored form alike. Throws NonCanonicalValueError when
 * a draft holds a value with no canonical form: callers validate or quote what they put in drafts.
 */
export function prepareBatch(drafts: readonly AnyDraft[], place: { effectId: string; at: number; prev: string | null }, kid: string): PreparedBatch {
  const entries: Entry[] = [];
  const stored: string[] = [];
  let prev = place.prev;
  const lastIndex = drafts.length - 1;
  for (let index = 0; index <= lastIndex; index += 1) {
    // Object.assign, not spread: V8 builds `{ ...draft, more }` slowly (about half a microsecond per added field),
    // and every entry of every effect passes here. The envelope's fields follow the draft's, in this order.
    // Only the entry that carries the batch's signature names its key and how many entries it covers; the others
    // are signed through it (a v2 entry without `sig` has neither).
    const unsealed: Record<string, unknown> = Object.assign({}, drafts[index]);
    unsealed.v = ENTRY_VERSION;
    unsealed.effectId = place.effectId;
    unsealed.at = place.at;
    unsealed.prev = prev;
    if (index === lastIndex) {
      unsealed.kid = kid;
      if (lastIndex > 0) unsealed.covers = lastIndex;
    }
    const { fields, json } = canonicalFieldList(unsealed);
    const hash = sha256Hex(json);
    unsealed.hash = hash;
    unsealed.sig = null;
    entries.push(unsealed as unknown as Entry);
    // After the first entry of a batch, `at` is the entry before's (the batch's one time).
    stored.push(storedText(fields, index > 0 ? place.at : undefined));
    prev = hash;
  }
  return { entries, stored, lastHash: prev ?? '' };
}

/**
 * The stored form (stored-form.ts) up to the signature slot: the fields but what the chain gives back (effect id,
 * prev), common names and values coded; completeBatch closes it with the signature.
 */
function storedText(fields: readonly string[], previousAt: number | undefined): string {
  let text = '{';
  let first = true;
  for (let index = 0; index + 1 < fields.length; index += 2) {
    const key = fields[index] as string;
    if (key === 'effectId' || key === 'prev') continue;
    text += (first ? '' : ',') + encodeStoredField(key, fields[index + 1] as string, previousAt);
    first = false;
  }
  return text;
}

const UNSIGNED_SLOT = encodeStoredField('sig', 'null');

/**
 * Puts the batch's signature on its last entry; returns the entries and their stored form. The batch is used up:
 * its entries are the ones returned, the last one now signed.
 */
export function completeBatch(batch: PreparedBatch, sig: string): { entries: Entry[]; stored: string[] } {
  const { entries } = batch;
  const lastIndex = entries.length - 1;
  if (lastIndex >= 0) (entries[lastIndex] as Entry).sig = sig;
  const stored = new Array<string>(entries.length);
  for (let index = 0; index <= lastIndex; index += 1) stored[index] = `${batch.stored[index] ?? ''},${index === lastIndex ? encodeStoredField('sig', JSON.stringify(sig)) : UNSIGNED_SLOT}}`;
  return { entries, stored };
}

/** The seal of one batch on its own (a tree of one leaf), signed on this thread. */
export function sealAlone(lastHash: string, key: SigningKey): string {
  return sealLeaves([lastHash], 'entries', (message) => signText(message, key))[0] as string;
}

/** Seals a batch and signs it on this thread. */
export function sealBatch(drafts: readonly AnyDraft[], place: { effectId: string; at: number; prev: string | null }, key: SigningKey): Entry[] {
  if (drafts.length === 0) return [];
  const batch = prepareBatch(drafts, place, key.kid);
  return completeBatch(batch, sealAlone(batch.lastHash, key)).entries;
}

/** One entry on its own: a batch of one, signed. */
export function sealEntry<K extends EntryKind>(draft: Draft<K>, place: { effectId: string; at: number; prev: string | null }, key: SigningKey): EntryOf<K> {
  return sealBatch([draft as AnyDraft], place, key)[0] as unknown as EntryOf<K>;
}

export function isEntryKind(value: unknown): value is EntryKind {
  return typeof value === 'string' && (ENTRY_KINDS as readonly string[]).includes(value);
}

/**
 * Entries as Redis keeps them: without `effectId` (the key names it), `prev` and `hash` (recomputed in order
 * when the chain is read), and with common names and values coded (stored-form.ts). That is about 220 bytes less
 * per entry for the first three, and half of what is left for the codes; a chain edited in Redis still fails its
 * signatures, since the recomputed hashes no longer match what was signed.
 */
export type StoredEntry = Omit<Entry, 'effectId' | 'prev' | 'hash'>;

/** Rebuilds a chain from its stored form: effect id from the key, each `prev` from the entry before, each hash recomputed. */
export function fromStored(effectId: string, items: readonly string[]): Entry[] {
  const entries: Entry[] = [];
  let prev: string | null = null;
  let previousAt: number | null = null;
  for (const item of items) {
    const stored = JSON.parse(decodeStored(item, previousAt)) as JsonObject;
    // An entry a newer interlock wrote (a deployment part-way through an upgrade) is not judged by rules it predates.
    if (typeof stored.v === 'number' && stored.v > ENTRY_VERSION) {
      throw new Error(`effect ${effectId}'s journal holds an entry of version ${stored.v}, newer than this interlock knows (1 to ${ENTRY_VERSION}): a newer version of interlock wrote it. Run the same version in every process of the deployment.`);
    }
    previousAt = typeof stored.at === 'number' ? stored.at : null;
    const whole: JsonObject = { ...stored, effectId, prev };
    const hash = entryHashOfChecked(whole);
    entries.push({ ...(whole as unknown as Entry), hash, sig: (stored.sig ?? null) as string | null });
    prev = hash;
  }
  return entries;
}
