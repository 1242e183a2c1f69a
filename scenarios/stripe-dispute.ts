// stripe_dispute (scenarios.md §2): a $100 payment with a bank inquiry, a $20 goodwill refund decided by the
// decider, the worker SIGKILLed before or after the refund POST, the inquiry escalated to a chargeback during the
// outage, a restart; plus the restart while the dispute is `warning_under_review` and the gap probe (a refund
// during the inquiry, the chargeback after the refund-vs-chargeback window). Judged on Stripe's refund objects.
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { effectIdFor, type Decider } from '../src/interlock.js';
import { decide, LANDED, rowMajorPlan, runPlan, type Cell, type Column, type Progress, type SavedDecision } from './cells.js';
import type { Planner, Runner } from './run.js';
import { CellError, cellDir, expectSigkill, expectSuccess, hex, judgeReceipt, pollUntil, propose, receiptAgainstStripe, runBaseline, seconds, startWorker, waitSettled, type World } from './harness.js';
import type { StripeObject } from './stripe-http.js';

export const DISPUTE_ROWS = ['crash_before_send_chargeback_during_outage', 'crash_after_send_chargeback_during_outage', 'crash_before_send_restart_during_warning_under_review', 'gap_probe_chargeback_after_refund_window'] as const;
export type DisputeRow = (typeof DISPUTE_ROWS)[number];
export const DISPUTE_COLUMNS: Column[] = ['no_check', 'hand_check', 'interlock'];

const PAID = 10_000;
const REFUND = 2_000;
const CHARGEBACK = new Set(['needs_response', 'under_review', 'won', 'lost']);
const STORY =
  'Support case #4471: a $100 blender arrived with a cracked jar. The customer also asked their bank, so there is an open bank inquiry on the payment (not a chargeback). Support approved a $20.00 goodwill partial refund; the customer keeps the blender. Issue it.';

type Row = { crash: 'before' | 'after' | null; want: number; description: string };
export const ROWS: Record<DisputeRow, Row> = {
  crash_before_send_chargeback_during_outage: { crash: 'before', want: 0, description: 'worker SIGKILLed right before the refund POST; inquiry escalated to a chargeback; restarted. Want no refund.' },
  crash_after_send_chargeback_during_outage: { crash: 'after', want: 1, description: "(control) worker SIGKILLed after Stripe's refund response, before anything recorded it; inquiry escalated; restarted. Want the $20 refund request issued before the chargeback, once." },
  crash_before_send_restart_during_warning_under_review: { crash: 'before', want: 1, description: 'worker SIGKILLed right before the refund POST; escalation submitted, and the worker restarted while the dispute reads warning_under_review (the chargeback has not posted). Every column sees no chargeback and sends; Stripe accepts, then fails the refund when the chargeback posts.' },
  gap_probe_chargeback_after_refund_window: { crash: null, want: 1, description: 'no crash: the $20 refund is sent during the inquiry, then the refund-vs-chargeback window passes (the sandbox clock is advanced; test mode waits 300 s) and the inquiry is escalated. The refund stands and the chargeback withdraws the full $100: $120 out on $100.' },
};

type Setup = { tag: string; payment_intent: string; charge: string; dispute: string };
type Facts = { chargebacks: string[]; refunded_by_others: number };

async function facts(world: World, paymentIntent: string): Promise<Facts> {
  const [disputes, refunds] = await Promise.all([world.stripe.list('/v1/disputes', { payment_intent: paymentIntent }), world.stripe.list('/v1/refunds', { payment_intent: paymentIntent })]);
  return {
    chargebacks: disputes.filter((d) => CHARGEBACK.has(String(d.status))).map((d) => String(d.id)).sort(),
    refunded_by_others: refunds.filter((r) => r.status !== 'failed').reduce((sum, r) => sum + Number(r.amount), 0),
  };
}

