// What a person may do with an escalation inbox item (issue 13 §4), for the support API and the CLI alike.
//
// A re-approval never resends the old payload blindly: it is a new request (its id derived from the item, so one
// item can be re-approved once), under a new approval, whose premises are read now through the target's fact
// reader, recorded as a new PROPOSED and queued for the gate, which re-reads them again before it sends and checks
// the approval atomically with the send. The facts read at the click must be the ones the item showed the person
// (factsShown: its effect's premises, with the changes it lists): facts that changed since refuse the re-approval
// (facts_changed) before anything is written, and the item is brought up to date to be read and decided on again.
// What the person was shown is named by the fingerprint their view carried (factsShownHash: the page's form always
// sends it, the API and the CLI take it): an item brought up to date since they read it (someone else's re-approval
// was refused) shows facts they never read, and the re-approval is refused too. A caller who gives none is taken to
// have read the item as it stands at the click.
// A credit the facts read at the click show the target is certain to refuse before its send is refused here, the item
// left open (creditRefusedOn): the credit target credits an incident once and refuses a credit for one others
// compensated, even in part (incident_already_compensated), or one in another currency than the customer is billed in
// (currency_mismatch). Re-approved, it would close the item for good and end on that refusal, nothing said of what to
// do; the refusal says it instead (what is still owed goes by hand in the Stripe Dashboard). So is a refund of more
// than the facts read at the click say the payment still has refundable (refundRefusedOn: amount_exceeds_refundable,
// the usual case of a refund gone stale because someone refunded by hand): its amount cannot change, so the refusal
// says to dismiss the item and decide a smaller refund under a new request id.
// A credit is never re-approved in another currency than the one it was decided in (currencyMoved): its amount counts
// the smallest unit of the currency credits are given in (INTERLOCK_CREDIT_CURRENCY), so a credit decided as ¥5,000
// and re-approved where credits are given in usd would send $50.00, and the approval's cap, a number with no
// currency, would not catch it. An item listing that change does not offer it (core/inbox.ts itemActions), and one
// whose facts read now give another currency than the credit was decided in, or than the item shows it in (a request
// re-decided in another currency since the item opened), is refused too; either way nothing is written and the item
// stays open. The change an item lists is judged on the facts read at the click, not on the item's record of them:
// facts that give the credit's currency again (a rolling change rolled back) bring the item up to date, its
// re-approval offered again, as for any facts that changed since it showed them.
// Only the payload (what to refund or credit) is carried over. The old effect's receipt gets a RESOLVED entry naming
// the new request, so the two are linked both ways (the new proposal's `request` names the item it re-approves).
import { randomBytes } from 'node:crypto';
import { firstProposal } from '../core/decisions.js';
import { payloadHash } from '../core/effect-id.js';
import type { Actor, ApprovalSnapshot, EntryOf, PremiseChange, Resolution } from '../core/entries.js';
import { approvalProblems } from '../core/approval.js';
import { currencyOfEffect } from '../core/effect-currency.js';
import { effectFactsOrNull, holdOf, kindOfSubject, parseEffect, type Effect } from '../core/effects.js';
import { InterlockError } from '../core/errors.js';
import { creditCurrencyChange, decidedPremises, deviatedKind, factChanges, factsShown, factsShownHash, itemActions, reapprovalEffectId, reapprovalRequestId, reapprovedAlready } from '../core/inbox.js';
import { canonicalJson, type JsonObject } from '../core/json.js';
import { currencyCode, moneyText } from '../core/money-text.js';
import type { Proposal } from '../core/proposal.js';
import { recordedProposal } from '../core/recorded.js';
import { currentOutcome } from '../core/verify.js';
import type { Recorded } from '../gate/record.js';
import type { Approvals } from '../redis/approvals.js';
import type { Inbox, InboxItem, PendingReapproval } from '../redis/inbox.js';
import { refundsHolder, type Journal } from '../redis/journal.js';

/** Reads the facts an effect is decided on, now (the target's premise reads); throws premise_read_failed when it cannot. */
export type FactsNow = (effect: Effect, effectId: string) => Promise<JsonObject>;
/**
 * Records a proposal and queues it for the gate (queues/effects.ts propose). `firstOnly`: nothing is recorded once
 * the effect holds a proposal (answered `exists`).
 */
export type ProposeNow = (proposal: unknown, how?: { firstOnly?: boolean }) => Promise<Recorded>;
/** The four-eyes rule of an approval for the person who acts under it (checkFourEyes); throws four_eyes. */
export type FourEyesCheck = (approvalId: string, by: Actor) => Promise<void>;

export type Reapproved = { item: InboxItem; entry: EntryOf<'RESOLVED'> | null; recorded: Recorded; premises: JsonObject };

export type InboxActions = ReturnType<typeof createInboxActions>;

