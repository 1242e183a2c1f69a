// Refunds per second through BullMQ against the Stripe sandbox (issue 9 §8), side by side in one run. The sandbox
// runs as its own process (fast delays); the workers run in this process, on one private Redis with appendfsync
// always (the queue and, for the gate, the journal). Every column drains the same number of queued refunds, one
// fresh payment each, at the same BullMQ concurrency:
//   no_check    send the refund with the Idempotency-Key, nothing else
//   hand_check  what a careful engineer writes by hand (DESIGN §9, the seeds' hand_check): look the refund up by
//               metadata, re-read the premises (the payment's refunds and disputes), read the approval, append a
//               `checks` line to a JSONL log and fsync it, send with the key, append and fsync a `sent` line
//   gate        the effects worker of queues/effects.ts: gate.submit on the recorded proposal, the real refund
//               target (premises re-read, propose-5, the send, settle-5, the receipt)
// Columns are interleaved (a b c a b c …) so a noisy moment hits them alike; medians over the repeats. The Stripe
// calls each column makes per refund are counted from the sandbox's request log.
import { open, type FileHandle } from 'node:fs/promises';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import type Stripe from 'stripe';
import { createEffectsQueue, startEffectsWorker } from '../queues/effects.js';
import { effectIdFor, loadConfig, openStores, startSender, stripeSide, REFUND_FACTS, type Config } from '../src/interlock.js';
import { signingKeyFromPem } from '../src/core/signing.js';
import { generateSigningKeyPem } from '../src/keys/key-store.js';
import { startPrivateRedis } from '../tests/support/private-redis.js';
import { createControlClient } from '../sandbox/index.js';
import { cutRatio, deleteKeys, finish, inParallel, markdownTable, median, payments, progress, QUICK, round, sandboxStripe, startSandboxProcess } from './support.js';

const REPS = Number(process.env.BENCH_REPS ?? (QUICK ? 1 : 5));
const CONCURRENCY = [16, 1] as const;
/** Refunds per run at each concurrency (fewer at 1: each waits for the one before). */
const EFFECTS: Record<(typeof CONCURRENCY)[number], number> = QUICK ? { 16: 40, 1: 10 } : { 16: 400, 1: 100 };
const COLUMNS = ['no_check', 'hand_check', 'gate'] as const;
type Column = (typeof COLUMNS)[number];
const AMOUNT = 2_000;
const KEY = 'sk_test_benchPipeline0001';

type Measured = { perSecond: number; stripeCallsPerRefund: number; nodeCpuUsPerRefund: number };

const redis = await startPrivateRedis(['--appendonly', 'yes', '--appendfsync', 'always', '--maxmemory-policy', 'noeviction', '--save', '']);
const sandbox = await startSandboxProcess();
const control = createControlClient(sandbox.url);
const stripe = sandboxStripe(sandbox.url, KEY);
const admin = new Redis(redis.url);
const signingKey = signingKeyFromPem(generateSigningKeyPem().privatePem);

async function lastSeq(): Promise<number> {
  return (await control.requests()).at(-1)?.seq ?? 0;
}

/** Runs `drain` (which resolves once `count` refunds are done) and measures it; the setup before is not counted. */
async function measured(count: number, drain: () => Promise<void>): Promise<Measured> {
  const seq = await lastSeq();
  const cpu = process.cpuUsage();
  const started = performance.now();
  await drain();
  const elapsed = performance.now() - started;
  const used = process.cpuUsage(cpu);
  const calls = (await control.requests(seq)).length;
  return { perSecond: Math.round((count * 1000) / elapsed), stripeCallsPerRefund: round(calls / count, 2), nodeCpuUsPerRefund: Math.round((used.user + used.system) / count) };
}

/** Resolves when `done()` has been called `count` times; rejects on the first `fail`. */
function countdown(count: number): { done(): void; fail(error: Error): void; all: Promise<void> } {
  let left = count;
  let resolve: () => void = () => undefined;
  let reject: (error: Error) => void = () => undefined;
  const all = new Promise<void>((yes, no) => {
    resolve = yes;
    reject = no;
  });
  return {
    done() {
      left -= 1;
      if (left === 0) resolve();
    },
    fail: reject,
    all,
  };
}

type Job = { paymentIntent: string; caseId: string };

/** The no_check and hand_check workers: a BullMQ queue of their own, filled before the worker starts. */
async function drainWith(prefix: string, jobs: Job[], concurrency: number, handle: (job: Job) => Promise<void>): Promise<Measured> {
  const connection = { url: redis.url, maxRetriesPerRequest: null };
  const queue = new Queue<Job>('refunds', { connection, prefix: `{${prefix}}` });
  await queue.addBulk(jobs.map((data) => ({ name: 'refund', data, opts: { jobId: data.caseId, removeOnComplete: true } })));
  const progressOf = countdown(jobs.length);
  let worker: Worker<Job> | null = null;
  try {
    return await measured(jobs.length, async () => {
      worker = new Worker<Job>(
        'refunds',
        async (job) => {
          try {
            await handle(job.data);
            progressOf.done();
          } catch (error) {
            progressOf.fail(error as Error);
          }
        },
        { connection, prefix: `{${prefix}}`, concurrency },
      );
      await progressOf.all;
    });
  } finally {
    await (worker as Worker<Job> | null)?.close();
    await queue.close();
  }
}

