// The billing_credit baselines (scenarios.md §3.4), one process per run:
//   credit-worker.ts no_check|hand_check STATE_DIR [before_send|after_send]
// no_check: the saved decision posted under goodwill-credit-<case_id>, again on the restart.
// hand_check: look this case's credit up and stop if it is there; check the approval (read fresh from case.json);
// compare the premises with those saved in decision.json; log each step (fsynced) before and after the POST.
import { join } from 'node:path';
import { billingPremises, caseCredits, type BillingCase, type BillingPremises } from '../billing-facts.js';
import { stripeHttpFromEnv, type StripeObject } from '../stripe-http.js';
import { answer, appendLog, crashNow, readState } from './common.js';

type Case = BillingCase & { approval: { id: string; approver: string; max_cents: number; revoked: string | null } };
type Decision = { amount: number; description: string; model: string; premises: BillingPremises };

const [system, given, crash] = process.argv.slice(2);
if ((system !== 'no_check' && system !== 'hand_check') || given === undefined || (crash !== undefined && crash !== 'before_send' && crash !== 'after_send')) {
  process.stderr.write('usage: credit-worker.ts no_check|hand_check STATE_DIR [before_send|after_send]\n');
  process.exit(2);
}
const dir = String(given);
const stripe = stripeHttpFromEnv();
const kase = readState<Case>(dir, 'case.json');
const decision = readState<Decision>(dir, 'decision.json');
const log = join(dir, 'hand_check.log');
const key = `goodwill-credit-${kase.case_id}`;
const line = (phase: string, fields: Record<string, unknown>) => appendLog(log, { agent: 'billing-credit-agent', case_id: kase.case_id, phase, ...fields });

async function post(): Promise<StripeObject & { replayed: boolean }> {
  if (crash === 'before_send') crashNow();
  const credit = await stripe.post(`/v1/customers/${kase.customer}/balance_transactions`, { amount: -decision.amount, currency: 'usd', description: decision.description, metadata: { case_id: kase.case_id } }, { idempotencyKey: key });
  if (crash === 'after_send') crashNow();
  return credit;
}

async function handCheck(): Promise<Record<string, unknown>> {
  const found = await caseCredits(stripe, kase);
  if (found.length > 0) {
    line('lookup', { found: found.map((c) => c.id) });
    return { status: 'FOUND_BY_LOOKUP', credit: found[0]?.id };
  }
  const approval = readState<Case>(dir, 'case.json').approval;
  if (approval.revoked !== null || decision.amount > approval.max_cents) {
    line('approval', { refused: approval });
    return { status: 'REFUSED:approval' };
  }
  const now = await billingPremises(stripe, kase);
  if (JSON.stringify(now) !== JSON.stringify(decision.premises)) {
    line('premises', { refused: { was: decision.premises, now } });
    return { status: 'REFUSED:stale_premise', was: decision.premises, now };
  }
  line('send', { key, approval: approval.id, premises: now });
  const credit = await post();
  line('sent', { credit: credit.id, replayed: credit.replayed });
  return { status: credit.replayed ? 'REPLAYED_BY_STRIPE' : 'CREDITED', credit: credit.id };
}

if (system === 'no_check') {
  const credit = await post();
  answer({ status: credit.replayed ? 'REPLAYED_BY_STRIPE' : 'CREDITED', credit: credit.id });
} else {
  answer(await handCheck());
}
