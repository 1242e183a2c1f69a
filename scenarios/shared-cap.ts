// shared_cap (scenarios.md §4): a $100 payment, one approval capping refunds at $30 across teams, two agents
// (support-bot, billing-bot) that each decide and send $20 at the same moment; the first to reach the crash point
// (after Stripe's answer, or right before the POST) is SIGKILLed and restarted at once. Invariant: the payment's
// non-failed refunds total at most $30. The gate's column reserves the cap at dispatch (I6).
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { effectIdFor, type Decider } from '../src/interlock.js';
import { decide, runPlan, type Cell, type Column, type Progress } from './cells.js';
import { cellDir, CellError, expectSigkill, expectSuccess, hex, judgeReceipt, propose, receiptAgainstStripe, runBaseline, seconds, startWorker, waitSettled, type Running, type World } from './harness.js';
import type { Planner, Runner } from './run.js';

export const CAP_COLUMNS: Column[] = ['no_check', 'hand_check', 'hand_lock', 'interlock'];
export const CAP_ROWS = ['after_commit', 'before_send'] as const;
export type CapRow = (typeof CAP_ROWS)[number];
export const CAP_CENTS = 3_000;
const PAID = 10_000;
const EACH = 2_000;
const BOTS = ['support-bot', 'billing-bot'] as const;
const TICKETS: Record<(typeof BOTS)[number], string> = {
  'support-bot': 'Case #4471: the blender jar arrived cracked. Policy gives a $20 partial refund. Issue the refund your ticket calls for.',
  'billing-bot': 'Case #4471: delivery was 5 days late. Policy gives a $20 refund. Issue the refund your ticket calls for.',
};
const RECOVERY_OUTCOMES = new Set(['COMMITTED_BY_RETRY', 'COMMITTED_ON_QUERY', 'REAPPLIED_AFTER_QUERY', 'REFUSED:stale_premise_at_recovery', 'REFUSED:lease_at_recovery', 'AMBIGUOUS']);

type Refund = { id: string; amount: number; status: string; bot: string | null };

async function groundTruth(world: World, paymentIntent: string, effectBots: Map<string, string>): Promise<{ refunds: Refund[]; total: number; count: number }> {
  const refunds = (await world.stripe.list('/v1/refunds', { payment_intent: paymentIntent })).map((r) => {
    const metadata = (r.metadata ?? {}) as Record<string, unknown>;
    const bot = typeof metadata.bot === 'string' ? metadata.bot : (effectBots.get(String(metadata.interlock_effect_id)) ?? null);
    return { id: String(r.id), amount: Number(r.amount), status: String(r.status), bot };
  });
  const live = refunds.filter((r) => r.status !== 'failed' && r.status !== 'canceled');
  return { refunds, total: live.reduce((sum, r) => sum + r.amount, 0), count: live.length };
}

