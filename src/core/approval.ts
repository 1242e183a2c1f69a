// Whether an approval covers an effect, judged on a snapshot taken on the Redis clock. Pure, so the submit path,
// recovery and tests agree; the dispatch and resend scripts enforce the same terms atomically.
import type { ApprovalSnapshot } from './entries.js';
import { hasLoneSurrogate } from './json.js';
import { currencyCode, moneyText } from './money-text.js';
import { mixedScriptProblem, unseenProblem } from './text.js';
import { APPROVAL_ID, newApprovalIdProblem } from './proposal.js';

export type ApprovalTerms = { id: string; approver: string; capCents: number; expiresAt: number; maxUses: number; scope: string };

export type CoverageQuestion = {
  now: number;
  subject: string;
  amount: number;
  /** At dispatch the effect still needs a use and room under the cap; at recovery it already holds both. */
  phase: 'dispatch' | 'recovery';
  /**
   * The currency the effect was decided in (its `currency` premise, or a credit's credit currency), which the cap and
   * the amount are counted in: a problem states them in it (moneyText). Null or absent when nothing says it: they are
   * then stated as of a currency unknown, never as cents or dollars.
   */
  currency?: string | null;
};

/**
 * What a person may grant through the CLI or the support API (one set of bounds, so the two agree). Ten years at
 * most: an approval that must outlive that is a standing policy, not an approval; the bound also keeps
 * now + seconds x 1000 a safe integer of milliseconds. A million uses at most: more is a policy, not an approval.
 */
export const GRANT_LIMITS = { maxExpiresInSeconds: 10 * 365 * 24 * 60 * 60, maxUses: 1_000_000 } as const;

/** What an approval may cover: one payment or one customer, spelled as an effect's subject is. */
export const SUBJECT = /^(payment:pi|customer:cus)_[A-Za-z0-9_]{1,200}$/;

export function approvalProblems(snapshot: ApprovalSnapshot | null, question: CoverageQuestion): string[] {
  if (snapshot === null) return ['the approval does not exist'];
  const problems: string[] = [];
  if (snapshot.revoked) problems.push(`approval ${snapshot.id} was revoked`);
  if (snapshot.expiresAt <= question.now) problems.push(`approval ${snapshot.id} expired at ${new Date(snapshot.expiresAt).toISOString()}`);
  if (snapshot.scope !== question.subject) problems.push(`approval ${snapshot.id} covers ${snapshot.scope}, not ${question.subject}`);
  if (question.amount > snapshot.capCents) problems.push(overCapProblem(snapshot.id, snapshot.capCents, question.amount, question.currency ?? null));
  if (question.phase === 'dispatch' && snapshot.uses !== null && snapshot.uses >= snapshot.maxUses) problems.push(`approval ${snapshot.id} has used all ${snapshot.maxUses} of its uses`);
  return problems;
}

/**
 * An amount as money (moneyText), in the smallest unit of `currency` as Stripe counts it. One that is not a safe
 * integer (a cap as Redis holds it, quoted as text by the dispatch step; a model's ask past any real sum, or not whole)
 * is quoted as it is, in minor units, never rounded into another sum.
 */
export function amountText(amount: string | number, currency: string | null): string {
  const value = typeof amount === 'number' ? amount : Number(amount);
  if (Number.isSafeInteger(value)) return moneyText(value, currency);
  const code = currencyCode(currency);
  return `${String(amount)} (minor units${code === null ? ', currency unknown' : ` of ${code.toUpperCase()}`})`;
}

/**
 * The problem of an amount over an approval's cap, both in the effect's currency (null: not known), as the gate's
 * refusal states it whether the submit or the dispatch step found it: `approval ap_x covers at most 5000 JPY, not 6000
 * JPY`. Its opening words are what the metrics' refusal classes read (over_amount), so they stay.
 */
export function overCapProblem(id: string, cap: string | number, amount: number, currency: string | null): string {
  return `approval ${id} covers at most ${amountText(cap, currency)}, not ${amountText(amount, currency)}`;
}

/** The cap every agent shares on a subject (null when none is set), and what the gate has moved or has in flight there. */
export type SubjectCap = { limitCents: number | null; movedCents: number };

/**
 * What an approval still allows, as `approvals describe` and the support API show it. Live is I4's word (unrevoked
 * and unexpired); an approval can be live with nothing left to give (every use spent, or its cap reserved), so
 * `usable` says whether one more effect could still go under it. The cap shared on its scope (`subject`, a subject
 * cap) limits it too: `subjectCentsLeft` is what may still move on the scope (null when no cap is set), and an
 * approval whose scope's cap has no cent left is not usable, however much its own cap has left.
 */
export function approvalRoom(snapshot: ApprovalSnapshot, now: number, subject: SubjectCap): { live: boolean; usesLeft: number; centsLeft: number; subjectCentsLeft: number | null; usable: boolean } {
  const live = !snapshot.revoked && snapshot.expiresAt > now;
  const usesLeft = Math.max(0, snapshot.maxUses - (snapshot.uses ?? 0));
  const centsLeft = Math.max(0, snapshot.capCents - (snapshot.reservedCents ?? 0));
  const subjectCentsLeft = subject.limitCents === null ? null : Math.max(0, subject.limitCents - subject.movedCents);
  return { live, usesLeft, centsLeft, subjectCentsLeft, usable: live && usesLeft > 0 && centsLeft > 0 && (subjectCentsLeft === null || subjectCentsLeft > 0) };
}

const CONTROL = /\p{Cc}/u;

/**
 * Readable problems with proposed terms, or none. The terms may come from a caller the types do not hold (JavaScript,
 * a parsed body), so anything that is not an object is a problem too, not a TypeError on its first field.
 */
export function termsProblems(terms: ApprovalTerms): string[] {
  if (typeof terms !== 'object' || (terms as unknown) === null || Array.isArray(terms)) return ['terms must be an object'];
  const problems: string[] = [];
  if (typeof terms.id !== 'string' || !APPROVAL_ID.test(terms.id)) problems.push('id must be 1-200 letters, digits or _ . : -');
  else {
    const dots = newApprovalIdProblem(terms.id);
    if (dots !== null) problems.push(`id ${dots}`);
  }
  if (typeof terms.approver !== 'string' || terms.approver.trim().length === 0 || terms.approver.length > 200 || hasLoneSurrogate(terms.approver) || CONTROL.test(terms.approver)) {
    problems.push('approver must name a person or a policy in at most 200 printable characters');
  } else if (terms.approver.trim() !== terms.approver) {
    // As the API's approver and every name the CLI takes (--by): "  dana " is not another approver, and not dana either.
    problems.push('approver may not start or end with spaces');
  } else {
    const unseen = unseenProblem(terms.approver);
    if (unseen !== null) problems.push(`approver ${unseen}`);
    // The four-eyes rule compares names as a person reads them: a name in two scripts can read as another's.
    const mixed = mixedScriptProblem(terms.approver);
    if (mixed !== null) problems.push(`approver ${mixed}`);
  }
  if (!Number.isSafeInteger(terms.capCents) || terms.capCents <= 0) problems.push('capCents must be a positive whole number of cents');
  if (!Number.isSafeInteger(terms.maxUses) || terms.maxUses <= 0) problems.push('maxUses must be a positive whole number');
  if (!Number.isSafeInteger(terms.expiresAt) || terms.expiresAt <= 0) problems.push('expiresAt must be a time in ms since the epoch');
  if (typeof terms.scope !== 'string' || !SUBJECT.test(terms.scope)) problems.push('scope must name one payment or customer, e.g. payment:pi_123 or customer:cus_123');
  return problems;
}