function noCheck(job: Job): Promise<unknown> {
  return stripe.refunds.create({ payment_intent: job.paymentIntent, amount: AMOUNT, metadata: { case: job.caseId } }, { idempotencyKey: `refund:${job.caseId}` });
}

/** The hand-written careful worker: lookup, facts now against facts decided on, approval, fsynced log, send. */
function handCheck(log: FileHandle, approvalKey: string) {
  const append = async (line: object) => {
    await log.write(`${JSON.stringify({ ts: Date.now(), pid: process.pid, ...line })}\n`);
    await log.sync();
  };
  const decidedOn = { chargebacks: [] as string[], refunded_by_others: 0 };
  return async (job: Job): Promise<void> => {
    const [refunds, disputes, approval] = await Promise.all([
      stripe.refunds.list({ payment_intent: job.paymentIntent, limit: 100 }),
      stripe.disputes.list({ payment_intent: job.paymentIntent, limit: 100 }),
      admin.hgetall(approvalKey),
    ]);
    const found = refunds.data.filter((refund) => refund.metadata?.case === job.caseId);
    const now = {
      chargebacks: disputes.data.filter((dispute: Stripe.Dispute) => !dispute.status.startsWith('warning_')).map((dispute) => dispute.id),
      refunded_by_others: refunds.data.filter((refund) => refund.metadata?.case !== job.caseId && refund.status !== 'failed' && refund.status !== 'canceled').reduce((sum, refund) => sum + refund.amount, 0),
    };
    const approvalOk = approval.revoked === '' && AMOUNT <= Number(approval.max_cents);
    const result =
      found.length > 0 ? 'FOUND_BY_LOOKUP'
      : !approvalOk ? 'REFUSED:approval'
      : now.chargebacks.join(',') !== decidedOn.chargebacks.join(',') ? 'REFUSED:charged_back'
      : now.refunded_by_others !== decidedOn.refunded_by_others ? 'REFUSED:refunds_changed'
      : 'send';
    await append({ step: 'checks', case: job.caseId, amount: AMOUNT, approval: approvalKey, lookup: found.map((refund) => refund.id), decided_on: decidedOn, now, result });
    if (result !== 'send') throw new Error(`hand_check refused a fresh refund: ${result}`);
    const refund = await stripe.refunds.create({ payment_intent: job.paymentIntent, amount: AMOUNT, metadata: { case: job.caseId } }, { idempotencyKey: `refund:${job.caseId}` });
    await append({ step: 'sent', case: job.caseId, status: refund.status, refund: refund.id });
  };
}

async function gateColumn(prefix: string, paid: { paymentIntent: string }[], concurrency: number): Promise<Measured> {
  const config: Config = { ...loadConfig({}), redisUrl: redis.url, keyPrefix: prefix, stripeSecretKey: KEY, stripeApiBase: sandbox.url, unsafeDurability: false, logLevel: 'silent', workerId: `bench-${prefix}`, concurrency };
  const stores = await openStores(config, { logger: pino({ level: 'silent' }), signingKey });
  const side = stripeSide(config);
  const sender = await startSender(stores, side.target);
  const queue = createEffectsQueue(stores);
  let worker: ReturnType<typeof startEffectsWorker> | null = null;
  try {
    // The decision: an approval per payment, the facts read now, PROPOSED recorded and the job queued.
    await inParallel(paid.length, 16, async (index) => {
      const paymentIntent = paid[index]?.paymentIntent ?? '';
      const approval = `ap_${prefix}_${index}`;
      await stores.approvals.grant({ id: approval, approver: 'bench', capCents: AMOUNT, expiresAt: Date.now() + 3_600_000, maxUses: 1, scope: `payment:${paymentIntent}` });
      const effect = { kind: 'refund' as const, paymentIntent, amount: AMOUNT, reason: 'requested_by_customer' as const };
      const requestId = `case-${prefix}-${index}`;
      const premises = await side.target.readFacts(effectIdFor({ requestId, effect }), effect, REFUND_FACTS, { timeoutMs: 10_000 });
      const recorded = await queue.propose({ requestId, agent: 'bench', approval, premises, effect });
      if (!recorded.queued) throw new Error(`case ${index} was not queued: ${JSON.stringify(recorded)}`);
    });
    const progressOf = countdown(paid.length);
    return await measured(paid.length, async () => {
      worker = startEffectsWorker(stores, sender, {
        concurrency,
        onAnswer: (answer) => (answer.outcome === 'COMMITTED' ? progressOf.done() : progressOf.fail(new Error(`the gate answered ${answer.outcome} for ${answer.effectId}`))),
      });
      await progressOf.all;
    });
  } finally {
    await (worker as ReturnType<typeof startEffectsWorker> | null)?.close();
    await queue.close();
    await sender.close();
    await stores.close();
  }
}

