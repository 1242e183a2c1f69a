// How an effect reads over HTTP: its state and outcome from its journal alone (the same entries a receipt holds),
// the outcome's plain sentence, and, for one effect, its journal kinds with times, the final money and exposure as
// verify() derives them from the signed receipt.
import { currencyOfEffectOrCredit, currentOutcome, explainRecorded, InterlockError, moneyAfterSend, outcomeReason, verify, type Entry, type Outcome, type PublicKeySet, type Receipt, type Stores } from '../../src/interlock.js';
import { PERMISSIONS, type Permission } from './auth.js';
import type { EffectState } from './schemas.js';
import type { Role } from './tokens.js';

const COMMITTED = new Set(['COMMITTED', 'COMMITTED_ON_QUERY', 'COMMITTED_BY_RETRY', 'REAPPLIED_AFTER_QUERY']);

const STATE_SENTENCES: Record<EffectState, string> = {
  proposed: 'Recorded with the facts it was decided on; the gate has not dispatched it yet.',
  dispatched: 'Being sent now; ask again, or propose with ?wait=SECONDS to hear the outcome.',
  committed: '',
  refused: '',
  ambiguous: '',
};

/**
 * The state of the effect's latest proposal: a refusal recorded before a later PROPOSED (the same request decided
 * again on facts that changed) answered an earlier one, so the effect reads as proposed until the new one settles
 * (core/verify.ts currentOutcome), and `?wait` waits for it.
 */
export function stateOf(entries: readonly Entry[]): { state: EffectState; outcome: string | null } {
  const outcome = currentOutcome(entries);
  if (outcome !== null) {
    if (COMMITTED.has(outcome)) return { state: 'committed', outcome };
    if (outcome === 'AMBIGUOUS') return { state: 'ambiguous', outcome };
    if (outcome.startsWith('REFUSED:')) return { state: 'refused', outcome };
  }
  const dispatched = entries.some((entry) => entry.kind === 'DISPATCHED');
  return { state: dispatched ? 'dispatched' : 'proposed', outcome: null };
}

/** `reason`: the reason recorded with the outcome (outcomeReason), which a target's refusal's sentence depends on. */
export function sentenceOf(state: EffectState, outcome: string | null, reason: string | null): string {
  return outcome === null ? STATE_SENTENCES[state] : explainRecorded(outcome as Outcome, reason);
}

/**
 * Whom an answer's links are for: the role of the token the answer goes to, or null for a reader that answers to no
 * token's role (the CLI, and the page, which read the stores themselves and show no links of the API).
 */
export type LinkReader = Role | null;

/**
 * `path` when `reader` may read the route it names, under `permission`, the one that route is registered with (auth.ts
 * PERMISSIONS, the document's `x-roles`); null when it may not: an answer never hands a role a link it would be
 * answered 403 on.
 */
export function linkFor(reader: LinkReader, permission: Permission, path: string): string | null {
  if (reader === null) return path;
  const roles: readonly Role[] = PERMISSIONS[permission];
  return roles.includes(reader) ? path : null;
}

/** An effect's links for `reader`: the effect (GET /v1/effects/:id) and its receipt (GET /v1/effects/:id/receipt). */
export function linksOf(effectId: string, reader: LinkReader): { self: string | null; receipt: string | null } {
  return { self: linkFor(reader, 'readEffects', `/v1/effects/${effectId}`), receipt: linkFor(reader, 'readReceipts', `/v1/effects/${effectId}/receipt`) };
}

const iso = (ms: number) => new Date(ms).toISOString();

