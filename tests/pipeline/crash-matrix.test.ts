// The crash matrix (issue 9 §6), one table: crash point {before_send, after_send} × what happens while the worker is
// dead × target {refund, credit}. A real `interlock serve --roles worker` process SIGKILLs itself through
// INTERLOCK_CRASH_AT, the test changes the world through the SDK or the sandbox's control API, a new worker process
// starts, and each cell must end in its exact outcome, with Stripe holding exactly the objects the premises allow
// and a receipt that verifies with the workers' key.
//
// How the cells share processes, and why: starting a worker process costs seconds of CPU (tsx compiles the tree),
// so one process per cell would make the file take minutes. All cells of one crash point run in one worker process
// with INTERLOCK_CRASH_BATCH = the number of cells and as much concurrency: every cell's send reaches the crash
// point and the process dies with all of them there at once, as a worker with concurrency 16 dies with 16 sends in
// flight. Each crash point has its own key prefix (a queue of its own, so the before_send process never takes an
// after_send cell) and its own restarted worker. Cells never share Stripe state: each has its own payment or its
// own customer on its own test clock, in one sandbox.
//
// The same matrix runs twice, at the default claim TTL and at INTERLOCK_CLAIM_TTL_MS=120000: a restarted worker
// proves the dead one's death by its heartbeat (or boot nonce) and settles without waiting for any claim to lapse;
// every cell must settle within 20 s of the new worker serving, and before the dead worker's 120 s claim would have
// lapsed (bounds, not a timing test: the slowest cells wait the 10 s settle margin before they trust that nothing
// landed).
import type Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApprovalTerms, Effect } from '../../src/interlock.js';
import { pay, startStripeWorld, type StripeWorld } from '../stripe/stripe-support.js';
import { openPipeline, spawnWorker, type Pipeline, type WorkerProcess } from './pipeline-support.js';

type CrashPoint = 'before_send' | 'after_send';
type Outage =
  | 'nothing'
  | 'inquiry_escalated'
  | 'refund_by_someone_else'
  | 'approval_revoked'
  | 'approval_expired'
  | 'renewal'
  | 'credit_note_same_incident'
  | 'credit_note_other_incident'
  | 'subscription_canceled';

type Row = {
  target: 'refund' | 'credit';
  crash: CrashPoint;
  outage: Outage;
  outcome: string;
  /** This effect's objects at Stripe afterwards (refunds or balance credits carrying its effect id). */
  objects: 0 | 1;
  /** The status of the refund this effect made, when it made one. */
  refundStatus?: string;
};

