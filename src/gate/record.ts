// Recording a proposal before it is queued (issue 9 §3): the producer binds the request to its payment and writes
// the PROPOSED that fixes the payload (I5) before any job exists, so a re-decided payload is refused at the edge and
// a queued job can only ever send what was recorded. It needs no target and sends nothing: the HTTP API and the
// CLI record; the effects worker dispatches (its submit finds this PROPOSED and does not write a second one).
import type { Logger } from 'pino';
import { dispatchBlocker, firstProposal, isForeignRefusal, openDispatch } from '../core/decisions.js';
import { effectIdFor, payloadHash } from '../core/effect-id.js';
import { factsOfEffect, type Effect, type EffectFacts } from '../core/effects.js';
import { entryHash, type AnyDraft, type ApprovalSnapshot, type Draft, type Entry, type EntryOf } from '../core/entries.js';
import { canonicalJson, type JsonObject } from '../core/json.js';
import { InterlockError } from '../core/errors.js';
import { currencyCode } from '../core/money-text.js';
import { parseProposalAndEffect, type Proposal } from '../core/proposal.js';
import { quote } from '../core/quote.js';
import { currentOutcome } from '../core/verify.js';
import type { EffectState, Journal } from '../redis/journal.js';

/**
 * `proposals` counts the effect's PROPOSED entries up to the one that stands for this proposal: 1 for the first
 * decision, more for a re-decision after a refusal (its job id is derived from it, so a retry queues it once).
 * `onlyEntry`: the PROPOSED just written, when it began the effect's chain (the chain is that entry alone as long as its
 * head is that entry's hash); null when it followed other entries or was written refused.
 */
export type Recorded =
  | { status: 'recorded'; effectId: string; subject: string; proposal: Proposal; effect: Effect; proposals: number; onlyEntry: OnlyEntry | null }
  /**
   * The same proposal was recorded before: nothing new was written. `outcome` answers the latest proposal (null
   * while it is unsettled, even when an earlier one was refused).
   */
  | { status: 'exists'; effectId: string; subject: string; proposal: Proposal; effect: Effect; outcome: string | null; open: boolean; proposals: number }
  /** Another payload is recorded under this request id; the recorded one stands (REFUSED:conflicting_payload). */
  | { status: 'conflict'; effectId: string; subject: string; reason: string };

/** Whether two proposals are the same request, decided the same way (what a duplicate submission is). */
export function sameProposal(a: Draft<'PROPOSED'>, b: Proposal): boolean {
  return a.agent === b.agent && a.approval === b.approval && canonicalJson(a.premises) === canonicalJson(b.premises) && payloadHash(a.effect) === payloadHash(b.effect) &&
    canonicalJson(a.request) === canonicalJson(b.request ?? null) && canonicalJson(a.decision) === canonicalJson(b.decision ?? null);
}

/**
 * A chain's first entry, alone in its batch, by what its hash covers besides its draft (the envelope) and the hash:
 * what an effects job carries of the PROPOSED its producer wrote, so that its worker can dispatch on that chain
 * without reading it (submit.ts).
 */
export type OnlyEntry = { hash: string; v: number; at: number; kid: string };

export function onlyEntryOf(entry: Entry): OnlyEntry | null {
  if (entry.prev !== null || entry.kid === undefined || entry.covers !== undefined) return null;
  return { hash: entry.hash, v: entry.v, at: entry.at, kid: entry.kid };
}

/**
 * Whether `only` is the PROPOSED of exactly this proposal for this effect: its hash recomputed from the draft and the
 * envelope. Untrusted input (a job's data) is answered false, never thrown on.
 */
export function isOnlyEntryOf(only: unknown, effectId: string, proposal: Proposal): only is OnlyEntry {
  if (typeof only !== 'object' || only === null) return false;
  const { hash, v, at, kid } = only as Record<string, unknown>;
  if (typeof hash !== 'string' || typeof v !== 'number' || typeof at !== 'number' || typeof kid !== 'string') return false;
  return entryHash(Object.assign({}, proposedDraft(proposal), { v, effectId, at, prev: null, kid })) === hash;
}

export function proposedDraft(proposal: Proposal, premises: JsonObject = proposal.premises): Draft<'PROPOSED'> {
  const draft: Draft<'PROPOSED'> = { kind: 'PROPOSED', agent: proposal.agent, approval: proposal.approval, premises, effect: proposal.effect, request: proposal.request ?? null, decision: proposal.decision ?? null };
  if (proposal.requestId !== undefined) draft.requestId = proposal.requestId;
  return draft;
}

