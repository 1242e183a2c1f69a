// What every scenario cell needs: the processes it runs (the gate's worker through `bin/interlock.js`, the CLI
// that records a proposal, the baselines' worker scripts), the crash seen as a SIGKILL exit, the gate's journal
// read back through the public entry, `interlock reconcile` before a receipt is judged, and the receipt re-read,
// re-verified and tampered with.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { ControlClient } from '../sandbox/index.js';
import {
  publicKeyPem,
  publicKeySet,
  settledOutcome,
  verify,
  type Config,
  type Receipt,
  type Stores,
  type Verification,
} from '../src/interlock.js';
import type { StripeHttp } from './stripe-http.js';
import type { Watchdog } from './watchdog.js';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BIN = join(ROOT, 'bin', 'interlock.js');

export type Backend = 'sandbox' | 'test_mode';
export type Delays = 'stripe' | 'fast';

/** One scenario's world: its Stripe (a sandbox of its own, or test mode), its Redis prefix, its stores. */
export type World = {
  backend: Backend;
  delays: Delays;
  stripe: StripeHttp;
  /** The sandbox's control API; null in test mode (time passes for real there). */
  control: ControlClient | null;
  /** Environment of every child process: Stripe, Redis, key prefix, data directory (one signing key). */
  env: NodeJS.ProcessEnv;
  config: Config;
  stores: Stores;
  /** Verifies with the public half of the key the workers sign with. */
  verifyReceipt(receipt: unknown): Verification;
  poll: { fastMs: number; slowMs: number };
  /** The scenario's support API (`interlock serve --roles api`), which the gate's agents propose through. */
  api: { url: string; token: string };
  /** Runs gate cells one at a time: they share the scenario's effects queue, and a crash-armed worker takes any job. */
  exclusive<T>(work: () => Promise<T>): Promise<T>;
};

export type Exit = { code: number | null; signal: NodeJS.Signals | null };

export type Running = {
  child: ChildProcess;
  startedAt: number;
  exited: Promise<Exit>;
  stdout(): string;
  stderr(): string;
  /** The last stdout line parsed as JSON (a baseline's answer), or null. */
  answer(): Record<string, unknown> | null;
};

/**
 * What a run must not leave behind when it is interrupted (Ctrl-C, SIGTERM): its child processes and temporary
 * directories, ended and removed on the way out by removeLeftovers (a cell's own finally never runs then).
 * `stopping`: the run was interrupted; no process starts any more (a cell would otherwise restart its worker).
 * `watchdog`: the run's (watchdog.ts), told of every child and directory, for a run killed outright (SIGKILL).
 */
export const leftovers = { children: new Set<ChildProcess>(), dirs: new Set<string>(), stopping: false, watchdog: null as Watchdog | null };

/** A temporary directory the run removes when it ends, and its watchdog should the run be killed outright. */
export function keepDir(dir: string): void {
  leftovers.dirs.add(dir);
  leftovers.watchdog?.dir(dir);
}

