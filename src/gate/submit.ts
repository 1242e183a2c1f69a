// submit(): a proposal becomes, at most once, a send (DESIGN §3). On one Redis server the happy path costs two
// commands: one script that binds the request to its subject and records PROPOSED, AUTHORIZED and DISPATCHED, taking
// the claim and the caps (bind-propose-10), and one that settles; the index entry is dropped with the next submit's
// script, and the approval's terms are read once per worker. A cluster binds first, in the binding's slot (bind-5).
// An effects job whose producer recorded its PROPOSED costs the same two on its first run: it dispatches after that
// entry without reading the chain, and the script's head check proves the chain was that entry alone.
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { amountText, approvalProblems, overCapProblem } from '../core/approval.js';
import { explainRecorded, type Outcome } from '../core/outcomes.js';
import { committedEntry, dispatchBlocker, firstProposal, premisesDecidedOn, type PremiseReport } from '../core/decisions.js';
import { effectIdFor, payloadHash } from '../core/effect-id.js';
import { factsOfEffect, holdOf, type Effect, type EffectFacts, type EffectKind } from '../core/effects.js';
import type { AnyDraft, ApprovalSnapshot, Checks, Draft, Entry, EntryOf } from '../core/entries.js';
import type { JsonObject } from '../core/json.js';
import { InterlockError, slowDownOf } from '../core/errors.js';
import { currencyCode } from '../core/money-text.js';
import { currentOutcome, outcomeOf } from '../core/verify.js';
import { parseProposalAndEffect, ProposalError, type ParseOptions, type Proposal } from '../core/proposal.js';
import { quoteError } from '../core/quote.js';
import { premiseMaxAgeMs, refundsHolder, type BindReply, type EffectState, type ProposeReply, type Place, type ProposeRequest } from '../redis/journal.js';
import type { GrantedTerms } from '../redis/approvals.js';
import { checksOf, PremiseReadError, snapshotOfTerms, type GateContext, type GateResult, type RecoveryReport, type Settled } from './context.js';
import { holdBack, markUnknown, sendOnce } from './send.js';
import { isOnlyEntryOf, keepConflictEvidence, MAX_DECISIONS, otherCurrency, proposedDraft, sameProposal, TooManyDecisions } from './record.js';
import { recordedProposal, refusalOfLatest } from '../core/recorded.js';
import { commit, rejectionOf, settleRejected, type Holding } from './settle.js';
import { judgeFacts, readRawFacts } from './reads.js';

export type Recover = (effectId: string, partition: string) => Promise<Settled>;

/**
 * Everything about a proposal that can be known without Redis: validated input, id, payload hash, subject; and
 * `attempt`, this submit's token, carried by its premise read and its send (ReadContext.attempt).
 */
export type Prepared = { proposal: Proposal; effect: Effect; facts: EffectFacts; effectId: string; hash: string; attempt: string };

/** How soon a refund that waited for another on its payment (REFUNDS_HOLD) and gave up may be submitted again. */
const WAIT_RETRY_MS = 1_000;
/** How often a refund waiting for another on its payment asks recovery whether that one's sender is still alive. */
const HOLDER_RECOVERY_EVERY_MS = 1_000;
/**
 * How long a submit waits for another refund on its payment (REFUNDS_HOLD) before it answers IN_FLIGHT: longer than
 * a refund usually takes at Stripe (a few hundred ms), far shorter than a send timeout (30 s), so refunds queued on a
 * payment whose refund is stuck give their worker's slots back to other effects between tries instead of holding
 * every slot until that send times out.
 */
const HOLD_WAIT_MS = 3_000;

let attempts = 0;
/** A token for one dispatch attempt of this process: its premise read and its send carry it, and no other does. */
export function nextAttempt(ctx: GateContext): string {
  attempts += 1;
  return `${ctx.nonce}.${attempts.toString(36)}`;
}

/** `options.recorded`: `input` was read back from the journal (parseProposalAndEffect says what that changes). */
export function prepare(ctx: GateContext, input: unknown, options: ParseOptions = {}): Prepared {
  const { proposal, effect } = parseProposalAndEffect(input, options);
  const facts = factsOfEffect(effect);
  if (!ctx.target.kinds.includes(facts.kind)) {
    throw new ProposalError(`Target ${ctx.target.name} moves ${ctx.target.kinds.join(' and ')} effects, not ${facts.kind}.`, [{ path: 'effect.kind', message: `this target does not move ${facts.kind} effects` }]);
  }
  const known = ctx.target.facts;
  if (known !== null) {
    const unknown = Object.keys(proposal.premises).filter((name) => !known.includes(name));
    if (unknown.length > 0) {
      throw new ProposalError(`Target ${ctx.target.name} cannot read the premises ${unknown.join(', ')}; it reads ${known.join(', ')}.`, unknown.map((name) => ({ path: `premises.${name}`, message: 'is not a fact this target can read' })));
    }
  }
  return { proposal, effect, facts, effectId: effectIdFor({ requestId: proposal.requestId, effect: proposal.effect }), hash: payloadHash(proposal.effect), attempt: nextAttempt(ctx) };
}

/**
 * A read of the facts started ahead (with the binding, so the read and the binding's round trip overlap), with what
 * came of it; it serves an attempt that needs exactly these facts, and is dropped otherwise (the approval refused the
 * effect first, or the effect was settled already). `neverSent`: whether it was read as for a first dispatch
 * (ReadContext.neverSent); it serves only an attempt that reads so too.
 */
export type FactsAhead = { names: readonly string[]; read: Promise<{ facts: unknown; from: number } | { error: unknown }>; neverSent: boolean };

/** Whether two reads ask for the same facts, whatever their order (a recorded proposal's premises come back with their names sorted). */
function sameFacts(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  if (a.every((name, index) => name === b[index])) return true;
  const sorted = [...b].sort();
  return [...a].sort().every((name, index) => name === sorted[index]);
}

/**
 * Reads ahead as for the effect's first dispatch (neverSent), the chain not being known yet. It is the common case (a
 * new request, an effects job on its producer's PROPOSED), and the safe guess: read so, a labelled object counts as
 * someone else's, which can refuse a send but never adds one. An attempt whose chain turns out to hold an earlier
 * dispatch does not use this read (readFactsFrom compares the flag) and reads again; the dispatch step writes only
 * after the head its attempt judged, so a dispatch can follow only the chain its facts were read for.
 */
export function readFactsAhead(ctx: GateContext, prepared: Prepared): FactsAhead {
  const names = Object.keys(prepared.proposal.premises);
  const dated = (from: number) => readRawFacts(ctx, prepared.effectId, prepared.effect, names, prepared.attempt, true).then((facts) => ({ facts, from }));
  // Started in this turn when the read's start is known already (its round trip overlaps the binding's).
  const floor = ctx.journal.clock.floor();
  const read = (floor !== null ? dated(floor) : readStart(ctx).then(dated)).catch((error: unknown) => ({ error }));
  return { names, read, neverSent: true };
}