/** How many refusals of other payloads one effect's receipt keeps as evidence; later attempts are logged only. */
export const CONFLICT_EVIDENCE_MAX = 10;

/**
 * Keeps the refusal of another payload under a bound effect id on the effect's receipt, as evidence of the attempt:
 * once per distinct proposal, and at most CONFLICT_EVIDENCE_MAX in all, so that a caller repeating (or varying) a
 * conflicting request cannot grow a receipt without bound. A binding whose first proposal never got written (its
 * submit died) has no chain to add evidence to. Whether it was kept or only logged, nothing is sent.
 */
export async function keepConflictEvidence(journal: Journal, logger: Logger, partition: string, effectId: string, proposal: Proposal, reason: string): Promise<void> {
  const entries = await journal.entries(partition, effectId);
  if (entries.length === 0) return;
  const quoted = quote(proposal as unknown as JsonObject);
  const kept = entries.filter((entry): entry is EntryOf<'REFUSED'> => isForeignRefusal(entry));
  const text = canonicalJson(quoted);
  if (kept.some((entry) => entry.proposal !== undefined && canonicalJson(entry.proposal) === text)) return;
  if (kept.length >= CONFLICT_EVIDENCE_MAX) {
    logger.warn({ effectId, kept: kept.length }, `another conflicting payload for effect ${effectId}; its receipt keeps ${CONFLICT_EVIDENCE_MAX} such refusals already, so this one is logged only`);
    return;
  }
  const draft: Draft<'REFUSED'> = { kind: 'REFUSED', code: 'REFUSED:conflicting_payload', reason, checks: null, rechecked: null, changes: [], resolves: false, proposal: quoted };
  await journal.append(partition, effectId, [draft]);
}

/**
 * How many proposals one effect holds unjudged (recorded since its last refusal, or since it began) before another is
 * refused with too_many_proposals. A retry is a new proposal whenever its agent, token or decision text differs from the
 * latest one recorded (an AI agent rewording its decision on every retry, two tools sharing a request id), and while
 * the effect waits (no worker running, Stripe failing) each one would add a signed PROPOSED to the receipt, and a job
 * that reads Stripe again. Honest re-decisions while one effect waits are a few (facts that moved, a corrected
 * decision); ten is the bound the receipt already keeps on other payloads' attempts (CONFLICT_EVIDENCE_MAX), so a
 * retry loop adds as little to a receipt one way as the other. A judged effect takes a re-decision again, up to
 * MAX_DECISIONS in all.
 */
export const MAX_PROPOSALS = 10;

/** The effect's proposals not judged yet: those after its last refusal of its own (evidence of another payload judges nothing). */
function unjudgedProposals(entries: readonly Entry[]): number {
  let count = 0;
  for (const entry of entries) {
    if (entry.kind === 'PROPOSED') count += 1;
    else if (entry.kind === 'REFUSED' && !isForeignRefusal(entry)) count = 0;
  }
  return count;
}

/**
 * How many decisions one effect takes in all, judged or not; a new decision past that is refused with
 * too_many_decisions. MAX_PROPOSALS bounds the decisions waiting to be judged, but a refusal judges them, and the gate
 * records some refusals in the very answer (REFUSED:over_cap under a subject's shared cap, REFUSED:lease), so an agent
 * that rewords its decision on every retry of a refused request would add a PROPOSED and its refusal to the receipt each
 * time, and every later submit and read of the effect reads them all. Honest re-decisions are a few (the cap raised,
 * the facts moved, a corrected decision), after up to MAX_PROPOSALS while the effect waited: twice that leaves room for
 * both, and keeps a receipt's own decisions to the same order as the evidence it keeps of other payloads. Checked
 * wherever a new decision is written: here (the API, the CLI, the queue producers) and in the gate's own submit
 * (submit.ts attempt: an embedded gate, createInterlock or startSender, and its callers' retry loops).
 */
export const MAX_DECISIONS = 2 * MAX_PROPOSALS;

/**
 * A new decision refused with too_many_decisions: its effect holds MAX_DECISIONS decisions already, and takes no more
 * whatever comes (a raised cap or moved facts are decided on under a new request id). `effectId` is the effect it was
 * for.
 */