// before_send: nothing left. A re-check that holds resends under the same key (COMMITTED_BY_RETRY); one that
// fails looks the effect up, finds nothing, waits the settle margin after the death was proven and refuses.
// after_send: the money moved. A re-check that holds resends and Stripe replays its answer (COMMITTED_BY_RETRY,
// one object); one that fails finds the landed object and records it (COMMITTED_ON_QUERY): what landed is not undone.
const MATRIX: Row[] = [
  { target: 'refund', crash: 'before_send', outage: 'nothing', outcome: 'COMMITTED_BY_RETRY', objects: 1, refundStatus: 'succeeded' },
  { target: 'refund', crash: 'before_send', outage: 'inquiry_escalated', outcome: 'REFUSED:stale_premise_at_recovery', objects: 0 },
  { target: 'refund', crash: 'before_send', outage: 'refund_by_someone_else', outcome: 'REFUSED:stale_premise_at_recovery', objects: 0 },
  { target: 'refund', crash: 'before_send', outage: 'approval_revoked', outcome: 'REFUSED:lease_at_recovery', objects: 0 },
  { target: 'refund', crash: 'before_send', outage: 'approval_expired', outcome: 'REFUSED:lease_at_recovery', objects: 0 },
  { target: 'refund', crash: 'after_send', outage: 'nothing', outcome: 'COMMITTED_BY_RETRY', objects: 1, refundStatus: 'succeeded' },
  // Stripe fails a refund whose charge is charged back while it is pending: the refund landed, then failed.
  { target: 'refund', crash: 'after_send', outage: 'inquiry_escalated', outcome: 'COMMITTED_ON_QUERY', objects: 1, refundStatus: 'failed' },
  { target: 'refund', crash: 'after_send', outage: 'refund_by_someone_else', outcome: 'COMMITTED_ON_QUERY', objects: 1, refundStatus: 'succeeded' },
  { target: 'refund', crash: 'after_send', outage: 'approval_revoked', outcome: 'COMMITTED_ON_QUERY', objects: 1, refundStatus: 'succeeded' },
  { target: 'refund', crash: 'after_send', outage: 'approval_expired', outcome: 'COMMITTED_ON_QUERY', objects: 1, refundStatus: 'succeeded' },
  // The billing outage rows (scenarios.md §3): a renewal keeps the subscription active and compensates nothing;
  // a credit note for this incident is compensation (no second credit); one for another incident is not.
  { target: 'credit', crash: 'before_send', outage: 'nothing', outcome: 'COMMITTED_BY_RETRY', objects: 1 },
  { target: 'credit', crash: 'before_send', outage: 'renewal', outcome: 'COMMITTED_BY_RETRY', objects: 1 },
  { target: 'credit', crash: 'before_send', outage: 'credit_note_same_incident', outcome: 'REFUSED:stale_premise_at_recovery', objects: 0 },
  { target: 'credit', crash: 'before_send', outage: 'credit_note_other_incident', outcome: 'COMMITTED_BY_RETRY', objects: 1 },
  { target: 'credit', crash: 'before_send', outage: 'subscription_canceled', outcome: 'REFUSED:stale_premise_at_recovery', objects: 0 },
  { target: 'credit', crash: 'before_send', outage: 'approval_revoked', outcome: 'REFUSED:lease_at_recovery', objects: 0 },
  { target: 'credit', crash: 'before_send', outage: 'approval_expired', outcome: 'REFUSED:lease_at_recovery', objects: 0 },
  { target: 'credit', crash: 'after_send', outage: 'nothing', outcome: 'COMMITTED_BY_RETRY', objects: 1 },
  { target: 'credit', crash: 'after_send', outage: 'renewal', outcome: 'COMMITTED_BY_RETRY', objects: 1 },
  { target: 'credit', crash: 'after_send', outage: 'credit_note_same_incident', outcome: 'COMMITTED_ON_QUERY', objects: 1 },
  { target: 'credit', crash: 'after_send', outage: 'credit_note_other_incident', outcome: 'COMMITTED_BY_RETRY', objects: 1 },
  { target: 'credit', crash: 'after_send', outage: 'subscription_canceled', outcome: 'COMMITTED_ON_QUERY', objects: 1 },
  { target: 'credit', crash: 'after_send', outage: 'approval_revoked', outcome: 'COMMITTED_ON_QUERY', objects: 1 },
  { target: 'credit', crash: 'after_send', outage: 'approval_expired', outcome: 'COMMITTED_ON_QUERY', objects: 1 },
];

/** How long an "approval expired" cell's approval lives: long enough to be live at the dispatch, not at recovery. */
const SHORT_APPROVAL_MS = 10_000;
/**
 * The bound on settling after the restarted worker serves: the 10 s settle margin a refusal waits from the proven
 * death, plus the recovery pass's own Stripe reads for a dozen effects on a loaded machine.
 */
const SETTLE_BOUND_MS = 20_000;

let world: StripeWorld;
let plan: Stripe.Price;
beforeAll(async () => {
  world = await startStripeWorld();
  plan = await world.stripe.prices.create({ unit_amount: 3_000, currency: 'usd', recurring: { interval: 'month' }, product_data: { name: 'plan $30/mo' } });
});
afterAll(() => world.close());