/**
 * When a premise read begins, as a lower bound of Redis time: the worker's floor of Redis's clock (RedisClock.floor,
 * behind Redis by at most about the round trip of its best recent reply, never ahead of it). The dispatch step refuses
 * to dispatch on a read begun more than premiseMaxAgeMs (the read timeout and 10 s) before it, or not dated (0), so a worker that has heard no
 * Redis time lately (the clock keeps its samples 10 s) asks for it first: the step would ask for it anyway, to seal its
 * entries (journal sealTime). 0 when Redis does not answer; the dispatch step then fails on Redis too.
 */
async function readStart(ctx: GateContext): Promise<number> {
  return ctx.journal.clock.floor() ?? (await ctx.journal.now().catch(() => 0));
}

/** How many times a submit reads its premises for a dispatch step that finds each read too old (STALE_READ). */
const STALE_READ_TRIES = 3;

/**
 * The facts decided on, read now (bounded by the read timeout) and judged against them as read (judgeFacts: only the
 * names decided on, compared before anything is quoted). A read that fails, times out, or answers facts that cannot
 * be read is a PremiseReadError. Recovery's re-read before a resend: its dispatch's send may have gone out, so the
 * target may take what it finds for the effect's landed send as the effect's own (no ReadContext.neverSent); unless
 * `neverSent`: no request of its dispatch ever left and its chain holds no earlier dispatch (recover.ts), so nothing
 * at the target is the effect's own, as for a first dispatch.
 */
export async function readFacts(ctx: GateContext, effectId: string, effect: Effect, decidedOn: JsonObject, attempt: string, neverSent: boolean): Promise<PremiseReport> {
  return (await readFactsFrom(ctx, effectId, effect, decidedOn, attempt, null, neverSent)).report;
}

/**
 * readFacts, with when the read it judged began (`from`, readStart): the dispatch step's REREAD check needs it.
 * `neverSent` as readRawFacts; a read ahead serves only an attempt that reads as it did.
 */
async function readFactsFrom(ctx: GateContext, effectId: string, effect: Effect, decidedOn: JsonObject, attempt: string, ahead: FactsAhead | null, neverSent: boolean): Promise<{ report: PremiseReport; from: number }> {
  try {
    const names = Object.keys(decidedOn);
    const early = ahead !== null && ahead.neverSent === neverSent && sameFacts(ahead.names, names) ? await ahead.read : null;
    if (early !== null && 'error' in early) throw early.error;
    if (early !== null) return { report: judgeFacts(decidedOn, early.facts, effect.kind), from: early.from };
    const from = await readStart(ctx);
    return { report: judgeFacts(decidedOn, await readRawFacts(ctx, effectId, effect, names, attempt, neverSent), effect.kind), from };
  } catch (error) {
    // A target that says its configuration is wrong (a refused key) keeps its own code: retrying will not help.
    if (error instanceof InterlockError && error.code === 'target_misconfigured') throw error;
    throw new PremiseReadError(effectId, error);
  }
}


/**
 * The currency of the effect's money as a refusal over a cap states it (the approval's, or one shared on the subject):
 * the `currency` premise decided on (the refund's payment's; the credit's, the one credits are given in), or for a
 * credit decided without it the worker's credit currency (INTERLOCK_CREDIT_CURRENCY, which such a credit goes out in);
 * null when neither says it (a refund proposed without its currency premise), which moneyText writes as a currency
 * unknown. The premises hold when the dispatch step answers over cap (a stale one is refused before the caps are
 * weighed), so the decided currency is the one read; the approval's own cap, judged before any read, is the
 * decided one's too; recovery states its approval's problems in the currency the dispatch was decided in. Approval caps
 * and subject limits are in the effect's currency: an approval is scoped to one payment or customer.
 */
export function currencyDecidedOn(decidedOn: JsonObject, kind: EffectKind, creditCurrency: string | null): string | null {
  return currencyCode(decidedOn.currency) ?? (kind === 'credit' ? currencyCode(creditCurrency) : null);
}

/** Every read of a submit's premises was older than `maxAgeMs` (premiseMaxAgeMs) at its dispatch step: retryable, nothing written. */
function staleReadError(effectId: string, reads: number, maxAgeMs: number): InterlockError {
  return new InterlockError(
    'premise_read_failed',
    `The premises of effect ${effectId} were read ${reads} times, and each read was more than ${maxAgeMs} ms old by its dispatch step (this worker is stalling: event-loop or VM pauses), so nothing was sent on facts that may have changed. Retry; check the worker's host if it recurs.`,
  );
}

function otherSubject(bound: string, subject: string): string {
  return `this request id is bound to ${bound}, not ${subject}; the recorded payload stands`;
}

/**
 * The reason the target's refusal was recorded with, for an answer REFUSED:target_error: its sentence depends on it
 * (explainRecorded: refused by the target's own check before sending, or by Stripe).
 */
function targetRefusal(entries: readonly Entry[]): { reason?: string } {
  const refused = entries.findLast((entry): entry is EntryOf<'REFUSED'> => entry.kind === 'REFUSED' && entry.resolves && entry.code === 'REFUSED:target_error');
  return refused === undefined ? {} : { reason: refused.reason };
}

function refusedDraft(code: string, reason: string, checks: Checks | null, changes: Checks['changes'] = []): Draft<'REFUSED'> {
  return { kind: 'REFUSED', code, reason, checks, rechecked: null, changes, resolves: false };
}

type Chain = { state: EffectState; entries: Entry[] };

/** Whether a submit that ended with `outcome` leaves nothing open behind it (its index entry can go): null is a submit that threw. */
function leavesNothingOpen(outcome: GateResult | null): boolean {
  return outcome !== null && outcome.outcome !== 'IN_FLIGHT' && !outcome.outcome.startsWith('UNRESOLVED:');
}

/**
 * An effects job's guess at the chain: the PROPOSED its producer wrote for the carried proposal (its hash checked
 * against the proposal, isOnlyEntryOf), and nothing after it. Never read: the dispatch step (or a refusal's append)
 * is written only right after that head, so a guess that no longer holds writes nothing.
 */
type AloneOnChain = { onlyEntry: string; at: number };

/**
 * What an attempt decides on: the head it writes after (and that entry's time, 0 when not known), the epoch, the
 * premises decided on, the PROPOSED still to write; and `neverSent`, whether the chain it judged holds no dispatch, so
 * that its own would be the effect's first (ReadContext.neverSent: its premise read and its send take nothing at the
 * target for the effect's own). The dispatch step writes only after the head judged, so a chain that moved since
 * (another submit's dispatch) writes nothing, and the next attempt judges the chain as it is then.
 */
