// Shared pieces of the benchmarks: a private Redis, measuring a run (wall time, this process's CPU, Redis's CPU and
// commands), medians, and the results file every benchmark adds its section to.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import Stripe from 'stripe';

/** bench/results, or BENCH_RESULTS_DIR (the smoke test writes into a temporary directory). */
export const RESULTS_DIR = process.env.BENCH_RESULTS_DIR ?? join(dirname(fileURLToPath(import.meta.url)), 'results');
/** A quick run (--quick) writes quick.json, so its brief figures never replace the last full run's. */
export const RESULTS_FILE = join(RESULTS_DIR, process.env.BENCH_QUICK === '1' || process.argv.includes('--quick') ? 'quick.json' : 'latest.json');

/** Redis's own CPU time so far, in seconds. */
export async function redisCpuSeconds(redis: Redis): Promise<number> {
  const cpu = String(await redis.info('cpu'));
  return Number(/used_cpu_user:([0-9.]+)/.exec(cpu)?.[1] ?? 0) + Number(/used_cpu_sys:([0-9.]+)/.exec(cpu)?.[1] ?? 0);
}

export { countCommands } from '../tests/support/count-commands.js';

/** Runs `work` for every index below `count`, at most `concurrency` at once, each taking the next index. */
export async function inParallel(count: number, concurrency: number, work: (index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.max(0, Math.min(concurrency, count)) }, async () => {
      for (let index = next++; index < count; index = next++) await work(index);
    }),
  );
}

export type Measured = { perSecond: number; commandsPerEffect: number; nodeCpuUsPerEffect: number; redisCpuUsPerEffect: number; mainThreadBusy: number };

/**
 * Runs `work` for `count` items with `concurrency` in flight; measures it from outside the work. `observer` is a
 * connection of its own, for Redis's CPU; `commands` counts what the work's client sent.
 */
export async function measure(observer: Redis, commands: { read(): number }, count: number, concurrency: number, work: (index: number) => Promise<void>): Promise<Measured> {
  const redisBefore = await redisCpuSeconds(observer);
  const sentBefore = commands.read();
  const cpu = process.cpuUsage();
  const elu = performance.eventLoopUtilization();
  const started = performance.now();
  await inParallel(count, concurrency, work);
  const elapsed = performance.now() - started;
  const busy = performance.eventLoopUtilization(elu).utilization;
  const used = process.cpuUsage(cpu);
  const sent = commands.read() - sentBefore;
  const redisAfter = await redisCpuSeconds(observer);
  return {
    perSecond: Math.round((count * 1000) / elapsed),
    commandsPerEffect: round(sent / count, 2),
    nodeCpuUsPerEffect: Math.round((used.user + used.system) / count),
    redisCpuUsPerEffect: Math.round(((redisAfter - redisBefore) * 1e6) / count),
    mainThreadBusy: round(busy, 2),
  };
}

/**
 * Collects the garbage left so far, when the benchmark runs with a collector it can call (bench/run.ts starts each
 * with --expose-gc): a timed section then pays for its own garbage, not for what was built before it.
 */
export function settleHeap(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[middle] ?? 0) : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
}

export function round(value: number, digits: number): number {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}

export function machine(): { cores: number; cpu: string; memoryGiB: number; node: string } {
  return { cores: cpus().length, cpu: cpus()[0]?.model ?? 'unknown', memoryGiB: Math.round(totalmem() / 2 ** 30), node: process.version };
}

/** Adds (or replaces) one benchmark's section of bench/results/latest.json. */
export function recordResults(section: string, data: unknown): void {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const current = existsSync(RESULTS_FILE) ? (JSON.parse(readFileSync(RESULTS_FILE, 'utf8')) as Record<string, unknown>) : {};
  current[section] = { ...(data as object), recordedAt: new Date().toISOString(), machine: machine() };
  writeFileSync(RESULTS_FILE, `${JSON.stringify(current, null, 2)}\n`);
}

/** A console progress line that rewrites itself when standard error is a terminal. */
export function progress(text: string): void {
  if (process.stderr.isTTY) process.stderr.write(`\r\x1b[K${text}`);
  else process.stderr.write(`${text}\n`);
}

/** `--quick` (or BENCH_QUICK=1): every benchmark runs briefly, to check it still works; figures are not kept. */
export const QUICK = process.env.BENCH_QUICK === '1' || process.argv.includes('--quick');

