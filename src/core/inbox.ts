// The escalation inbox (issue 13 §4), pure: which settled effects a person must look at, what each item says (what
// happened, the money at stake, the facts that changed, what a person may do), and the rules an operator's
// RESOLVED entry must follow in a receipt.
//
// An item is derived from the journal: the entry that opens it (an AMBIGUOUS, a REFUSED at recovery or on a stale
// premise) is the atomic record that the item exists, and the inbox index is written right after it, from these
// functions, by whoever settled the effect (and again, harmlessly, by whoever meets the settled effect later).
// Exposure alerts and model deviations are opened by the facts worker and the decider, with their own detail.
//
// A failed case (`case_failed`) is the one kind no effect stands behind: nothing was recorded for it, and nothing may
// be, since a record would bind the case's request id (`case:<case id>`) and a case submitted again could never be
// decided. Its item lives in the index alone: opened by the decisions worker right after it writes the case failed,
// named by the case and the failure (caseFailureItemId), and closed in the index (by a person's dismissal, or by the
// worker once the case is decided or fails again), never on a receipt.
import { premisesDecidedOn } from './decisions.js';
import { currencyOfEffectOrCredit } from './effect-currency.js';
import { effectIdFor } from './effect-id.js';
import { effectFactsOrNull, kindOfSubject } from './effects.js';
import type { Entry, EntryOf, OperatorAction, PremiseChange } from './entries.js';
import { canonicalJson, sha256Hex, type Json, type JsonObject } from './json.js';
import { explainOutcome, type Outcome } from './outcomes.js';
import { mayReopenCase } from './cases.js';
import type { ErrorCode } from './errors.js';
import { RESERVED_REQUEST_PREFIXES } from './proposal.js';
import { isVisibleText } from './text.js';
import { currentOutcome } from './verify.js';

export const INBOX_KINDS = ['ambiguous', 'lease_at_recovery', 'stale_premise', 'stale_premise_at_recovery', 'model_deviated', 'exposure', 'reapproval_refused', 'case_failed'] as const;
export type InboxKind = (typeof INBOX_KINDS)[number];
/** The kinds a recorded effect stands behind: their items are named `<kind>:<effect id>`, and acted on in its chain. */
export type EffectInboxKind = Exclude<InboxKind, 'case_failed'>;
export const OPERATOR_ACTIONS = ['reapprove', 'resolve', 'dismiss'] as const satisfies readonly OperatorAction[];

/**
 * The outcomes that may open an item, and the kind each opens. A refusal over the caps or under a dead approval opens
 * one only for a re-approval (REAPPROVAL_REFUSALS): its item closed for good when it was recorded, so without one the
 * person's decision would be lost with nothing left to act on; any other request's caller reads its refusal itself.
 */
export const INBOX_OUTCOMES: Partial<Record<string, EffectInboxKind>> = {
  AMBIGUOUS: 'ambiguous',
  'REFUSED:lease_at_recovery': 'lease_at_recovery',
  'REFUSED:stale_premise': 'stale_premise',
  'REFUSED:stale_premise_at_recovery': 'stale_premise_at_recovery',
  'REFUSED:lease': 'reapproval_refused',
  'REFUSED:over_cap': 'reapproval_refused',
};

/** The outcomes that open an item only for a re-approval's request (`request.reapproves` set on its proposal). */
const REAPPROVAL_REFUSALS: readonly string[] = ['REFUSED:lease', 'REFUSED:over_cap'];

/**
 * What a person may do with each kind. An AMBIGUOUS effect may have landed, so it is never re-approved: a new request
 * could move the money a second time; a person checks Stripe and records what it shows. A refusal sent nothing, so
 * it may be re-approved under a new approval (new premises read now, through the gate). An exposure is money
 * already out: the answer is at Stripe (the dispute), so it is dismissed with a note saying what was done. A failed
 * case moved no money and has no effect to re-approve: what decides it is the case submitted again (caseFailureAdvice),
 * and the item is dismissed once a person has seen to that. An item's own actions may offer fewer (itemActions: a
 * credit whose currency changed is not re-approved, nor a model deviation of another kind than its case's).
 */
