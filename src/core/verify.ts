// verify(): re-derives everything a receipt claims from its entries alone, offline. Every problem is a readable
// sentence. A receipt is `valid: true` only when nothing is wrong AND its signatures were checked against a
// known public key: a check that authenticated nothing says `valid: null` and lists what it could not check
// (issue 6, item 12). verify() never throws, whatever it is given (item 10).
import { currencyOfEffect } from './effect-currency.js';
import { payloadHash } from './effect-id.js';
import { effectFactsOrNull } from './effects.js';
import { entryHash, type Checks, type Entry, type EntryOf } from './entries.js';
import { collectMoneyFacts, deriveExposure, deriveFinalMoney, deriveSecondCompensation, landedAmountMismatches, type Exposure, type FinalMoney, type LandedAmountMismatch, type MoneyStatus, type SecondCompensation } from './final-money.js';
import { moneyText } from './money-text.js';
import { formatOf, headSignatureValid, type Receipt } from './receipt.js';
import { parseReceipt } from './receipt-schema.js';
import { parseSeal, verifySeal } from './seal.js';
import { isCanonicalSignature, publicKeySet, SIGNATURE_CHARS, verifyText, type PublicKeySet } from './signing.js';
import type { KeyObject } from 'node:crypto';
import { assertJson, isJsonObject, type JsonObject } from './json.js';
import { isForeignRefusal, openDispatch } from './decisions.js';
import { actionProblems } from './inbox.js';
import type { Actor, OperatorAction, Reapproval, Resolution } from './entries.js';

/** A person's action on one of the effect's inbox items, as its RESOLVED entry records it. */
export type OperatorActionRecord = { item: string; action: OperatorAction; resolution: Resolution | null; by: Actor; note: string; at: number; reapproval: Reapproval | null };

export type Verification = {
  /** true: intact, consistent and signed by a known key; false: something is wrong; null: nothing is wrong, but the signatures were not checked. */
  valid: boolean | null;
  chainIntact: boolean;
  signed: boolean | null;
  /** What this verification established, and what it could not. */
  checked: { chain: boolean; rules: boolean; signatures: boolean };
  unchecked: string[];
  effectId: string | null;
  /**
   * As of when the receipt answers: the time its head was signed (the export), in ms since the epoch (the signer's
   * Redis clock), as the head carries it. Two genuine receipts of one effect, exported before and after a later fact
   * (a refund that failed), both verify and can answer differently: the later signedAt is the newer answer. Null when
   * the receipt could not be read, or its head carries no signature (a chain judged before anyone signed it).
   */
  signedAt: number | null;
  /** When the receipt's last entry was written, in ms since the epoch (the journal's Redis clock); null without entries. */
  lastEntryAt: number | null;
  outcome: string | null;
  happened: boolean | 'unknown';
  happenedOnce: boolean;
  authorizedWhenFired: boolean | null;
  assumptionsHeld: boolean | null;
  refused: { code: string; reason: string } | null;
  evidence: string | null;
  recheckedAtRecovery: Checks | null;
  approvedBy: string | null;
  /** A landing reported by a sender that had lost its claim, after the journal settled otherwise (or while it was open). */
  /**
   * A send that landed after the effect was settled otherwise; `cents` is what it moved (the effect's amount), in
   * `currency` (currencyOfEffect: the landed object's first; null when nothing recorded says it).
   */
  lateLanding: { evidence: string | null; after: string | null; cents: number | null; currency: string | null } | null;
  answer: MoneyStatus;
  /**
   * Whose word `answer` is: the gate's (from its own outcome), or a person's (an AMBIGUOUS effect a person resolved
   * as landed or not after checking Stripe); null while nobody can say.
   */
  answerFrom: 'gate' | 'operator' | null;
  /** People's actions on the effect's inbox items (re-approve, resolve, dismiss), in order. */
  operatorActions: OperatorActionRecord[];
  finalMoney: FinalMoney;
  answerMatchesFinalMoney: boolean | null;
  exposure: Exposure | null;
  /** A credit that landed while billing also compensated its incident with a credit note (null otherwise). */
  compensatedTwice: SecondCompensation | null;
  entries: number;
  problems: string[];
};

/** The incident a credit's proposal names (null for a refund, or a proposal that names none). */
function incidentOf(effect: JsonObject | undefined): string | null {
  return typeof effect?.incident === 'string' ? effect.incident : null;
}

/**
 * `publicKeys`: the keys receipts are signed with, by key id (stores.publicKeys), or their PEM text (a rotation bundle
 * of several blocks included) or a list of PEM texts, as `interlock keys public` prints them.
 */
export type VerifyOptions = { publicKeys?: PublicKeySet | string | readonly string[] };

const EMPTY_MONEY: FinalMoney = { status: 'unknown', refund: null, refunds: [], failureReason: null, disputes: [] };
const NO_KEYS = 'signatures: no public key was given, so anyone could have re-sealed this chain; verify with the signer\'s public key';

/** The keys to check signatures with, or null, and why the signatures go unchecked when they are null. */
type KeysGiven = { keys: PublicKeySet; unchecked: null } | { keys: null; unchecked: string };

