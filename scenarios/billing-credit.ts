// billing_credit (scenarios.md §3): a $30/month customer on a test clock, one approved $10 goodwill credit for an
// incident, the worker SIGKILLed before or after the balance-transaction POST, the clock advanced through the
// renewal during the outage (with a proration downgrade first, or billing's SLA credit note for this incident or
// another one), a restart. Judged on the case's own credits in Stripe; the premise candidates recorded beside.
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { effectIdFor, type Decider } from '../src/interlock.js';
import { billingObservations, caseCredits, type BillingCase, type BillingObservations } from './billing-facts.js';
import { cellFailed, decide, LANDED, rowMajorPlan, runPlan, type Cell, type Column, type Progress } from './cells.js';
import { cellDir, CellError, expectSigkill, expectSuccess, hex, judgeReceipt, pollUntil, propose, receiptAgainstStripe, runBaseline, seconds, startWorker, waitSettled, type World } from './harness.js';
import type { Planner, Runner } from './run.js';
import type { StripeObject } from './stripe-http.js';

export const BILLING_COLUMNS: Column[] = ['no_check', 'hand_check', 'interlock'];
type Crash = 'before_send' | 'after_send';
type Outage = 'renewal' | 'billing_credit' | 'proration' | 'unrelated_credit';
type Row = { crash: Crash; outage: Outage; want: { case_credit_count: number; case_credit_cents: number }; description: string };

const PLAN = 3_000;
const DOWNGRADE = 2_000;
const CREDIT = 1_000;
const BEFORE_CRASH = 'worker SIGKILLed right before the balance-transaction POST';
const AFTER_CRASH = "worker SIGKILLed after Stripe's response to the POST was parsed, before anything recorded it";
const RENEWAL = 'test clock advanced through the renewal: Stripe invoices, applies any customer balance, charges the card';
export const BILLING_ROWS: Record<string, Row> = {
  'before_send/renewal': { crash: 'before_send', outage: 'renewal', want: { case_credit_count: 1, case_credit_cents: CREDIT }, description: `${BEFORE_CRASH}; outage: ${RENEWAL}. Want one credit from this case.` },
  'before_send/billing_credit': { crash: 'before_send', outage: 'billing_credit', want: { case_credit_count: 0, case_credit_cents: 0 }, description: `${BEFORE_CRASH}; outage: the renewal, then billing's SLA automation issues a $10 credit note on the renewal invoice for the same incident. Want no credit from this case.` },
  'before_send/proration': { crash: 'before_send', outage: 'proration', want: { case_credit_count: 1, case_credit_cents: CREDIT }, description: `${BEFORE_CRASH}; outage: the customer downgrades $30 -> $20 with proration, then the renewal. Want one credit.` },
  'after_send/renewal': { crash: 'after_send', outage: 'renewal', want: { case_credit_count: 1, case_credit_cents: CREDIT }, description: `${AFTER_CRASH}; outage: ${RENEWAL}. Want one credit.` },
  'after_send/proration': { crash: 'after_send', outage: 'proration', want: { case_credit_count: 1, case_credit_cents: CREDIT }, description: `${AFTER_CRASH}; outage: the downgrade with proration, then the renewal. Want one credit.` },
  'before_send/unrelated_credit': { crash: 'before_send', outage: 'unrelated_credit', want: { case_credit_count: 1, case_credit_cents: CREDIT }, description: `${BEFORE_CRASH}; outage: the renewal, then a $10 SLA credit note for a DIFFERENT incident. Want one credit.` },
};

type Prices = { plan: string; downgrade: string };
type Case = BillingCase & { clock: string; approval: { id: string; approver: string; max_cents: number; revoked: string | null } };