export class TooManyDecisions extends InterlockError {
  readonly effectId: string;
  constructor(effectId: string, held: number, outcome: string | null) {
    const latest = outcome === null ? 'Its latest decision is not judged yet, and is judged as recorded.' : `Its latest decision was refused (${outcome}).`;
    super(
      'too_many_decisions',
      `Effect ${effectId} holds ${held} decisions already, as many as one effect takes (each stays on its receipt), so this one was not recorded: nothing was written. ${latest} To decide it again (once what refused it has changed: the cap raised, the facts moved), send it under a new request id, which starts a new effect; GET /v1/effects/${effectId} (or \`interlock effect show ${effectId}\`) shows each decision and why it was refused.`,
    );
    this.effectId = effectId;
  }
}

/**
 * A new decision refused with too_many_proposals; `effectId` is the effect it was for (the producer acts on it without
 * reading the caller's input again). The refusal says what settles the effect, including when nothing will on its own:
 * its latest decision's job failed for good (not_judged), and only that decision sent again exactly (answered from the
 * journal, `exists`) queues it again. The effects producer does that for the refused decision too (queues/effects.ts
 * propose), and says so.
 */
export class TooManyProposals extends InterlockError {
  readonly effectId: string;
  constructor(effectId: string, held: number) {
    super(
      'too_many_proposals',
      `Effect ${effectId} already holds ${held} decisions not judged yet (an unsettled effect takes at most ${MAX_PROPOSALS}), so this one was not recorded: nothing was written. Let the effect settle first (watch GET /v1/effects/${effectId}, or \`interlock effect show ${effectId}\`), then send the request again if it is still needed; a new request id starts a new effect. If it stays unsettled, its latest decision's job failed for good (its not_judged alert, GET /v1/alerts or \`interlock alerts\`, says why): fix that cause, then send the latest decision again exactly as recorded (the same request id, agent and decision text), which queues it again.`,
    );
    this.effectId = effectId;
  }
}

const OTHER_PAYLOAD = 'this request id was first decided with another payload; the recorded payload stands';
const otherSubject = (bound: string, facts: EffectFacts) => `this request id is bound to ${bound}, not ${facts.subject}; the recorded payload stands`;

/**
 * What an effect's chain answers a proposal of `effect`, whatever facts the proposal was decided on: `conflict` when
 * another payload is bound to its request id (I5), `final` when nothing more can happen to the effect (open,
 * committed, ambiguous, refused by the target, re-approved), null when the facts decide (the same proposal again is
 * a duplicate, other facts a re-decision).
 */
function standingOf(state: EffectState, entries: readonly Entry[], effect: JsonObject): 'conflict' | 'final' | null {
  const hash = payloadHash(effect);
  const first = firstProposal(entries);
  if ((first && payloadHash(first.effect) !== hash) || (state.payloadHash !== '' && state.payloadHash !== hash)) return 'conflict';
  return dispatchBlocker(entries, effect) !== null ? 'final' : null;
}

/**
 * Why a later decision of a credit's request moves another sum of money than its first under the same payload, or
 * null: a credit's amount counts the smallest unit of the currency it was decided in (its `currency` premise), which
 * its payload does not name, so 5000 decided in jpy and decided again where credits are given in usd (a rolling change
 * of INTERLOCK_CREDIT_CURRENCY, the same body posted again after the refusal) would be $50.00 where ¥5,000 was decided.
 * A refund's currency is its payment's, which never changes. Refused as another payload (I5): the first decision's
 * money is the request's.
 */
export function otherCurrency(entries: readonly Entry[], effect: Effect, premises: JsonObject): string | null {
  if (effect.kind !== 'credit') return null;
  const was = currencyCode(firstProposal(entries)?.premises.currency);
  const now = currencyCode(premises.currency);
  if (was === null || now === null || was === now) return null;
  return `this request id was first decided in ${was.toUpperCase()}, and this decision is in ${now.toUpperCase()}, where the same amount is another sum of money; the recorded payload stands (decide the credit again under a new request id)`;
}

function existing(effectId: string, subject: string, proposal: Proposal, effect: Effect, entries: readonly Entry[]): Extract<Recorded, { status: 'exists' }> {
  const proposals = entries.filter((entry) => entry.kind === 'PROPOSED').length;
  return { status: 'exists', effectId, subject, proposal, effect, outcome: currentOutcome(entries), open: openDispatch(entries) !== null, proposals };
}

/**
 * What the journal alone answers a proposal whose facts could not be read: `needs_facts` when its request is recorded
 * but a retry of it would be judged again on the facts (see standingOf), null when nothing is recorded under it.
 */
export type Recalled = Extract<Recorded, { status: 'exists' | 'conflict' }> | { status: 'needs_facts'; effectId: string; subject: string } | null;