/** Signatures left unchecked because the publicKeys option `what`. */
function wrongKeys(what: string): KeysGiven {
  return { keys: null, unchecked: `signatures: not checked, because the publicKeys option ${what}; pass the service's key set (stores.publicKeys), a PEM text of public keys, or a list of PEM texts` };
}

/**
 * The public keys option as a key set. A value that holds no keys is the caller's mistake, not the receipt's: it
 * leaves the signatures unchecked (valid is then null at best), saying what to pass, and never reads as tampering.
 */
function keysGiven(given: unknown): KeysGiven {
  if (given === undefined || given === null) return { keys: null, unchecked: NO_KEYS };
  if (Array.isArray(given) && given.length === 0) return wrongKeys('is an empty list');
  if (typeof given === 'string' || (Array.isArray(given) && given.every((pem) => typeof pem === 'string'))) {
    try {
      return { keys: publicKeySet(typeof given === 'string' ? [given] : (given as string[])), unchecked: null };
    } catch (error) {
      return wrongKeys(`holds a text that is not a public key (${clipped(error instanceof Error ? error.message : String(error))})`);
    }
  }
  // A key set is read through get(kid) alone, so any map of key ids is one (a Map from another realm included).
  if (typeof given === 'object' && typeof (given as { get?: unknown }).get === 'function') {
    // An empty Map holds no key: the caller's mistake (a key file read as nothing), not a forgery of every signature.
    if ((given as { size?: unknown }).size === 0) return wrongKeys('is an empty key set');
    return { keys: given as PublicKeySet, unchecked: null };
  }
  if (Array.isArray(given)) return wrongKeys('is a list that is not of PEM texts');
  return wrongKeys(`is ${typeof given === 'object' ? 'an object' : `a ${typeof given}`} that is not a key set (a Map of key id to public key)`);
}

function invalid(problems: string[], effectId: string | null): Verification {
  return {
    valid: false, chainIntact: false, signed: null, checked: { chain: false, rules: false, signatures: false }, unchecked: [], effectId, signedAt: null, lastEntryAt: null, outcome: null,
    happened: 'unknown', happenedOnce: false, authorizedWhenFired: null, assumptionsHeld: null, refused: null, evidence: null,
    recheckedAtRecovery: null, approvedBy: null, lateLanding: null, answer: 'unknown', answerFrom: null, operatorActions: [], finalMoney: EMPTY_MONEY, answerMatchesFinalMoney: null,
    exposure: null, compensatedTwice: null, entries: 0, problems,
  };
}

function describeEntry(entry: Entry, index: number): string {
  return `entry ${index + 1} (${entry.kind})`;
}

/** An entry's hash as given; a field the schema ignores may still hold a value with no canonical form (1e400, "__proto__"). */
function rehash(raw: unknown): string | { problem: string } {
  try {
    return entryHash(raw as Record<string, unknown>);
  } catch (error) {
    return { problem: error instanceof Error ? error.message : String(error) };
  }
}

/** Hash links, effect ids and duplicates. `raw` is the entries as given, so an added field breaks the hash. */
function checkChain(receipt: Receipt, raw: readonly unknown[], problems: string[]): boolean {
  const before = problems.length;
  const seen = new Set<string>();
  let prev: string | null = null;
  let linksBroken = false;
  const entries = receipt.entries;
  for (let index = 0; index < entries.length; index += 1) {
    const entry = entries[index] as Entry;
    if (entry.effectId !== receipt.effectId) problems.push(`${describeEntry(entry, index)} belongs to effect ${String(entry.effectId).slice(0, 12)}…, not this receipt's effect: it was spliced in from another effect`);
    const recomputed = rehash(raw[index]);
    if (typeof recomputed !== 'string') problems.push(`${describeEntry(entry, index)} was altered: it holds a value that cannot be hashed (${recomputed.problem})`);
    else if (recomputed !== entry.hash) problems.push(`${describeEntry(entry, index)} was altered: its content no longer matches its hash`);
    if (seen.has(entry.hash)) problems.push(`${describeEntry(entry, index)} is a duplicate of an earlier entry`);
    seen.add(entry.hash);
    if (entry.prev !== prev) {
      linksBroken = true;
      problems.push(`${describeEntry(entry, index)} does not follow the entry before it: an entry was dropped, inserted or reordered`);
    }
    prev = entry.hash;
  }
  if (receipt.entries.length === 0) problems.push('receipt has no entries');
  else if (receipt.entries[0]?.kind !== 'PROPOSED') problems.push('receipt does not start with a PROPOSED entry');
  // No signature covers the label, so a reader must not be told a format the entries do not have.
  if (receipt.entries.length > 0 && receipt.format !== formatOf(receipt.entries)) {
    problems.push(`the receipt is labelled ${receipt.format}, but its entries are those of ${formatOf(receipt.entries)}: the label, which no signature covers, was changed`);
  }
  const head = receipt.head;
  if (head.effectId !== receipt.effectId) problems.push('the signed head names another effect');
  if (head.count !== receipt.entries.length) {
    const counted = `the signed head counts ${head.count} entries but the receipt has ${receipt.entries.length}`;
    if (head.count < receipt.entries.length) problems.push(`${counted}: entries were added after it was signed`);
    else problems.push(linksBroken ? `${counted}: entries were removed` : `${counted}: its tail was cut`);
  } else if (head.lastHash !== (receipt.entries.at(-1)?.hash ?? null)) {
    problems.push('the signed head names another last entry: the tail was replaced');
  }
  return problems.length === before;
}