type Footing = { head: string; headAt: number; epoch: number; decidedOn: JsonObject; proposed: AnyDraft[]; neverSent: boolean };

/**
 * Whether a chain holds no dispatch whose send may have gone out. Every DISPATCHED counts, however it ended: the chain
 * does not record whether its request left, and one refused at recovery may still land late (its request was on its
 * way), until the facts record that landing. A dispatch after one is read without neverSent, as recovery reads: its
 * earlier send's landed refund is its own, not someone else's money out that would refuse an effect whose money moved,
 * and its send goes under the same Idempotency-Key, which Stripe answers with that landing.
 */
function neverDispatched(entries: readonly Entry[]): boolean {
  return !entries.some((entry) => entry.kind === 'DISPATCHED');
}

/**
 * This submit's binding of the effect to its subject. UNBOUND: not made yet, because on one Redis server a new
 * effect's binding is made in its dispatch step (bind-propose-10), one round trip instead of two.
 */
type Binding = Extract<BindReply, { status: 'NEW' | 'BOUND' }> | { status: 'UNBOUND' };

export function createSubmit(ctx: GateContext, recover: Recover) {
  const { journal, target, timing, logger } = ctx;

  /** The refusal of another payload under a bound effect id: kept as evidence, never as a PROPOSED (item 3, 11). */
  async function refuseConflict(partition: string, prepared: Prepared, reason: string): Promise<GateResult> {
    const { effectId, proposal } = prepared;
    await keepConflictEvidence(journal, logger, partition, effectId, proposal, reason);
    logger.info({ effectId, outcome: 'REFUSED:conflicting_payload' }, 'refused another payload for a bound request');
    return ctx.result(effectId, 'REFUSED:conflicting_payload', { reason });
  }

  /**
   * Makes the binding a submit put off for its dispatch step, when a refusal comes first; the answer if it is bound
   * elsewhere. A submit that expects a chain (`place`'s head) only takes the binding the effect holds (bindExisting):
   * not bound, the effect has no chain, nothing is written, and the attempt is tried again ('retry').
   */
  async function bindFirst(prepared: Prepared, binding: { current: Binding }, place: Place): Promise<GateResult | 'retry' | null> {
    if (binding.current.status !== 'UNBOUND') return null;
    const { effectId, facts } = prepared;
    const bound = place.head === '' ? await journal.bind(effectId, facts.subject) : await journal.bindExisting(effectId, facts.subject);
    if (bound.status === 'UNBOUND') return 'retry';
    if (bound.status === 'OTHER_SUBJECT') return refuseConflict(bound.bound, prepared, otherSubject(bound.bound, facts.subject));
    binding.current = bound;
    return null;
  }

  /** The answer for an effect that will not be dispatched now, from its chain. */
  async function standing(partition: string, effectId: string, chain: Chain): Promise<GateResult | null> {
    const blocker = dispatchBlocker(chain.entries, firstProposal(chain.entries)?.effect ?? {});
    switch (blocker) {
      case null:
      case 'conflicting_payload':
        return null;
      case 'in_flight':
        return answer(await recover(effectId, partition), partition);
      case 'committed':
        return ctx.result(effectId, 'DUPLICATE_IGNORED', { evidence: committedEntry(chain.entries)?.found ?? null });
      case 'ambiguous':
        return ctx.result(effectId, outcomeOf(chain.entries) === 'COMMITTED_ON_QUERY' ? 'DUPLICATE_IGNORED' : 'AMBIGUOUS');
      case 'target_error':
        return ctx.result(effectId, 'REFUSED:target_error', targetRefusal(chain.entries));
      case 'reapproved':
        // The refusal stands for this effect id; its re-approval is another request.
        return ctx.result(effectId, (outcomeOf(chain.entries) ?? 'REFUSED:lease') as Outcome);
      default: {
        const never: never = blocker;
        return never;
      }
    }
  }

  async function settledOutcome(partition: string, effectId: string): Promise<GateResult> {
    const [{ state }, entries] = await Promise.all([journal.readState(partition, effectId), journal.entries(partition, effectId)]);
    if (state.open) return ctx.result(effectId, 'IN_FLIGHT', { holder: state.owner, retryAt: state.claimExpires });
    const outcome = outcomeOf(entries);
    // Someone else settled it: their commit is, for this caller, a duplicate (two callers never both hear COMMITTED).
    const committed = committedEntry(entries);
    if (committed || outcome === 'COMMITTED_ON_QUERY') return ctx.result(effectId, 'DUPLICATE_IGNORED', { evidence: committed?.found ?? null });
    if (outcome === null) return ctx.result(effectId, 'IN_FLIGHT', { holder: state.owner, retryAt: state.claimExpires });
    return ctx.result(effectId, outcome as GateResult['outcome'], outcome === 'REFUSED:target_error' ? targetRefusal(entries) : {});
  }

  function answer(one: Settled, partition: string): Promise<GateResult> | GateResult {
    switch (one.kind) {
      case 'settled': {
        const extra: Omit<GateResult, 'effectId' | 'outcome' | 'sentence'> = {};
        if (one.evidence !== undefined) extra.evidence = one.evidence;
        if (one.reason !== undefined) extra.reason = one.reason;
        if (one.changes !== undefined) extra.changes = one.changes;
        return ctx.result(one.effectId, one.outcome, extra);
      }
      case 'waiting':
        return ctx.result(one.effectId, 'IN_FLIGHT', { holder: 'recovery', retryAt: one.until, reason: one.reason });
      case 'skipped':
        if (one.holder !== undefined) return ctx.result(one.effectId, 'IN_FLIGHT', { holder: one.holder, retryAt: one.retryAt ?? 0, reason: one.reason, ...(one.slowDown === undefined ? {} : { slowDown: one.slowDown }) });
        return settledOutcome(partition, one.effectId);
      case 'unresolved':
        return ctx.result(one.effectId, one.outcome, { reason: one.error, ...(one.slowDown === undefined ? {} : { slowDown: one.slowDown }) });
      default: {
        const never: never = one;
        return never;
      }
    }
  }

  /** A refusal the dispatch script decided (lease, caps): the proposal and why, after the chain head it judged. */
  async function recordRefusal(binding: { current: Binding }, partition: string, prepared: Prepared, place: Place, proposed: AnyDraft[], drafts: AnyDraft[], code: 'REFUSED:lease' | 'REFUSED:over_cap' | 'REFUSED:stale_premise', reason: string, changes: Checks['changes'] = []): Promise<GateResult | 'retry'> {
    // Entries are written only under a binding: a submit that put it off for its dispatch step makes it now.
    const other = await bindFirst(prepared, binding, place);
    if (other !== null) return other;
    const written = await journal.append(partition, prepared.effectId, [...proposed, ...drafts], { place, payloadHash: prepared.hash });
    if (written.status !== 'OK') return 'retry';
    logger.info({ effectId: prepared.effectId, outcome: code, reason }, 'refused');
    return ctx.result(prepared.effectId, code, { reason, changes });
  }

  /** The chain as it stands now: the state and the entries, read together. */
  async function readChain(partition: string, effectId: string): Promise<Chain> {
    const [{ state }, entries] = await Promise.all([journal.readState(partition, effectId), journal.entries(partition, effectId)]);
    return { state, entries };
  }

  /**
   * Waits while refund `holder` holds the payment's refunds (REFUNDS_HOLD) and its dispatch is open: `free` once it let
   * go; `settled` when it holds them with its dispatch closed (AMBIGUOUS: only a person's action lets go, so waiting is
   * pointless); `busy` when it is still out HOLD_WAIT_MS later (or a send timeout, when shorter), and this submit
   * answers IN_FLIGHT rather than keep its caller (and an effects job's worker slot) waiting on a send that is slow,
   * stuck or whose sender died: it is tried again a second later. Every wait asks recovery about the holder at least
   * once before it answers `busy`, also one shorter than HOLDER_RECOVERY_EVERY_MS (a send timeout under a second),
   * which would otherwise leave a holder whose sender died to the recovery passes however often it is tried again.
   */
  async function waitForRefunds(partition: string, holder: string): Promise<'free' | 'settled' | 'busy'> {
    const until = performance.now() + Math.min(target.sendTimeoutMs, HOLD_WAIT_MS);
    let looked = performance.now();
    let asked = false;
    for (let pause = 20; ; pause = Math.min(pause * 2, 500)) {
      const now = await refundsHolder(journal, partition);
      if (now === null || now.holder !== holder) return 'free';
      if (!now.open) return 'settled';
      const over = performance.now() >= until;
      if (over && asked) return 'busy';
      // A holder whose sender died is recovered here, as a submit recovers its own effect found in flight (DESIGN §7):
      // left to the recovery passes, the wait would last until the next one. Recovery leaves a live sender alone.
      if (over || performance.now() - looked >= HOLDER_RECOVERY_EVERY_MS) {
        looked = performance.now();
        asked = true;
        await recoverHolder(holder, partition);
        // A wait past its end looks once more at what recovery left, then answers.
        if (over) continue;
      }
      await sleep(pause);
    }
  }

  /**
   * Recovers refund `holder`, which holds the payment's refunds, for a submit waiting on it (waitForRefunds), and
   * tells what that settled, or could not find out, as a recovery pass's report (GateEvents `recovered`). A failure
   * is logged: the wait goes on.
   */
  async function recoverHolder(holder: string, partition: string): Promise<void> {
    let one: Settled;
    try {
      one = await recover(holder, partition);
    } catch (error) {
      logger.warn({ effectId: holder, error: quoteError(error) }, 'recovering the refund that holds the payment failed; waiting on');
      return;
    }
    if (one.kind !== 'settled' && one.kind !== 'unresolved') return;
    const report: RecoveryReport = { settled: [], waiting: [], skipped: [], unresolved: [], nextAt: null };
    if (one.kind === 'settled') report.settled.push({ effectId: holder, outcome: one.outcome, sentence: explainRecorded(one.outcome, one.reason) });
    else report.unresolved.push({ effectId: holder, outcome: one.outcome, error: one.error, ...(one.retryAt === undefined ? {} : { retryAt: one.retryAt }) });
    ctx.events?.recovered?.(report);
  }

  /** Waits until the worker knows Redis's clock is past `at` (ms): a premise read that begins then begins after it. */
  async function untilRedisPasses(at: number): Promise<void> {
    for (let tries = 0; tries < 50 && (journal.clock.floor() ?? 0) <= at; tries += 1) {
      const behind = at - (journal.clock.floor() ?? at);
      if (behind > 0) await sleep(Math.min(behind + 1, 1_000));
      else await journal.now();
    }
  }

  /**
   * One attempt at the effect. `given` is the chain when the caller has it already: read together with the binding,
   * or empty after a new binding, which proves there is no chain yet (chains are written only after binding), or
   * empty as a guess before a binding put off for the dispatch step, or an effects job's guess that it is the
   * producer's PROPOSED alone (AloneOnChain). The dispatch script checks the head and the epoch, so a chain that moved
   * since (or a guess that was wrong) is caught there. `boundNow`: the binding (when made) was made for this attempt,
   * right before it.
   */
  async function attempt(prepared: Prepared, binding: { current: Binding }, given: Chain | AloneOnChain | null, ahead: FactsAhead | null, boundNow: boolean): Promise<GateResult | 'retry' | 'rebind' | 'reread' | 'stale'> {
    const { effectId, proposal, facts, effect, hash } = prepared;
    const partition = facts.subject;
    let bound = binding.current;
    // Only the first attempt is given a chain; after a new binding (or before a binding not made yet) it is the empty one.
    const fresh = bound.status !== 'BOUND' && given !== null;
    let footing: Footing;
    const guessed = given !== null && 'onlyEntry' in given;
    if (given !== null && 'onlyEntry' in given) {
      // The producer's PROPOSED of this very proposal, alone: decided on its premises, written already, epoch 0, and
      // never dispatched (a guess that no longer holds writes nothing).
      footing = { head: given.onlyEntry, headAt: given.at, epoch: 0, decidedOn: proposal.premises, proposed: [], neverSent: true };
    } else {
      const chain: Chain = given ?? (await readChain(partition, effectId));
      // An empty chain gets its first entries only under a binding made for this attempt by a script that checked the
      // deployment marker (bind-5, bind-propose-10). One made before (an earlier attempt's) proves only that Redis held
      // its data then: since a FLUSHALL, or a restart without the append-only file, the chain of an effect committed
      // before reads empty too, and would be dispatched again. So such an attempt binds again first: on one server its
      // dispatch step binds (UNBOUND), in the same atomic step as its check, and this submit's earlier index entry goes
      // (nothing was written under it since: an attempt that writes ends the submit); on a cluster ('rebind') bind-5
      // binds right before. A binding just made that found the effect bound already (BOUND) proves no more: its script
      // checked the marker before the chain was read (submit reads the chain after it, submitLatest beside it), and a
      // loss in between reads the chain empty under it. On one server the dispatch step binds again, as above, at no
      // cost; on a cluster the marker is read once more, after the chain (journal.checkMarker): a round trip on this
      // rare path only. The cluster's dispatch step (propose-5) cannot check the marker (another slot), so a loss between
      // that read and the step is still not seen. A NEW binding proves the effect was never bound (nothing of it could
      // be lost), so a submit's first attempt on the happy path pays nothing.
      if (bound.status !== 'UNBOUND' && (!boundNow || bound.status === 'BOUND') && chain.entries.length === 0 && chain.state.head === '') {
        if (journal.bindsWithDispatch) {
          journal.unindex(effectId, bound.token);
          bound = binding.current = { status: 'UNBOUND' };
        } else if (boundNow) await journal.checkMarker();
        else return 'rebind';
      }
      if (!fresh) {
        const first = firstProposal(chain.entries);
        if ((first && payloadHash(first.effect) !== hash) || (chain.state.payloadHash !== '' && chain.state.payloadHash !== hash)) {
          return refuseConflict(partition, prepared, 'this request id was first decided with another payload; the recorded payload stands');
        }
        const known = await standing(partition, effectId, chain);
        if (known) return known;
        // A credit moves the money it was first decided as, here as in the recorder (record.ts otherCurrency): a gate
        // embedded without it (createInterlock, startSender) is handed the same amount decided again in another currency.
        const otherMoney = otherCurrency(chain.entries, effect, proposal.premises);
        if (otherMoney !== null) return refuseConflict(partition, prepared, otherMoney);
      }
      const decidedOn = premisesDecidedOn(chain.entries, proposal.approval, proposal.premises);
      // A proposal the producer recorded before queueing it (record.ts) is not written a second time.
      const latest = chain.entries.findLast((entry): entry is EntryOf<'PROPOSED'> => entry.kind === 'PROPOSED');
      const last = chain.entries.at(-1);
      const isNew = !(latest && sameProposal(latest, proposal));
      // A new decision counts against the effect's MAX_DECISIONS here as in the recorder (record.ts), on the chain this
      // attempt judged: everything it writes is placed on that chain's head, so a decision recorded meanwhile moves
      // the head, nothing is written, and the next attempt counts again. Refused, this submit wrote nothing, and its
      // own index entry goes.
      const decisions = isNew ? chain.entries.filter((entry) => entry.kind === 'PROPOSED').length : 0;
      if (decisions >= MAX_DECISIONS) {
        if (bound.status !== 'UNBOUND') journal.unindex(effectId, bound.token);
        binding.current = { status: 'UNBOUND' };
        throw new TooManyDecisions(effectId, decisions, currentOutcome(chain.entries));
      }
      footing = { head: last?.hash ?? chain.state.head, headAt: last?.at ?? 0, epoch: chain.state.epoch, decidedOn, proposed: isNew ? [proposedDraft(proposal, decidedOn)] : [], neverSent: neverDispatched(chain.entries) };
    }
    const { decidedOn, proposed, epoch, neverSent } = footing;
    const place: Place = { head: footing.head, at: footing.headAt };

    const terms: GrantedTerms | null = await ctx.terms(proposal.approval, { likely: partition });
    if (terms === null) {
      const reason = `approval ${proposal.approval} does not exist`;
      return recordRefusal(binding, partition, prepared, place, proposed, [refusedDraft('REFUSED:lease', reason, checksOf(null, [reason]))], 'REFUSED:lease', reason);
    }
    const snapshot = snapshotOfTerms(terms);
    // Every amount a refusal of this attempt states (a cap, what it holds, the effect's) is in this currency.
    const currency = currencyDecidedOn(decidedOn, facts.kind, ctx.unanswered?.creditCurrency ?? null);
    // The terms never change, so what they rule out needs no trip to Redis; revocation, expiry, uses and caps
    // move, and only the dispatch script judges them.
    const staticProblems = approvalProblems(Object.assign({}, snapshot, { expiresAt: Number.MAX_SAFE_INTEGER }), { now: 0, subject: partition, amount: facts.amount, phase: 'recovery', currency });
    if (staticProblems.length > 0) {
      const reason = staticProblems.join('; ');
      return recordRefusal(binding, partition, prepared, place, proposed, [refusedDraft('REFUSED:lease', reason, checksOf(snapshot, staticProblems))], 'REFUSED:lease', reason);
    }

    let report: PremiseReport;
    let readFrom: number;
    try {
      // A read ahead was made as for a first dispatch (readFactsAhead). On a chain that holds an earlier dispatch it is
      // not used: read so, that dispatch's landed refund would count as someone else's; the facts are read again.
      ({ report, from: readFrom } = await readFactsFrom(ctx, effectId, effect, decidedOn, prepared.attempt, ahead, neverSent));
    } catch (error) {
      // A submit that took its effect to be new has not looked at its chain yet. If the effect is bound after all,
      // its chain may answer without the facts (settled already, or bound to another payment), and a failed read
      // must not stand in for that answer.
      if (!fresh || bound.status !== 'UNBOUND' || !(error instanceof PremiseReadError)) throw error;
      const boundTo = await journal.partitionOf(effectId);
      if (boundTo === null) throw error;
      if (boundTo !== partition) return refuseConflict(boundTo, prepared, otherSubject(boundTo, partition));
      return 'retry';
    }
    const checks = checksOf(snapshot, [], report.violations, report.changes);
    const stale = report.violations.length > 0;
    // The stopwatch starts before the dispatch script, so the recorded deadline is never earlier than the abort.
    const deadlineAt = performance.now() + target.sendTimeoutMs;
    const request: ProposeRequest = {
      effectId,
      partition,
      mode: stale ? 'refuse' : 'dispatch',
      place,
      epoch,
      payloadHash: hash,
      owner: ctx.owner,
      nonce: ctx.nonce,
      claimTtlMs: timing.claimTtlMs,
      sendTimeoutMs: target.sendTimeoutMs,
      amount: facts.amount,
      approvalId: proposal.approval,
      termsSha: terms.termsSha,
      boundAt: bound.status === 'UNBOUND' ? 0 : bound.now,
      // Two credits for one incident of a customer are never both sent, however close together they come: the first
      // dispatched holds it (the target's own check reads only what has landed at Stripe). Nor are two refunds of one
      // payment decided on its other refunds: the second waits for the first and reads again (REFUNDS_HOLD).
      once: holdOf(effect, decidedOn, target.movedBySends),
      readFrom,
      drafts: ({ sendDeadline }) => [
        ...proposed,
        { kind: 'AUTHORIZED', approval: snapshot },
        stale
          ? refusedDraft('REFUSED:stale_premise', report.violations.join('; '), checks, report.changes)
          : { kind: 'DISPATCHED', subject: partition, approval: proposal.approval, premises: decidedOn, checks: { approvalLive: checks.approvalLive, approval: null, approvalProblems: checks.approvalProblems, violations: checks.violations, changes: checks.changes }, owner: ctx.owner, epoch: epoch + 1, sendDeadline },
      ],
    };
    let reply: ProposeReply;
    try {
      if (bound.status === 'UNBOUND') {
        const made = await journal.bindAndPropose(request);
        // On a guessed chain (AloneOnChain) another subject or payload proves the guess wrong, not the caller: the job's
        // proposal is not the one its producer recorded (its data changed in Redis), so the recorded one is run. So does
        // an effect not bound at all (UNBOUND: a step that expects a chain binds none, and wrote nothing).
        if (made.reply === null) return guessed || made.bound.status === 'UNBOUND' ? 'retry' : refuseConflict(made.bound.bound, prepared, otherSubject(made.bound.bound, partition));
        binding.current = made.bound;
        reply = made.reply;
      } else {
        reply = await journal.propose(request);
      }
    } catch (error) {
      // The step's answer was lost (the connection dropped after Redis ran it, a command that timed out): if it opened
      // the dispatch, this worker holds it at epoch + 1 and sent nothing under it. Saying so (`first`) lets recovery send
      // it, re-checked, instead of settling it AMBIGUOUS on a target it cannot ask (tier 3). Only for the dispatch this
      // step opened: the release holds only while the chain's head is the DISPATCHED it sealed, since the claim names the
      // worker, not the attempt, and another submit of this process may be sending under a claim at that epoch (`first`
      // would hand that live send to a recoverer to send again); and never while this process holds the effect. Best
      // effort: a step that never ran, or refused, changes nothing (NOT_HELD).
      const sealed = journal.lostDispatchHead(request);
      if (sealed !== null && !ctx.busy.has(effectId)) await journal.releaseClaim(partition, effectId, ctx.owner, epoch + 1, 'first', sealed).catch(() => undefined);
      throw error;
    }
    switch (reply.status) {
      case 'OK': {
        if (stale) {
          logger.info({ effectId, outcome: 'REFUSED:stale_premise', reason: report.violations.join('; ') }, 'refused');
          return ctx.result(effectId, 'REFUSED:stale_premise', { reason: report.violations.join('; '), changes: report.changes });
        }
        const current = binding.current;
        const boundAt = boundAtOf(current);
        const holding: Holding = { partition, effectId, epoch: reply.epoch ?? epoch + 1, head: reply.entries.at(-1)?.hash ?? '', approvalId: proposal.approval, attempt: prepared.attempt, ...(boundAt === undefined ? {} : { boundAt }), ...(current.status === 'UNBOUND' ? {} : { indexEntry: `${effectId}:${current.token}` }), ...(neverSent ? { neverSent: true as const } : {}) };
        ctx.busy.hold(effectId);
        try {
          return await answer(await sendDispatched(holding, effect, proposal.requestId ?? null, deadlineAt), partition);
        } finally {
          ctx.busy.release(effectId);
        }
      }
      case 'LEASE': {
        const current: ApprovalSnapshot = { ...snapshot, revoked: reply.revoked, revokedAt: reply.revokedAt === 0 ? null : reply.revokedAt, reservedCents: reply.reservedCents, uses: reply.uses };
        if (reply.missing) ctx.terms(proposal.approval, { refresh: true, likely: partition }).catch(() => undefined);
        // An amount over the approval's cap comes with the cap as Redis holds it (lib.lua): the sentence is written
        // here, in the effect's currency, as the check before the step writes it.
        const reason = 'cap' in reply && typeof reply.cap === 'string' ? overCapProblem(proposal.approval, reply.cap, facts.amount, currency) : reply.reason;
        const problems = [reason];
        return recordRefusal(binding, partition, prepared, place, proposed, [refusedDraft('REFUSED:lease', reason, checksOf(reply.missing ? null : current, problems, report.violations, report.changes))], 'REFUSED:lease', reason);
      }
      case 'OVER_CAP': {
        const current: ApprovalSnapshot = { ...snapshot, reservedCents: reply.reservedCents, uses: reply.uses };
        const money = (amount: string | number) => amountText(amount, currency);
        const reason = `${reply.cap} allows ${money(reply.limit)} and ${money(reply.reserved)} are already moved or in flight; ${money(facts.amount)} more would pass it`;
        return recordRefusal(binding, partition, prepared, place, proposed, [{ kind: 'AUTHORIZED', approval: current }, refusedDraft('REFUSED:over_cap', reason, checksOf(current, [], report.violations, report.changes))], 'REFUSED:over_cap', reason);
      }
      case 'ONCE': {
        const current: ApprovalSnapshot = { ...snapshot, reservedCents: reply.reservedCents, uses: reply.uses };
        const reason = `${reply.once.replace(':', ' ')} of ${partition} is compensated once, and effect ${reply.holder} was sent for it already (in flight, landed or ambiguous); a second ${facts.kind} would pay it twice`;
        return recordRefusal(binding, partition, prepared, place, proposed, [{ kind: 'AUTHORIZED', approval: current }, refusedDraft('REFUSED:over_cap', reason, checksOf(current, [], report.violations, report.changes))], 'REFUSED:over_cap', reason);
      }
      case 'WAIT': {
        // Nothing was written: the other refund settles, and this one reads its premises again, which then show that
        // refund if it landed.
        const waited = await waitForRefunds(partition, reply.holder);
        if (waited === 'free') return 'reread';
        if (waited === 'settled') {
          // Whether it landed is not known, so the payment's other refunds cannot be read: refused (P: a definite end),
          // for a person to resolve that refund and decide this one again.
          const reason = `refund ${reply.holder} on ${partition} is AMBIGUOUS (whether it landed is not known), and this refund was decided on the payment's other refunds, which cannot be established until a person resolves it; resolve it in the inbox, then decide this refund again`;
          return recordRefusal(binding, partition, prepared, place, proposed, [{ kind: 'AUTHORIZED', approval: snapshot }, refusedDraft('REFUSED:stale_premise', reason, checks, report.changes)], 'REFUSED:stale_premise', reason, report.changes);
        }
        const reason = `refund ${reply.holder} on ${partition} is in flight, and this refund was decided on the payment's other refunds: it is sent, after a fresh read of its premises, once that one settles`;
        logger.info({ effectId, holder: reply.holder }, 'waiting for another refund on the payment');
        return ctx.result(effectId, 'IN_FLIGHT', { holder: reply.holder, retryAt: (journal.clock.estimate() ?? Date.now()) + WAIT_RETRY_MS, reason });
      }
      case 'REREAD':
        // A refund on the payment landed after this attempt's premise read began: the read may not show it.
        await untilRedisPasses(reply.freed);
        return 'reread';
      case 'STALE_READ':
        // The premise read began more than premiseMaxAgeMs before the dispatch step (this worker stalled between
        // them): what it read may have changed since, so nothing was written, and the premises are read again.
        logger.warn({ effectId, readFrom: reply.readFrom, now: reply.now }, 'premise read too old at the dispatch step; reading again');
        return 'stale';
      case 'TERMS':
        await ctx.terms(proposal.approval, { refresh: true, likely: partition });
        return 'retry';
      case 'REBIND':
        return 'rebind';
      case 'CONFLICTING_PAYLOAD':
        if (guessed) return 'retry';
        return refuseConflict(partition, prepared, 'this request id was first decided with another payload; the recorded payload stands');
      case 'IN_FLIGHT':
      case 'COMMITTED':
      case 'AMBIGUOUS':
      case 'TARGET_ERROR':
      case 'EPOCH_MOVED':
      case 'HEAD_MOVED':
      case 'BAD_TIME':
        return 'retry';
      default: {
        const never: never = reply;
        return never;
      }
    }
  }

  /**
   * When the binding that put the effect in the effects-by-time index was made (Redis ms), for where its settle goes
   * (journal.settledAfterSend): known here only when this submit made it (NEW). Otherwise undefined, and the settle goes
   * with the batched index upkeep, whose script reads the binding's time in that index (lib.lua apply_upkeep): the
   * service's own path (the API binds and records, the effects worker sends) leaves a prompt commit off the watch list
   * that way too, while one under a binding made long before (its maker failed before recording, and a retry recorded
   * it hours later) goes on it. No time on the chain says when the binding was made.
   */
  function boundAtOf(binding: Binding): number | undefined {
    return binding.status === 'NEW' ? binding.now : undefined;
  }

  async function sendDispatched(holding: Holding, effect: Effect, requestId: string | null, deadlineAt: number): Promise<Settled> {
    const held = await holdBack(ctx, holding, 'first');
    if (held !== null) {
      logger.warn({ effectId: holding.effectId, reason: held }, 'send held back');
      return { kind: 'skipped', effectId: holding.effectId, reason: held, holder: ctx.owner, retryAt: journal.clock.estimate() ?? 0 };
    }
    const sent = await sendOnce(ctx, holding, effect, requestId, deadlineAt);
    if ('landed' in sent) return commit(ctx, holding, 'send', sent.landed, null, 'COMMITTED');
    if ('rejected' in sent) return settleRejected(ctx, holding, effect, rejectionOf(sent.rejected), null, { onlyRequest: true, nothingLeft: holding.neverSent === true && target.refusalProvesNothingLanded === true });
    const why = 'fenced' in sent ? sent.fenced : quoteError(sent.unknown);
    logger.warn({ effectId: holding.effectId, error: why }, 'fenced' in sent ? 'the send did not start; recovery will settle the effect' : 'send outcome unknown; the claim stays for recovery');
    // A send fenced by a read the target made before writing carries that read's error (SendResult `cause`): nothing
    // was sent, and a 429 on it slows the queue down for its Retry-After as one on the send does, while a refused key
    // is answered as the configuration error it is, as on a premise read (the dispatch stays for recovery).
    const slowDown = slowDownOf('unknown' in sent ? sent.unknown : sent.cause);
    if ('fenced' in sent && sent.cause instanceof InterlockError && sent.cause.code === 'target_misconfigured') throw sent.cause;
    if ('unknown' in sent) await markUnknown(ctx, holding, slowDown);
    const reason = 'fenced' in sent ? `nothing was sent: ${why}; recovery will settle it` : `the send's outcome is unknown (${why}); recovery will settle it`;
    return { kind: 'skipped', effectId: holding.effectId, reason, holder: ctx.owner, retryAt: ctx.journal.clock.estimate() ?? 0, ...(slowDown === null ? {} : { slowDown }) };
  }

  /** Attempts until one settles the submit; `known` serves the first attempt, `ahead` the first attempt after the binding. */
  async function run(prepared: Prepared, first: Binding, known: Chain | null, ahead: FactsAhead | null): Promise<GateResult> {
    const { effectId, facts } = prepared;
    const binding: { current: Binding } = { current: first };
    let chain = known;
    let early = ahead;
    let outcome: GateResult | null = null;
    // The binding was made right before the next attempt (attempt's `boundNow`): the caller's, for the first one.
    let boundNow = first.status !== 'UNBOUND';
    let staleReads = 0;
    try {
      for (let round = 0; round < 8; round += 1) {
        // A submit that took its effect to be new and was wrong keeps its facts for the next attempt: it read them
        // for this effect a moment ago, and only learned the chain it must judge them against.
        const guessed = binding.current.status === 'UNBOUND';
        const step = await attempt(prepared, binding, chain, early, boundNow);
        chain = null;
        boundNow = false;
        if (!guessed || step === 'reread' || step === 'stale') early = null;
        if (step === 'retry' || step === 'reread') continue;
        if (step === 'stale') {
          staleReads += 1;
          // A worker this slow sends nothing now: the job's retry reads and dispatches again, maybe on another worker.
          if (staleReads >= STALE_READ_TRIES) throw staleReadError(effectId, staleReads, premiseMaxAgeMs(ctx.target.sendTimeoutMs));
          continue;
        }
        if (step === 'rebind') {
          // On one server the next dispatch step binds again, with its marker check in the same atomic step; this
          // submit's earlier entry in the open index goes (a rebind wrote nothing under it).
          if (journal.bindsWithDispatch) {
            const held = binding.current;
            if (held.status !== 'UNBOUND') journal.unindex(effectId, held.token);
            binding.current = { status: 'UNBOUND' };
            continue;
          }
          const again = await journal.bind(effectId, facts.subject);
          if (again.status === 'OTHER_SUBJECT') return (outcome = await refuseConflict(again.bound, prepared, `this request id is bound to ${again.bound}`));
          binding.current = again;
          boundNow = true;
          continue;
        }
        return (outcome = step);
      }
      return (outcome = await settledOutcome(facts.subject, effectId));
    } finally {
      // This submit's index entry goes once it knows it leaves nothing open behind it. Each submit has its own
      // entry, so this never removes the entry of another submit of the same effect that is still sending.
      // A submit that never made its binding has no entry.
      const bound = binding.current;
      if (bound.status !== 'UNBOUND' && leavesNothingOpen(outcome)) journal.unindex(effectId, bound.token);
    }
  }

  const emptyChain = (): Chain => ({ state: { head: '', epoch: 0 } as EffectState, entries: [] });

  /**
   * One attempt on the chain an effects job's producer left (AloneOnChain): binding, checks and dispatch in one script,
   * without reading the chain first. Null when the chain is not that any more (a re-decision, a refusal, another
   * submit's dispatch): nothing was written, and the caller reads the chain and picks its latest proposal, as a job
   * whose producer left no such hash does.
   */
  async function onTheProducersChain(prepared: Prepared, onlyEntry: { hash: string; at: number }, ahead: FactsAhead): Promise<GateResult | null> {
    const binding: { current: Binding } = { current: { status: 'UNBOUND' } };
    let outcome: GateResult | null = null;
    let moved = false;
    try {
      const step = await attempt(prepared, binding, { onlyEntry: onlyEntry.hash, at: onlyEntry.at }, ahead, false);
      if (step === 'retry' || step === 'rebind' || step === 'reread' || step === 'stale') {
        moved = true;
        return null;
      }
      return (outcome = step);
    } finally {
      // As in run: an entry goes once nothing is left open behind it, and a guess that missed left nothing open.
      const bound = binding.current;
      if (bound.status !== 'UNBOUND' && (moved || leavesNothingOpen(outcome))) journal.unindex(prepared.effectId, bound.token);
    }
  }

  async function submit(input: unknown, options: ParseOptions = {}): Promise<GateResult> {
    const prepared = prepare(ctx, input, options);
    const { effectId, facts } = prepared;
    ctx.guard?.assertMaySend();
    const ahead = readFactsAhead(ctx, prepared);
    // On one server the binding is made with the dispatch step: the effect is taken to be new, and the step says
    // otherwise if it is not. A cluster binds first, in the binding's own slot.
    if (journal.bindsWithDispatch) return run(prepared, { status: 'UNBOUND' }, emptyChain(), ahead);
    const bound = await journal.bind(effectId, facts.subject);
    if (bound.status === 'OTHER_SUBJECT') return refuseConflict(bound.bound, prepared, otherSubject(bound.bound, facts.subject));
    return run(prepared, bound, bound.status === 'NEW' ? emptyChain() : null, ahead);
  }

  /**
   * The effect's latest recorded proposal, submitted: what an effects job runs. A job runs only a proposal the journal
   * holds for its effect: every producer records its proposal before it queues the job (record.ts, and recovery's
   * requeue reads the recorded one), and the edges that record it (API, CLI, decisions worker) are where four eyes,
   * the caller's token and the premises read are checked. So a job whose effect has no PROPOSED recorded (one added
   * with only the queue's keys) is refused (invalid_proposal): nothing is recorded or sent, whatever it carries.
   * `carried`, the job's copy, serves only to find the chain (its subject) and, when it is the recorded proposal, to
   * skip validating that again. `judged` is false when the latest proposal had been refused already (a job that
   * stalled while recovery refused its effect): that refusal is the answer, and nothing is judged again.
   *
   * A recorded effect is bound already, so its chain is read in the same round trip as the binding (and the carried
   * approval's terms with them), instead of one read of the chain to pick the proposal and another after binding.
   * That needs the subject, from the carried proposal; when it is unusable or names another effect, the chain is
   * read first, as its binding says. A job never makes its effect's binding (bindExisting, and bind-propose-10 on the
   * producer's chain): every producer binds before it records, so an effect not bound has nothing recorded, and a job
   * added with only the queue's keys must not bind a request id nobody has used yet (case ids are predictable) to the
   * payment it names, which would refuse the real request under that id as another payload (I5).
   */
  async function submitLatest(effectId: string, carried: unknown, onlyEntry: unknown = null): Promise<{ answer: GateResult; judged: boolean }> {
    let prepared: Prepared | null;
    try {
      prepared = prepare(ctx, carried);
    } catch {
      prepared = null;
    }
    if (prepared !== null && prepared.effectId === effectId) {
      const subject = prepared.facts.subject;
      ctx.guard?.assertMaySend();
      const approval = prepared.proposal.approval;
      void ctx.terms(approval, { likely: subject }).catch(() => undefined);
      const ahead = readFactsAhead(ctx, prepared);
      if (onlyEntry !== null && journal.bindsWithDispatch && isOnlyEntryOf(onlyEntry, effectId, prepared.proposal)) {
        const answer = await onTheProducersChain(prepared, onlyEntry, ahead);
        if (answer !== null) return { answer, judged: true };
      }
      const [existing, chain] = await Promise.all([journal.bindExisting(effectId, subject), readChain(subject, effectId)]);
      // Not bound with a proposal recorded: its producer bound and recorded between the two reads (or a cluster's index
      // lost the binding): it binds as a submit does, to the subject its chain is on. Not bound with nothing recorded:
      // the binding's subject and chain are read below, as for a carried copy of another subject.
      const bound = existing.status === 'UNBOUND' && recordedProposal(chain.entries, 'latest') !== null ? await journal.bind(effectId, subject) : existing;
      if (bound.status !== 'OTHER_SUBJECT' && bound.status !== 'UNBOUND') {
        const refused = refusalOfLatest(chain.entries);
        const latest = recordedProposal(chain.entries, 'latest');
        if (latest === null) {
          journal.unindex(effectId, bound.token);
          return refuseUnrecorded(effectId, prepared);
        }
        const latestEntry = chain.entries.findLast((entry): entry is EntryOf<'PROPOSED'> => entry.kind === 'PROPOSED');
        let chosen: Prepared;
        try {
          // The job carries the proposal its producer recorded: when it is the latest, it was validated above already.
          chosen = latestEntry !== undefined && sameProposal(latestEntry, prepared.proposal) ? prepared : prepare(ctx, latest, { recorded: true });
        } catch (error) {
          journal.unindex(effectId, bound.token);
          throw error;
        }
        // The facts read ahead are the carried effect's; they serve the recorded proposal when it moves the same money
        // (a re-decision changes the approval or the premises, not the payload), and only the facts it decides on.
        // That read is this submit's own, so the recorded proposal's send is its attempt (the target keeps the read for it).
        const reads = chosen.hash === prepared.hash;
        if (refused === null && chosen.effectId === effectId) return { answer: await run(reads ? { ...chosen, attempt: prepared.attempt } : chosen, bound, bound.status === 'NEW' ? emptyChain() : chain, reads ? ahead : null), judged: true };
        journal.unindex(effectId, bound.token);
        if (refused !== null) return { answer: ctx.result(effectId, refused), judged: false };
      }
    }
    const partition = await journal.partitionOf(effectId);
    const entries = partition === null ? [] : await journal.entries(partition, effectId);
    const refused = refusalOfLatest(entries);
    if (refused !== null) return { answer: ctx.result(effectId, refused), judged: false };
    const recorded = recordedProposal(entries, 'latest');
    if (recorded !== null) return { answer: await submit(recorded, { recorded: true }), judged: true };
    return refuseUnrecorded(effectId, prepared);
  }

  /**
   * The refusal of a job whose effect has no proposal recorded: what it carries is never recorded or sent. A chain
   * that reads empty may also be one Redis lost since the binding checked the deployment's marker (a committed
   * request's, see attempt): the marker is read once more first, so a loss is refused as the loss it is (and the job
   * waits for Redis), not as a job nobody recorded. One GET, on this path only.
   */
  async function refuseUnrecorded(effectId: string, carried: Prepared | null): Promise<never> {
    await journal.checkMarker();
    const what =
      carried === null ? 'a copy that is no proposal' : carried.effectId === effectId ? 'a proposal no producer recorded' : `a proposal of effect ${carried.effectId}`;
    throw new InterlockError(
      'invalid_proposal',
      `The job of effect ${effectId} carries ${what}, and no proposal of ${effectId} is recorded: a job runs only a proposal the journal holds for its effect, so nothing was recorded or sent. ` +
        'Interlock records every proposal before it queues its job, so this job was added to the queue some other way: remove it, and if the refund or credit is wanted, propose it through the support API or the CLI.',
    );
  }

  return { submit, submitLatest };
}