/** Whether act() gave this error as its own answer (nothing it was asked ran), not a Redis outage of unknown outcome. */
function answered(error: unknown): boolean {
  return error instanceof InterlockError && error.code !== 'redis_unavailable';
}

/** Whether the item was closed by this very re-approval: the same person, under the same approval. */
function repeats(closure: InboxItem['closure'], request: { approval: string; by: Actor }): boolean {
  return closure !== null && closure.action === 'reapprove' && closure.by.name === request.by.name && closure.reapproval?.approval === request.approval;
}

/** The recorded payload, once the effect's latest proposal is settled as refused (nothing was sent, nothing is on its way). */
async function refusedPayloadOf(journal: Pick<Journal, 'partitionOf' | 'entries'>, item: InboxItem): Promise<Effect> {
  return (await refusedChainOf(journal, item)).effect;
}

/**
 * refusedPayloadOf's payload, with the currency its money is in as the gate's over-cap reason states it: the chain's
 * (currencyOfEffect: the currency premise decided on), else the item's (which fills in a credit's from
 * INTERLOCK_CREDIT_CURRENCY when it opened); null, a currency unknown, when neither says it.
 */
async function refusedChainOf(journal: Pick<Journal, 'partitionOf' | 'entries'>, item: InboxItem): Promise<{ effect: Effect; currency: string | null; decided: JsonObject }> {
  const partition = await journal.partitionOf(item.effectId);
  const entries = partition === null ? [] : await journal.entries(partition, item.effectId);
  const first = entries.find((entry): entry is EntryOf<'PROPOSED'> => entry.kind === 'PROPOSED');
  if (!first) throw new InterlockError('unknown_effect', `Inbox item ${item.id} names effect ${item.effectId}, which has no recorded proposal to re-approve.`);
  const outcome = currentOutcome(entries);
  if (outcome === null || !outcome.startsWith('REFUSED:')) {
    throw new InterlockError('action_not_allowed', `Effect ${item.effectId} is ${outcome ?? 'not settled yet'}, not refused: only a refusal is re-approved (money that moved, may have moved or is still on its way never is). Nothing was recorded.`);
  }
  // act-3 refuses a second re-approval of one effect in the same step as it records one; an effect re-approved by a
  // version that did not keep that mark is caught here, from its chain.
  const earlier = entries.find((entry): entry is EntryOf<'RESOLVED'> => entry.kind === 'RESOLVED' && entry.action === 'reapprove' && entry.item !== item.id);
  if (earlier !== undefined) {
    throw new InterlockError('action_not_allowed', reapprovedAlready(item.effectId, earlier.item, item.id));
  }
  // The premises the refusal was judged against, taken as the gate takes them (decidedPremises: the first proposal
  // under the latest one's approval), the ones the item's changes are told against (factsShown).
  const decided = decidedPremises(entries) ?? first.premises;
  return { effect: parseEffect(first.effect, 'effect', { recorded: true }), currency: currencyOfEffect(entries) ?? item.currency ?? null, decided };
}

/**
 * Where the re-approval that closed its item is noted until its proposal is recorded (keys.reapprovalsPending): one
 * per person and approval, written only by the attempt that closed the item (an item closes once).
 */
function pendingField(item: string, request: { approval: string; by: Actor }): string {
  return `${item} ${request.by.name} ${request.approval}`;
}

/**
 * Where one attempt is noted before it closes its item: its own field, so two attempts of the same person under the
 * same approval (two tabs, two processes) never write over each other's note, and the one that closes the item is
 * proposed with its own note and premises.
 */
function attemptField(item: string, request: { approval: string; by: Actor }, attempt: string): string {
  return `${pendingField(item, request)} ${attempt}`;
}

type Note = { field: string; pending: PendingReapproval | null };

/**
 * Of the notes, the one the attempt that closed the item left (its note is the closure's): the one it moved to
 * pendingField once it knew it closed the item, else one under an attempt's field, `own` first when this attempt may
 * be the one that closed it. `lost`: this attempt knows it did not (act answered that the item was closed), so its own
 * note, even one that reads the same, is never taken. Null when none is left (the proposal was recorded and the note
 * cleared, or it was never written).
 */
function closingNote(item: InboxItem, notes: readonly Note[], own: { field: string; lost: boolean } | null): { field: string; pending: PendingReapproval } | null {
  const closure = item.closure;
  const candidates = notes.filter((note): note is { field: string; pending: PendingReapproval } => note.pending !== null && note.pending.item === item.id && closure !== null && repeats(closure, note.pending) && note.pending.note === closure.note && !(own !== null && own.lost && note.field === own.field));
  const rank = (note: { field: string; pending: PendingReapproval }) => (note.field === pendingField(item.id, note.pending) ? 0 : note.field === own?.field ? 1 : 2);
  return candidates.sort((one, other) => rank(one) - rank(other))[0] ?? null;
}