export const ALLOWED_ACTIONS: Record<InboxKind, readonly OperatorAction[]> = {
  ambiguous: ['resolve', 'dismiss'],
  lease_at_recovery: ['reapprove', 'dismiss'],
  stale_premise: ['reapprove', 'dismiss'],
  stale_premise_at_recovery: ['reapprove', 'dismiss'],
  model_deviated: ['reapprove', 'dismiss'],
  exposure: ['dismiss'],
  reapproval_refused: ['reapprove', 'dismiss'],
  case_failed: ['dismiss'],
};

/**
 * The change of a credit's `currency` premise an item lists, or null when it lists none (or the item is no credit's: a
 * credit's subject is `customer:<id>`, core/effects.ts). A credit's `currency` is the one the credit target gives
 * credits in (INTERLOCK_CREDIT_CURRENCY), and its amount counts that currency's smallest unit: a credit decided as ¥5,000
 * and refused by a worker set to usd would, re-approved there, send the same 5000 as $50.00, another sum of money than
 * the one decided and approved (an approval's cap is a number with no currency, so it would not catch it). Such an
 * item is not re-approved (itemActions); the credit is decided again in the new currency.
 */
export function creditCurrencyChange(item: { subject: string; changes: readonly PremiseChange[] }): PremiseChange | null {
  if (!item.subject.startsWith('customer:')) return null;
  const lower = (value: Json) => (typeof value === 'string' ? value.toLowerCase() : value);
  return item.changes.find((change) => change.field === 'currency' && canonicalJson(lower(change.was)) !== canonicalJson(lower(change.now))) ?? null;
}

/**
 * The kind of money a model_deviated item's model decided (`detail.decided_action`) when it is not the kind its case
 * asks for (a refund on a `payment:` subject, a credit on a `customer:` one), or null when it is the case's kind, the
 * item is of another kind, or its detail does not say. The deviation is recorded as the case's effect (the refund of
 * the case's payment, with the cents the model asked for), so re-approving a credit the model decided on a refund case
 * would send a refund nobody decided: approving an effect the model never chose is not approving its decision. Such an
 * item is not re-approved (itemActions): it is dismissed, and the case decided again as a new case.
 */
export function deviatedKind(item: { kind: InboxKind; subject: string; detail?: { [key: string]: Json } | null }): string | null {
  if (item.kind !== 'model_deviated') return null;
  const decided = item.detail?.['decided_action'];
  const asked = kindOfSubject(item.subject);
  return typeof decided === 'string' && asked !== null && decided !== asked ? decided : null;
}

/**
 * What a person may do with an item as its kind allows (ALLOWED_ACTIONS), but for a credit whose currency changed
 * (creditCurrencyChange) and a model deviation of another kind than its case's (deviatedKind), neither of which is
 * re-approved: one rule wherever an item's actions are written (when it opens, when a re-approval brings its changes
 * up to date), so the page, the CLI and the API offer the same.
 */
export function itemActions(item: { kind: InboxKind; subject: string; changes: readonly PremiseChange[]; detail?: { [key: string]: Json } | null }): OperatorAction[] {
  const allowed = [...ALLOWED_ACTIONS[item.kind]];
  return creditCurrencyChange(item) === null && deviatedKind(item) === null ? allowed : allowed.filter((action) => action !== 'reapprove');
}

export type InboxItemDraft = {
  id: string;
  kind: InboxKind;
  effectId: string;
  subject: string;
  /** The outcome the effect had when the item opened (null for a model deviation recorded before any outcome). */
  outcome: string | null;
  /** What happened, in one or two sentences. */
  happened: string;
  /** What a person's decision is about, in `currency`'s smallest unit: the effect's amount, or an exposure's total. */
  centsAtStake: number;
  /**
   * The currency of `centsAtStake` (lowercase ISO code): an exposure's is its alert's, any other item's its effect's
   * (currencyOfEffect). Null when nothing recorded says it, absent on items opened before items carried one: either
   * reads as of a currency unknown (moneyText), never as dollars.
   */
  currency?: string | null;
  /** The facts that changed, as the premise check recorded them (`was` → `now`). */
  changes: PremiseChange[];
  actions: OperatorAction[];
  /** Kind-specific detail: the alert's advice for an exposure, the deviation for a model that left its approval. */
  detail: { [key: string]: Json } | null;
};

