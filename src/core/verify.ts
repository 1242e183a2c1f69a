// verify(): re-derives everything a receipt claims from its entries alone, offline. Every problem is a readable
// sentence; a receipt is valid only when there are none.
import { entryHash, type Checks, type Entry, type EntryOf } from './entries.js';
import { collectMoneyFacts, deriveExposure, deriveFinalMoney, type Exposure, type FinalMoney, type MoneyStatus } from './final-money.js';
import { headSignatureValid, type Receipt } from './receipt.js';
import { parseReceipt } from './receipt-schema.js';
import { verifyText, type PublicKeySet } from './signing.js';
import { isJsonObject } from './json.js';

export type Verification = {
  valid: boolean;
  chainIntact: boolean;
  signed: boolean | null;
  effectId: string | null;
  outcome: string | null;
  happened: boolean | 'unknown';
  happenedOnce: boolean;
  authorizedWhenFired: boolean | null;
  assumptionsHeld: boolean | null;
  refused: { code: string; reason: string } | null;
  evidence: string | null;
  recheckedAtRecovery: Checks | null;
  approvedBy: string | null;
  answer: MoneyStatus;
  finalMoney: FinalMoney;
  answerMatchesFinalMoney: boolean | null;
  exposure: Exposure | null;
  entries: number;
  problems: string[];
};

export type VerifyOptions = { publicKeys?: PublicKeySet };

const EMPTY_MONEY: FinalMoney = { status: 'unknown', refunds: [], failureReason: null, disputes: [] };