/**
 * Why a credit of `amount` decided in `decided` is not re-approved where credits are given in `given` now: the same
 * number is another sum of money there, so it would not be the credit the person approved.
 */
function currencyMoved(amount: number, decided: string, given: string): string {
  const [was, now] = [decided.toUpperCase(), given.toUpperCase()];
  return `the credit was decided and approved in ${was}, as ${moneyText(amount, decided)}, and this service now gives credits in ${now} (INTERLOCK_CREDIT_CURRENCY), so re-approving it would send ${amount} in ${now}, ${moneyText(amount, given)}: another sum of money than the one decided. Dismiss this item with a note, and decide the credit again in ${now} (a new request, POST /v1/credits or npx interlock credit, or a new case)`;
}

/**
 * currencyMoved when the currency `premises` (the facts read at the click) give credits in is not every one of
 * `decidedIn` (the currencies the credit was decided in and shown in; null for one unknown), else null (as when the
 * facts name no currency). The first that differs is named: list the one the person read first.
 */
function creditCurrencyMoved(amount: number, decidedIn: readonly (string | null)[], premises: JsonObject): string | null {
  const given = premises['currency'];
  if (typeof given !== 'string') return null;
  const other = decidedIn.find((code): code is string => code !== null && code.toLowerCase() !== given.toLowerCase());
  return other === undefined ? null : currencyMoved(amount, other.toLowerCase(), given.toLowerCase());
}

/**
 * Why a credit re-approved on `premises` (the facts read at the click) is certain to be refused before its send, or
 * would move another sum of money than the one decided, or null when nothing in them says so (a refund, facts the
 * reader does not name). `currency`: the credit's as decided (refusedChainOf), for the sums. `shownIn`: the currency
 * its item shows (InboxItem.currency, what the person read): the request may have been decided again in another since
 * the item opened, and the credit is not sent in another currency than the one the person approved it in either.
 */
function creditRefusedOn(effect: Effect, premises: JsonObject, currency: string | null, shownIn: string | null): string | null {
  if (effect.kind !== 'credit') return null;
  const moved = creditCurrencyMoved(effect.amount, [shownIn, currency], premises);
  if (moved !== null) return moved;
  const compensated = premises['incident_compensation'];
  if (typeof compensated === 'number' && Number.isFinite(compensated) && compensated > 0) {
    return `incident ${effect.incident} of customer ${effect.customer} was compensated ${moneyText(compensated, currency)} already by others (incident_compensation in the facts read at Stripe now), and Interlock credits an incident once: the credit would be refused before the send (incident_already_compensated), with this item closed. If the customer is still owed money, credit the remainder by hand in the Stripe Dashboard (the customer's credit balance), or, if it is owed for a separate incident, send it under that incident's id; then dismiss this item with a note saying so`;
  }
  const billedIn = premises['customer_currency'];
  const given = premises['currency'];
  if (typeof billedIn === 'string' && typeof given === 'string' && billedIn.toLowerCase() !== given.toLowerCase()) {
    return `customer ${effect.customer} is billed in ${billedIn} (customer_currency in the facts read at Stripe now), and credits are given in ${given}: the credit would be refused before the send (currency_mismatch), with this item closed. If the customer is still owed money, credit it by hand in ${billedIn} in the Stripe Dashboard (the customer's credit balance); then dismiss this item with a note saying so`;
  }
  return null;
}

/**
 * Why a refund re-approved on `premises` (the facts read at the click) is certain to be refused before its send, or
 * null when nothing in them says so (a credit, facts that name no `refundable`). The refund target refuses a refund of
 * more than the payment still has refundable (amount_exceeds_refundable) after the item closed, and the payload cannot
 * change: re-approved, it would close the item for good and end on that refusal, nothing left to re-approve.
 * `currency`: the payment's, as the refusal was judged in (refusedChainOf), else as the facts read now name it.
 */
function refundRefusedOn(effect: Effect, premises: JsonObject, currency: string | null): string | null {
  if (effect.kind !== 'refund') return null;
  const refundable = premises['refundable'];
  if (typeof refundable !== 'number' || !Number.isFinite(refundable) || effect.amount <= refundable) return null;
  const code = currency ?? currencyCode(premises['currency']);
  return `a refund of ${moneyText(effect.amount, code)} is more than the ${moneyText(refundable, code)} still refundable on ${effect.paymentIntent} (refundable in the facts read at Stripe now), so it would be refused before the send (amount_exceeds_refundable), with this item closed. A re-approval sends the refund's amount as decided; if the customer is still owed money, dismiss this item with a note and decide a refund of at most ${moneyText(refundable, code)} under a new request id (POST /v1/refunds or npx interlock refund, or a new case)`;
}

/**
 * The refusal of a re-approval of a model deviation whose model chose another kind of money than its case asks for
 * (deviatedKind): re-approved, it would send the case's effect, which the model never decided.
 */