type Cell = Row & {
  label: string;
  requestId: string;
  effect: Effect & Record<string, unknown>;
  terms: ApprovalTerms;
  paymentIntent?: string;
  charge?: string;
  customer?: string;
  subscription?: string;
  clock?: string;
  incident?: string;
  effectId?: string;
};

async function setUp(row: Row, tag: string): Promise<Cell> {
  const label = `${row.target}/${row.crash}/${row.outage}`;
  const request = `case-${tag}-${row.crash}-${row.target}-${row.outage}`.replaceAll('_', '-');
  if (row.target === 'refund') {
    const { paymentIntent, charge } = await pay(world.stripe, row.outage === 'inquiry_escalated' ? 'pm_card_createDisputeInquiry' : 'pm_card_visa', 5_000);
    const terms: ApprovalTerms = { id: `ap_${request}`, approver: 'dana@support', capCents: 2_000, expiresAt: 0, maxUses: 1, scope: `payment:${paymentIntent}` };
    return { ...row, label, requestId: request, terms, paymentIntent, charge, effect: { kind: 'refund', paymentIntent, amount: 2_000 } };
  }
  const clock = await world.stripe.testHelpers.testClocks.create({ frozen_time: Math.floor(Date.now() / 1000), name: label });
  const customer = await world.stripe.customers.create({ name: label, test_clock: clock.id, payment_method: 'pm_card_visa', invoice_settings: { default_payment_method: 'pm_card_visa' } });
  const subscription = await world.stripe.subscriptions.create({ customer: customer.id, items: [{ price: plan.id }] });
  const incident = `INC-${tag}${row.crash === 'before_send' ? 'b' : 'a'}${row.outage.length}`;
  const terms: ApprovalTerms = { id: `ap_${request}`, approver: 'dana@support', capCents: 1_000, expiresAt: 0, maxUses: 1, scope: `customer:${customer.id}` };
  return { ...row, label, terms, customer: customer.id, subscription: subscription.id, clock: clock.id, incident, requestId: request, effect: { kind: 'credit', customer: customer.id, amount: 1_000, incident } };
}