function invalid(problems: string[], effectId: string | null): Verification {
  return {
    valid: false, chainIntact: false, signed: null, effectId, outcome: null, happened: 'unknown', happenedOnce: false,
    authorizedWhenFired: null, assumptionsHeld: null, refused: null, evidence: null, recheckedAtRecovery: null, approvedBy: null,
    answer: 'unknown', finalMoney: EMPTY_MONEY, answerMatchesFinalMoney: null, exposure: null, entries: 0, problems,
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
  receipt.entries.forEach((entry, index) => {
    const name = describeEntry(entry, index);
    if (entry.effectId !== receipt.effectId) problems.push(`${name} belongs to effect ${entry.effectId.slice(0, 12)}…, not this receipt's effect: it was spliced in from another effect`);
    const recomputed = rehash(raw[index]);
    if (typeof recomputed !== 'string') problems.push(`${name} was altered: it holds a value that cannot be hashed (${recomputed.problem})`);
    else if (recomputed !== entry.hash) problems.push(`${name} was altered: its content no longer matches its hash`);
    if (seen.has(entry.hash)) problems.push(`${name} is a duplicate of an earlier entry`);
    seen.add(entry.hash);
    if (entry.prev !== prev) {
      linksBroken = true;
      problems.push(`${name} does not follow the entry before it: an entry was dropped, inserted or reordered`);
    }
    prev = entry.hash;
  });
  if (receipt.entries.length === 0) problems.push('receipt has no entries');
  else if (receipt.entries[0]?.kind !== 'PROPOSED') problems.push('receipt does not start with a PROPOSED entry');
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

function checkSignatures(receipt: Receipt, keys: PublicKeySet, problems: string[]): boolean {
  let ok = true;
  receipt.entries.forEach((entry, index) => {
    const key = keys.get(entry.kid);
    if (!key) {
      ok = false;
      problems.push(`${describeEntry(entry, index)} is signed with an unknown key ${entry.kid}`);
    } else if (!verifyText(entry.hash, entry.sig, key)) {
      ok = false;
      problems.push(`${describeEntry(entry, index)} has a signature that does not verify: the chain was rebuilt or the entry forged without the signing key`);
    }
  });
  const head = headSignatureValid(receipt.head, keys);
  if (head === 'unknown-key') {
    ok = false;
    problems.push(`the receipt head is signed with an unknown key ${receipt.head.kid}`);
  } else if (!head) {
    ok = false;
    problems.push('the receipt head signature does not verify');
  }
  return ok;
}

type Send = { checks: Checks; amount: number | null };

function effectAmount(entry: EntryOf<'DISPATCHED'>): number | null {
  return typeof entry.effect.amount === 'number' ? entry.effect.amount : null;
}

function approvalHeld(send: Send): boolean {
  const { checks } = send;
  if (!checks.approvalLive || checks.approvalProblems.length > 0) return false;
  const approval = checks.approval;
  if (approval === null) return false;
  if (approval.revoked) return false;
  if (send.amount !== null && send.amount > approval.capCents) return false;
  return true;
}

export function verify(input: unknown, options: VerifyOptions = {}): Verification {
  const parsed = parseReceipt(input);
  const claimed: unknown = typeof input === 'object' && input !== null ? (input as { effectId?: unknown }).effectId : null;
  const effectId = typeof claimed === 'string' ? claimed : null;
  if (!parsed.ok) return invalid(parsed.problems, effectId);
  const receipt = parsed.receipt;
  const raw = (input as { entries: unknown[] }).entries;
  const problems: string[] = [];

  const chainIntact = checkChain(receipt, raw, problems);
  const signed = options.publicKeys ? checkSignatures(receipt, options.publicKeys, problems) : null;

  const entries = receipt.entries;
  let open: EntryOf<'DISPATCHED'> | null = null;
  let unsafeResend = false;
  let committedCount = 0;
  let firstCommitted: EntryOf<'COMMITTED'> | null = null;
  let approvedBy: string | null = null;
  let recheckedAtRecovery: Checks | null = null;
  let lastRefused: EntryOf<'REFUSED'> | null = null;
  let ambiguous = false;
  let sends: Send[] = [];
  let targetRefused = false;
  const authorized = new Set<string>();

  entries.forEach((entry, index) => {
    const name = describeEntry(entry, index);
    switch (entry.kind) {
      case 'PROPOSED':
      case 'OBSERVED':
      case 'LATE_RESULT':
        return;
      case 'AUTHORIZED':
        authorized.add(entry.approval.id);
        return;
      case 'DISPATCHED':
        if (open) {
          unsafeResend = true;
          problems.push(`${name} opens a second dispatch while an earlier one is still open`);
        }
        if (!authorized.has(entry.approval)) problems.push(`${name} was sent without a prior AUTHORIZED for approval ${entry.approval}`);
        if (targetRefused) {
          unsafeResend = true;
          problems.push(`${name} sends again after the target refused this effect outright`);
        }
        open = entry;
        sends.push({ checks: entry.checks, amount: effectAmount(entry) });
        return;
      case 'COMMITTED':
        committedCount += 1;
        if (committedCount > 1) problems.push(`${name} commits the effect a second time`);
        if (!open) {
          problems.push(`${name} closes no open dispatch: a commit without a send`);
        } else {
          if (firstCommitted === null) approvedBy = open.checks.approval?.approver ?? null;
          if (entry.via === 'retry-idempotent' || entry.via === 'recovery-reapply') {
            if (entry.rechecked) sends.push({ checks: entry.rechecked, amount: effectAmount(open) });
            else problems.push(`${name} resent the effect without a recorded re-check`);
          }
        }
        if (entry.rechecked) recheckedAtRecovery = entry.rechecked;
        firstCommitted ??= entry;
        open = null;
        return;
      case 'AMBIGUOUS':
        if (!open) problems.push(`${name} closes no open dispatch`);
        if (entry.rechecked) recheckedAtRecovery = entry.rechecked;
        ambiguous = true;
        open = null;
        return;
      case 'REFUSED':
        lastRefused = entry;
        if (entry.rechecked) recheckedAtRecovery = entry.rechecked;
        if (entry.resolves) {
          if (!open) problems.push(`${name} resolves no open dispatch`);
          if (entry.code === 'REFUSED:target_error') targetRefused = true;
          // The dispatch it resolves never landed, so its checks vouch for nothing.
          sends = sends.slice(0, -1);
          open = null;
        }
        return;
      default: {
        const never: never = entry;
        return never;
      }
    }
  });

  // A fenced-out sender's answer that landed is evidence too: the money moved even if the journal settled otherwise.
  const lateLanding = entries.find((entry): entry is EntryOf<'LATE_RESULT'> => entry.kind === 'LATE_RESULT' && entry.outcome === 'landed') ?? null;
  const happened: boolean | 'unknown' = committedCount > 0 || lateLanding !== null ? true : ambiguous || open !== null ? 'unknown' : false;
  const facts = collectMoneyFacts(entries);
  const committedRefunds = firstCommitted ? refundIdsOf(firstCommitted) : [];
  for (const id of facts.refunds.keys()) {
    if (committedRefunds.length > 0 && !committedRefunds.includes(id)) problems.push(`an OBSERVED refund ${id} is not the refund the effect committed (${committedRefunds.join(', ')})`);
    if (happened === false) problems.push(`an OBSERVED refund ${id} exists for an effect the journal says never landed`);
  }
  const happenedOnce = !unsafeResend && committedCount <= 1 && facts.refunds.size <= 1;

  const firstProposal = entries[0]?.kind === 'PROPOSED' ? entries[0] : null;
  const effectKind = firstProposal && typeof firstProposal.effect.kind === 'string' ? firstProposal.effect.kind : null;
  const finalMoney = deriveFinalMoney(facts, happened, effectKind);
  const answer: MoneyStatus = happened === true ? 'returned' : happened === false ? 'not_returned' : 'unknown';
  const answerMatchesFinalMoney = answer === 'unknown' || finalMoney.status === 'unknown' || finalMoney.status === 'pending' ? null : answer === finalMoney.status;

  const fired = sends.length > 0 && happened !== false;
  const authorizedWhenFired = fired ? sends.every(approvalHeld) : null;
  if (authorizedWhenFired === false) problems.push('a send went out with no record of a live approval covering it');
  const assumptionsHeld = fired ? sends.every((send) => send.checks.violations.length === 0) : null;

  const refusedEntry = lastRefused as EntryOf<'REFUSED'> | null;
  const refused = happened !== true && refusedEntry ? { code: refusedEntry.code, reason: refusedEntry.reason } : null;

  return {
    valid: problems.length === 0,
    chainIntact,
    signed,
    effectId: receipt.effectId,
    outcome: outcomeOf(entries),
    happened,
    happenedOnce,
    authorizedWhenFired,
    assumptionsHeld,
    refused,
    evidence: firstCommitted ? evidenceOf(firstCommitted) : lateLanding && isJsonObject(lateLanding.result) && typeof lateLanding.result.id === 'string' ? lateLanding.result.id : null,
    recheckedAtRecovery,
    approvedBy,
    answer,
    finalMoney,
    answerMatchesFinalMoney,
    exposure: deriveExposure(finalMoney),
    entries: entries.length,
    problems,
  };
}

function refundIdsOf(entry: EntryOf<'COMMITTED'>): string[] {
  const ids = new Set<string>();
  if (entry.found !== null) ids.add(entry.found);
  if (isJsonObject(entry.result) && typeof entry.result.id === 'string') ids.add(entry.result.id);
  return [...ids];
}

function evidenceOf(entry: EntryOf<'COMMITTED'>): string | null {
  if (entry.found !== null) return entry.found;
  if (isJsonObject(entry.result) && typeof entry.result.id === 'string') return entry.result.id;
  return null;
}

const VIA_OUTCOME = {
  send: 'COMMITTED',
  'failed-but-landed': 'COMMITTED_ON_QUERY',
  'recovery-query': 'COMMITTED_ON_QUERY',
  'retry-idempotent': 'COMMITTED_BY_RETRY',
  'recovery-reapply': 'REAPPLIED_AFTER_QUERY',
} as const;

/** The outcome the journal settled on, in DESIGN §4's words; null while a dispatch is open or nothing settled. */
export function outcomeOf(entries: readonly Entry[]): string | null {
  let outcome: string | null = null;
  for (const entry of entries) {
    if (entry.kind === 'COMMITTED') return VIA_OUTCOME[entry.via];
    if (entry.kind === 'AMBIGUOUS') outcome = 'AMBIGUOUS';
    else if (entry.kind === 'REFUSED') outcome = entry.code;
    else if (entry.kind === 'DISPATCHED') outcome = null;
  }
  return outcome;
}