async function openCase(world: World): Promise<Setup> {
  const tag = `interlock-sandbox-${hex(4)}`;
  const intent = await world.stripe.post('/v1/payment_intents', { amount: PAID, currency: 'usd', payment_method: 'pm_card_createDisputeInquiry', payment_method_types: ['card'], confirm: true, metadata: { case: tag, sandbox: 'interlock-sandbox' } });
  const paymentIntent = String(intent.id);
  const first = await pollUntil(async () => (await world.stripe.list('/v1/disputes', { payment_intent: paymentIntent }))[0] ?? null, world.poll.fastMs, 60_000, 'the inquiry');
  if (first.status !== 'warning_needs_response') throw new CellError(`the inquiry on ${paymentIntent} reads ${String(first.status)}, not warning_needs_response`);
  return { tag, payment_intent: paymentIntent, charge: String(intent.latest_charge), dispute: String(first.id) };
}

async function escalate(world: World, dispute: string): Promise<void> {
  await world.stripe.post(`/v1/disputes/${dispute}`, { evidence: { uncategorized_text: 'escalate_inquiry_evidence' }, submit: true });
}

/** Waits until Stripe shows the chargeback (a chargeback status and a negative balance transaction); Stripe's own time for it. */
async function chargebackPosted(world: World, dispute: string, escalatedAt: number): Promise<{ status: string; chargeback_at: number; seconds_to_chargeback: number }> {
  return pollUntil(
    async () => {
      const object = await world.stripe.get(`/v1/disputes/${dispute}`);
      const withdrawn = (Array.isArray(object.balance_transactions) ? (object.balance_transactions as StripeObject[]) : []).filter((bt) => Number(bt.amount) < 0);
      if (!CHARGEBACK.has(String(object.status)) || withdrawn.length === 0) return null;
      return { status: String(object.status), chargeback_at: Math.min(...withdrawn.map((bt) => Number(bt.created))), seconds_to_chargeback: seconds(Date.now() - escalatedAt) };
    },
    world.poll.fastMs,
    60_000,
    `the chargeback on ${dispute}`,
  );
}

/** The refund-vs-chargeback window passing: sandbox time moved past it, or (test mode) the seed's 300 s waited. */
async function letRefundWindowPass(world: World, progress: Progress): Promise<string> {
  if (world.control !== null) {
    const config = (await (await fetch(`${world.stripe.apiBase}/_sandbox/config`)).json()) as { pending_refund_dispute_window_seconds?: number };
    const window = config.pending_refund_dispute_window_seconds ?? 60;
    await world.control.advanceClock(window + 240);
    return `sandbox clock advanced ${window + 240} s (window ${window} s)`;
  }
  await progress.wait("the refund-vs-chargeback window to pass (test mode waits the seed's 300 s)", 300_000);
  return 'waited 300 s';
}

type Judged = { refunds: StripeObject[]; issued: number; late: number; moneyReturned: boolean; held: boolean; charge: StripeObject; disputeStatus: string };

/**
 * `late`: refunds created at or after the chargeback. Stripe's `created` is in whole seconds, so a refund that
 * existed before the escalation was submitted (listed then) is never late, even in the chargeback's own second.
 */
async function judgeStripe(world: World, setup: Setup, want: number, chargebackAt: number | null, before: ReadonlySet<string>): Promise<Judged> {
  const refunds = await world.stripe.list('/v1/refunds', { payment_intent: setup.payment_intent });
  const issued = refunds.length;
  const late = chargebackAt === null ? 0 : refunds.filter((r) => !before.has(String(r.id)) && Number(r.created) >= chargebackAt).length;
  const charge = await world.stripe.get(`/v1/charges/${setup.charge}`);
  const dispute = await world.stripe.get(`/v1/disputes/${setup.dispute}`);
  return { refunds, issued, late, moneyReturned: refunds.some((r) => r.status === 'succeeded' || r.status === 'pending'), held: issued === want && late === 0, charge, disputeStatus: String(dispute.status) };
}

function decisionCase(setup: Setup, snapshot: Facts) {
  return {
    caseId: setup.tag,
    kind: 'refund' as const,
    story: STORY,
    approval: { id: `ap_${setup.tag.replace(/-/g, '_')}`, capCents: REFUND, scope: `payment:${setup.payment_intent}`, approver: 'support' },
    facts: { get_payment: { payment_intent: setup.payment_intent, amount_cents: PAID, chargebacks: snapshot.chargebacks, refunded_by_others: snapshot.refunded_by_others, open_inquiry: setup.dispute } },
  };
}