/**
 * Which entries carry the signatures (entries.ts): every v1 entry is signed; a v2 or v3 entry is signed (or
 * sealed), covering the run of unsigned entries right before it, or unsigned and covered by the next signed one.
 * Checked with or without keys, since an entry nobody signed is a forgery whoever verifies.
 */
function checkSignatureShape(receipt: Receipt, problems: string[]): void {
  let uncovered = 0;
  const entries = receipt.entries;
  for (let index = 0; index < entries.length; index += 1) {
    const entry = entries[index] as Entry;
    if (entry.v === 1) {
      if (entry.sig === null) problems.push(`${describeEntry(entry, index)} is a version 1 entry without a signature`);
      if (uncovered > 0) problems.push(`${uncovered} unsigned entr${uncovered === 1 ? 'y' : 'ies'} before ${describeEntry(entry, index)} are covered by no signature`);
      uncovered = 0;
      continue;
    }
    const covers = entry.covers ?? 0;
    if (entry.sig === null) {
      if (covers !== 0) problems.push(`${describeEntry(entry, index)} is unsigned but claims to cover ${covers} entries`);
      uncovered += 1;
      continue;
    }
    if (covers !== uncovered) problems.push(`${describeEntry(entry, index)} is signed for the ${covers} entries before it, but ${uncovered} unsigned entries precede it: an entry nobody signed was inserted, or a signed one removed`);
    uncovered = 0;
  }
  if (uncovered > 0) problems.push(`the last ${uncovered} entr${uncovered === 1 ? 'y is' : 'ies are'} covered by no signature: they were appended by someone without the signing key`);
}

/** A signed entry's `sig` against `key`: v1 and v2 sign the entry's hash, v3 seals it in a tree (seal.ts). */
function entrySignatureValid(entry: Entry, sig: string, key: KeyObject): boolean {
  return entry.v === 3 ? verifySeal(entry.hash, sig, 'entries', key) : verifyText(entry.hash, sig, key);
}

/**
 * Why a signature that failed could never have verified: it is not in its one spelling (a v1 or v2 signature, a v1
 * head's) or not a seal in its one spelling (v3, a v2 head's). Null when it is spelled right and simply does not verify.
 */
function misspelling(sig: string, sealed: boolean): string | null {
  if (sealed) return parseSeal(sig) === null ? 'it is not a seal in its one spelling (s1.SIZE.INDEX.PATH.SIGNATURE, base64url, nothing before or after it)' : null;
  return isCanonicalSignature(sig) ? null : `it is not an Ed25519 signature in its one spelling (${SIGNATURE_CHARS} base64url characters, nothing before or after it): text was added to it or it was re-spelled`;
}

function checkSignatures(receipt: Receipt, keys: PublicKeySet, problems: string[]): boolean {
  let ok = true;
  const entries = receipt.entries;
  for (let index = 0; index < entries.length; index += 1) {
    const entry = entries[index] as Entry;
    if (entry.sig === null) continue;
    const key = entry.kid === undefined ? undefined : keys.get(entry.kid);
    if (!key) {
      ok = false;
      problems.push(entry.kid === undefined ? `${describeEntry(entry, index)} is signed but names no key` : `${describeEntry(entry, index)} is signed with an unknown key ${clipped(entry.kid)}`);
    } else if (!entrySignatureValid(entry, entry.sig, key)) {
      ok = false;
      problems.push(`${describeEntry(entry, index)} has a signature that does not verify: ${misspelling(entry.sig, entry.v === 3) ?? 'the chain was rebuilt or the entry forged without the signing key'}`);
    }
  }
  const head = headSignatureValid(receipt.head, keys);
  if (head === 'unknown-key') {
    ok = false;
    problems.push(`the receipt head is signed with an unknown key ${clipped(receipt.head.kid)}`);
  } else if (!head) {
    ok = false;
    const why = misspelling(receipt.head.sig, receipt.head.format !== 'interlock.receipt-head/v1');
    problems.push(why === null ? 'the receipt head signature does not verify' : `the receipt head signature does not verify: ${why}`);
  }
  return ok;
}

type Send = { checks: Checks; amount: number | null; subject: string | null };

function approvalHeld(send: Send): boolean {
  const { checks } = send;
  if (!checks.approvalLive || checks.approvalProblems.length > 0) return false;
  const approval = checks.approval;
  if (approval === null || approval.revoked) return false;
  if (send.amount !== null && send.amount > approval.capCents) return false;
  // An approval covers one subject; a send on another is unauthorized whatever else held (issue 6, item 1).
  if (send.subject === null || approval.scope !== send.subject) return false;
  return true;
}