const ITEM_ID = /^(ambiguous|lease_at_recovery|stale_premise|stale_premise_at_recovery|model_deviated|exposure|reapproval_refused):([0-9a-f]{64})$/;
/** `case_failed:<the case's effect id>:<when its failure was written, ms>` (caseFailureItemId). */
const CASE_FAILED_ITEM_ID = /^case_failed:([0-9a-f]{64}):(\d{1,16})$/;

export function inboxItemId(kind: EffectInboxKind, effectId: string): string {
  return `${kind}:${effectId}`;
}

/**
 * The kind and effect an item id names, or null when it names none. A case_failed item's effect is the one its case
 * proposes under (caseEffectIdOf), which no failed case has recorded.
 */
export function parseInboxItemId(id: string): { kind: InboxKind; effectId: string } | null {
  const failed = CASE_FAILED_ITEM_ID.exec(id);
  if (failed) return { kind: 'case_failed', effectId: failed[1] as string };
  const match = ITEM_ID.exec(id);
  if (!match) return null;
  return { kind: match[1] as InboxKind, effectId: match[2] as string };
}

/** The effect id a case proposes under: its request's, `case:<case id>` (queues/decisions.ts caseEffectId). */
export function caseEffectIdOf(caseId: string): string {
  return effectIdFor({ requestId: `${RESERVED_REQUEST_PREFIXES.case}${caseId}`, effect: {} });
}

/**
 * The item of one failure of a case: named by the case (its effect id, hex, so the id is safe in a URL and a cursor)
 * and by when the failure was written (the failed status's `updatedAt`, ms). A failed status is written once per
 * failure and never rewritten while the case stays failed, so whoever meets the same failure again names the same item;
 * a case submitted again that fails again is written failed anew, later, and opens an item of its own.
 */
export function caseFailureItemId(caseId: string, failedAt: number): string {
  return `case_failed:${caseEffectIdOf(caseId)}:${failedAt}`;
}

/**
 * What a person does about a case that failed with `code`, in one or two sentences. A failure that passes (the
 * registry's retryable codes: mayReopenCase) is decided afresh when the same case is submitted again under its id; any
 * other keeps the case failed under its id for good (submitted again, it is answered as it stands), so it is submitted
 * under a new case id once what failed it is fixed.
 */
export function caseFailureAdvice(caseId: string, code: ErrorCode, subject: string, approval: string): string {
  const again = `submit case ${caseId} again under the same id and payload (POST /v1/cases, \`interlock case\`): it is decided afresh`;
  if (mayReopenCase({ state: 'failed', effectId: null, error: { code, message: '' } })) {
    switch (code) {
      case 'decider_unavailable':
        return `Once the Messages API answers again, ${again}.`;
      case 'decision_invalid':
        return `The model's answer was no usable decision: ${again}, and the model is asked again; or decide it by hand under approval ${approval} (POST /v1/refunds or /v1/credits).`;
      case 'premise_read_failed':
        return `Once Stripe answers for ${subject} again, ${again}.`;
      case 'decision_interrupted':
        return `Once Redis (or what the error names) answers again, ${again}.`;
      default:
        return `Once what the error names is fixed, ${again}.`;
    }
  }
  const stays = `case ${caseId} stays failed under its id (submitted again, it is answered as it stands and not decided)`;
  switch (code) {
    case 'unknown_approval':
      return `Grant an approval that covers ${subject} (or find the live one), then submit the case under a new case id: ${stays}.`;
    case 'invalid_request':
      return `Submit the case under a new case id with what the error names changed (an approval that covers ${subject}): ${stays}.`;
    case 'invalid_config':
      return `Fix the decider's configuration the error names and restart the workers, then submit the case under a new case id: ${stays}.`;
    case 'conflicting_payload':
      return `Submit the case under a new case id: its own request id holds a proposal the case did not record, and ${stays}.`;
    default:
      return `Look into what the error names (the decisions worker's log names the case), then submit the case under a new case id: ${stays}.`;
  }
}

