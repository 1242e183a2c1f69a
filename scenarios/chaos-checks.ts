// The chaos run's contract, judged on what the run observed once the crashes were over: what each request was
// answered, what the gate says of each effect (its outcome, its inbox item, its signed receipt), and what Stripe holds.
// Pure: every check is a function of the observation, so each can be shown to fail on one that breaks it.

/** The outcomes under which the effect's money moved at Stripe exactly once (DESIGN.md §4). */
const MONEY_MOVED = new Set(['COMMITTED', 'COMMITTED_BY_RETRY', 'COMMITTED_ON_QUERY', 'REAPPLIED_AFTER_QUERY', 'DUPLICATE_IGNORED']);

/** Refund statuses whose money is not returned, nor on its way. */
const REFUND_UNDONE = new Set(['failed', 'canceled']);

export const CHECKS = [
  'UNANSWERED',
  'REJECTED',
  'TWO_PAYLOADS_ACCEPTED',
  'TWO_EFFECT_IDS',
  'SAME_PAYLOAD_CONFLICT',
  'UNSETTLED',
  'DOUBLE_REFUND',
  'DOUBLE_CREDIT',
  'INCIDENT_TWICE',
  'CAP_EXCEEDED',
  'APPROVAL_CAP_EXCEEDED',
  'APPROVAL_USES_EXCEEDED',
  'STRIPE_OBJECT_OF_UNKNOWN_EFFECT',
  'WRONG_AMOUNT',
  'COMMITTED_BUT_NOTHING',
  'REFUSED_BUT_MONEY',
  'AMBIGUOUS_NO_INBOX',
  'NO_RECEIPT',
  'RECEIPT_INVALID',
  'FINAL_MONEY_WRONG',
  'RECEIPT_SAYS_HAPPENED_NOTHING_AT_STRIPE',
] as const;
export type Check = (typeof CHECKS)[number];

export type Finding = { check: Check; detail: string };

/** One request as a careful caller sends it: the same request id and payload again after a 5xx or a lost answer. */
export type ChaosRequest = {
  requestId: string;
  kind: 'refund' | 'credit';
  /** `payment:pi_…` or `customer:cus_…`. */
  subject: string;
  approval: string;
  /** Cents. */
  amount: number;
  /** A credit's incident (a customer gets one credit per incident). */
  incident: string | null;
  body: Record<string, unknown>;
};

/** The last answer the caller got: status 0 when every try failed in transport or with a 5xx. */
export type Answer = { status: number; effectId: string | null; errorCode: string | null; tries: number; transient: string[] };

export type EffectSeen = {
  effectId: string;
  request: ChaosRequest;
  settled: boolean;
  state: string | null;
  outcome: string | null;
  journal: string[];
  /** An open inbox item names the effect. */
  inboxOpen: boolean;
  /** The signed receipt, verified with the run's public key; null when the API gave none. */
  receipt: { valid: boolean | null; problems: string[]; happened: boolean | 'unknown'; finalMoney: string } | null;
};

export type StripeRefund = { id: string; effectId: string | null; paymentIntent: string; amount: number; status: string };
/** A customer balance transaction the gate made (negative amount: a credit). */
export type StripeCredit = { id: string; effectId: string; customer: string; incident: string; amount: number };

export type Observation = {
  sent: { request: ChaosRequest; answer: Answer }[];
  effects: EffectSeen[];
  stripe: { refunds: StripeRefund[]; credits: StripeCredit[] };
  caps: { subject: string; cents: number }[];
  approvals: { id: string; capCents: number; maxUses: number }[];
};

function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) groups.set(key(item), [...(groups.get(key(item)) ?? []), item]);
  return groups;
}

/** The answers: every request answered; one request id, one payload and one effect; a replay is never a conflict. */
export function answerFindings(sent: Observation['sent']): Finding[] {
  const findings: Finding[] = [];
  for (const [requestId, list] of groupBy(sent, (entry) => entry.request.requestId)) {
    const accepted = list.filter(({ answer }) => answer.status === 200 || answer.status === 202);
    const conflicts = list.filter(({ answer }) => answer.status === 409 && answer.errorCode === 'conflicting_payload');
    for (const { answer } of list) {
      if (answer.status === 0) findings.push({ check: 'UNANSWERED', detail: `${requestId} after ${answer.tries} tries: ${answer.transient.slice(-3).join(', ')}` });
      else if (!accepted.some((entry) => entry.answer === answer) && !conflicts.some((entry) => entry.answer === answer)) findings.push({ check: 'REJECTED', detail: `${requestId}: ${answer.status} ${answer.errorCode ?? ''}` });
    }
    const amounts = new Set(accepted.map(({ request }) => request.amount));
    if (amounts.size > 1) findings.push({ check: 'TWO_PAYLOADS_ACCEPTED', detail: `${requestId}: ${[...amounts].join(', ')}` });
    if (new Set(accepted.map(({ answer }) => answer.effectId)).size > 1) findings.push({ check: 'TWO_EFFECT_IDS', detail: requestId });
    for (const { request } of conflicts) if (amounts.has(request.amount)) findings.push({ check: 'SAME_PAYLOAD_CONFLICT', detail: `${requestId}: ${request.amount}` });
  }
  return findings;
}