/** A payload's hash, or null for a value with no canonical form (never equal to any). */
function payloadHashOrNull(effect: unknown): string | null {
  try {
    return payloadHash(effect);
  } catch {
    return null;
  }
}

/** Whether a payload is the first one proposed, given that one's hash (null when it has none: then nothing is). */
function samePayload(effect: unknown, firstHash: string | null): boolean {
  return firstHash !== null && payloadHashOrNull(effect) === firstHash;
}

/** Who approved a dispatch: its own snapshot's approver, or that of the AUTHORIZED it leaves its snapshot to. */
function approverOf(dispatch: EntryOf<'DISPATCHED'>, authorized: ReadonlyMap<string, EntryOf<'AUTHORIZED'>>): string | null {
  return (dispatch.checks.approval ?? authorized.get(dispatch.approval)?.approval)?.approver ?? null;
}

/** Most problems one verification lists; the rest are counted in a last line (a hostile receipt can make thousands). */
const MAX_PROBLEMS = 200;
/** Most characters of text taken from the receipt that one problem repeats. */
const QUOTED_CHARS = 90;

function clipped(text: string): string {
  return text.length > QUOTED_CHARS ? `${text.slice(0, QUOTED_CHARS)}…` : text;
}

/**
 * What a verification hands back of the receipt's own objects: only plain JSON within the depth every hashed entry
 * keeps to (a receipt that failed its hashes can hold anything, and the answer is written out as JSON by callers).
 */
function boundedOrNull<T>(value: T): T | null {
  try {
    return assertJson(value) as T;
  } catch {
    return null;
  }
}