/** A case as it failed: what the decisions worker wrote, and when (its status's `updatedAt`, ms). */
export type CaseFailure = { caseId: string; subject: string; approval: string; code: ErrorCode; message: string; failedAt: number; attempts: number };

/**
 * The item a failed case opens. No money moved and none is at stake (0, no currency); the case names what happened
 * and `detail.what_to_do` what a person does. `effectId` is the effect the case would propose under, not a recorded one.
 */
export function caseFailureItem(failure: CaseFailure): InboxItemDraft {
  return {
    id: caseFailureItemId(failure.caseId, failure.failedAt),
    kind: 'case_failed',
    effectId: caseEffectIdOf(failure.caseId),
    subject: failure.subject,
    outcome: null,
    happened: `Case ${failure.caseId} failed (${failure.code}); nothing was proposed or sent: ${failure.message}`,
    centsAtStake: 0,
    currency: null,
    changes: [],
    actions: [...ALLOWED_ACTIONS.case_failed],
    detail: {
      case_id: failure.caseId,
      code: failure.code,
      message: failure.message,
      failed_at: new Date(failure.failedAt).toISOString(),
      attempts: failure.attempts,
      approval: failure.approval,
      resubmit: mayReopenCase({ state: 'failed', effectId: null, error: { code: failure.code, message: failure.message } }) ? 'same_case_id' : 'new_case_id',
      what_to_do: caseFailureAdvice(failure.caseId, failure.code, failure.subject, failure.approval),
    },
  };
}

/**
 * Whether a note a person writes holds something a reader can see (isVisibleText): a note of only spaces and
 * invisible characters is signed into a receipt and shown as blank, so it is refused as a blank one is.
 */
export const isVisibleNote: (note: string) => boolean = isVisibleText;

/** Why a note was refused (isVisibleNote), in the words of the API's and the CLI's field problems. */
export const BLANK_NOTE = 'must say what was checked or done in characters a reader can see (spaces and invisible characters alone read as nothing)';

/**
 * The premises an effect's refusal was judged against, as the gate takes them (gate/submit.ts): premisesDecidedOn for
 * its latest proposal (the one judged last: a re-decision after a refusal is judged again), so the first proposal
 * under that proposal's approval; a retry under one approval recorded on other facts is held to the first one's. The
 * item's changes are told against these. Null when the chain holds no proposal.
 */
export function decidedPremises(entries: readonly Entry[]): JsonObject | null {
  const latest = entries.findLast((entry): entry is EntryOf<'PROPOSED'> => entry.kind === 'PROPOSED');
  return latest === undefined ? null : premisesDecidedOn(entries, latest.approval, latest.premises);
}

/**
 * The facts an item shows a person: those its effect was decided on (`decided`: decidedPremises), each one the item
 * lists as changed as it lists it now. A re-approval stands on exactly these: the facts read at the click must be the
 * same (factChanges), or the person would approve facts they were never shown.
 */
export function factsShown(decided: JsonObject, changes: readonly PremiseChange[]): JsonObject {
  const shown: JsonObject = { ...decided };
  for (const change of changes) shown[change.field] = change.now;
  return shown;
}

/** A facts_shown fingerprint as factsShownHash writes it: 16 lowercase hex characters. */
export const FACTS_SHOWN = /^[0-9a-f]{16}$/;

/**
 * The fingerprint of the facts an item shows (factsShown): the first 16 hex characters of the SHA-256 of their
 * canonical JSON. Every view a re-approval is made from carries it (the API's `facts_shown`, the page's form, `interlock
 * inbox show`), and a re-approval that gives it stands on those facts: an item that shows other facts by the click (it
 * was brought up to date after someone else's re-approval was refused) has another fingerprint, and the re-approval is
 * refused, since the person never read what it shows now. It names facts, it proves nothing: it is no secret.
 */
export function factsShownHash(decided: JsonObject, changes: readonly PremiseChange[]): string {
  return sha256Hex(canonicalJson(factsShown(decided, changes))).slice(0, 16);
}

/**
 * How the facts `now` differ from `before`, over the facts `before` names (one `now` lacks reads as null, as the gate
 * reads it), compared as canonical JSON. Against the decided premises, this is what an item shows as changed once it
 * is brought up to date; against factsShown, what changed since the item showed it.
 */