export async function runCapCell(world: World, decider: Decider, row: CapRow, column: Column, rep: number, progress: Progress): Promise<Cell> {
  progress.start(`shared_cap ${row} / ${column} #${rep}`);
  const dir = cellDir('cap');
  const stopAll: (() => Promise<void>)[] = [];
  try {
    const intent = await world.stripe.post('/v1/payment_intents', { amount: PAID, currency: 'usd', payment_method: 'pm_card_visa', payment_method_types: ['card'], confirm: true });
    const paymentIntent = String(intent.id);
    const runId = dir.split('/').at(-1) ?? hex(5);
    const kase = `case-4471-${hex(5)}`;
    const decisions = Object.fromEntries(
      await Promise.all(
        BOTS.map(async (bot) => {
          const decision = await decide(decider, { caseId: `${kase}-${bot}`, kind: 'refund', story: TICKETS[bot], approval: { id: `policy-${bot}`, capCents: EACH, scope: `payment:${paymentIntent}`, approver: 'policy' }, facts: { get_payment: { payment_intent: paymentIntent, amount_cents: PAID } } }, EACH);
          if (!decision.valid) throw new CellError(`${bot}'s decider answered ${decision.verdict} (${decision.amount} cents) where its ticket calls for $20; the seed treats that as a harness error`);
          return [bot, decision] as const;
        }),
      ),
    );
    const statuses: Record<string, string> = {};
    let crashedBot: string | null = null;
    let crashAt: number | null = null;
    let settledAt: number;
    let restartAt: number | null = null;
    const effectBots = new Map<string, string>();
    const receipts: Record<string, unknown> = {};
    let provable = false;
    // The gate's answers are what its receipts say about the money; the baselines' are their statuses (below).
    let answersMatch = false;
    const receiptAnswers: string[] = [];
    let tamperEvident = false;
    let factsChanged = false;
    if (column === 'interlock') {
      const approval = `ap_${kase.replace(/-/g, '_')}`;
      await world.stores.approvals.grant({ id: approval, approver: 'support-lead', capCents: CAP_CENTS, expiresAt: Date.now() + 24 * 3_600_000, maxUses: 2, scope: `payment:${paymentIntent}` });
      const workerId = `scenario-${hex(4)}`;
      const first = await startWorker(world, { workerId, crashAt: row === 'after_commit' ? 'after_send' : 'before_send', concurrency: 2 });
      stopAll.push(() => first.stop());
      const effects = BOTS.map((bot) => {
        const requestId = `${kase}/${bot}`;
        const effectId = effectIdFor({ requestId, effect: { kind: 'refund', paymentIntent, amount: EACH } });
        effectBots.set(effectId, bot);
        return { bot, requestId, effectId };
      });
      // The two agents propose at the same moment; one worker process sends for both (its concurrency is 2).
      await Promise.all(
        effects.map(({ bot, requestId }) => {
          const decision = decisions[bot];
          if (decision === undefined) throw new CellError(`no decision for ${bot}`);
          return propose(world, 'refunds', { request_id: requestId, payment_intent: paymentIntent, amount: EACH, approval, agent: bot, decision: { model: decision.model, text: decision.text } });
        }),
      );
      crashAt = await expectSigkill(first, "the gate's worker");
      const second = await startWorker(world, { workerId, concurrency: 2 });
      stopAll.push(() => second.stop());
      restartAt = second.readyAt;
      let last = 0;
      for (const { bot, effectId } of effects) {
        const settled = await waitSettled(world, effectId, 120_000);
        statuses[bot] = settled.outcome;
        last = Math.max(last, settled.at);
      }
      settledAt = last;
      const truth = await groundTruth(world, paymentIntent, effectBots);
      provable = true;
      answersMatch = true;
      tamperEvident = true;
      for (const { bot, effectId } of effects) {
        const judged = await judgeReceipt(world, effectId);
        const v = judged.verification;
        // Each receipt against this bot's own refunds at Stripe: the other bot's refund proves nothing of this one.
        const own = truth.refunds.filter((r) => r.bot === bot);
        const { money, answerMatches, proof } = receiptAgainstStripe(judged, own.map((r) => r.id), own.some((r) => r.status === 'succeeded' || r.status === 'pending'));
        provable &&= proof;
        answersMatch &&= answerMatches;
        receiptAnswers.push(`${bot} ${money}`);
        tamperEvident &&= judged.tamperEvident;
        factsChanged ||= (v.recheckedAtRecovery?.violations.length ?? 0) > 0;
        receipts[bot] = { effect_id: effectId, kinds: judged.journal, valid: v.valid, happened: v.happened, happened_once: v.happenedOnce, authorized_when_fired: v.authorizedWhenFired, assumptions_held: v.assumptionsHeld, refused: v.refused, evidence: v.evidence, receipt_answer: money, problems: v.problems, reconcile: judged.reconcile, receipt: judged.receipt };
      }
      crashedBot = effects.find(({ bot }) => RECOVERY_OUTCOMES.has(statuses[bot] ?? ''))?.bot ?? null;
    } else {
      const goAt = Date.now() + 3_000;
      for (const bot of BOTS) writeFileSync(join(dir, `${bot}.decision.json`), JSON.stringify(decisions[bot]));
      const botArgs = (bot: string, crash: string, restart: boolean) => [column, bot, dir, paymentIntent, crash, String(goAt), ...(restart ? ['--restart'] : [])];
      const running = new Map<string, Running>(BOTS.map((bot) => [bot, runBaseline(world, 'cap-bot.ts', botArgs(bot, row, false))]));
      const finished = new Map<string, Record<string, unknown>>();
      const deadline = Date.now() + 180_000;
      while (finished.size < BOTS.length) {
        if (Date.now() > deadline) throw new CellError('the bots did not finish within 180 s');
        for (const [bot, process] of running) {
          if (finished.has(bot)) continue;
          const exit = process.child.exitCode !== null || process.child.signalCode !== null ? await process.exited : null;
          if (exit === null) continue;
          if (exit.signal === 'SIGKILL' && crashedBot === null) {
            crashedBot = bot;
            crashAt = Date.now();
            const again = runBaseline(world, 'cap-bot.ts', botArgs(bot, 'none', true));
            restartAt = again.startedAt;
            running.set(bot, again);
            continue;
          }
          finished.set(bot, await expectSuccess(process, bot));
        }
        await sleep(20);
      }
      settledAt = Date.now();
      for (const [bot, answer] of finished) statuses[bot] = String(answer.status ?? 'NO_ANSWER');
    }
    const truth = await groundTruth(world, paymentIntent, effectBots);
    const other = BOTS.find((bot) => bot !== crashedBot) ?? null;
    const held = truth.total <= CAP_CENTS;
    return {
      row,
      column,
      rep,
      outcome: `crashed ${crashedBot === null ? '?' : statuses[crashedBot]} / other ${other === null ? '?' : statuses[other]}`,
      held,
      // A baseline's answer against what Stripe holds for each agent: landed iff its refund is there and not failed.
      answer_matches_final_money: column === 'interlock' ? answersMatch : BOTS.every((bot) => ['REFUNDED', 'REPLAYED_BY_STRIPE', 'FOUND_BY_LOOKUP', 'COMMITTED', 'COMMITTED_BY_RETRY', 'COMMITTED_ON_QUERY', 'REAPPLIED_AFTER_QUERY'].includes(statuses[bot] ?? '') === truth.refunds.some((r) => r.bot === bot && r.status !== 'failed')),
      // What the verdict names when an answer contradicts Stripe: each receipt's, by bot.
      ...(column === 'interlock' ? { receipt_answer: receiptAnswers.join(', ') } : {}),
      proof: provable,
      tamper_evident: tamperEvident,
      settle_s: crashAt === null ? null : seconds(settledAt - crashAt),
      settle_after_restart_s: restartAt === null ? null : seconds(settledAt - restartAt),
      crashed_bot: crashedBot,
      facts_changed_at_recovery: factsChanged,
      statuses,
      decisions: Object.fromEntries(Object.entries(decisions).map(([bot, d]) => [bot, { amount: d.amount, model: d.model, text: d.text }])),
      total_cents: truth.total,
      count: truth.count,
      receipts,
      stripe: { payment_intent: paymentIntent, run_id: runId, case: kase, refunds: truth.refunds, exit_codes: crashedBot === null ? null : { [crashedBot]: 'SIGKILL' } },
    };
  } finally {
    for (const stop of stopAll) await stop();
    rmSync(dir, { recursive: true, force: true });
    progress.done();
  }
}