/** The p-th percentile (0-100) by nearest rank. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN;
}

export type Target = { target: string; value: number | string | null; met: boolean };

/**
 * a / b cut (not rounded) to three decimals, for a ratio a target is judged on: rounded, 0.896 would read as 0.9 and
 * pass a 0.9 target it missed. For a threshold t of at most three decimals, cutRatio(a, b) >= t exactly when
 * a / b >= t.
 */
export function cutRatio(a: number, b: number): number {
  return Math.floor((a / b) * 1000) / 1000;
}

/** Exit code of a benchmark that ran to the end but missed a target (run.ts tells it apart from a failure). */
export const TARGETS_MISSED = 10;

/**
 * Ends a benchmark: prints its targets, adds its section (with the Markdown tables for latest.md) to the results
 * file, and exits 0 when every target was met, TARGETS_MISSED when one was not. A quick run checks that the
 * benchmark works, not its figures: it exits 0 whatever they are.
 */
export function finish(section: string, title: string, markdown: string, data: Record<string, unknown>, targets: readonly Target[]): never {
  const targetTable = targets.length === 0 ? '' : ['| target | measured | met |', '|---|---|---|', ...targets.map((row) => `| ${row.target} | ${row.value === null ? 'n/a' : String(row.value)} | ${row.met ? 'yes' : '**no**'} |`)].join('\n');
  console.log(`\n${targetTable}`);
  recordResults(section, { ...data, title, markdown, targets, quick: QUICK });
  const passed = targets.every((row) => row.met);
  console.log(passed ? 'PASS' : 'FAIL');
  process.exit(passed || QUICK ? 0 : TARGETS_MISSED);
}

/** A Markdown table from a header and rows. */
type Cell = string | number | null;

export function markdownTable(header: readonly string[], rows: readonly (readonly Cell[])[]): string {
  const cell = (value: Cell) => (value === null ? 'n/a' : typeof value === 'number' ? value.toLocaleString('en-US') : value);
  return [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`, ...rows.map((row) => `| ${row.map(cell).join(' | ')} |`)].join('\n');
}

export const ROOT = fileURLToPath(new URL('../', import.meta.url));

export type SandboxProcess = { url: string; webhookSecret: string | null; child: ChildProcess; stop(): Promise<void> };

/** The Stripe sandbox as its own process (as in use), with fast delays; `forwardTo` delivers its events there. */
export async function startSandboxProcess(options: { forwardTo?: string; webhookSecret?: string } = {}): Promise<SandboxProcess> {
  const args = ['--import', 'tsx', 'sandbox/server-main.ts', '--port', '0', '--delays', 'fast'];
  if (options.forwardTo !== undefined) args.push('--forward-to', options.forwardTo);
  if (options.webhookSecret !== undefined) args.push('--webhook-secret', options.webhookSecret);
  const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, INTERLOCK_LOG_LEVEL: 'silent' } });
  const announced = await new Promise<string>((resolve, reject) => {
    if (child.stdout === null) throw new Error('the sandbox has no stdout');
    createInterface({ input: child.stdout }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`the sandbox exited with ${String(code)} before it listened`)));
  });
  const { url, webhookSecret } = JSON.parse(announced) as { url: string; webhookSecret: string | null };
  return {
    url,
    webhookSecret,
    child,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/** The SDK pointed at a sandbox, for setting up the world (payments, disputes). */
export function sandboxStripe(url: string, key = 'sk_test_bench'): Stripe {
  const { hostname, port } = new URL(url);
  return new Stripe(key, { host: hostname, port: Number(port), protocol: 'http', maxNetworkRetries: 0 });
}

/** Confirmed test payments of `amount` cents, `count` of them, made `concurrency` at a time. */
export async function payments(stripe: Stripe, count: number, amount = 10_000, concurrency = 16): Promise<{ paymentIntent: string; charge: string }[]> {
  const made: { paymentIntent: string; charge: string }[] = new Array(count);
  await inParallel(count, concurrency, async (index) => {
    const intent = await stripe.paymentIntents.create({ amount, currency: 'usd', payment_method: 'pm_card_visa', confirm: true });
    if (typeof intent.latest_charge !== 'string') throw new Error('a confirmed payment has no charge');
    made[index] = { paymentIntent: intent.id, charge: intent.latest_charge };
  });
  return made;
}

/** Deletes every key under the given patterns (a bench's own prefixes only). */
export async function deleteKeys(redis: Redis, patterns: readonly string[]): Promise<void> {
  for (const pattern of patterns) {
    const stale = await redis.keys(pattern);
    for (let i = 0; i < stale.length; i += 1_000) await redis.del(...stale.slice(i, i + 1_000));
  }
}