export function factChanges(before: JsonObject, now: JsonObject): PremiseChange[] {
  const changes: PremiseChange[] = [];
  for (const field of Object.keys(before)) {
    const was = before[field] as Json;
    const is: Json = Object.hasOwn(now, field) ? (now[field] as Json) : null;
    if (canonicalJson(was) !== canonicalJson(is)) changes.push({ field, was, now: is });
  }
  return changes;
}

/** The request id a re-approval of `itemId` proposes under: one per item, so a repeated re-approval is the same request. */
export function reapprovalRequestId(itemId: string): string {
  return `${RESERVED_REQUEST_PREFIXES.reapproval}${itemId}`;
}

/** Why item `itemId` of an effect re-approved through `earlierItem` cannot be re-approved: one refused payload is, once. */
export function reapprovedAlready(effectId: string, earlierItem: string, itemId: string): string {
  return `Effect ${effectId} was re-approved already, through item ${earlierItem.slice(0, 100)} (its payload goes out as request ${reapprovalRequestId(earlierItem).slice(0, 120)}); one refused payload is re-approved once, so item ${itemId.slice(0, 100)} cannot be: dismiss it with a note. Nothing was recorded.`;
}

export function reapprovalEffectId(itemId: string): string {
  return effectIdFor({ requestId: reapprovalRequestId(itemId), effect: null });
}

function amountOf(entries: readonly Entry[]): number {
  const first = entries.find((entry): entry is EntryOf<'PROPOSED'> => entry.kind === 'PROPOSED');
  return (first ? effectFactsOrNull(first.effect)?.amount : null) ?? 0;
}

function lastRefusal(entries: readonly Entry[], code: string): EntryOf<'REFUSED'> | null {
  for (let index = entries.length - 1; index >= 0; index -= 1) {
    const entry = entries[index];
    if (entry?.kind === 'REFUSED' && entry.code === code) return entry;
  }
  return null;
}

/** The item the effect's latest proposal re-approves (its request names it), or null when it is no re-approval's. */
function reapprovedItem(entries: readonly Entry[]): string | null {
  const latest = entries.findLast((entry): entry is EntryOf<'PROPOSED'> => entry.kind === 'PROPOSED');
  const request = latest?.request;
  const item = typeof request === 'object' && request !== null && !Array.isArray(request) ? request['reapproves'] : undefined;
  return typeof item === 'string' ? item : null;
}

/**
 * The item a settled effect opens, or null when its current outcome opens none. `creditCurrency`: the currency credits
 * are given in (INTERLOCK_CREDIT_CURRENCY), the amount's for a credit whose chain records none (currencyOfEffectOrCredit).
 */
export function inboxItemFor(effectId: string, subject: string, entries: readonly Entry[], creditCurrency: string | null): InboxItemDraft | null {
  const outcome = currentOutcome(entries);
  const kind = outcome === null ? undefined : INBOX_OUTCOMES[outcome];
  if (outcome === null || kind === undefined) return null;
  const reapproved = reapprovedItem(entries);
  if (REAPPROVAL_REFUSALS.includes(outcome) && reapproved === null) return null;
  const cents = amountOf(entries);
  let changes: PremiseChange[] = [];
  let happened = explainOutcome(outcome as Outcome);
  if (kind === 'ambiguous') {
    const ambiguous = [...entries].reverse().find((entry): entry is EntryOf<'AMBIGUOUS'> => entry.kind === 'AMBIGUOUS');
    if (ambiguous) happened = `${happened} (${ambiguous.reason})`;
  } else {
    const refused = lastRefusal(entries, outcome);
    changes = refused ? [...refused.changes] : [];
    if (refused) happened = `${happened} (${refused.reason})`;
    if (kind === 'reapproval_refused') happened = `${happened} This was the re-approval of item ${reapproved?.slice(0, 100) ?? 'unknown'}, which is closed.`;
  }
  return { id: inboxItemId(kind, effectId), kind, effectId, subject, outcome, happened, centsAtStake: cents, currency: currencyOfEffectOrCredit(entries, creditCurrency), changes, actions: itemActions({ kind, subject, changes }), detail: null };
}