type RecorderDeps = { journal: Journal; logger: Logger };

async function refuseConflict(deps: RecorderDeps, partition: string, effectId: string, proposal: Proposal, reason: string, facts: EffectFacts): Promise<Extract<Recorded, { status: 'conflict' }>> {
  await keepConflictEvidence(deps.journal, deps.logger, partition, effectId, proposal, reason);
  deps.logger.info({ effectId, outcome: 'REFUSED:conflicting_payload' }, 'refused another payload for a recorded request');
  return { status: 'conflict', effectId, subject: facts.subject, reason };
}

/**
 * Answers a proposal from the journal without its facts, as record would whatever they were: another payload under
 * its request id is refused (the attempt kept as evidence, its premises empty: none could be read), and a final
 * effect is answered as it stands. It writes no binding and no PROPOSED, and queues nothing: an open dispatch is
 * recovery's to settle. Throws ProposalError for bad input. For a proposal whose facts the caller could not read
 * (Stripe not answering), so that a retry of a settled request is not told "nothing was recorded"; a new request
 * pays for it only when its read failed.
 */
export function createRecall(deps: RecorderDeps) {
  const { journal } = deps;
  return async function recall(input: unknown): Promise<Recalled> {
    const { proposal, effect } = parseProposalAndEffect(input);
    const facts = factsOfEffect(effect);
    const effectId = effectIdFor({ requestId: proposal.requestId, effect: proposal.effect });
    const bound = await journal.partitionOf(effectId);
    if (bound === null) return null;
    if (bound !== facts.subject) return refuseConflict(deps, bound, effectId, proposal, otherSubject(bound, facts), facts);
    const [{ state }, entries] = await Promise.all([journal.readState(facts.subject, effectId), journal.entries(facts.subject, effectId)]);
    // A binding whose PROPOSED was never written holds nothing (record writes it again).
    if (entries.length === 0 && state.payloadHash === '') return null;
    const standing = standingOf(state, entries, proposal.effect);
    if (standing === 'conflict') return refuseConflict(deps, facts.subject, effectId, proposal, OTHER_PAYLOAD, facts);
    if (standing === 'final') return existing(effectId, facts.subject, proposal, effect, entries);
    return { status: 'needs_facts', effectId, subject: facts.subject };
  };
}