function otherKindRefusal(item: InboxItem, chose: string): InterlockError {
  const asked = kindOfSubject(item.subject) ?? 'credit';
  return new InterlockError('action_not_allowed', `Item ${item.id} cannot be re-approved: its model chose a ${chose} where the case asks for a ${asked}, and re-approving it would send the case's ${asked} on ${item.subject}, which the model never decided. Dismiss it with a note and, if the customer is still owed money, decide the case again as a new case under a new case id. Nothing was recorded, and the item stays open.`);
}

/** The proposal a re-approval makes: the new request, under the new approval, naming the item it re-approves. */
function reapprovalProposal(item: InboxItem, requestId: string, request: { approval: string; note: string; by: Actor }, premises: JsonObject, effect: Effect) {
  return {
    requestId,
    agent: request.by.name,
    approval: request.approval,
    premises,
    effect,
    request: { reapproves: item.id, effect: item.effectId, by: request.by.name, role: request.by.role, note: request.note },
  };
}

/**
 * `attemptId`: names one re-approval attempt (attemptField); random unless given. Two attempts must never get the same.
 */
export function createInboxActions(deps: { inbox: Inbox; journal: Pick<Journal, 'partitionOf' | 'entries' | 'onceHolder' | 'readState'>; approvals: Pick<Approvals, 'describe' | 'subjectCap'>; checkFourEyes: FourEyesCheck; readFacts: FactsNow; propose: ProposeNow; attemptId?: () => string }) {
  const { inbox, journal } = deps;
  const attemptId = deps.attemptId ?? (() => randomBytes(8).toString('hex'));

  /**
   * Refuses, before anything is written, a re-approval whose request id holds a proposal no re-approval of this item
   * recorded: the first proposal binds the request (I5), so the re-approval could only be refused as another payload
   * after closing the item. Callers may not use the `reapproval:` prefix now; this is for ids taken before that.
   */
  async function assertRequestIsItems(item: InboxItem, requestId: string, effectId: string, effect: Effect): Promise<void> {
    const partition = await journal.partitionOf(effectId);
    if (partition === null) return;
    const first = partition === item.subject ? firstProposal(await journal.entries(partition, effectId)) : null;
    const request = first?.request;
    const reapproves = typeof request === 'object' && request !== null && !Array.isArray(request) ? request['reapproves'] : undefined;
    if (partition === item.subject && (first === null || (reapproves === item.id && payloadHash(first.effect) === payloadHash(effect)))) return;
    throw new InterlockError(
      'conflicting_payload',
      `Request ${requestId}, the one a re-approval of item ${item.id} proposes under, already holds a proposal that no re-approval of it recorded (effect ${effectId}, on ${partition}), so the item cannot be re-approved. Nothing was recorded. If the item is still open, dismiss it and propose its payload under a request id of your own.`,
    );
  }

  /** The proposal recorded first under the re-approval's request (the one that binds it), or null while none is. */
  async function recordedFirst(effectId: string): Promise<Proposal | null> {
    const partition = await journal.partitionOf(effectId);
    return partition === null ? null : recordedProposal(await journal.entries(partition, effectId), 'first');
  }

  /**
   * Proposes a re-approval's proposal unless its request holds one already (firstOnly): a re-approval is decided once,
   * by the attempt that recorded first, and a repeat (a retry, a double submit) adds no second PROPOSED with its own
   * note or facts. Answered with the premises of the proposal that stands.
   */
  async function proposeOnce(proposal: { premises: JsonObject }, effectId: string): Promise<{ recorded: Recorded; premises: JsonObject }> {
    const recorded = await deps.propose(proposal, { firstOnly: true });
    if (recorded.status !== 'exists') return { recorded, premises: proposal.premises };
    return { recorded, premises: (await recordedFirst(effectId))?.premises ?? proposal.premises };
  }

  /**
   * The proposal of a re-approval this person made under this approval (`item` reads closed by it): the one recorded
   * then, proposed again as it stands (recording nothing, queuing it if its job was lost). When none was recorded (the
   * attempt that closed the item has not proposed yet, or stopped before it did), the note that attempt left
   * (closingNote), as repairReapprovals proposes it: never this attempt's own when it lost the close, whatever it says.
   * With no note left, the closure's note on the facts read now. `own`: this attempt's note, if it wrote one.
   */
  async function repeatedProposal(item: InboxItem, requestId: string, effectId: string, own: { field: string; lost: boolean } | null, effect: Effect): Promise<{ recorded: Recorded; premises: JsonObject }> {
    const closure = item.closure;
    const approval = closure?.reapproval?.approval;
    if (closure === null || approval === undefined) throw new InterlockError('internal', `Inbox item ${item.id} was read as re-approved by this person, yet its closure names no approval.`);
    const clear = async (fields: readonly (string | undefined)[]) => {
      for (const field of new Set(fields)) if (field !== undefined) await inbox.clearReapproval(field);
    };
    const first = await recordedFirst(effectId);
    if (first !== null) {
      const recorded = await deps.propose(first, { firstOnly: true });
      // This attempt's own note (a double submit whose copy lost the race to close the item) is not to be proposed by
      // the recovery pass, nor the note the closing attempt left: the re-approval stands as recorded first.
      await clear([own?.field, pendingField(item.id, { approval, by: closure.by })]);
      return { recorded, premises: first.premises };
    }
    const closing = closingNote(item, await inbox.pendingReapprovals(), own);
    const proposal = closing === null ? reapprovalProposal(item, requestId, { approval, note: closure.note, by: closure.by }, await deps.readFacts(effect, effectId), effect) : reapprovalProposal(item, requestId, closing.pending, closing.pending.premises, effect);
    const proposed = await proposeOnce(proposal, effectId);
    await clear([own?.field, closing?.field]);
    return proposed;
  }

  /**
   * A re-approval refused because the facts read at the click are not the ones the item showed: the item is rewritten
   * (while open) to show the facts as they stand, against the ones its effect was decided on, and the error names each
   * fact that changed since it showed them. Reading the item again and re-approving decides on what it shows then.
   */
  async function factsChangedSinceShown(item: InboxItem, decided: JsonObject, now: JsonObject, unseen: readonly PremiseChange[]): Promise<InterlockError> {
    const changes = factChanges(decided, now);
    await inbox.refresh(item.id, (known) => ({ ...known, changes, actions: itemActions({ ...known, changes }) }));
    const quoted = (value: unknown) => {
      const text = canonicalJson(value);
      return text.length > 200 ? `${text.slice(0, 200)}…` : text;
    };
    const named = unseen.slice(0, 10).map((change) => `${change.field.slice(0, 100)}: shown ${quoted(change.was)}, now ${quoted(change.now)}`);
    const more = unseen.length > named.length ? `; and ${unseen.length - named.length} more` : '';
    return new InterlockError(
      'facts_changed',
      `The facts changed since item ${item.id} showed them (${named.join('; ')}${more}), so the re-approval was refused: it stands on the facts the person decided on. Nothing was recorded; the item now shows the facts as they stand: read it again and re-approve if they still warrant it.`,
    );
  }

  /**
   * The answer to a re-approval of an item listing a change of its credit's currency (creditCurrencyChange), judged on
   * the facts read now: facts giving another currency than the credit was decided or shown in refuse it (currencyMoved,
   * naming the currency read now); facts giving that currency again no longer bear the listed change out (a rolling
   * change rolled back), so the item is brought up to date as for any facts that changed since it showed them
   * (factsChangedSinceShown), offering its re-approval again when nothing else stands against it, to be read and
   * decided on anew. Nothing is recorded and the item stays open either way.
   */
  async function currencyChangeJudged(item: InboxItem, moved: PremiseChange): Promise<InterlockError> {
    const { effect, currency, decided } = await refusedChainOf(journal, item);
    const premises = await deps.readFacts(effect, reapprovalEffectId(item.id));
    const amount = effectFactsOrNull(effect)?.amount ?? item.centsAtStake;
    const refused = creditCurrencyMoved(amount, [item.currency ?? null, currency, typeof moved.was === 'string' ? moved.was : null], premises);
    if (refused !== null) return new InterlockError('action_not_allowed', `Item ${item.id} cannot be re-approved: ${refused}. Nothing was recorded, and the item stays open.`);
    const given = premises['currency'];
    if (typeof given !== 'string') {
      return new InterlockError('action_not_allowed', `Item ${item.id} cannot be re-approved: the currency of its credit changed (${canonicalJson(moved.was).slice(0, 40)} decided, ${canonicalJson(moved.now).slice(0, 40)} when it was refused), and the facts read now name no currency (${canonicalJson(given ?? null).slice(0, 40)}) to tell which one credits are given in; a credit is never re-approved in another currency than the one it was decided in. Dismiss it with a note, and decide the credit again. Nothing was recorded, and the item stays open.`);
    }
    const unseen = factChanges(factsShown(decided, item.changes), premises);
    return factsChangedSinceShown(item, decided, premises, unseen.length > 0 ? unseen : [{ field: 'currency', was: moved.now, now: given }]);
  }

  async function itemOr404(id: string): Promise<InboxItem> {
    const item = await inbox.get(id);
    if (item === null) throw new InterlockError('unknown_inbox_item', `No inbox item ${id.slice(0, 100)}. GET /v1/inbox (or \`interlock inbox list\`) lists the open ones.`);
    return item;
  }

  /**
   * Why the caps have no room for the payload now: what the approval has reserved already (its cap covers every
   * effect under it), the subject's own cap, and, for a credit, its incident held by another credit sent for it (the
   * dispatch step's). The gate would refuse the new request REFUSED:over_cap, which opens no item, after this one
   * closed for good; so it is refused before anything is written, saying how much room is left or who holds it.
   */
  async function noRoom(snapshot: ApprovalSnapshot, subject: string, effect: Effect, amount: number, currency: string | null): Promise<string[]> {
    const problems: string[] = [];
    const money = (cents: number) => moneyText(cents, currency);
    if (effect.kind === 'credit') {
      const holder = await deps.journal.onceHolder(subject, holdOf(effect));
      if (holder !== null) problems.push(`incident ${effect.incident} of ${subject} is compensated once, and effect ${holder} was sent for it already (in flight, landed or ambiguous)`);
    } else {
      // Behind an AMBIGUOUS refund on the payment, a refund decided on its other refunds is refused at its dispatch
      // (REFUNDS_HOLD): re-approved now, the item would close for a refusal. One in flight is waited for, not refused.
      const held = await refundsHolder(deps.journal, subject);
      if (held !== null && !held.open) {
        problems.push(`refund ${held.holder} on ${subject} is AMBIGUOUS (whether it landed is not known), and a refund decided on the payment's other refunds waits for it: resolve it in the inbox first`);
      }
    }
    const reserved = snapshot.reservedCents ?? 0;
    if (reserved + amount > snapshot.capCents) problems.push(`approval ${snapshot.id} has ${money(Math.max(0, snapshot.capCents - reserved))} of its ${money(snapshot.capCents)} left (${money(reserved)} held by effects under it), not ${money(amount)}`);
    const cap = await deps.approvals.subjectCap(subject);
    if (cap.limitCents !== null && cap.movedCents + amount > cap.limitCents) problems.push(`the cap on ${subject} has ${money(Math.max(0, cap.limitCents - cap.movedCents))} of its ${money(cap.limitCents)} left, not ${money(amount)}`);
    return problems;
  }

  return {
    /**
     * Re-approves an item under `approval`, on the facts it showed (refused facts_changed when those read now differ).
     * `factsShown`: the fingerprint of the facts the person's view of the item showed (factsShownHash, its
     * `facts_shown`); refused facts_changed, nothing read or written, when the item shows other facts now (brought up
     * to date since they read it). Without it the item's facts as they stand at the click are taken as the ones shown.
     * The same person asking again with the same approval (a retry after a lost answer, a second tab) is answered with
     * the same new request, made with the note and the facts of the click that closed the item, whatever its own note
     * or the facts now; anyone else after the first action is told who acted.
     */
    async reapprove(id: string, request: { approval: string; note: string; by: Actor; factsShown?: string | undefined }): Promise<Reapproved> {
      const item = await itemOr404(id);
      const requestId = reapprovalRequestId(id);
      const effectId = reapprovalEffectId(id);
      const closure = item.closure;
      const replay = repeats(closure, request);
      // A credit whose currency changed is not re-approved (itemActions offers no re-approval): act() would refuse it
      // as not offered, saying nothing of why nor whether the change still holds. It is judged on the facts read now
      // instead (currencyChangeJudged), the item left open, and brought up to date when the change no longer holds.
      const moved = closure === null ? creditCurrencyChange(item) : null;
      if (moved !== null) throw await currencyChangeJudged(item, moved);
      // A model deviation of another kind than its case's is not re-approved either (itemActions, deviatedKind): its
      // recorded effect is the case's, which the model never decided. Refused here, with why, before act() would take
      // a re-approval its item's kind allows.
      const otherKind = closure === null ? deviatedKind(item) : null;
      if (otherKind !== null) throw otherKindRefusal(item, otherKind);
      if (!item.actions.includes('reapprove') || (closure !== null && !replay)) {
        // The store names who acted, or which actions the kind allows.
        await inbox.act(id, { action: 'reapprove', by: request.by, note: request.note });
      }
      // Whoever re-approves proposes under the approval: its four-eyes rule holds here as for any proposal.
      await deps.checkFourEyes(request.approval, request.by);
      const { now, snapshot } = await deps.approvals.describe(request.approval);
      if (snapshot === null) throw new InterlockError('unknown_approval', `No approval ${request.approval}: grant it first (POST /v1/approvals or \`interlock approvals grant\`), then re-approve. Nothing was recorded.`);
      if (snapshot.scope !== item.subject) throw new InterlockError('invalid_approval', `Approval ${request.approval} covers ${snapshot.scope}, but item ${id} moves money on ${item.subject}. Nothing was recorded.`);
      const { effect, currency, decided } = await refusedChainOf(journal, item);
      // The gate would refuse the new request under a dead approval (REFUSED:lease, which opens no item), after the
      // item was closed for good: so a re-approval is refused now, before anything is written. A replay was judged
      // when it was first recorded; the gate judges it again at the send.
      const amount = effectFactsOrNull(effect)?.amount ?? 0;
      const dead = replay ? [] : [...approvalProblems(snapshot, { now, subject: item.subject, amount, phase: 'dispatch', currency }), ...(await noRoom(snapshot, item.subject, effect, amount, currency))];
      if (dead.length > 0) throw new InterlockError('invalid_approval', `Item ${id} cannot be re-approved under approval ${request.approval}: ${dead.join('; ')}. Nothing was recorded; re-approve under a live approval that covers the payload.`);
      await assertRequestIsItems(item, requestId, effectId, effect);
      if (replay) return { item, entry: null, ...(await repeatedProposal(item, requestId, effectId, null, effect)) };
      // The other copy of a double submit (a second tab, the same person and approval) may have closed the item while
      // this one read it: a copy about to be refused is answered as the repeat it is, with the proposal that copy
      // made, never these facts. Null when it is no such copy.
      const twinClosed = async (): Promise<Reapproved | null> => {
        const standing = await inbox.get(id);
        return standing !== null && repeats(standing.closure, request) ? { item: standing, entry: null, ...(await repeatedProposal(standing, requestId, effectId, null, effect)) } : null;
      };
      // The facts the person was shown are the ones their view carried the fingerprint of: an item that shows others
      // now was brought up to date after they read it (another re-approval found the facts changed), and what it
      // shows now was never in front of them. Refused before the facts are read; nothing is written.
      const shown = factsShownHash(decided, item.changes);
      if (request.factsShown !== undefined && request.factsShown !== shown) {
        const twin = await twinClosed();
        if (twin !== null) return twin;
        throw new InterlockError(
          'facts_changed',
          `Item ${id} shows other facts than it did when it was read for this re-approval (facts_shown ${request.factsShown.slice(0, 64)} then, ${shown} now: it was brought up to date since, when the facts were found changed), so the re-approval was refused: it stands on the facts the person was shown, and these were not. Nothing was recorded; read the item again and re-approve if what it shows still warrants it.`,
        );
      }
      // Read before anything is written: facts that cannot be read leave the item open.
      const premises = await deps.readFacts(effect, effectId);
      // The person decided on the facts the item showed them, every one of them: facts that changed since are not
      // theirs to approve unseen. Nothing is written but the item, brought up to date so that reading it shows them.
      const unseen = factChanges(factsShown(decided, item.changes), premises);
      if (unseen.length > 0) {
        const twin = await twinClosed();
        if (twin !== null) return twin;
        throw await factsChangedSinceShown(item, decided, premises, unseen);
      }
      // The facts are the ones shown, and they say the credit or refund cannot go out: refused while the item is open,
      // not after.
      const refusedOn = creditRefusedOn(effect, premises, currency, item.currency ?? null) ?? refundRefusedOn(effect, premises, currency);
      if (refusedOn !== null) {
        const twin = await twinClosed();
        if (twin !== null) return twin;
        throw new InterlockError('action_not_allowed', `Item ${id} cannot be re-approved: ${refusedOn}. Nothing was recorded, and the item stays open.`);
      }
      // Noted before the item closes: a process that dies between the closing and the proposal leaves this behind,
      // and the recovery pass proposes it (repairReapprovals), on these premises. Without it the item would read
      // re-approved while nothing was ever proposed. Under this attempt's own field until it has closed the item.
      const field = attemptField(id, request, attemptId());
      const note: PendingReapproval = { item: id, approval: request.approval, by: request.by, note: request.note, premises, at: now };
      await inbox.markReapproval(field, note);
      let acted: { item: InboxItem; entry: EntryOf<'RESOLVED'> | null };
      try {
        acted = await inbox.act(id, { action: 'reapprove', by: request.by, note: request.note, reapproval: { approval: request.approval, requestId, effectId } });
      } catch (error) {
        // The item as it stands says what this attempt did, whatever the error: the same request raced itself (a
        // double click) and the other copy was recorded first, or act-3 ran and its answer was lost (a command that
        // timed out after it ran, close-inbox-3 failing after it). Closed by this re-approval, the old request is
        // blocked for good, so the proposal is made as for a repeat. Unreadable now, the note stays for the recovery
        // pass, which proposes it or drops it once it can read the item.
        const standing = await inbox.get(id).catch(() => undefined);
        if (standing === undefined) throw error;
        if (standing === null || !repeats(standing.closure, request)) {
          // Nothing was closed by this attempt when someone else closed the item or act() refused (its own answer).
          // Open after an error of unknown outcome (Redis timed out or went away), the command may still run, so the
          // note stays for the recovery pass, which drops it past its grace unless the item is this one's; a note
          // left behind by a failed delete is dropped by it too.
          if (answered(error) || (standing !== null && standing.closure !== null)) await inbox.clearReapproval(field).catch(() => undefined);
          throw error;
        }
        // Answered by act() itself (the item was closed first: the other tab's copy closed it), this attempt knows it
        // did not close the item, and its own note, whatever it says, is not the closure's.
        return { item: standing, entry: null, ...(await repeatedProposal(standing, requestId, effectId, { field, lost: answered(error) }, effect)) };
      }
      // This attempt closed the item: its note moves to the field the closing attempt's note is known by (written
      // before the attempt's own is deleted, so one of them stands throughout), for a repeat and the recovery pass.
      const closing = pendingField(id, request);
      await inbox.markReapproval(closing, note);
      await inbox.clearReapproval(field);
      const proposed = await proposeOnce(reapprovalProposal(item, requestId, request, premises, effect), effectId);
      await inbox.clearReapproval(closing);
      return { ...acted, ...proposed };
    },

    async resolve(id: string, request: { resolution: Resolution; note: string; by: Actor }) {
      return inbox.act(id, { action: 'resolve', by: request.by, note: request.note, resolution: request.resolution });
    },

    async dismiss(id: string, request: { note: string; by: Actor }) {
      return inbox.act(id, { action: 'dismiss', by: request.by, note: request.note });
    },
  };
}