/** Stripe's side: each effect moved money at most once, an incident was credited once, no cap or approval exceeded. */
export function stripeFindings(observation: Observation): Finding[] {
  const findings: Finding[] = [];
  const { refunds, credits } = observation.stripe;
  const refundsOf = groupBy(refunds, (refund) => refund.effectId ?? '(none)');
  const creditsOf = groupBy(credits, (credit) => credit.effectId);
  for (const [effectId, list] of refundsOf) if (list.length > 1) findings.push({ check: 'DOUBLE_REFUND', detail: `effect ${effectId}: ${list.map((refund) => `${refund.id} ${refund.amount} ${refund.status}`).join(', ')}` });
  for (const [effectId, list] of creditsOf) if (list.length > 1) findings.push({ check: 'DOUBLE_CREDIT', detail: `effect ${effectId}: ${list.map((credit) => `${credit.id} ${credit.amount}`).join(', ')}` });
  for (const [incident, list] of groupBy(credits, (credit) => `${credit.customer}/${credit.incident}`)) if (list.length > 1) findings.push({ check: 'INCIDENT_TWICE', detail: `${incident}: ${list.length} credits` });
  const returned = (list: readonly StripeRefund[]) => list.filter((refund) => !REFUND_UNDONE.has(refund.status)).reduce((sum, refund) => sum + refund.amount, 0);
  for (const cap of observation.caps) {
    const moved = returned(refunds.filter((refund) => `payment:${refund.paymentIntent}` === cap.subject));
    if (moved > cap.cents) findings.push({ check: 'CAP_EXCEEDED', detail: `${cap.subject}: ${moved} > ${cap.cents} cents` });
  }
  const known = new Set(observation.effects.map((effect) => effect.effectId));
  for (const approval of observation.approvals) {
    const ids = observation.effects.filter((effect) => effect.request.approval === approval.id).map((effect) => effect.effectId);
    const moved = ids.reduce((sum, id) => sum + returned(refundsOf.get(id) ?? []) - (creditsOf.get(id) ?? []).reduce((cents, credit) => cents + credit.amount, 0), 0);
    const uses = ids.filter((id) => (refundsOf.get(id)?.length ?? 0) + (creditsOf.get(id)?.length ?? 0) > 0).length;
    if (moved > approval.capCents) findings.push({ check: 'APPROVAL_CAP_EXCEEDED', detail: `${approval.id}: ${moved} > ${approval.capCents} cents` });
    if (uses > approval.maxUses) findings.push({ check: 'APPROVAL_USES_EXCEEDED', detail: `${approval.id}: ${uses} > ${approval.maxUses} uses` });
  }
  for (const effectId of new Set([...refundsOf.keys(), ...creditsOf.keys()])) if (!known.has(effectId)) findings.push({ check: 'STRIPE_OBJECT_OF_UNKNOWN_EFFECT', detail: effectId });
  return findings;
}

/** What a refund's status at Stripe makes of its money, as a receipt's final money names it. */
function moneyOfRefund(status: string): string {
  if (status === 'succeeded') return 'returned';
  return REFUND_UNDONE.has(status) ? 'not_returned' : 'pending';
}

/** Each acknowledged effect: settled, its outcome and receipt agreeing with Stripe, AMBIGUOUS only with an inbox item. */
export function effectFindings(observation: Observation): Finding[] {
  const findings: Finding[] = [];
  for (const effect of observation.effects) {
    const { request, effectId, outcome } = effect;
    const name = `${request.requestId} ${effectId}`;
    if (!effect.settled) findings.push({ check: 'UNSETTLED', detail: `${name}: state ${effect.state ?? '?'}, outcome ${outcome ?? 'none'}, journal ${effect.journal.join(',')}` });
    const refunds = observation.stripe.refunds.filter((refund) => refund.effectId === effectId);
    const objects: { amount: number }[] = request.kind === 'refund' ? refunds : observation.stripe.credits.filter((credit) => credit.effectId === effectId);
    for (const object of objects) if (Math.abs(object.amount) !== request.amount) findings.push({ check: 'WRONG_AMOUNT', detail: `${name}: Stripe ${Math.abs(object.amount)}, asked ${request.amount} cents` });
    if (outcome !== null && MONEY_MOVED.has(outcome) && objects.length !== 1) findings.push({ check: 'COMMITTED_BUT_NOTHING', detail: `${name} ${outcome}: ${objects.length} objects at Stripe` });
    if (outcome !== null && outcome.startsWith('REFUSED') && objects.length !== 0) findings.push({ check: 'REFUSED_BUT_MONEY', detail: `${name} ${outcome}: ${objects.length} objects at Stripe` });
    if (outcome === 'AMBIGUOUS' && !effect.inboxOpen) findings.push({ check: 'AMBIGUOUS_NO_INBOX', detail: name });
    const receipt = effect.receipt;
    if (receipt === null) {
      findings.push({ check: 'NO_RECEIPT', detail: name });
      continue;
    }
    if (receipt.valid !== true) findings.push({ check: 'RECEIPT_INVALID', detail: `${name}: ${receipt.problems.join('; ')}` });
    const refund = refunds[0];
    if (request.kind === 'refund' && refunds.length === 1 && refund !== undefined && receipt.finalMoney !== moneyOfRefund(refund.status)) {
      findings.push({ check: 'FINAL_MONEY_WRONG', detail: `${name} ${outcome ?? ''}: Stripe's refund ${refund.status}, the receipt's final money ${receipt.finalMoney}` });
    }
    if (receipt.happened === true && objects.length === 0) findings.push({ check: 'RECEIPT_SAYS_HAPPENED_NOTHING_AT_STRIPE', detail: name });
  }
  return findings;
}

/** Every finding of the observation; none when the contract held. */
export function contractFindings(observation: Observation): Finding[] {
  return [...answerFindings(observation.sent), ...stripeFindings(observation), ...effectFindings(observation)];
}