function verifyParsed(input: unknown, receipt: Receipt, given: KeysGiven): Verification {
  const raw = (input as { entries: unknown[] }).entries;
  const problems: string[] = [];

  const chainIntact = checkChain(receipt, raw, problems);
  checkSignatureShape(receipt, problems);
  const signed = given.keys === null ? null : checkSignatures(receipt, given.keys, problems);

  const entries = receipt.entries;
  const firstProposal = entries[0]?.kind === 'PROPOSED' ? entries[0] : null;
  // The effect's subject and amount, from its first proposal (or, in a chain that lost it, its first dispatch).
  const described = firstProposal ?? entries.find((entry): entry is EntryOf<'DISPATCHED'> => entry.kind === 'DISPATCHED') ?? null;
  const facts = described ? effectFactsOrNull(described.effect) : null;
  let open: EntryOf<'DISPATCHED'> | null = null;
  let unsafeResend = false;
  let committedCount = 0;
  let firstCommitted: EntryOf<'COMMITTED'> | null = null;
  let approvedBy: string | null = null;
  // Every dispatch so far, in order: a late landing went out under the last one at or before its sender's epoch.
  const dispatches: EntryOf<'DISPATCHED'>[] = [];
  let recheckedAtRecovery: Checks | null = null;
  let ambiguous = false;
  const sends: Send[] = [];
  // The send the last resolving refusal took back, until a later dispatch or landing.
  let withdrawn: Send | null = null;
  let targetRefused = false;
  let settledBy: string | null = null;
  let late: { entry: EntryOf<'LATE_RESULT'>; after: string | null } | null = null;
  const operatorActions: OperatorActionRecord[] = [];
  // The first re-approval, kept as it is recorded: looking it up among every action at each later one made verify
  // quadratic in RESOLVED entries.
  let firstReapproval: OperatorActionRecord | null = null;
  const actedItems = new Set<string>();
  const authorized = new Map<string, EntryOf<'AUTHORIZED'>>();
  const amount = facts?.amount ?? null;
  const subject = facts?.subject ?? null;
  if (described && facts === null) problems.push('the first PROPOSED holds no valid refund or credit, so no subject or amount can be checked');

  // The settlement so far, carried entry to entry: a RESOLVED entry is judged by the outcome before it, and
  // recomputing that from the start at each one made verify quadratic in RESOLVED entries.
  let settled = UNSETTLED;
  // The first payload's hash, made once: every later PROPOSED and DISPATCHED is compared with it, and hashing it again
  // for each made verify quadratic in its size.
  // Closures made per call cost more than they save here (tsx names each one as it is made): plain functions instead.
  let firstHash: string | null | undefined;
  for (let index = 0; index < entries.length; index += 1) {
    const entry = entries[index] as Entry;
    const outcomeBefore = settled.outcome;
    settled = settle(settled, entry);
    switch (entry.kind) {
      case 'PROPOSED':
        if (index > 0 && firstProposal && entry.v !== 1 && !samePayload(entry.effect, (firstHash ??= payloadHashOrNull(firstProposal.effect)))) {
          problems.push(`${describeEntry(entry, index)} proposes another payload under this effect id: only the first payload may be proposed`);
        }
        continue;
      case 'OBSERVED':
        continue;
      case 'RESOLVED': {
        // Outcome before this entry: a resolution answers an AMBIGUOUS effect only (core/inbox.ts).
        for (const problem of actionProblems(entry, receipt.effectId, outcomeBefore, open !== null, actedItems)) problems.push(`${describeEntry(entry, index)} ${problem}`);
        // Through whichever of its items, one refused payload is re-approved once: a second would send it again.
        const earlier = entry.action === 'reapprove' ? firstReapproval : null;
        if (earlier !== null) problems.push(`${describeEntry(entry, index)} re-approves the effect a second time (item ${entry.item.slice(0, 90)}, after item ${earlier.item.slice(0, 90)}): one refused payload is re-approved once`);
        actedItems.add(entry.item);
        // Only the named members of `by` and `reapproval`: a receipt that failed its hashes can carry any other member
        // there, nested past what JSON.stringify can write, and the answer is written out (boundedOrNull).
        const { by, reapproval } = entry;
        const action: OperatorActionRecord = { item: entry.item, action: entry.action, resolution: entry.resolution, by: { name: by.name, role: by.role }, note: entry.note, at: entry.at, reapproval: reapproval === null ? null : { approval: reapproval.approval, requestId: reapproval.requestId, effectId: reapproval.effectId } };
        operatorActions.push(action);
        if (entry.action === 'reapprove') firstReapproval ??= action;
        continue;
      }
      case 'LATE_RESULT':
        if (entry.outcome === 'landed' && late === null) {
          late = { entry, after: open ? null : settledBy };
          const landedUnder = dispatches.findLast((dispatch) => dispatch.epoch <= entry.epoch) ?? dispatches.at(-1);
          if (firstCommitted === null && landedUnder !== undefined) approvedBy = approverOf(landedUnder, authorized);
          // The send a refusal had closed fired after all: its checks vouch for it again.
          if (!open && withdrawn !== null) sends.push(withdrawn);
          withdrawn = null;
        }
        continue;
      case 'AUTHORIZED':
        authorized.set(entry.approval.id, entry);
        if (subject !== null && entry.approval.scope !== subject) problems.push(`${describeEntry(entry, index)} authorizes approval ${entry.approval.id}, scoped to ${entry.approval.scope}, for an effect on ${subject}`);
        continue;
      case 'DISPATCHED': {
        if (open) {
          unsafeResend = true;
          problems.push(`${describeEntry(entry, index)} opens a second dispatch while an earlier one is still open`);
        }
        if (!authorized.has(entry.approval)) problems.push(`${describeEntry(entry, index)} was sent without a prior AUTHORIZED for approval ${entry.approval}`);
        if (targetRefused) {
          unsafeResend = true;
          problems.push(`${describeEntry(entry, index)} sends again after the target refused this effect outright`);
        }
        if (entry.effect !== undefined && firstProposal && !samePayload(entry.effect, (firstHash ??= payloadHashOrNull(firstProposal.effect)))) problems.push(`${describeEntry(entry, index)} sends a payload other than the one first proposed`);
        if (entry.subject !== undefined && entry.subject !== subject) problems.push(`${describeEntry(entry, index)} was dispatched on ${entry.subject}, but its effect moves money on ${subject ?? 'no valid subject'}`);
        // A v2 dispatch leaves the snapshot to the AUTHORIZED right before it, in its batch.
        const before = entries[index - 1];
        const batchSnapshot = before?.kind === 'AUTHORIZED' && before.approval.id === entry.approval ? before.approval : null;
        const approval = entry.checks.approval ?? batchSnapshot;
        const scope = approval?.scope ?? null;
        if (scope !== null && scope !== subject) problems.push(`${describeEntry(entry, index)} went out under approval ${entry.approval}, scoped to ${scope}, on ${subject ?? 'no valid subject'}`);
        if (entry.checks.approval === null && batchSnapshot === null) problems.push(`${describeEntry(entry, index)} leaves its approval snapshot to an AUTHORIZED for ${entry.approval} that does not come right before it`);
        open = entry;
        dispatches.push(entry);
        withdrawn = null;
        sends.push({ checks: { ...entry.checks, approval }, amount, subject });
        continue;
      }
      case 'COMMITTED':
        committedCount += 1;
        if (committedCount > 1) problems.push(`${describeEntry(entry, index)} commits the effect a second time`);
        if (!open) {
          problems.push(`${describeEntry(entry, index)} closes no open dispatch: a commit without a send`);
        } else {
          if (firstCommitted === null) approvedBy = approverOf(open, authorized);
          if (entry.via === 'retry-idempotent' || entry.via === 'recovery-reapply') {
            if (entry.rechecked) sends.push({ checks: entry.rechecked, amount, subject });
            else problems.push(`${describeEntry(entry, index)} resent the effect without a recorded re-check`);
          }
        }
        if (entry.rechecked) recheckedAtRecovery = entry.rechecked;
        firstCommitted ??= entry;
        open = null;
        settledBy = 'COMMITTED';
        continue;
      case 'AMBIGUOUS':
        if (!open) problems.push(`${describeEntry(entry, index)} closes no open dispatch`);
        if (entry.rechecked) recheckedAtRecovery = entry.rechecked;
        ambiguous = true;
        open = null;
        settledBy = 'AMBIGUOUS';
        continue;
      case 'REFUSED':
        // A refusal of another payload is evidence of the attempt; it says nothing about this effect (item 11).
        if (isForeignRefusal(entry)) continue;
        if (entry.rechecked) recheckedAtRecovery = entry.rechecked;
        if (entry.resolves) {
          if (!open) problems.push(`${describeEntry(entry, index)} resolves no open dispatch`);
          if (entry.code === 'REFUSED:target_error') targetRefused = true;
          // The dispatch it resolves never landed, so its checks vouch for nothing (unless a landing comes later).
          // Taken off in place: a copy of the list at each refusal made verify quadratic in resolving refusals.
          withdrawn = sends.pop() ?? null;
          open = null;
          settledBy = entry.code;
        }
        continue;
      default: {
        const never: never = entry;
        return never;
      }
    }
  }

  const lateEntry = late as { entry: EntryOf<'LATE_RESULT'>; after: string | null } | null;
  const committedEntry = firstCommitted as EntryOf<'COMMITTED'> | null;
  const happened: boolean | 'unknown' = committedCount > 0 || lateEntry !== null ? true : ambiguous || open !== null ? 'unknown' : false;
  const money = collectMoneyFacts(entries);
  const committedRefunds = committedEntry ? idsOf(committedEntry.found, committedEntry.result) : lateEntry ? idsOf(null, lateEntry.entry.result) : [];
  for (const id of money.refunds.keys()) {
    if (committedRefunds.length > 0 && !committedRefunds.includes(id)) problems.push(`an OBSERVED refund ${clipped(id)} is not the refund the effect committed (${committedRefunds.map(clipped).join(', ')})`);
    if (happened === false) problems.push(`an OBSERVED refund ${clipped(id)} exists for an effect the journal says never landed`);
  }
  const happenedOnce = !unsafeResend && committedCount <= 1 && money.refunds.size <= 1;

  const effectKind = firstProposal && typeof firstProposal.effect.kind === 'string' ? firstProposal.effect.kind : null;
  const finalMoney = deriveFinalMoney(money, happened, effectKind, committedRefunds, amount);
  const gateAnswer: MoneyStatus = happened === true ? 'returned' : happened === false ? 'not_returned' : 'unknown';
  // A person's finding answers only what the gate could not (an AMBIGUOUS effect), and it is only an answer: the final
  // money still comes from Stripe's own facts alone, so a finding Stripe contradicts shows as
  // answerMatchesFinalMoney: false, never as a different final money. The last resolution stands.
  const found = operatorActions.findLast((action) => action.action === 'resolve' && action.resolution !== null)?.resolution ?? null;
  const answer: MoneyStatus = gateAnswer !== 'unknown' || found === null ? gateAnswer : found === 'landed' ? 'returned' : 'not_returned';
  const answerFrom = gateAnswer !== 'unknown' ? 'gate' : found !== null ? 'operator' : null;
  // The objects the effect's send made (its commit's, a late landing's), else those whose facts decide the final money
  // (an AMBIGUOUS send's refund, its own balance credit): one recorded at another amount than the effect's moved other
  // money than was approved, and the gate's answer (the effect's money sent) does not match it. An effect that never
  // fired made no object; a refund recorded on it is flagged above.
  const landedObjects = committedRefunds.length > 0 ? committedRefunds : [...finalMoney.refunds.slice(0, 1).map((refund) => refund.id), ...money.credits];
  const otherAmounts = happened === false ? [] : landedAmountMismatches(entries, landedObjects, amount);
  const currency = currencyOfEffect(entries);
  for (const mismatch of otherAmounts) problems.push(otherAmountProblem(mismatch, entries, currency));
  const matches = answer === 'unknown' || finalMoney.status === 'unknown' || finalMoney.status === 'pending' ? null : answer === finalMoney.status;
  // The status stays the lifecycle's (a succeeded refund of 1 cent went back, in part), but the gate answered that the
  // effect's money went back: not what Stripe last read, when the latest amount recorded on the object is another.
  const answerMatchesFinalMoney = matches === true && otherAmounts.some((mismatch) => mismatch.latest) ? false : matches;

  const fired = sends.length > 0 && happened !== false;
  const authorizedWhenFired = fired ? sends.every(approvalHeld) : null;
  if (authorizedWhenFired === false) problems.push('a send went out with no record of a live approval covering it on its subject');
  const assumptionsHeld = fired ? sends.every((send) => send.checks.violations.length === 0) : null;

  // The refusal that is the effect's outcome, if it is one: an earlier proposal's refusal answers nothing once a later
  // dispatch went out (it is in flight, AMBIGUOUS or landed).
  const refused = happened !== true && settled.outcome !== null && settled.outcome.startsWith('REFUSED:') ? { code: settled.outcome, reason: settled.reason ?? '' } : null;
  const evidence = committedEntry ? evidenceOf(committedEntry.found, committedEntry.result) : lateEntry ? evidenceOf(null, lateEntry.entry.result) : null;

  const valid = problems.length > 0 ? false : signed === true ? true : null;
  if (problems.length > MAX_PROBLEMS) problems.splice(MAX_PROBLEMS - 1, problems.length, `and ${problems.length - MAX_PROBLEMS + 1} more problems`);
  return {
    valid,
    chainIntact,
    signed,
    checked: { chain: true, rules: true, signatures: signed !== null },
    unchecked: given.unchecked === null ? [] : [given.unchecked],
    effectId: receipt.effectId,
    signedAt: receipt.head.sig === '' ? null : receipt.head.signedAt,
    lastEntryAt: entries.at(-1)?.at ?? null,
    outcome: settled.outcome,
    happened,
    happenedOnce,
    authorizedWhenFired,
    assumptionsHeld,
    refused,
    evidence,
    recheckedAtRecovery: boundedOrNull(recheckedAtRecovery),
    approvedBy,
    lateLanding: lateEntry && lateEntry.after !== 'COMMITTED' ? { evidence: evidenceOf(null, lateEntry.entry.result), after: lateEntry.after, cents: amount, currency } : null,
    answer,
    answerFrom,
    operatorActions,
    finalMoney,
    answerMatchesFinalMoney,
    // Exposure is a refund charged back, so none without a dispute (deriveExposure finds its chargebacks among them),
    // this refund's share of the overlap given out with the charge's refunds as the receipt last read them.
    exposure: finalMoney.disputes.length === 0 ? null : deriveExposure(finalMoney, [...(money.chargeRefunds?.values() ?? [])]),
    compensatedTwice: effectKind === 'credit' ? deriveSecondCompensation(money, answer, amount, incidentOf(described?.effect), currency) : null,
    entries: entries.length,
    problems,
  };
}