/** SIGKILL to every child still running. */
export function stopChildren(): void {
  for (const child of leftovers.children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}

/** Synchronous, for a process 'exit' listener: every child stopped, every temporary directory removed. */
export function removeLeftovers(): void {
  stopChildren();
  for (const dir of leftovers.dirs) rmSync(dir, { recursive: true, force: true });
  leftovers.dirs.clear();
}

export function run(command: string, args: string[], env: NodeJS.ProcessEnv, cwd = ROOT): Running {
  if (leftovers.stopping) throw new CellError(`the run was interrupted: ${args[0] ?? command} is not started`);
  const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  leftovers.children.add(child);
  if (child.pid !== undefined) leftovers.watchdog?.process(child.pid);
  child.once('exit', () => leftovers.children.delete(child));
  let out = '';
  let err = '';
  child.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
  child.stderr?.on('data', (chunk: Buffer) => (err = `${err}${chunk.toString('utf8')}`.slice(-20_000)));
  const exited = new Promise<Exit>((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
  return {
    child,
    startedAt: Date.now(),
    exited,
    stdout: () => out,
    stderr: () => err,
    answer() {
      const last = out.trim().split('\n').at(-1);
      if (last === undefined || last === '') return null;
      try {
        return JSON.parse(last) as Record<string, unknown>;
      } catch {
        return null;
      }
    },
  };
}

/** A baseline worker script under scenarios/baselines/, run by Node with the project's TypeScript loader. */
export function runBaseline(world: World, script: string, args: string[]): Running {
  return run(process.execPath, ['--import', 'tsx', join(ROOT, 'scenarios', 'baselines', script), ...args], world.env);
}

export class CellError extends Error {}

/** Waits for a process to exit and insists it was killed by SIGKILL (the crash point was reached). */
export async function expectSigkill(running: Running, what: string, timeoutMs = 60_000): Promise<number> {
  const exit = await withTimeout(running.exited, timeoutMs, `${what} did not reach its crash point within ${timeoutMs / 1000} s`);
  if (exit.signal !== 'SIGKILL') throw new CellError(`${what} exited with ${exit.signal ?? `code ${String(exit.code)}`} instead of SIGKILL at its crash point: ${running.stderr().slice(-1500)}`);
  return Date.now();
}

export async function expectSuccess(running: Running, what: string, timeoutMs = 120_000): Promise<Record<string, unknown>> {
  const exit = await withTimeout(running.exited, timeoutMs, `${what} did not finish within ${timeoutMs / 1000} s`);
  if (exit.code !== 0) throw new CellError(`${what} exited with ${exit.signal ?? `code ${String(exit.code)}`}: ${running.stderr().slice(-1500)}`);
  return running.answer() ?? {};
}

export async function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<never>((_resolve, reject) => (timer = setTimeout(() => reject(new CellError(message)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

export type Worker = Running & { readyAt: number; stop(): Promise<void> };

/**
 * `interlock serve --roles worker`, with INTERLOCK_CRASH_AT when given. Every worker of a cell has the same
 * INTERLOCK_WORKER_ID, as a restarted process of a deployment would: the new boot nonce proves the old one dead.
 */
export async function startWorker(world: World, options: { workerId: string; crashAt?: 'before_send' | 'after_send'; concurrency?: number }): Promise<Worker> {
  const env: NodeJS.ProcessEnv = { INTERLOCK_WORKER_ID: options.workerId, ...(options.crashAt === undefined ? {} : { INTERLOCK_CRASH_AT: options.crashAt }) };
  return startServe(world, ['--roles', 'worker', '--concurrency', String(options.concurrency ?? 4)], env);
}

/** `interlock serve ARGS`, ready once it prints its start-up lines; stop() is SIGTERM (SIGKILL after 30 s). */
export async function startServe(world: Pick<World, 'env'>, args: string[], env: NodeJS.ProcessEnv = {}): Promise<Worker> {
  const running = run(process.execPath, [BIN, 'serve', ...args], { ...world.env, ...env });
  const ready = (async () => {
    while (!running.stdout().includes('Interlock for Stripe is running')) {
      const done = await Promise.race([running.exited, sleep(20).then(() => null)]);
      if (done !== null) throw new CellError(`interlock serve ${args.join(' ')} exited before it was ready (${done.signal ?? `code ${String(done.code)}`}): ${running.stderr().slice(-1500)}`);
    }
    return Date.now();
  })();
  const readyAt = await withTimeout(ready, 180_000, `interlock serve ${args.join(' ')} did not start within 180 s`);
  return {
    ...running,
    readyAt,
    async stop() {
      if (running.child.exitCode !== null || running.child.signalCode !== null) return;
      running.child.kill('SIGTERM');
      await withTimeout(running.exited, 30_000, `interlock serve ${args.join(' ')} did not stop within 30 s after SIGTERM`).catch(() => running.child.kill('SIGKILL'));
    },
  };
}

/**
 * Proposes through the support API as an agent would (`POST /v1/refunds` or `/v1/credits`): the API reads the
 * facts now, records PROPOSED with the decision and queues the effect. Answers the effect id.
 */
export async function propose(world: World, kind: 'refunds' | 'credits', body: Record<string, unknown>): Promise<string> {
  const response = await fetch(`${world.api.url}/v1/${kind}`, { method: 'POST', headers: { authorization: `Bearer ${world.api.token}`, 'content-type': 'application/json' }, body: JSON.stringify(body), signal: AbortSignal.timeout(120_000) });
  const answer = (await response.json()) as { effect_id?: string; error?: { message?: string } };
  if ((response.status !== 202 && response.status !== 200) || typeof answer.effect_id !== 'string') throw new CellError(`POST /v1/${kind} answered ${response.status}: ${answer.error?.message ?? JSON.stringify(answer)}`);
  return answer.effect_id;
}

/** Polls the journal (through the public entry) until the effect's latest proposal has an outcome. */
export async function waitSettled(world: World, effectId: string, timeoutMs: number): Promise<{ outcome: string; at: number }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const outcome = await settledOutcome(world.stores, effectId);
    if (outcome !== null) return { outcome, at: Date.now() };
    if (Date.now() > deadline) throw new CellError(`effect ${effectId} did not settle within ${timeoutMs / 1000} s`);
    await sleep(25);
  }
}

export type ReceiptJudgement = {
  receipt: Receipt;
  verification: Verification;
  /** A copy with its last entry altered no longer verifies. */
  tamperEvident: boolean;
  journal: string[];
  /** The `interlock reconcile` run before judging (runReconcile): its command line and the report it printed. */
  reconcile: Reconciled;
};

export type Reconciled = { command: string; report: Record<string, unknown> };

/** How far before the effect's proposal `interlock reconcile` reaches back (s): a clock's step, a slow Redis answer. */
const RECONCILE_MARGIN_S = 5;

/**
 * `interlock reconcile` as an operator runs it, with the scenario's settings (its Redis and key prefix, its Stripe):
 * every effect of the scenario that settled after a send since `since` (Redis ms) re-read from Stripe, and what
 * changed appended to its journal as post-send facts. A deployment's facts worker (`serve --roles facts`) runs the same
 * pass on its schedule, and re-reads on Stripe's webhooks; a scenario starts no facts worker, so the harness runs the
 * command once before it judges a receipt. The baselines get no such step: the seeds' systems had none.
 * Answers the command line and the report it printed; a command that fails (a re-read that failed, Stripe not answering) fails the cell.
 */
export async function runReconcile(world: World, since: number): Promise<Reconciled> {
  const now = await world.stores.journal.serverTime();
  const args = ['reconcile', '--since', `${Math.max(1, Math.ceil((now - since) / 1000) + RECONCILE_MARGIN_S)}s`];
  const command = `interlock ${args.join(' ')}`;
  const running = run(process.execPath, [BIN, ...args], world.env);
  const exit = await withTimeout(running.exited, 120_000, `\`${command}\` did not finish within 120 s`);
  if (exit.code !== 0) throw new CellError(`\`${command}\` exited with ${exit.signal ?? `code ${String(exit.code)}`}: ${running.stderr().slice(-1500).trim()}`);
  return { command, report: JSON.parse(running.stdout()) as Record<string, unknown> };
}

/**
 * The gate's record of an effect when the cell is judged: `interlock reconcile` run first over the effect's lifetime
 * (runReconcile: a deployment's facts worker does it on its schedule), then the signed receipt, verified with the
 * workers' public key, and a tampered copy that must fail.
 */
export async function judgeReceipt(world: World, effectId: string): Promise<ReceiptJudgement> {
  const proposed = (await world.stores.journal.receipt(effectId))?.entries[0]?.at;
  if (proposed === undefined) throw new CellError(`no receipt for effect ${effectId}`);
  const reconcile = await runReconcile(world, proposed);
  const receipt = await world.stores.journal.receipt(effectId);
  if (receipt === null) throw new CellError(`no receipt for effect ${effectId}`);
  const verification = world.verifyReceipt(receipt);
  return { receipt, verification, tamperEvident: tamperFails(world, receipt), journal: receipt.entries.map((entry) => entry.kind), reconcile };
}

export type ReceiptAgainstStripe = {
  /** What the receipt says about the money now: its post-send facts (OBSERVED) when it has them, else its outcome. */
  money: Verification['answer'];
  /** That answer (returned or pending) is whether Stripe holds the effect's money returned. */
  answerMatches: boolean;
  /**
   * The receipt verifies, records the checks that ran (at dispatch, or re-checked at recovery), and its outcome
   * agrees with Stripe: its evidence is one of the objects Stripe holds for the effect, or Stripe holds none and the
   * receipt says it did not happen.
   */
  proof: boolean;
};

/**
 * The gate's receipt judged against Stripe (scenarios/README.md "Judging"). `stripeIds`: the objects Stripe holds
 * for this effect, whatever their status (a refund that failed later is still the one the gate sent);
 * `moneyReturned`: whether Stripe holds the money returned (a refund succeeded or pending, a credit that exists).
 */
export function receiptAgainstStripe(judged: Pick<ReceiptJudgement, 'receipt' | 'verification'>, stripeIds: readonly string[], moneyReturned: boolean): ReceiptAgainstStripe {
  const v = judged.verification;
  const money = v.finalMoney.status !== 'unknown' ? v.finalMoney.status : v.answer;
  const answered = money === 'returned' || money === 'pending';
  const evidenceFound = v.evidence !== null && stripeIds.includes(v.evidence);
  const checksRecorded = judged.receipt.entries.some((entry) => (entry as Record<string, unknown>).checks !== undefined || ((entry as Record<string, unknown>).rechecked ?? null) !== null);
  const outcomeMatches = v.valid === true && (evidenceFound || (stripeIds.length === 0 && v.happened === false));
  return { money, answerMatches: answered === moneyReturned, proof: checksRecorded && outcomeMatches };
}

/** The seeds' tamper test: alter the last settling entry (its reason, or else its result) and verify the copy. */
export function tamperFails(world: World, receipt: Receipt): boolean {
  const copy = JSON.parse(JSON.stringify(receipt)) as { entries: Record<string, unknown>[] };
  const settling = [...copy.entries].reverse().find((entry) => ['COMMITTED', 'REFUSED', 'AMBIGUOUS'].includes(String(entry.kind))) ?? copy.entries.at(-1);
  if (settling === undefined) return false;
  if (settling.kind === 'REFUSED') settling.reason = 'forged';
  else settling.found = 'forged';
  return world.verifyReceipt(copy).valid === false;
}

export function verifierFor(stores: Stores): (receipt: unknown) => Verification {
  const keys = publicKeySet([publicKeyPem(stores.signingKey)]);
  return (receipt) => verify(receipt, { publicKeys: keys });
}

export function cellDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), `interlock-${prefix}-`));
  keepDir(dir);
  return dir;
}

export function hex(bytes: number): string {
  let text = '';
  for (let i = 0; i < bytes * 2; i += 1) text += Math.floor(Math.random() * 16).toString(16);
  return text;
}

export async function pollUntil<T>(read: () => Promise<T | null>, intervalMs: number, timeoutMs: number, what: string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (value !== null) return value;
    if (Date.now() > deadline) throw new CellError(`${what} did not happen within ${timeoutMs / 1000} s`);
    await sleep(intervalMs);
  }
}

export function seconds(ms: number): number {
  return Math.round(ms / 100) / 10;
}
