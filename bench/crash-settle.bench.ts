// Crash → settled after restart (issue 9 §8), over CRASHES crashes per cell of the matrix: crash point
// {before_send, after_send} × the facts during the outage {held, changed (a chargeback opened)}. Each crash is a
// real worker process (`interlock serve --roles worker`, INTERLOCK_CRASH_AT) that SIGKILLs itself at that point of
// its send; then the world changes or not, and the worker is restarted under the same worker id (a new boot
// nonce: its death is proven at once). Against the sandbox in its own process, on a private Redis with
// appendfsync always; every crash has its own key prefix, payment and worker id, so PARALLEL of them can run at
// once without touching each other.
//
// Times, per crash: restart → settled, from the instant the restarted worker was up (its stores open and Redis
// durability checked: its "Redis durability checked" log line) to the instant the journal holds the outcome
// (polled every 10 ms); and the worker's boot (spawn → up), which is Node and tsx starting the program, reported
// apart since no gate can change it. Targets: facts held → settled ≤ 1.5 s after the restart; facts changed →
// refused once the settle margin has run from the restart (the rule: absence is believed only after it), within
// 1.5 s of it.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { createEffectsQueue } from '../queues/effects.js';
import { effectIdFor, loadConfig, openStores, settledOutcome, stripeSide, REFUND_FACTS, type Config } from '../src/interlock.js';
import { signingKeyFromPem } from '../src/core/signing.js';
import { generateSigningKeyPem } from '../src/keys/key-store.js';
import { startPrivateRedis } from '../tests/support/private-redis.js';
import { createControlClient } from '../sandbox/index.js';
import { deleteKeys, finish, inParallel, markdownTable, median, payments, progress, QUICK, ROOT, round, sandboxStripe, startSandboxProcess } from './support.js';

const CRASHES = Number(process.env.BENCH_CRASHES ?? (QUICK ? 1 : 20));
const PARALLEL = Number(process.env.BENCH_CRASH_PARALLEL ?? 3);
/** The default settle margin in a full run (what the README justifies); a quick run shortens it to stay brief. */
const SETTLE_MARGIN_MS = QUICK ? 2_000 : loadConfig({}).settleMarginMs;
const HELD_TARGET_MS = 1_500;
const KEY = 'sk_test_benchCrashSettle01';
const AMOUNT = 2_000;

const POINTS = ['before_send', 'after_send'] as const;
const WORLDS = ['held', 'changed'] as const;
type Cell = { point: (typeof POINTS)[number]; world: (typeof WORLDS)[number] };
const CELLS: Cell[] = POINTS.flatMap((point) => WORLDS.map((world) => ({ point, world })));
/** What recovery must answer in each cell, and how many refunds (any status) Stripe must hold afterwards. */
const EXPECTED: Record<string, { outcome: string; refunds: number }> = {
  'before_send/held': { outcome: 'COMMITTED_BY_RETRY', refunds: 1 },
  'after_send/held': { outcome: 'COMMITTED_BY_RETRY', refunds: 1 },
  'before_send/changed': { outcome: 'REFUSED:stale_premise_at_recovery', refunds: 0 },
  'after_send/changed': { outcome: 'COMMITTED_ON_QUERY', refunds: 1 },
};
const nameOf = (cell: Cell) => `${cell.point}/${cell.world}`;

const redis = await startPrivateRedis(['--appendonly', 'yes', '--appendfsync', 'always', '--maxmemory-policy', 'noeviction', '--save', '']);
const sandbox = await startSandboxProcess();
const control = createControlClient(sandbox.url);
const stripe = sandboxStripe(sandbox.url, KEY);
const admin = new Redis(redis.url);
const dir = mkdtempSync(join(tmpdir(), 'interlock-bench-crash-'));
const { privatePem } = generateSigningKeyPem();
const keyFile = join(dir, 'signing-key.pem');
writeFileSync(keyFile, privatePem, { mode: 0o600 });
const signingKey = signingKeyFromPem(privatePem);

type WorkerProcess = { exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>; upAt: Promise<number>; stop(): Promise<void>; logs: string[] };