function text(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

export type EffectSummary = ReturnType<typeof summaryOf>;

type Proposed = Extract<Entry, { kind: 'PROPOSED' }>;

/**
 * The proposal that stands, which the summary describes (its request id, agent and approval). A re-decision records
 * a new PROPOSED after a refusal answered the earlier one, so the latest is the one the effect's state and outcome
 * answer (stateOf), and the one sent when it was sent. A commit or an ambiguity is final for every proposal
 * (currentOutcome): it belongs to the proposal that was dispatched, which then stands even if a later one was
 * recorded, since the money moved (or may have) under its approval.
 */
function standingProposal(entries: readonly Entry[]): Proposed | null {
  let latest: Proposed | null = null;
  let dispatched: Proposed | null = null;
  for (const entry of entries) {
    if (entry.kind === 'PROPOSED') latest = entry;
    if (entry.kind === 'DISPATCHED') dispatched = latest;
  }
  const final = entries.some((entry) => entry.kind === 'COMMITTED' || entry.kind === 'AMBIGUOUS');
  return (final ? dispatched : null) ?? latest;
}

/**
 * `creditCurrency`: the configured one, which a credit recorded without its currency premise was given in. `reader`:
 * whom its links are for (linksOf); an answer of the API passes its caller's role.
 */
export function summaryOf(effectId: string, subject: string, entries: readonly Entry[], creditCurrency: string | null, reader: LinkReader = null) {
  const proposed = standingProposal(entries);
  const effect = proposed?.effect ?? null;
  const { state, outcome } = stateOf(entries);
  const reason = outcomeReason(entries);
  return {
    object: 'effect' as const,
    id: effectId,
    request_id: proposed?.requestId ?? null,
    kind: text(effect?.kind),
    subject,
    amount: typeof effect?.amount === 'number' ? effect.amount : null,
    currency: currencyOfEffectOrCredit(entries, creditCurrency),
    agent: proposed?.agent ?? null,
    approval: proposed?.approval ?? null,
    state,
    outcome,
    sentence: sentenceOf(state, outcome, reason),
    reason,
    settled: outcome !== null,
    created_at: entries[0] ? iso(entries[0].at) : null,
    links: linksOf(effectId, reader),
  };
}

/** Keys of a plain JSON value in snake_case (the API's style); values are left as they are. */
export function snakeKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(snakeKeys);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`), snakeKeys(item)]));
}

export function detailOf(summary: EffectSummary, entries: readonly Entry[], receipt: Receipt | null, publicKeys: PublicKeySet) {
  const verification = receipt ? verify(receipt, { publicKeys }) : null;
  return {
    ...summary,
    // What became of the money after the send, when it is not simply "it went back" (a refund Stripe failed afterwards).
    sentence: verification === null ? summary.sentence : `${summary.sentence}${moneyAfterSend(summary.state === 'committed', summary.kind, verification.finalMoney, verification.exposure)}`,
    // A refusal with its code: a REFUSED after a COMMITTED is another payload refused under the request id (evidence).
    journal: entries.map((entry) => ({ kind: entry.kind, ...(entry.kind === 'REFUSED' ? { code: entry.code } : {}), at: iso(entry.at), at_ms: entry.at })),
    final_money: snakeKeys(verification?.finalMoney ?? { status: 'unknown', refund: null, refunds: [], failureReason: null, disputes: [] }) as Record<string, unknown>,
    exposure: verification?.exposure ? (snakeKeys(verification.exposure) as Record<string, unknown>) : null,
    // The receipt's answer (did the money go back?) and whose word it is: the gate's own outcome, or a person's
    // finding on an AMBIGUOUS effect; and whether what Stripe holds now agrees with it.
    answer: verification === null || verification.answerFrom === null ? null : verification.answer,
    answer_from: verification?.answerFrom ?? null,
    answer_matches_final_money: verification?.answerMatchesFinalMoney ?? null,
    receipt_valid: verification ? verification.valid : null,
  };
}

/**
 * An effect's chain for its own page (the API's and /ui's), checked against its state as its receipt is
 * (journal checkedEntries): a chain cut, or gone while its state stays, is 500 journal_inconsistent, never shown as the
 * effect nor answered "no effect", which would tell an auditor that money moved never existed.
 */
export async function effectChain(stores: Pick<Stores, 'journal'>, id: string): Promise<{ partition: string; entries: Entry[] }> {
  const chain = await stores.journal.checkedEntries(id);
  if (chain === null || chain.entries.length === 0) throw new InterlockError('unknown_effect', `No effect ${id}.`);
  return chain;
}
