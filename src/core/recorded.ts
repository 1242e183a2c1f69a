// What an effect's chain says about its proposals: the one recorded first (it bound the payload, I5), the latest (a
// re-decision after a refusal), and the refusal that answered the latest, if one did. Pure: the chain is read by
// the caller.
import type { Entry, EntryOf } from './entries.js';
import { isRefusal, type Outcome } from './outcomes.js';
import type { Proposal } from './proposal.js';
import { currentOutcome } from './verify.js';

/** The first or the latest PROPOSED of the chain, as the gate takes a proposal; null when none is recorded. */
export function recordedProposal(entries: readonly Entry[], which: 'first' | 'latest'): Proposal | null {
  const proposals = entries.filter((entry): entry is EntryOf<'PROPOSED'> => entry.kind === 'PROPOSED');
  const chosen = which === 'first' ? proposals[0] : proposals.at(-1);
  if (chosen === undefined || chosen.approval === null) return null;
  const proposal: Proposal = { agent: chosen.agent, approval: chosen.approval, premises: chosen.premises, effect: chosen.effect };
  if (chosen.requestId !== undefined) proposal.requestId = chosen.requestId;
  if (chosen.request !== null) proposal.request = chosen.request;
  if (chosen.decision !== null) proposal.decision = chosen.decision;
  return proposal;
}

/**
 * The refusal that answered the latest proposal (a REFUSED entry after it, other than the evidence of a conflicting
 * payload), or null when that proposal has not been refused.
 */
export function refusalOfLatest(entries: readonly Entry[]): Outcome | null {
  const outcome = currentOutcome(entries) as Outcome | null;
  if (outcome === null || !isRefusal(outcome) || outcome === 'REFUSED:conflicting_payload') return null;
  const latest = entries.findLastIndex((entry) => entry.kind === 'PROPOSED');
  return entries.slice(latest + 1).some((entry) => entry.kind === 'REFUSED' && entry.code === outcome) ? outcome : null;
}