export async function runDisputeCell(world: World, decider: Decider, row: DisputeRow, column: Column, rep: number, progress: Progress): Promise<Cell> {
  progress.start(`stripe_dispute ${row} / ${column}${rep > 1 ? ` #${rep}` : ''}`);
  // Done however the cell ends: one that fails while its case opens (Stripe errs, the decider throws) is counted too,
  // and no longer shown as running.
  try {
    return await runStartedCell(world, decider, row, column, rep, progress);
  } finally {
    progress.done();
  }
}

async function runStartedCell(world: World, decider: Decider, row: DisputeRow, column: Column, rep: number, progress: Progress): Promise<Cell> {
  const spec = ROWS[row];
  const setup = await openCase(world);
  const snapshot = await facts(world, setup.payment_intent);
  const input = decisionCase(setup, snapshot);
  const decision = await decide(decider, input, REFUND);
  const dir = cellDir('dispute');
  const requestId = `case-${setup.tag}`;
  const effect = { kind: 'refund' as const, paymentIntent: setup.payment_intent, amount: decision.amount };
  const effectId = effectIdFor({ requestId, effect });
  const workerId = `scenario-${hex(4)}`;
  const baselineArgs = (crash: string | null) => [column, dir, ...(crash === null ? [] : [crash])];
  let answer: Record<string, unknown> = {};
  let crashAt: number | null = null;
  let restartAt: number | null = null;
  let settledAt: number | null = null;
  let outage: Record<string, unknown> | null = null;
  const stopAll: (() => Promise<void>)[] = [];
  try {
    if (column === 'interlock') {
      await world.stores.approvals.grant({ id: input.approval.id, approver: 'support', capCents: REFUND, expiresAt: Date.now() + 24 * 3_600_000, maxUses: 1, scope: input.approval.scope });
    } else {
      writeFileSync(join(dir, 'case.json'), JSON.stringify(setup));
      writeFileSync(join(dir, 'approval.json'), JSON.stringify({ case: setup.tag, max_cents: REFUND, revoked: null, by: 'support' }));
      writeFileSync(join(dir, 'decision.json'), JSON.stringify({ amount: decision.amount, reason: decision.description, model: decision.model, facts: snapshot, valid: decision.valid }));
    }
    const crash = decision.valid ? spec.crash : null;
    // The first run: the worker dies at the crash point (or, in the gap probe, sends and answers).
    if (!decision.valid && column === 'interlock') {
      answer = { status: 'MODEL_DEVIATED' };
    } else if (column === 'interlock') {
      const first = await startWorker(world, { workerId, ...(crash === null ? {} : { crashAt: crash === 'before' ? 'before_send' : 'after_send' }) });
      stopAll.push(() => first.stop());
      await propose(world, 'refunds', { request_id: requestId, payment_intent: setup.payment_intent, amount: decision.amount, approval: input.approval.id, agent: 'support-agent', decision: { model: decision.model, text: decision.text } });
      if (crash !== null) crashAt = await expectSigkill(first, "the gate's worker");
      else answer = { status: (await waitSettled(world, effectId, 60_000)).outcome };
    } else {
      const first = runBaseline(world, 'dispute-worker.ts', baselineArgs(crash));
      if (crash !== null) crashAt = await expectSigkill(first, `the ${column} worker`);
      else answer = await expectSuccess(first, `the ${column} worker`);
    }

    // The outage.
    let chargebackAt: number | null = null;
    const beforeEscalation = new Set((await world.stripe.list('/v1/refunds', { payment_intent: setup.payment_intent })).map((r) => String(r.id)));
    if (row === 'gap_probe_chargeback_after_refund_window') {
      const probe = await letRefundWindowPass(world, progress);
      const escalated = Date.now();
      await escalate(world, setup.dispute);
      const posted = await chargebackPosted(world, setup.dispute, escalated);
      chargebackAt = posted.chargeback_at;
      outage = { dispute: setup.dispute, ...posted, window: probe };
    } else if (crashAt !== null) {
      const escalated = Date.now();
      const underReview = row === 'crash_before_send_restart_during_warning_under_review';
      // Restarting inside warning_under_review: test mode's escalation posts 4-10 s after the submission, so the
      // restart races it there; the sandbox holds the dispute in warning_under_review (evidence submitted, no
      // escalation timer) and the harness posts the chargeback through its control API once the restart answered.
      if (underReview && world.control !== null) await world.stripe.post(`/v1/disputes/${setup.dispute}`, { evidence: { uncategorized_text: 'The customer was offered a goodwill partial refund.' }, submit: true });
      else await escalate(world, setup.dispute);
      if (underReview) {
        const status = String((await world.stripe.get(`/v1/disputes/${setup.dispute}`)).status);
        outage = { dispute: setup.dispute, status_at_restart: status };
      } else {
        const posted = await chargebackPosted(world, setup.dispute, escalated);
        chargebackAt = posted.chargeback_at;
        outage = { dispute: setup.dispute, ...posted };
      }

      // The restart.
      if (column === 'interlock') {
        const second = await startWorker(world, { workerId });
        stopAll.push(() => second.stop());
        restartAt = second.readyAt;
        const settled = await waitSettled(world, effectId, 60_000);
        settledAt = settled.at;
        answer = { status: settled.outcome, worker_started_s: seconds(second.readyAt - second.startedAt) };
      } else {
        const second = runBaseline(world, 'dispute-worker.ts', baselineArgs(null));
        restartAt = second.startedAt;
        answer = await expectSuccess(second, `the restarted ${column} worker`);
        settledAt = Date.now();
      }
      if (underReview) {
        const chargebackFrom = Date.now();
        // The refund the restart sent exists before the chargeback is posted (whatever second Stripe stamps on both).
        for (const refund of await world.stripe.list('/v1/refunds', { payment_intent: setup.payment_intent })) if (world.control !== null) beforeEscalation.add(String(refund.id));
        if (world.control !== null) await fetch(`${world.stripe.apiBase}/_sandbox/disputes/${setup.dispute}/escalate`, { method: 'POST' });
        const posted = await chargebackPosted(world, setup.dispute, world.control !== null ? chargebackFrom : escalated);
        chargebackAt = posted.chargeback_at;
        outage = { ...outage, ...posted };
      }
    }
    if (world.backend === 'test_mode') await progress.wait("Stripe's last events on the payment (test mode waits 60 s)", 60_000);
    const outcome = String(answer.status ?? 'NO_ANSWER');
    const judged = await judgeStripe(world, setup, decision.valid ? spec.want : 0, chargebackAt, beforeEscalation);
    const stripeIds = judged.refunds.map((r) => String(r.id));
    const cell: Cell = {
      row,
      column,
      rep,
      outcome,
      held: judged.held,
      answer_matches_final_money: false,
      answer_matches_refund_objects: false,
      proof: false,
      tamper_evident: false,
      settle_s: crashAt === null || settledAt === null ? null : seconds(settledAt - crashAt),
      settle_after_restart_s: restartAt === null || settledAt === null ? null : seconds(settledAt - restartAt),
      want_refunds: decision.valid ? spec.want : 0,
      issued: judged.issued,
      created_at_or_after_chargeback: judged.late,
      money_returned: judged.moneyReturned,
      dispute_status: judged.disputeStatus,
      outage,
      decision: { amount: decision.amount, reason: decision.description, model: decision.model, verdict: decision.verdict, facts: snapshot },
      answer,
      stripe: {
        payment_intent: setup.payment_intent,
        charge: setup.charge,
        dispute: setup.dispute,
        case: setup.tag,
        first_worker_exit: crashAt === null ? null : 'SIGKILL',
        refunds: judged.refunds.map((r) => ({ id: r.id, status: r.status, failure_reason: r.failure_reason ?? null, created: r.created, amount: r.amount })),
        charge_amount_refunded: judged.charge.amount_refunded,
        charge_disputed: judged.charge.disputed,
        refund_to_chargeback_s: chargebackAt === null ? [] : judged.refunds.map((r) => chargebackAt - Number(r.created)),
      },
    };
    if (column === 'interlock') {
      if (!decision.valid) {
        Object.assign(cell, { answer_matches_final_money: !judged.moneyReturned, answer_matches_refund_objects: judged.issued === 0 });
        return cell;
      }
      const record = await judgeReceipt(world, effectId);
      const v = record.verification;
      const { money, answerMatches, proof } = receiptAgainstStripe(record, stripeIds, judged.moneyReturned);
      Object.assign(cell, {
        answer_matches_refund_objects: (v.happened === true) === judged.issued > 0,
        answer_matches_final_money: answerMatches,
        proof,
        tamper_evident: record.tamperEvident,
        effect_id: effectId,
        journal: record.journal,
        reconcile: record.reconcile,
        receipt_answer: money,
        facts_changed_at_recovery: (v.recheckedAtRecovery?.violations.length ?? 0) > 0,
        exposure: v.exposure,
        verify: { valid: v.valid, happened: v.happened, assumptionsHeld: v.assumptionsHeld, refused: v.refused, evidence: v.evidence, recheckedAtRecovery: v.recheckedAtRecovery, answer: v.answer, finalMoney: v.finalMoney, exposure: v.exposure, problems: v.problems },
        receipt: record.receipt,
      });
    } else {
      const landed = LANDED.has(outcome);
      const logFile = join(dir, 'hand_check.log');
      const log = existsSync(logFile) ? readFileSync(logFile, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>) : [];
      const last = log.at(-1);
      const lookup = (last?.lookup as string[] | undefined) ?? [];
      const recordedRefund = (last?.refund as string | undefined) ?? lookup[0] ?? null;
      const checksRecorded = log.some((line) => line.step === 'checks' && line.now !== undefined);
      const lastResult = String(last?.result ?? last?.status ?? '');
      const outcomeMatches = (recordedRefund !== null && stripeIds.includes(recordedRefund)) || (stripeIds.length === 0 && lastResult.startsWith('REFUSED'));
      Object.assign(cell, {
        answer_matches_refund_objects: landed === judged.issued > 0,
        answer_matches_final_money: landed === judged.moneyReturned,
        proof: column === 'hand_check' && checksRecorded && outcomeMatches,
        tamper_evident: false,
        hand_check_log: log,
      });
    }
    return cell;
  } finally {
    for (const stop of stopAll) await stop();
    rmSync(dir, { recursive: true, force: true });
  }
}


export type { SavedDecision };

/** Repetitions of every cell without --reps. */
export const DISPUTE_DEFAULT_REPS = 1;

/** The cells asked for: every row x column, `reps` times, in the order the seed ran them. */
export const disputePlan: Planner<DisputeRow> = (reps, only) => rowMajorPlan(DISPUTE_ROWS, DISPUTE_COLUMNS, reps ?? DISPUTE_DEFAULT_REPS, only);

/** Every row x column, one after another as the seed ran them (each cell has its own payment); `reps` times. */
export const runStripeDispute: Runner = async ({ world, decider, model, reps, bar, only }) => {
  const rows = DISPUTE_ROWS.filter((row) => only.row(row));
  const count = reps ?? DISPUTE_DEFAULT_REPS;
  const plan = disputePlan(reps, only);
  bar.add(plan.length);
  // Two cells at a time, each with its own payment (the gate's cells one at a time, world.exclusive); the gap probe
  // runs alone after them (it is the last row), because it moves the sandbox clock, which would age the refunds of
  // cells beside it.
  const run = (step: (typeof plan)[number]) => {
    const cell = () => runDisputeCell(world, decider, step.row, step.column, step.rep, bar.cell());
    return step.column === 'interlock' ? world.exclusive(cell) : cell();
  };
  const probe = (step: (typeof plan)[number]) => step.row.startsWith('gap_probe');
  const cells = [...(await runPlan(plan.filter((step) => !probe(step)), 2, run)), ...(await runPlan(plan.filter(probe), 1, run))];
  return {
    scenario: 'stripe_dispute',
    generated: new Date().toISOString(),
    model,
    backend: world.backend,
    delays: world.delays,
    reps: count,
    rows: rows.map((row) => ({ row, description: ROWS[row].description, want_refunds: ROWS[row].want })),
    cells,
  };
};