/** Repetitions of every cell without --reps. */
export const CAP_DEFAULT_REPS = 20;

/** The cells asked for: N repetitions of each row x column, interleaved (rep, then row, then column) as the seed ran them. */
export const capPlan: Planner<CapRow> = (reps, only) => {
  const count = reps ?? CAP_DEFAULT_REPS;
  return Array.from({ length: count }, (_, index) => CAP_ROWS.filter((row) => only.row(row)).flatMap((row) => CAP_COLUMNS.filter((column) => only.column(column)).map((column) => ({ row, column, rep: index + 1 })))).flat();
};

/** The plan's cells, two at a time. */
export const runSharedCap: Runner = async ({ world, decider, model, reps, bar, only }) => {
  const count = reps ?? CAP_DEFAULT_REPS;
  const plan = capPlan(reps, only);
  bar.add(plan.length);
  const cells = await runPlan(plan, 2, (step) => {
    const cell = () => runCapCell(world, decider, step.row, step.column, step.rep, bar.cell());
    return step.column === 'interlock' ? world.exclusive(cell) : cell();
  });
  return { scenario: 'shared_cap', generated: new Date().toISOString(), model, backend: world.backend, delays: world.delays, reps: count, cap_cents: CAP_CENTS, paid_cents: PAID, cells };
};