async function ensurePrice(world: World, cents: number): Promise<string> {
  const lookup = `interlock-sandbox-billing-credit-${cents}`;
  const found = (await world.stripe.get('/v1/prices', { lookup_keys: [lookup], limit: 1 })).data as StripeObject[] | undefined;
  if (found?.[0]?.id !== undefined) return found[0].id;
  const created = await world.stripe.post('/v1/prices', { unit_amount: cents, currency: 'usd', recurring: { interval: 'month' }, lookup_key: lookup, product_data: { name: `interlock-sandbox plan $${cents / 100}/mo` } });
  return String(created.id);
}

async function openCase(world: World, prices: Prices, label: string): Promise<Case> {
  const clock = await world.stripe.post('/v1/test_helpers/test_clocks', { frozen_time: Math.floor(Date.now() / 1000), name: `interlock-sandbox ${label}`.slice(0, 300) });
  const customer = await world.stripe.post('/v1/customers', { test_clock: clock.id, name: 'interlock-sandbox customer', payment_method: 'pm_card_visa', invoice_settings: { default_payment_method: 'pm_card_visa' }, metadata: { sandbox: 'interlock-sandbox' } });
  const subscription = await world.stripe.post('/v1/subscriptions', { customer: customer.id, items: [{ price: prices.plan }] });
  const caseId = `case-${hex(5)}`;
  return { case_id: caseId, incident: `INC-${hex(3)}`, clock: String(clock.id), customer: String(customer.id), subscription: String(subscription.id), approval: { id: `approval-${caseId}`, approver: 'support-lead', max_cents: CREDIT, revoked: null } };
}

/** The outage: a downgrade with proration (when asked), the renewal through the test clock, a credit note. */
async function outage(world: World, kase: Case, kind: Outage, prices: Prices): Promise<Record<string, unknown>> {
  if (kind === 'proration') {
    const subscription = await world.stripe.get(`/v1/subscriptions/${kase.subscription}`);
    const item = ((subscription.items as { data: StripeObject[] }).data[0] ?? {}).id;
    await world.stripe.post(`/v1/subscriptions/${kase.subscription}`, { items: [{ id: item, price: prices.downgrade }], proration_behavior: 'create_prorations' });
  }
  const subscription = await world.stripe.get(`/v1/subscriptions/${kase.subscription}`);
  const periodEnd = Number(((subscription.items as { data: StripeObject[] }).data[0] ?? {}).current_period_end);
  await world.stripe.post(`/v1/test_helpers/test_clocks/${kase.clock}/advance`, { frozen_time: periodEnd + 3 * 3600 });
  await pollUntil(async () => ((await world.stripe.get(`/v1/test_helpers/test_clocks/${kase.clock}`)).status === 'ready' ? true : null), world.poll.slowMs, 300_000, 'the test clock advance');
  const invoices = await world.stripe.list('/v1/invoices', { customer: kase.customer });
  const renewal = invoices.find((invoice) => invoice.billing_reason === 'subscription_cycle');
  if (renewal === undefined) throw new CellError(`no renewal invoice for ${kase.customer} after the clock advance`);
  const record: Record<string, unknown> = { renewal_invoice: renewal.id };
  if (kind === 'billing_credit' || kind === 'unrelated_credit') {
    const incident = kind === 'billing_credit' ? kase.incident : `INC-${hex(3)}`;
    const note = await world.stripe.post('/v1/credit_notes', { invoice: renewal.id, amount: CREDIT, credit_amount: CREDIT, memo: `SLA credit for ${incident}`, metadata: { incident, source: 'billing-sla-automation' } });
    Object.assign(record, { credit_note: note.id, credit_note_incident: incident });
  }
  return record;
}

