// Whether an approval covers an effect, judged on a snapshot taken on the Redis clock. Pure, so the submit path,
// recovery and tests agree; the dispatch script enforces the same terms atomically.
import type { ApprovalSnapshot } from './entries.js';

export type ApprovalTerms = { id: string; approver: string; capCents: number; expiresAt: number; maxUses: number; scope: string };

export type CoverageQuestion = {
  now: number;
  subject: string;
  amount: number;
  /** At dispatch the effect still needs a use and room under the cap; at recovery it already holds both. */
  phase: 'dispatch' | 'recovery';
};

export function approvalProblems(snapshot: ApprovalSnapshot | null, question: CoverageQuestion): string[] {
  if (snapshot === null) return ['the approval does not exist'];
  const problems: string[] = [];
  if (snapshot.revoked) problems.push(`approval ${snapshot.id} was revoked`);
  if (snapshot.expiresAt <= question.now) problems.push(`approval ${snapshot.id} expired at ${new Date(snapshot.expiresAt).toISOString()}`);
  if (snapshot.scope !== question.subject) problems.push(`approval ${snapshot.id} covers ${snapshot.scope}, not ${question.subject}`);
  if (question.amount > snapshot.capCents) problems.push(`approval ${snapshot.id} covers at most ${snapshot.capCents} cents, not ${question.amount}`);
  if (question.phase === 'dispatch' && snapshot.uses >= snapshot.maxUses) problems.push(`approval ${snapshot.id} has used all ${snapshot.maxUses} of its uses`);
  return problems;
}

/** Readable problems with proposed terms, or none. */
export function termsProblems(terms: ApprovalTerms): string[] {
  const problems: string[] = [];
  if (terms.id.length === 0 || terms.id.length > 200 || !/^[A-Za-z0-9_.:-]+$/.test(terms.id)) problems.push('id must be 1-200 letters, digits or _ . : -');
  if (terms.approver.trim().length === 0) problems.push('approver must name a person or a policy');
  if (!Number.isSafeInteger(terms.capCents) || terms.capCents <= 0) problems.push('capCents must be a positive whole number of cents');
  if (!Number.isSafeInteger(terms.maxUses) || terms.maxUses <= 0) problems.push('maxUses must be a positive whole number');
  if (!Number.isSafeInteger(terms.expiresAt) || terms.expiresAt <= 0) problems.push('expiresAt must be a time in ms since the epoch');
  if (terms.scope.length === 0) problems.push('scope must name what the approval covers, e.g. payment:pi_123');
  return problems;
}
