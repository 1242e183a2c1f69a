// The stripe_dispute baselines (scenarios.md §2.4), one process per run:
//   dispute-worker.ts no_check|hand_check STATE_DIR [before|after]
// no_check: the saved decision sent under the stable key refund:<case>, again on the restart; no re-read, no log.
// hand_check: what a careful engineer writes by hand: look its own refund up by metadata (any status), re-read
// the facts and the approval, compare with the facts the decision was made on, log every step (fsynced), and send
// under the same stable key.
import { join } from 'node:path';
import { stripeHttpFromEnv, StripeHttpError, type StripeObject } from '../stripe-http.js';
import { answer, appendLog, crashNow, readState } from './common.js';

type Case = { tag: string; payment_intent: string };
type Approval = { case: string; max_cents: number; revoked: string | null; by: string };
type Decision = { amount: number; reason: string; model: string; facts: Facts; valid: boolean };
type Facts = { chargebacks: string[]; refunded_by_others: number };

const CHARGEBACK = new Set(['needs_response', 'under_review', 'won', 'lost']);
const [system, given, crash] = process.argv.slice(2);
if ((system !== 'no_check' && system !== 'hand_check') || given === undefined || (crash !== undefined && crash !== 'before' && crash !== 'after')) {
  process.stderr.write('usage: dispute-worker.ts no_check|hand_check STATE_DIR [before|after]\n');
  process.exit(2);
}
const dir = String(given);
const stripe = stripeHttpFromEnv();
const kase = readState<Case>(dir, 'case.json');
const decision = readState<Decision>(dir, 'decision.json');
const log = join(dir, 'hand_check.log');

async function facts(): Promise<Facts> {
  const [disputes, refunds] = await Promise.all([stripe.list('/v1/disputes', { payment_intent: kase.payment_intent }), stripe.list('/v1/refunds', { payment_intent: kase.payment_intent })]);
  return {
    chargebacks: disputes.filter((d) => CHARGEBACK.has(String(d.status))).map((d) => String(d.id)).sort(),
    refunded_by_others: refunds.filter((r) => r.status !== 'failed').reduce((sum, r) => sum + Number(r.amount), 0),
  };
}

async function send(): Promise<StripeObject & { replayed: boolean }> {
  if (crash === 'before') crashNow();
  const refund = await stripe.post('/v1/refunds', { payment_intent: kase.payment_intent, amount: decision.amount, metadata: { case: kase.tag } }, { idempotencyKey: `refund:${kase.tag}` });
  if (crash === 'after') crashNow();
  return refund;
}

async function noCheck(): Promise<Record<string, unknown>> {
  const refund = await send();
  return { status: refund.replayed ? 'REPLAYED_BY_STRIPE' : 'REFUNDED', refund: refund.id };
}

async function handCheck(): Promise<Record<string, unknown>> {
  const mine = (await stripe.list('/v1/refunds', { payment_intent: kase.payment_intent })).filter((r) => (r.metadata as Record<string, unknown> | undefined)?.case === kase.tag);
  const now = await facts();
  const approval = readState<Approval>(dir, 'approval.json');
  const approvalOk = approval.revoked === null && decision.amount <= approval.max_cents;
  let result = 'send';
  if (mine.length > 0) result = 'FOUND_BY_LOOKUP';
  else if (!approvalOk) result = 'REFUSED:approval';
  else if (JSON.stringify(now.chargebacks) !== JSON.stringify(decision.facts.chargebacks)) result = 'REFUSED:charged_back';
  else if (now.refunded_by_others !== decision.facts.refunded_by_others) result = 'REFUSED:refunds_changed';
  appendLog(log, { step: 'checks', case: kase.tag, amount: decision.amount, decided_by: decision.model, approved_by: approval.by, approval, lookup: mine.map((r) => r.id), decided_on: decision.facts, now, result });
  if (result !== 'send') return { status: result, refund: mine[0]?.id ?? null, checked: now };
  const refund = await send();
  const status = refund.replayed ? 'REPLAYED_BY_STRIPE' : 'REFUNDED';
  appendLog(log, { step: 'sent', case: kase.tag, status, refund: refund.id });
  return { status, refund: refund.id };
}

try {
  if (!decision.valid) answer({ status: 'MODEL_DEVIATED', refund: null });
  else answer(system === 'no_check' ? await noCheck() : await handCheck());
} catch (error) {
  if (!(error instanceof StripeHttpError)) throw error;
  answer({ status: 'STRIPE_ERROR', error: error.message });
}