export function verify(input: unknown, options: VerifyOptions = {}): Verification {
  let claimed: string | null = null;
  try {
    const id: unknown = typeof input === 'object' && input !== null ? (input as { effectId?: unknown }).effectId : null;
    claimed = typeof id === 'string' ? id : null;
    const parsed = parseReceipt(input);
    if (!parsed.ok) return invalid(parsed.problems, claimed);
    return verifyParsed(input, parsed.receipt, keysGiven(options.publicKeys));
  } catch (error) {
    // Hostile input can reach corners no rule foresaw (a getter that throws, a value no hash can take): the
    // answer is still an answer, never an exception.
    return invalid([`the receipt cannot be verified: ${error instanceof Error ? error.message : String(error)}`], claimed);
  }
}

/** A landed object recorded at another amount than the effect's, as a problem naming both amounts and the entries. */
function otherAmountProblem(mismatch: LandedAmountMismatch, entries: readonly Entry[], currency: string | null): string {
  const [first, ...more] = mismatch.entries;
  const entry = first === undefined ? undefined : entries[first];
  const where = entry === undefined || first === undefined ? 'the receipt records' : `${describeEntry(entry, first)}${more.length > 0 ? ` and ${more.length} more record` : ' records'}`;
  const object = `${mismatch.objectType === 'refund' ? 'refund' : 'balance credit'} ${clipped(mismatch.object)}`;
  const amounts = `at ${moneyText(mismatch.cents, currency)}, not the effect's amount of ${moneyText(mismatch.effectCents, currency)}`;
  return mismatch.latest
    ? `${where} ${object} ${amounts}: the money that moved at Stripe is not what was approved and reported sent`
    : `${where} ${object} ${amounts}, which a later record of it contradicts`;
}