/** Advances the customer's test clock through the subscription's renewal; the renewal invoice's id. */
async function renew(cell: Cell): Promise<string> {
  const subscription = await world.stripe.subscriptions.retrieve(cell.subscription ?? '');
  const periodEnd = (subscription.items.data[0] as unknown as { current_period_end: number }).current_period_end;
  await world.stripe.testHelpers.testClocks.advance(cell.clock ?? '', { frozen_time: periodEnd + 3 * 3600 });
  for (let i = 0; i < 200; i += 1) {
    if ((await world.stripe.testHelpers.testClocks.retrieve(cell.clock ?? '')).status === 'ready') break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const invoices = await world.stripe.invoices.list({ customer: cell.customer ?? '', limit: 10 });
  const renewal = invoices.data.find((invoice) => invoice.billing_reason === 'subscription_cycle');
  if (renewal?.id === undefined) throw new Error(`${cell.label}: the clock advanced but no renewal invoice was made`);
  return renewal.id;
}

/** What happens while the worker is dead. */
async function outage(cell: Cell, pipeline: Pipeline): Promise<void> {
  switch (cell.outage) {
    case 'nothing':
    case 'approval_expired':
      return;
    case 'inquiry_escalated': {
      const disputes = await world.stripe.disputes.list({ charge: cell.charge ?? '' });
      const inquiry = disputes.data[0];
      if (inquiry === undefined) throw new Error(`${cell.label}: the payment has no inquiry to escalate`);
      await world.sandbox.control.request('POST', `/disputes/${inquiry.id}/escalate`);
      return;
    }
    case 'refund_by_someone_else':
      // Refunds whatever remains on the payment, from outside Interlock.
      await world.stripe.refunds.create({ payment_intent: cell.paymentIntent ?? '' });
      return;
    case 'approval_revoked':
      await pipeline.stores.approvals.revoke(cell.terms.id, 'lee@support');
      return;
    case 'renewal':
      await renew(cell);
      return;
    case 'credit_note_same_incident':
    case 'credit_note_other_incident': {
      const invoice = await renew(cell);
      const incident = cell.outage === 'credit_note_same_incident' ? (cell.incident ?? '') : `${cell.incident ?? ''}-other`;
      await world.stripe.creditNotes.create({ invoice, amount: 1_000, credit_amount: 1_000, memo: `SLA credit for ${incident}`, metadata: { incident, source: 'billing-sla-automation' } });
      return;
    }
    case 'subscription_canceled':
      await world.stripe.subscriptions.cancel(cell.subscription ?? '');
      return;
    default: {
      const never: never = cell.outage;
      throw new Error(`unknown outage ${String(never)}`);
    }
  }
}

/** This effect's objects at Stripe: refunds or balance credits whose metadata names the effect. */
async function objectsOf(cell: Cell): Promise<{ count: number; amounts: number[]; statuses: (string | null)[]; others: number }> {
  if (cell.target === 'refund') {
    const refunds = (await world.stripe.refunds.list({ payment_intent: cell.paymentIntent ?? '', limit: 100 })).data;
    const own = refunds.filter((refund) => refund.metadata?.['interlock_effect_id'] === cell.effectId);
    return { count: own.length, amounts: own.map((refund) => refund.amount), statuses: own.map((refund) => refund.status), others: refunds.length - own.length };
  }
  const transactions = (await world.stripe.customers.listBalanceTransactions(cell.customer ?? '', { limit: 100 })).data;
  const own = transactions.filter((transaction) => transaction.metadata?.['interlock_effect_id'] === cell.effectId);
  return { count: own.length, amounts: own.map((transaction) => transaction.amount), statuses: own.map((transaction) => transaction.type), others: 0 };
}

type CellResult = { label: string; outcome: string; settleAfterReadyMs: number; settleAfterDispatchMs: number };

/** One crash point's half of the matrix: one crashing worker for all its cells, the outage, one restarted worker. */
async function runCrashPoint(crash: CrashPoint, claimTtlMs: number | null, tag: string): Promise<CellResult[]> {
  const rows = MATRIX.filter((row) => row.crash === crash);
  const pipeline = await openPipeline(world.sandbox);
  const workers: WorkerProcess[] = [];
  const ttl: Record<string, string> = claimTtlMs === null ? {} : { INTERLOCK_CLAIM_TTL_MS: String(claimTtlMs) };
  try {
    const cells = await Promise.all(rows.map((row) => setUp(row, tag)));
    const dying = spawnWorker(pipeline.env({ ...ttl, INTERLOCK_CRASH_AT: crash, INTERLOCK_CRASH_BATCH: String(cells.length), INTERLOCK_CONCURRENCY: String(cells.length) }));
    workers.push(dying);
    await dying.ready;
    // Approvals granted only now, so the short-lived ones are live when the dying worker dispatches.
    const now = Date.now();
    for (const cell of cells) {
      cell.terms.expiresAt = now + (cell.outage === 'approval_expired' ? SHORT_APPROVAL_MS : 3_600_000);
      await pipeline.stores.approvals.grant(cell.terms);
    }
    await Promise.all(
      cells.map(async (cell) => {
        cell.effectId = await pipeline.propose({ requestId: cell.requestId, approval: cell.terms.id, effect: cell.effect });
      }),
    );
    const death = await dying.exited;
    expect(death.signal, `the dying worker was not killed at ${crash}:\n${dying.logs().slice(-3000)}`).toBe('SIGKILL');
    // Every cell died at the crash point: dispatched, still open, and at Stripe only if the send went out.
    for (const cell of cells) {
      const partition = (await pipeline.stores.journal.partitionOf(cell.effectId ?? '')) ?? '';
      expect((await pipeline.stores.journal.readState(partition, cell.effectId ?? '')).state.open, `${cell.label}: not open after the crash`).toBe(true);
      expect((await objectsOf(cell)).count, `${cell.label}: objects at Stripe right after the crash`).toBe(crash === 'after_send' ? 1 : 0);
    }

    await Promise.all(cells.map((cell) => outage(cell, pipeline)));
    const expiry = Math.max(...cells.map((cell) => (cell.outage === 'approval_expired' ? cell.terms.expiresAt : 0)));
    if (expiry > Date.now()) await new Promise((resolve) => setTimeout(resolve, expiry - Date.now() + 50));

    const restarted = spawnWorker(pipeline.env(ttl));
    workers.push(restarted);
    const readyAt = await restarted.ready;
    const settled = await pipeline.untilSettled(cells.map((cell) => cell.effectId ?? ''), 60_000);

    const results: CellResult[] = [];
    const seen: Record<string, unknown> = {};
    const want: Record<string, unknown> = {};
    for (const cell of cells) {
      const answer = settled.get(cell.effectId ?? '');
      if (answer === undefined) throw new Error(`${cell.label}: not settled`);
      const objects = await objectsOf(cell);
      const refund = (status: string | null, others: number) => (cell.target === 'refund' ? { refundStatus: status, otherRefunds: others } : {});
      seen[cell.label] = {
        outcome: answer.outcome,
        objects: objects.count,
        amounts: objects.amounts,
        valid: answer.verification.valid,
        problems: answer.verification.problems,
        happened: answer.verification.happened,
        atMostOnce: answer.verification.happenedOnce,
        ...refund(objects.statuses[0] ?? null, objects.others),
      };
      want[cell.label] = {
        outcome: cell.outcome,
        objects: cell.objects,
        amounts: cell.objects === 1 ? [cell.target === 'refund' ? 2_000 : -1_000] : [],
        valid: true,
        problems: [],
        happened: cell.objects === 1,
        atMostOnce: true,
        ...refund(cell.refundStatus ?? null, cell.outage === 'refund_by_someone_else' ? 1 : 0),
      };
      results.push({ label: cell.label, outcome: answer.outcome, settleAfterReadyMs: answer.settledAt - readyAt, settleAfterDispatchMs: answer.settledAt - (answer.dispatchedAt ?? 0) });
    }
    expect(seen).toEqual(want);
    return results;
  } finally {
    for (const worker of workers) await worker.stop();
    await pipeline.close();
  }
}

async function runMatrix(claimTtlMs: number | null, tag: string): Promise<void> {
  const results = (await Promise.all([runCrashPoint('before_send', claimTtlMs, tag), runCrashPoint('after_send', claimTtlMs, tag)])).flat();
  console.info(`crash matrix, claim TTL ${claimTtlMs ?? 'default'}: ${results.map((result) => `${result.label} ${result.outcome} ${result.settleAfterReadyMs} ms`).join('; ')}`);
  for (const result of results) {
    expect(result.settleAfterReadyMs, `${result.label} settled too long after the restart`).toBeLessThan(SETTLE_BOUND_MS);
    // Before the dead worker's claim would have lapsed: nothing waited for it.
    if (claimTtlMs !== null) expect(result.settleAfterDispatchMs, `${result.label} settled only after the claim TTL`).toBeLessThan(claimTtlMs);
  }
}

describe.concurrent('the crash matrix: a real worker SIGKILLed at each point, the world changed meanwhile, a new worker', () => {
  it('settles every cell with its exact outcome, the objects its premises allow and a receipt that verifies', async () => {
    await runMatrix(null, 'd');
  }, 170_000);

  it('with INTERLOCK_CLAIM_TTL_MS=120000, every restarted worker settles its cells without waiting for the claim TTL', async () => {
    await runMatrix(120_000, 't');
  }, 170_000);
});