export type ReapprovalRepair = {
  /** Items whose re-approval was proposed here: the process that closed them stopped before it proposed. */
  proposed: string[];
  /** Items whose proposal was recorded already (the process stopped after proposing, before clearing its note). */
  recordedBefore: string[];
  /** Notes of attempts that closed nothing (refused, beaten by someone else, or stopped before closing), dropped. */
  dropped: string[];
  /**
   * Items whose re-approval can no longer be proposed, with why (the old effect landed after all, or its request id
   * holds another payload): their notes are dropped, and a person reads the item and the effect.
   */
  unproposable: { item: string; reason: string }[];
  /** Notes that could not be settled now (Redis, a proposal that failed), with why: the next pass tries again. */
  failed: { field: string; error: string }[];
};

/**
 * Proposes the re-approvals a process closed and never proposed. reapprove() notes each attempt (with the premises
 * the person decided on) before it closes the item and clears the note once the proposal is recorded, so a note
 * older than `graceMs` is an attempt that stopped somewhere in between. If the item's closure is that attempt's (the
 * same person, approval and note: closingNote), its proposal is made now exactly as reapprove() would have made it
 * (the same request id, so a proposal that did get recorded is found, never doubled); the gate then judges it as any
 * other, its premises re-read before the send. A note whose attempt closed nothing is dropped.
 *
 * It reads only the notes, which the hash holds only while they are pending. Several processes may run it at once:
 * the request id binds the proposal (recorded once), and clearing a note twice is harmless.
 */