function idsOf(found: string | null, result: unknown): string[] {
  const id: unknown = isJsonObject(result as never) ? (result as { id?: unknown }).id : undefined;
  if (typeof id !== 'string' || id === found) return found === null ? [] : [found];
  return found === null ? [id] : [found, id];
}

function evidenceOf(found: string | null, result: unknown): string | null {
  if (found !== null) return found;
  const id: unknown = isJsonObject(result as never) ? (result as { id?: unknown }).id : undefined;
  if (typeof id === 'string') return id;
  if (typeof id === 'number') return String(id);
  return null;
}

const VIA_OUTCOME = {
  send: 'COMMITTED',
  'failed-but-landed': 'COMMITTED_ON_QUERY',
  'recovery-query': 'COMMITTED_ON_QUERY',
  'late-result': 'COMMITTED_ON_QUERY',
  'retry-idempotent': 'COMMITTED_BY_RETRY',
  'recovery-reapply': 'REAPPLIED_AFTER_QUERY',
} as const;

/**
 * The outcome the journal settled on, in DESIGN §4's words; null while a dispatch is open or nothing settled.
 * Refusals of another payload never change it. A late landing after AMBIGUOUS, or after a refusal that closed a
 * dispatch (its send went out before recovery refused it), settles it: the effect landed, as a lookup would have
 * shown (COMMITTED_ON_QUERY).
 */
export function outcomeOf(entries: readonly Entry[]): string | null {
  return settlementOf(entries).outcome;
}

/**
 * Why the effect's current outcome (currentOutcome) is a refusal or AMBIGUOUS, in the gate's words ("approval ap_x
 * covers at most $20.00, not $25.00"): the reason of the entry that settled it. Null for a commit, and while the
 * latest proposal is not settled.
 */
export function outcomeReason(entries: readonly Entry[]): string | null {
  return currentOutcome(entries) === null ? null : settlementOf(entries).reason;
}