/** `interlock serve --roles worker` as a real process; `upAt` is the time of its "Redis durability checked" line. */
function startWorker(prefix: string, workerId: string, crashAt: string | null): WorkerProcess {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    REDIS_URL: redis.url,
    INTERLOCK_KEY_PREFIX: prefix,
    INTERLOCK_WORKER_ID: workerId,
    INTERLOCK_DATA_DIR: join(dir, prefix),
    INTERLOCK_SIGNING_KEY_FILE: keyFile,
    INTERLOCK_SETTLE_MARGIN_MS: String(SETTLE_MARGIN_MS),
    INTERLOCK_LOG_LEVEL: 'info',
    STRIPE_SECRET_KEY: KEY,
    STRIPE_API_BASE: sandbox.url,
  };
  delete env.INTERLOCK_UNSAFE_DURABILITY;
  delete env.INTERLOCK_CRASH_AT;
  if (crashAt !== null) env.INTERLOCK_CRASH_AT = crashAt;
  const child = spawn(process.execPath, [join(ROOT, 'bin', 'interlock.js'), 'serve', '--roles', 'worker'], { cwd: ROOT, env, stdio: ['ignore', 'ignore', 'pipe'] });
  const logs: string[] = [];
  const upAt = new Promise<number>((resolve, reject) => {
    if (child.stderr === null) throw new Error('the worker has no stderr');
    createInterface({ input: child.stderr }).on('line', (line) => {
      logs.push(line);
      if (line.includes('"Redis durability checked"')) resolve((JSON.parse(line) as { time: number }).time);
    });
    child.once('exit', () => reject(new Error(`the worker exited before it was up:\n${logs.slice(-5).join('\n')}`)));
  });
  upAt.catch(() => undefined);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal, at: Date.now() })));
  return {
    exited,
    upAt,
    logs,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

async function until<T>(read: () => Promise<T | null>, timeoutMs: number, what: string): Promise<T> {
  const giveUp = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (value !== null) return value;
    if (Date.now() > giveUp) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

type Sample = { cell: string; outcome: string; bootMs: number; afterRestartMs: number; crashToSettledMs: number };

async function crashOnce(cell: Cell, index: number): Promise<Sample> {
  const prefix = `bc${index}${cell.point === 'before_send' ? 'b' : 'a'}${cell.world === 'held' ? 'h' : 'c'}${Math.random().toString(36).slice(2, 7)}`;
  const workerId = `crash-${prefix}`;
  const config: Config = { ...loadConfig({}), redisUrl: redis.url, keyPrefix: prefix, stripeSecretKey: KEY, stripeApiBase: sandbox.url, unsafeDurability: false, logLevel: 'silent', signingKeyFile: keyFile };
  const stores = await openStores(config, { logger: pino({ level: 'silent' }), signingKey });
  const queue = createEffectsQueue(stores);
  const workers: WorkerProcess[] = [];
  try {
    const [paid] = await payments(stripe, 1);
    if (paid === undefined) throw new Error('no payment was made');
    const approval = `ap_${prefix}`;
    await stores.approvals.grant({ id: approval, approver: 'bench', capCents: AMOUNT, expiresAt: Date.now() + 3_600_000, maxUses: 1, scope: `payment:${paid.paymentIntent}` });
    const effect = { kind: 'refund' as const, paymentIntent: paid.paymentIntent, amount: AMOUNT, reason: 'requested_by_customer' as const };
    const requestId = `case-${prefix}`;
    const effectId = effectIdFor({ requestId, effect });
    const premises = await stripeSide(config).target.readFacts(effectId, effect, REFUND_FACTS, { timeoutMs: 10_000 });
    await queue.propose({ requestId, agent: 'bench', approval, premises, effect });

    const crasher = startWorker(prefix, workerId, cell.point);
    workers.push(crasher);
    const death = await crasher.exited;
    if (death.signal !== 'SIGKILL') throw new Error(`the crashing worker ended with ${String(death.code ?? death.signal)}, not SIGKILL:\n${crasher.logs.slice(-5).join('\n')}`);
    if (cell.world === 'changed') await control.openDispute({ charge: paid.charge, kind: 'chargeback' });

    const spawnedAt = Date.now();
    const restarted = startWorker(prefix, workerId, null);
    workers.push(restarted);
    const outcome = await until(() => settledOutcome(stores, effectId), SETTLE_MARGIN_MS + 60_000, `${nameOf(cell)} #${index} settled`);
    const settledAt = Date.now();
    const upAt = await restarted.upAt;
    const expected = EXPECTED[nameOf(cell)];
    // Refunds of any status: after a send, a chargeback fails the pending refund (Stripe does; the receipt says so).
    const refunds = (await stripe.refunds.list({ payment_intent: paid.paymentIntent, limit: 100 })).data;
    if (outcome !== expected?.outcome || refunds.length !== expected.refunds) throw new Error(`${nameOf(cell)} #${index}: ${outcome} with ${refunds.length} refund(s), expected ${expected?.outcome} with ${expected?.refunds}`);
    return { cell: nameOf(cell), outcome, bootMs: upAt - spawnedAt, afterRestartMs: settledAt - upAt, crashToSettledMs: settledAt - death.at };
  } finally {
    for (const worker of workers) await worker.stop();
    await queue.close();
    await stores.close();
    await deleteKeys(admin, [`${prefix}:*`, `{${prefix}-queues}:*`]);
  }
}

const plan = CELLS.flatMap((cell) => Array.from({ length: CRASHES }, (_, index) => ({ cell, index })));
// Interleaved (one of each cell in turn), so a noisy minute is spread over every cell.
plan.sort((a, b) => a.index - b.index);
const samples: Sample[] = [];
try {
  await inParallel(plan.length, PARALLEL, async (at) => {
    const item = plan[at];
    if (item === undefined) return;
    samples.push(await crashOnce(item.cell, item.index));
    progress(`crash → settled: ${samples.length}/${plan.length} crashes (${PARALLEL} at a time); last ${samples.at(-1)?.cell}: ${samples.at(-1)?.afterRestartMs} ms after restart`);
  });
  progress('');
} finally {
  await admin.quit();
  await sandbox.stop();
  await redis.stop();
  rmSync(dir, { recursive: true, force: true });
}

const rows = CELLS.map((cell) => {
  const of = samples.filter((sample) => sample.cell === nameOf(cell));
  const after = of.map((sample) => sample.afterRestartMs);
  return {
    cell: nameOf(cell),
    outcome: EXPECTED[nameOf(cell)]?.outcome ?? '',
    crashes: of.length,
    afterRestartMedianMs: median(after),
    afterRestartMaxMs: Math.max(...after),
    crashToSettledMedianMs: median(of.map((sample) => sample.crashToSettledMs)),
    bootMedianMs: median(of.map((sample) => sample.bootMs)),
  };
});
const table = markdownTable(
  ['crash point / facts during the outage', 'outcome (every crash)', 'crashes', 'restart → settled, median ms', 'max ms', 'crash → settled, median ms', 'worker boot (spawn → up), median ms'],
  rows.map((row) => [row.cell, `\`${row.outcome}\``, row.crashes, row.afterRestartMedianMs, row.afterRestartMaxMs, row.crashToSettledMedianMs, row.bootMedianMs]),
);
const markdown = `Real worker processes (\`interlock serve --roles worker\`, INTERLOCK_CRASH_AT) against the sandbox in its own process, private Redis with appendfsync always, settle margin ${SETTLE_MARGIN_MS} ms, ${PARALLEL} crashes at a time. "Restart" is the instant the restarted worker was up (stores open, durability checked); its boot before that is Node and tsx loading the program.\n\n${table}`;
console.log(`\n${markdown}`);
const heldMax = Math.max(...rows.filter((row) => row.cell.endsWith('/held')).map((row) => row.afterRestartMaxMs));
const heldMedian = Math.max(...rows.filter((row) => row.cell.endsWith('/held')).map((row) => row.afterRestartMedianMs));
const changedBefore = rows.find((row) => row.cell === 'before_send/changed');
const changedAfter = rows.find((row) => row.cell === 'after_send/changed');
const changedMax = Math.max(changedBefore?.afterRestartMaxMs ?? Infinity, changedAfter?.afterRestartMaxMs ?? Infinity);
finish('crashSettle', 'Crash → settled after a restart, real worker processes (issue 9 §8)', markdown, { crashes: CRASHES, parallel: PARALLEL, settleMarginMs: SETTLE_MARGIN_MS, rows, samples }, [
  { target: `facts held: settled ≤ ${HELD_TARGET_MS} ms after the restart (median of each cell)`, value: heldMedian, met: heldMedian <= HELD_TARGET_MS },
  { target: `facts held: settled ≤ ${HELD_TARGET_MS} ms after the restart (every crash)`, value: heldMax, met: heldMax <= HELD_TARGET_MS },
  { target: `facts changed: settled by the settle margin (${SETTLE_MARGIN_MS} ms) + ${HELD_TARGET_MS} ms after the restart (every crash)`, value: changedMax, met: changedMax <= SETTLE_MARGIN_MS + HELD_TARGET_MS },
  { target: 'facts changed after a send: found by lookup at once (≤ 1.5 s, median)', value: round(changedAfter?.afterRestartMedianMs ?? Infinity, 0), met: (changedAfter?.afterRestartMedianMs ?? Infinity) <= HELD_TARGET_MS },
]);