export function createRecorder(deps: RecorderDeps) {
  const { journal, logger } = deps;
  const conflict = (partition: string, effectId: string, proposal: Proposal, reason: string, facts: EffectFacts): Promise<Recorded> => refuseConflict(deps, partition, effectId, proposal, reason, facts);

  /**
   * Validates, binds and records a proposal; throws ProposalError for bad input, too_many_proposals for a new
   * decision on an effect that holds MAX_PROPOSALS unjudged already, and too_many_decisions for one on an effect that
   * holds MAX_DECISIONS in all (nothing written in any of these). With `refuse`,
   * the proposal is recorded already refused (PROPOSED and REFUSED:lease in one append, so it never stands
   * unjudged): a decision that left its approval (MODEL_DEVIATED) is kept on a receipt a person can act on, and no
   * job or retry can send it. With `firstOnly`, nothing is appended once the effect holds any proposal (answered
   * `exists`): a case's decision binds by the first proposal recorded for it, whichever run recorded it, and a second
   * run deciding the same payload must not add a re-decision (the head compare-and-set makes "none yet" atomic).
   */
  return async function record(input: unknown, options: RecordOptions = {}): Promise<Recorded & { outbox?: string }> {
    const { proposal, effect } = parseProposalAndEffect(input);
    const facts = factsOfEffect(effect);
    const effectId = effectIdFor({ requestId: proposal.requestId, effect: proposal.effect });
    const outbox = options.outbox === true && options.refuse === undefined;
    const bound = await journal.bind(effectId, facts.subject, { outbox });
    if (bound.status === 'OTHER_SUBJECT') return conflict(bound.bound, effectId, proposal, otherSubject(bound.bound, facts), facts);
    const { token } = bound;
    // The producer leaves nothing open (the worker's submit binds its own entry), except the outbox entry of a proposal
    // its caller is about to queue: that one goes once the job judges the effect. One left by a throw below stays too (the
    // PROPOSED may have been written before Redis failed): recovery reads the chain and queues it, or drops the entry.
    if (!outbox) journal.unindex(effectId, token);
    const recorded = await recordBound(proposal, effect, facts, effectId, options);
    if (recorded.status === 'full') {
      // Nothing was written for this proposal, and nothing will be queued for it: its outbox entry goes (the proposals
      // recorded before keep their own).
      if (outbox) journal.unindex(effectId, token);
      throw new TooManyProposals(effectId, recorded.held);
    }
    if (recorded.status === 'spent') {
      if (outbox) journal.unindex(effectId, token);
      throw new TooManyDecisions(effectId, recorded.held, recorded.outcome);
    }
    if (!outbox) return recorded;
    if (recorded.status === 'recorded' || (recorded.status === 'exists' && recorded.outcome === null)) return { ...recorded, outbox: token };
    journal.unindex(effectId, token);
    return recorded;
  };

  /**
   * `full`: the effect holds MAX_PROPOSALS unjudged already (`held` of them), and this one, a new decision, was not
   * written; `spent`: it holds MAX_DECISIONS in all (`held`), its latest answered `outcome` (null while unjudged).
   */
  async function recordBound(proposal: Proposal, effect: Effect, facts: EffectFacts, effectId: string, options: RecordOptions): Promise<Recorded | { status: 'full'; held: number } | { status: 'spent'; held: number; outcome: string | null }> {
    const hash = payloadHash(proposal.effect);
    for (let attempt = 0; attempt < 8; attempt += 1) {
      const [{ state }, entries] = await Promise.all([journal.readState(facts.subject, effectId), journal.entries(facts.subject, effectId)]);
      const standing = standingOf(state, entries, proposal.effect);
      if (standing === 'conflict') return conflict(facts.subject, effectId, proposal, OTHER_PAYLOAD, facts);
      const otherMoney = standing === null ? otherCurrency(entries, effect, proposal.premises) : null;
      if (otherMoney !== null) return conflict(facts.subject, effectId, proposal, otherMoney, facts);
      const latest = [...entries].reverse().find((entry) => entry.kind === 'PROPOSED');
      const proposals = entries.filter((entry) => entry.kind === 'PROPOSED').length;
      if ((latest && latest.kind === 'PROPOSED' && sameProposal(latest, proposal)) || standing === 'final' || (options.firstOnly === true && proposals > 0)) {
        return existing(effectId, facts.subject, proposal, effect, entries);
      }
      // Read on the chain the append below is placed on: a proposal written meanwhile moves its head, and this is read again.
      const held = unjudgedProposals(entries);
      if (held >= MAX_PROPOSALS) return { status: 'full', held };
      if (proposals >= MAX_DECISIONS) return { status: 'spent', held: proposals, outcome: currentOutcome(entries) };
      const head = entries.at(-1)?.hash ?? state.head;
      const drafts: AnyDraft[] = [proposedDraft(proposal)];
      const { refuse } = options;
      if (refuse !== undefined) {
        const checks = { approvalLive: false, approval: refuse.approval, approvalProblems: [refuse.reason], violations: [], changes: [] };
        drafts.push({ kind: 'REFUSED', code: 'REFUSED:lease', reason: refuse.reason, checks, rechecked: null, changes: [], resolves: false });
      }
      const written = await journal.append(facts.subject, effectId, drafts, { place: { head }, payloadHash: hash });
      if (written.status === 'OK') {
        logger.info({ effectId, subject: facts.subject, ...(refuse === undefined ? {} : { outcome: 'REFUSED:lease', reason: refuse.reason }) }, refuse === undefined ? 'proposal recorded' : 'proposal recorded as refused');
        const only = written.entries.length === 1 && entries.length === 0 && refuse === undefined ? written.entries[0] : undefined;
        const onlyEntry = only === undefined ? null : onlyEntryOf(only);
        return { status: 'recorded', effectId, subject: facts.subject, proposal, effect, proposals: proposals + 1, onlyEntry };
      }
      if (written.status === 'CONFLICTING_PAYLOAD') return conflict(facts.subject, effectId, proposal, OTHER_PAYLOAD, facts);
    }
    throw new Error(`could not record effect ${effectId}: its chain kept moving`);
  }
}

/**
 * `outbox`: the caller queues what is recorded (an effects job) carrying the token the answer carries, and the job's
 * worker drops the binding's index entry once the effect is judged (journal.unindex); until then the entry stands in
 * the producers' outbox, and recovery queues the proposal if it has no job (journal.ts OUTBOX_TOKEN). Without it the
 * entry goes at once.
 */
type RecordOptions = { refuse?: { reason: string; approval: ApprovalSnapshot | null }; firstOnly?: boolean; outbox?: boolean };

export type Recorder = ReturnType<typeof createRecorder>;
export type Recall = ReturnType<typeof createRecall>;