async function runColumn(column: Column, concurrency: 16 | 1, rep: number): Promise<Measured> {
  const prefix = `bp${rep}${column.replace('_', '')}${concurrency}x${Math.random().toString(36).slice(2, 7)}`;
  const paid = await payments(stripe, EFFECTS[concurrency]);
  const jobs = paid.map((payment, index) => ({ paymentIntent: payment.paymentIntent, caseId: `${prefix}-${index}` }));
  const dir = mkdtempSync(join(tmpdir(), 'interlock-bench-hand-'));
  try {
    switch (column) {
      case 'no_check':
        return await drainWith(prefix, jobs, concurrency, async (job) => void (await noCheck(job)));
      case 'hand_check': {
        const approvalKey = `${prefix}:approval`;
        await admin.hset(approvalKey, 'revoked', '', 'max_cents', String(AMOUNT), 'approver', 'bench');
        const log = await open(join(dir, 'hand_check.log'), 'a');
        try {
          return await drainWith(prefix, jobs, concurrency, handCheck(log, approvalKey));
        } finally {
          await log.close();
        }
      }
      case 'gate':
        return await gateColumn(prefix, paid, concurrency);
      default: {
        const never: never = column;
        return never;
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await deleteKeys(admin, [`${prefix}*`, `{${prefix}}*`, `{${prefix}-queues}*`]);
  }
}

type Row = { column: Column; concurrency: number; refunds: number } & Measured;
const rows: Row[] = [];
try {
  for (const concurrency of CONCURRENCY) {
    const runs = new Map<Column, Measured[]>(COLUMNS.map((column) => [column, []]));
    for (let rep = 0; rep < REPS; rep += 1) {
      for (const column of COLUMNS) {
        progress(`pipeline: concurrency ${concurrency}, run ${rep + 1}/${REPS}, ${column} (${EFFECTS[concurrency]} refunds)`);
        runs.get(column)?.push(await runColumn(column, concurrency, rep));
      }
    }
    for (const column of COLUMNS) {
      const all = runs.get(column) ?? [];
      const pick = (field: keyof Measured) => median(all.map((run) => run[field]));
      rows.push({ column, concurrency, refunds: EFFECTS[concurrency], perSecond: pick('perSecond'), stripeCallsPerRefund: pick('stripeCallsPerRefund'), nodeCpuUsPerRefund: pick('nodeCpuUsPerRefund') });
    }
  }
  progress('');
} finally {
  await admin.quit();
  await sandbox.stop();
  await redis.stop();
}

const at = (column: Column, concurrency: number) => rows.find((row) => row.column === column && row.concurrency === concurrency);
const ratio = (concurrency: number) => cutRatio(at('gate', concurrency)?.perSecond ?? 0, at('hand_check', concurrency)?.perSecond ?? Infinity);
const ratios = { c16: { gateVsHandCheck: ratio(16), gateVsNoCheck: round((at('gate', 16)?.perSecond ?? 0) / (at('no_check', 16)?.perSecond ?? Infinity), 2) }, c1: { gateVsHandCheck: ratio(1), gateVsNoCheck: round((at('gate', 1)?.perSecond ?? 0) / (at('no_check', 1)?.perSecond ?? Infinity), 2) } };
const table = markdownTable(
  ['column', 'concurrency', 'refunds/s (median)', 'Stripe calls per refund', 'worker CPU µs per refund'],
  rows.map((row) => [row.column, row.concurrency, row.perSecond, row.stripeCallsPerRefund, row.nodeCpuUsPerRefund]),
);
const markdown = `Sandbox in its own process (fast delays), workers in the bench process, one private Redis with appendfsync always; ${EFFECTS[16]} refunds per run at concurrency 16 and ${EFFECTS[1]} at 1, medians of ${REPS} interleaved runs.\n\n${table}\n\ngate / hand_check: ${ratios.c16.gateVsHandCheck}× at concurrency 16, ${ratios.c1.gateVsHandCheck}× at concurrency 1.`;
console.log(`\n${markdown}`);
const gateCalls = at('gate', 16)?.stripeCallsPerRefund ?? Infinity;
finish('pipelineThroughput', 'Refunds through the effects queue, against the sandbox (issue 9 §8)', markdown, { reps: REPS, effects: EFFECTS, rows, ratios }, [
  { target: 'gate ≥ 0.8× hand_check, concurrency 16', value: ratios.c16.gateVsHandCheck, met: ratios.c16.gateVsHandCheck >= 0.8 },
  { target: 'gate ≥ 0.8× hand_check, concurrency 1', value: ratios.c1.gateVsHandCheck, met: ratios.c1.gateVsHandCheck >= 0.8 },
  { target: 'gate ≤ 2 Stripe calls per refund on the happy path', value: gateCalls, met: gateCalls <= 2 },
]);