/**
 * The disputes a person's closing of an exposure item decides on: those the item opened with. A refresh shows the
 * disputes as they stand (`detail.disputes`) and keeps the ones it opened with (`detail.disputesAtOpen`); which of them
 * a person read before closing cannot be known, so a dispute that arrived after the item opened is never taken as
 * handled: its alert stays open for a person.
 */
export function exposureDisputesDecided(item: Pick<InboxItemDraft, 'detail'>): Json[] {
  const atOpen = item.detail?.['disputesAtOpen'];
  const shown = item.detail?.['disputes'];
  if (!Array.isArray(shown)) return Array.isArray(atOpen) ? atOpen : [];
  // Only what the item both opened with and shows: one it stopped showing was not in front of the person either.
  return Array.isArray(atOpen) ? atOpen.filter((dispute) => shown.includes(dispute)) : shown;
}

/** Every action recorded on the effect, by item id (at most one each in a chain the gate wrote). */
export function actionsOf(entries: readonly Entry[]): Map<string, EntryOf<'RESOLVED'>> {
  const acted = new Map<string, EntryOf<'RESOLVED'>>();
  for (const entry of entries) if (entry.kind === 'RESOLVED' && !acted.has(entry.item)) acted.set(entry.item, entry);
  return acted;
}

/**
 * The rules an operator's entry follows (verify() reports each broken one): it names an item of this effect whose
 * kind allows the action; a resolution (landed / did not land) resolves an AMBIGUOUS effect and nothing else; a
 * re-approval names the request derived from the item and its effect id; no item is acted on twice; nothing is
 * acted on while a dispatch is open. `outcomeBefore` is the journal's outcome at the entry.
 */
export function actionProblems(entry: EntryOf<'RESOLVED'>, effectId: string, outcomeBefore: string | null, dispatchOpen: boolean, seen: ReadonlySet<string>): string[] {
  const problems: string[] = [];
  const item = parseInboxItemId(entry.item);
  if (item === null || item.effectId !== effectId) problems.push(`names item ${entry.item.slice(0, 90)}, which is not an inbox item of this effect`);
  else if (item.kind === 'case_failed') problems.push(`names item ${entry.item.slice(0, 90)}, a failed case's, which is closed in the inbox index and never on a receipt`);
  if (seen.has(entry.item)) problems.push(`acts a second time on item ${entry.item.slice(0, 90)}: an item takes one action`);
  if (dispatchOpen) problems.push('was recorded while a dispatch was open');
  if (!(OPERATOR_ACTIONS as readonly string[]).includes(entry.action)) problems.push(`records an unknown action ${String(entry.action).slice(0, 40)}`);
  else if (item !== null && !ALLOWED_ACTIONS[item.kind].includes(entry.action)) problems.push(`records a ${entry.action}, which an item of kind ${item.kind} does not allow`);
  if (entry.action === 'resolve') {
    if (entry.resolution === null) problems.push('resolves without saying whether the effect landed');
    if (outcomeBefore !== 'AMBIGUOUS') problems.push(`resolves an effect whose outcome was ${outcomeBefore?.slice(0, 90) ?? 'not settled'}, not AMBIGUOUS`);
  } else if (entry.resolution !== null) {
    problems.push(`carries a resolution on a ${entry.action}: only a resolve says whether the effect landed`);
  }
  if (entry.action === 'reapprove') {
    if (outcomeBefore === 'AMBIGUOUS' || (outcomeBefore !== null && !outcomeBefore.startsWith('REFUSED:'))) problems.push(`re-approves an effect whose outcome was ${outcomeBefore.slice(0, 90)}: money that moved, or may have, is never re-approved`);
    const expected = reapprovalRequestId(entry.item);
    if (entry.reapproval === null) problems.push('re-approves without naming the new request');
    else if (entry.reapproval.requestId !== expected || entry.reapproval.effectId !== effectIdFor({ requestId: expected, effect: null })) problems.push('re-approves under a request other than the one derived from its item');
  } else if (entry.reapproval !== null) {
    problems.push(`names a new request on a ${entry.action}`);
  }
  if (entry.by.name.trim() === '') problems.push('names nobody as the person who acted');
  return problems;
}