/**
 * Where the journal's outcome stands after some entries: `final` once a commit settled it for good; `afterSend` when
 * a refusal closed a dispatch (its send went out, and may still land) and no dispatch followed, whatever refusals of
 * a resubmit came after it (they refused before any send, and take back nothing the closed dispatch sent).
 */
type Settlement = { outcome: string | null; reason: string | null; final: boolean; afterSend?: boolean };

const UNSETTLED: Settlement = { outcome: null, reason: null, final: false };

/** The settlement after `entry`, given the one before it: settlementOf, one entry at a time. */
function settle(before: Settlement, entry: Entry): Settlement {
  if (before.final) return before;
  if (entry.kind === 'COMMITTED') return { outcome: VIA_OUTCOME[entry.via], reason: null, final: true };
  if (entry.kind === 'AMBIGUOUS') return { outcome: 'AMBIGUOUS', reason: entry.reason, final: false };
  if (entry.kind === 'REFUSED' && !isForeignRefusal(entry)) return { outcome: entry.code, reason: entry.reason, final: false, afterSend: entry.resolves || before.afterSend === true };
  if (entry.kind === 'DISPATCHED') return UNSETTLED;
  // A landing after AMBIGUOUS, or after a refusal that closed a dispatch whose send went out (recovery found
  // nothing in time, the send landed later): the effect landed, as a later lookup would have shown.
  if (entry.kind === 'LATE_RESULT' && entry.outcome === 'landed' && (before.outcome === 'AMBIGUOUS' || before.afterSend === true)) return { outcome: 'COMMITTED_ON_QUERY', reason: null, final: false };
  return before;
}

function settlementOf(entries: readonly Entry[]): Settlement {
  let settled = UNSETTLED;
  for (const entry of entries) {
    settled = settle(settled, entry);
    if (settled.final) break;
  }
  return settled;
}

/**
 * The outcome that answers the effect's latest proposal, or null while that proposal is not settled: a refusal
 * recorded before a later PROPOSED (a re-decision) answered an earlier one. A commit or an ambiguity is final for
 * every proposal of the effect.
 */
export function currentOutcome(entries: readonly Entry[]): string | null {
  if (openDispatch(entries) !== null) return null;
  const outcome = outcomeOf(entries);
  if (outcome === null) return null;
  if (entries.some((entry) => entry.kind === 'COMMITTED' || entry.kind === 'AMBIGUOUS')) return outcome;
  let lastProposed = -1;
  let lastRefused = -1;
  entries.forEach((entry, index) => {
    if (entry.kind === 'PROPOSED') lastProposed = index;
    if (entry.kind === 'REFUSED' && !isForeignRefusal(entry)) lastRefused = index;
  });
  return lastRefused > lastProposed ? outcome : null;
}

/**
 * What authenticates each entry of a receipt, for a reader who looks at one entry at a time (the page's timeline):
 * `signed` (its own signature verifies with a known key), `covered` (unsigned, and the signed entry at index `by`
 * covers it and verifies), `altered` (its content no longer matches its hash), `bad_signature`, `unknown_key`, or
 * `unsigned` (no signature covers it). The whole receipt's answer is still verify()'s: this says where a problem is.
 */
export type EntrySignature = { status: 'signed' | 'covered' | 'altered' | 'bad_signature' | 'unknown_key' | 'unsigned'; kid: string | null; by: number | null };

export function entrySignatures(receipt: Receipt, keys: PublicKeySet): EntrySignature[] {
  const own = receipt.entries.map((entry): EntrySignature => {
    let hashed: string | null;
    try {
      hashed = entryHash(entry as unknown as Record<string, unknown>);
    } catch {
      hashed = null;
    }
    if (hashed !== entry.hash) return { status: 'altered', kid: entry.kid ?? null, by: null };
    if (entry.sig === null) return { status: 'unsigned', kid: null, by: null };
    const key = entry.kid === undefined ? undefined : keys.get(entry.kid);
    if (!key) return { status: 'unknown_key', kid: entry.kid ?? null, by: null };
    return { status: entrySignatureValid(entry, entry.sig, key) ? 'signed' : 'bad_signature', kid: entry.kid ?? null, by: null };
  });
  // A v2 or v3 signed entry covers the `covers` unsigned entries right before it (entries.ts); they are as good as it
  // is. Its signature commits to them only through the `prev` links, its and theirs: an entry those links do not lead
  // to (replaced whole, with a hash made for it, which takes no key) is covered by nothing anyone signed.
  receipt.entries.forEach((entry, index) => {
    const signer = own[index];
    if (entry.sig === null || entry.v === 1 || signer === undefined) return;
    const covers = entry.covers ?? 0;
    let link = entry.prev;
    for (let back = 1; back <= covers; back += 1) {
      const covered = own[index - back];
      const coveredEntry = receipt.entries[index - back];
      if (covered === undefined || coveredEntry === undefined || covered.status !== 'unsigned' || coveredEntry.hash !== link) break;
      own[index - back] = signer.status === 'signed' ? { status: 'covered', kid: signer.kid, by: index } : { ...signer, by: index };
      link = coveredEntry.prev;
    }
  });
  return own;
}