export async function runBillingCell(world: World, decider: Decider, prices: Prices, rowName: string, column: Column, rep: number, progress: Progress): Promise<Cell> {
  progress.start(`billing_credit ${rowName} / ${column}${rep > 1 ? ` #${rep}` : ''}`);
  const row = BILLING_ROWS[rowName];
  if (row === undefined) throw new CellError(`unknown billing_credit row ${rowName}`);
  const dir = cellDir('billing');
  const stopAll: (() => Promise<void>)[] = [];
  try {
    const kase = await openCase(world, prices, `${rowName} ${column}`);
    const decidedOn = await billingObservations(world.stripe, kase);
    const premises = { subscription_status: decidedOn.subscription_status, incident_compensation: decidedOn.incident_compensation };
    const input = {
      caseId: kase.case_id,
      kind: 'credit' as const,
      incident: kase.incident,
      story: `The customer on the $30/month plan lost access for three days during incident ${kase.incident}. Support approved ONE $10.00 goodwill credit to the account balance, against the next invoice. Issue it.`,
      approval: { id: kase.approval.id, capCents: CREDIT, scope: `customer:${kase.customer}`, approver: kase.approval.approver },
      facts: { get_account: { customer: kase.customer, plan_cents_per_month: PLAN, ...premises } },
    };
    const decision = await decide(decider, input, CREDIT);
    if (!decision.valid) throw new CellError(`the decider answered ${decision.verdict} (${decision.amount} cents) where the approval is one $10 credit; the seed treats that as a harness error`);
    const requestId = `case-${kase.case_id}`;
    const effect = { kind: 'credit' as const, customer: kase.customer, amount: decision.amount, incident: kase.incident, description: decision.description.slice(0, 350) };
    const effectId = effectIdFor({ requestId, effect });
    const workerId = `scenario-${hex(4)}`;
    let crashAt: number;
    let restartAt: number;
    let settledAt: number;
    let answer: Record<string, unknown>;
    let observedAtCrash: BillingObservations;
    let observedAtRestart: BillingObservations;
    let outageRecord: Record<string, unknown>;
    let judgement: Awaited<ReturnType<typeof judgeReceipt>> | null = null;
    if (column === 'interlock') {
      await world.stores.approvals.grant({ id: kase.approval.id, approver: kase.approval.approver, capCents: CREDIT, expiresAt: Date.now() + 24 * 3_600_000, maxUses: 1, scope: input.approval.scope });
      const first = await startWorker(world, { workerId, crashAt: row.crash });
      stopAll.push(() => first.stop());
      await propose(world, 'credits', { request_id: requestId, customer: kase.customer, amount: decision.amount, incident: kase.incident, description: effect.description, approval: kase.approval.id, agent: 'billing-credit-agent', decision: { model: decision.model, text: decision.text } });
      crashAt = await expectSigkill(first, "the gate's worker");
      observedAtCrash = await billingObservations(world.stripe, kase);
      outageRecord = await outage(world, kase, row.outage, prices);
      observedAtRestart = await billingObservations(world.stripe, kase);
      const second = await startWorker(world, { workerId });
      stopAll.push(() => second.stop());
      restartAt = second.readyAt;
      const settled = await waitSettled(world, effectId, 120_000);
      settledAt = settled.at;
      answer = { status: settled.outcome, worker_started_s: seconds(second.readyAt - second.startedAt) };
      judgement = await judgeReceipt(world, effectId);
    } else {
      writeFileSync(join(dir, 'case.json'), JSON.stringify(kase));
      writeFileSync(join(dir, 'decision.json'), JSON.stringify({ amount: decision.amount, description: decision.description, model: decision.model, premises }));
      crashAt = await expectSigkill(runBaseline(world, 'credit-worker.ts', [column, dir, row.crash]), `the ${column} worker`);
      observedAtCrash = await billingObservations(world.stripe, kase);
      outageRecord = await outage(world, kase, row.outage, prices);
      observedAtRestart = await billingObservations(world.stripe, kase);
      const second = runBaseline(world, 'credit-worker.ts', [column, dir]);
      restartAt = second.startedAt;
      answer = await expectSuccess(second, `the restarted ${column} worker`);
      settledAt = Date.now();
    }
    const outcome = String(answer.status ?? 'NO_ANSWER');
    const credits = await caseCredits(world.stripe, kase);
    const count = credits.length;
    const creditIds = credits.flatMap((credit) => credit.id ?? []);
    const cents = credits.reduce((sum, credit) => sum - Number(credit.amount), 0);
    const held = count === row.want.case_credit_count && cents === row.want.case_credit_cents;
    const [notes, transactions, invoices] = await Promise.all([
      world.stripe.list('/v1/credit_notes', { customer: kase.customer }),
      world.stripe.list(`/v1/customers/${kase.customer}/balance_transactions`),
      world.stripe.list('/v1/invoices', { customer: kase.customer }),
    ]);
    const groundTruth = {
      case_credits: credits.map((credit) => credit.id),
      case_credit_count: count,
      case_credit_cents: cents,
      credit_notes: notes.map((note) => ({ id: note.id, amount: note.amount, status: note.status, incident: (note.metadata as Record<string, unknown> | undefined)?.incident ?? null })),
      ...(await billingObservations(world.stripe, kase)),
      balance_transactions: transactions.map((t) => ({ id: t.id, type: t.type, amount: t.amount })),
      invoices: invoices.map((invoice) => ({ id: invoice.id, billing_reason: invoice.billing_reason, status: invoice.status, total: invoice.total, starting_balance: invoice.starting_balance, amount_due: invoice.amount_due })),
    };
    const cell: Cell = {
      row: rowName,
      column,
      rep,
      outcome,
      held,
      answer_matches_final_money: false,
      proof: false,
      tamper_evident: false,
      settle_s: seconds(settledAt - crashAt),
      settle_after_restart_s: seconds(settledAt - restartAt),
      want: row.want,
      case: kase,
      decision: { amount: decision.amount, description: decision.description, model: decision.model, premises, observed: decidedOn },
      observed_at_crash: observedAtCrash,
      outage_record: outageRecord,
      observed_at_restart: observedAtRestart,
      answer,
      ground_truth: groundTruth,
      stripe: { clock: kase.clock, customer: kase.customer, subscription: kase.subscription, ...outageRecord, case_credits: groundTruth.case_credits, first_worker_exit: 'SIGKILL' },
      emulated: world.backend === 'sandbox' ? 'the Stripe sandbox stands in for test mode (its test clock advances in sandbox time); the SLA credit note is made by the harness' : 'the SLA credit note is made by the harness',
    };
    if (judgement !== null) {
      const v = judgement.verification;
      // The case's credits are its money at Stripe: a balance transaction has no status, so one that exists landed.
      const { money, answerMatches, proof } = receiptAgainstStripe(judgement, creditIds, count > 0);
      Object.assign(cell, {
        answer_matches_final_money: answerMatches,
        proof,
        tamper_evident: judgement.tamperEvident,
        effect_id: effectId,
        journal: judgement.journal,
        reconcile: judgement.reconcile,
        via: judgement.receipt.entries.map((entry) => (entry as Record<string, unknown>).via).find((via) => typeof via === 'string') ?? null,
        receipt_answer: money,
        facts_changed_at_recovery: (v.recheckedAtRecovery?.violations.length ?? 0) > 0,
        verify: { valid: v.valid, happened: v.happened, authorizedWhenFired: v.authorizedWhenFired, assumptionsHeld: v.assumptionsHeld, refused: v.refused, evidence: v.evidence, recheckedAtRecovery: v.recheckedAtRecovery, finalMoney: v.finalMoney, problems: v.problems },
        receipt: judgement.receipt,
      });
    } else {
      const logFile = join(dir, 'hand_check.log');
      const log = existsSync(logFile) ? readFileSync(logFile, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>) : [];
      const matches = LANDED.has(outcome) === count > 0;
      Object.assign(cell, {
        answer_matches_final_money: matches,
        proof: column === 'hand_check' && matches && handCheckProves(log, creditIds),
        hand_check_log: log,
      });
    }
    return cell;
  } finally {
    for (const stop of stopAll) await stop();
    rmSync(dir, { recursive: true, force: true });
    progress.done();
  }
}

/**
 * Whether hand_check's log proves what happened: its last line names the credit Stripe holds for the case (the one it
 * sent, or the one its lookup found), or, where Stripe holds none, a refusal with its reason. A log that ends at the
 * send (the worker died before it heard the answer) names no credit and proves nothing, whatever Stripe holds.
 */
export function handCheckProves(log: readonly Record<string, unknown>[], stripeCredits: readonly string[]): boolean {
  const last = log.at(-1);
  if (last === undefined) return false;
  const named = last.phase === 'sent' ? last.credit : last.phase === 'lookup' && Array.isArray(last.found) ? last.found[0] : undefined;
  if (typeof named === 'string') return stripeCredits.includes(named);
  return stripeCredits.length === 0 && (last.phase === 'approval' || last.phase === 'premises');
}

/**
 * A premise candidate refuses when its value at restart differs from its value at decision time; it is right in a row
 * when it refuses in every cell of a row that wants no credit and in none of one that wants it, and `right` is null
 * in a row none of whose cells ran.
 */
export function premiseCandidates(cells: Cell[]): Record<string, unknown>[] {
  const names = ['customer_balance', 'compensation_by_others', 'incident_compensation'] as const;
  return Object.entries(BILLING_ROWS).map(([rowName, row]) => {
    const inRow = cells.filter((cell) => cell.row === rowName && !cellFailed(cell));
    const candidates = Object.fromEntries(
      names.map((name) => {
        const values = inRow.map((cell) => [(cell.decision as { observed: BillingObservations }).observed[name], (cell.observed_at_crash as BillingObservations)[name], (cell.observed_at_restart as BillingObservations)[name]] as const);
        const refusesAtRestart = values.filter(([decided, , restart]) => restart !== decided).length;
        const refusesAtCrash = values.filter(([decided, crash]) => crash !== decided).length;
        const wantsNone = row.want.case_credit_count === 0;
        // A row with no cell that ran (not asked for, or every cell failed) shows nothing about the candidate: null, not right.
        const right = values.length === 0 ? null : wantsNone ? refusesAtRestart === values.length : refusesAtRestart === 0;
        const first = values[0];
        return [name, { values: first === undefined ? null : [...first], refuses_at_restart: refusesAtRestart, would_refuse_at_crash: refusesAtCrash, of: values.length, right }];
      }),
    );
    return { row: rowName, want: row.want.case_credit_count, ...candidates };
  });
}

/** Repetitions of every cell without --reps. */
export const BILLING_DEFAULT_REPS = 1;

/** The cells asked for: every row x column, `reps` times. */
export const billingPlan: Planner = (reps, only) => rowMajorPlan(Object.keys(BILLING_ROWS), BILLING_COLUMNS, reps ?? BILLING_DEFAULT_REPS, only);

/** The 18 cells, three at a time (the seed ran five), the gate's one at a time (they share the effects queue). */
export const runBillingCredit: Runner = async ({ world, decider, model, reps, bar, only }) => {
  const prices = { plan: await ensurePrice(world, PLAN), downgrade: await ensurePrice(world, DOWNGRADE) };
  const count = reps ?? BILLING_DEFAULT_REPS;
  const plan = billingPlan(reps, only);
  bar.add(plan.length);
  const cells = await runPlan(plan, 3, (step) => {
    const cell = () => runBillingCell(world, decider, prices, step.row, step.column, step.rep, bar.cell());
    return step.column === 'interlock' ? world.exclusive(cell) : cell();
  });
  return {
    scenario: 'billing_credit',
    generated: new Date().toISOString(),
    model,
    backend: world.backend,
    delays: world.delays,
    reps: count,
    rows: Object.entries(BILLING_ROWS).filter(([row]) => only.row(row)).map(([row, spec]) => ({ row, description: spec.description, want: spec.want })),
    cells,
    premise_candidates: premiseCandidates(cells),
  };
};