export async function repairReapprovals(deps: { inbox: Inbox; journal: Pick<Journal, 'partitionOf' | 'entries' | 'serverTime'>; propose: ProposeNow }, options: { graceMs: number }): Promise<ReapprovalRepair> {
  const { inbox, journal } = deps;
  const repair: ReapprovalRepair = { proposed: [], recordedBefore: [], dropped: [], unproposable: [], failed: [] };
  /** The note's proposal, made as reapprove() makes it; why it cannot be made, when that will not change. */
  async function proposeRepaired(item: InboxItem, requestId: string, pending: PendingReapproval): Promise<'recorded' | 'exists' | { reason: string }> {
    let effect: Effect;
    try {
      effect = await refusedPayloadOf(journal, item);
    } catch (error) {
      // The old effect is no longer refused (Stripe reported it landed after all): there is nothing to re-approve.
      if (error instanceof InterlockError && error.code === 'action_not_allowed') return { reason: error.message };
      throw error;
    }
    // Only when the request holds no proposal yet: a note left by an attempt whose copy recorded first adds nothing.
    const recorded = await deps.propose(reapprovalProposal(item, requestId, pending, pending.premises, effect), { firstOnly: true });
    return recorded.status === 'conflict' ? { reason: recorded.reason } : recorded.status;
  }
  const now = await journal.serverTime();
  const notes = await inbox.pendingReapprovals();
  for (const { field, pending } of notes) {
    try {
      if (pending !== null && now - pending.at < options.graceMs) continue;
      const item = pending === null ? null : await inbox.get(pending.item);
      // Of the same person's attempts under the same approval, only the one that closed the item is proposed: the
      // others (tabs whose click lost the close) are dropped, whatever they say.
      if (pending === null || item === null || !repeats(item.closure, pending) || closingNote(item, notes, null)?.field !== field) {
        await inbox.clearReapproval(field);
        repair.dropped.push(field);
        continue;
      }
      const requestId = item.closure?.reapproval?.requestId ?? reapprovalRequestId(item.id);
      const outcome = await proposeRepaired(item, requestId, pending);
      await inbox.clearReapproval(field);
      if (outcome === 'recorded') repair.proposed.push(item.id);
      else if (outcome === 'exists') repair.recordedBefore.push(item.id);
      else repair.unproposable.push({ item: item.id, reason: outcome.reason });
    } catch (error) {
      repair.failed.push({ field, error: error instanceof Error ? error.message : String(error) });
    }
  }
  return repair;
}

