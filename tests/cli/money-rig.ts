// A rig for the money commands (refund, credit) run as an operator runs them: the sandbox and `serve --roles
// worker,api` on the shared Redis under a prefix of its own (serveGivenSandbox), and the CLI spawned with the stdio and
// signals a test chooses.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { REPO, runCli, tempDir } from './run-cli.js';
import { serveGivenSandbox, type GivenSandboxServe } from './serve-given-sandbox.js';
import { Redis } from 'ioredis';
import { REDIS_URL } from '../support/harness.js';

export type MoneyRig = { running: GivenSandboxServe; env: Record<string, string>; stop(): Promise<void> };

export async function startMoneyRig(label: string): Promise<MoneyRig> {
  const temp = tempDir(`money-${label}`);
  const running = await serveGivenSandbox(join(temp.dir, 'data'));
  const env = { REDIS_URL, INTERLOCK_KEY_PREFIX: running.facts.key_prefix, INTERLOCK_DATA_DIR: running.dataDir, STRIPE_API_BASE: running.sandbox.url, STRIPE_SECRET_KEY: 'sk_test_sandbox' };
  return {
    running,
    env,
    stop: async () => {
      await running.stop();
      temp.remove();
    },
  };
}

/**
 * The CLI on the shared Redis under a prefix and data directory of its own, no service running: `env` for runCli and
 * spawnCli (`more` added to it), `remove()` for afterAll (the data directory and every key under the prefix).
 */
export function sharedRedisCli(label: string, more: Record<string, string> = {}): { env: Record<string, string>; remove(): Promise<void> } {
  const temp = tempDir(label);
  const prefix = `${label}-${randomBytes(4).toString('hex')}`;
  return {
    env: { REDIS_URL, INTERLOCK_KEY_PREFIX: prefix, INTERLOCK_DATA_DIR: temp.dir, ...more },
    remove: async () => {
      temp.remove();
      const redis = new Redis(REDIS_URL);
      const keys = await redis.keys(`*${prefix}*`);
      if (keys.length > 0) await redis.del(...keys);
      await redis.quit();
    },
  };
}

const AUTH = { authorization: 'Basic ' + Buffer.from('sk_test_sandbox:').toString('base64') };

/** A confirmed $50.00 test payment at the sandbox, and an approval of $20.00 on it. */
export async function paymentWithApproval(rig: MoneyRig): Promise<{ pi: string; approval: string }> {
  const response = await fetch(`${rig.running.sandbox.url}/v1/payment_intents`, { method: 'POST', headers: { ...AUTH, 'content-type': 'application/x-www-form-urlencoded' }, body: 'amount=5000&currency=usd&payment_method=pm_card_visa&confirm=true' });
  const pi = ((await response.json()) as { id: string }).id;
  const approval = `ap_${pi}`;
  const granted = await runCli(['approvals', 'grant', '--id', approval, '--approver', 'dana', '--cap-cents', '2000', '--scope', `payment:${pi}`], rig.env);
  if (granted.code !== 0) throw new Error(`grant failed: ${granted.stderr}`);
  return { pi, approval };
}

/** The amounts of the refunds at the sandbox for a payment. */
export async function refundsAt(rig: MoneyRig, pi: string): Promise<number[]> {
  const response = await fetch(`${rig.running.sandbox.url}/v1/refunds?payment_intent=${pi}`, { headers: AUTH });
  return ((await response.json()) as { data: { amount: number }[] }).data.map((refund) => refund.amount);
}

/** Waits, a quarter second at a time, until `check` holds; throws with `what` after `withinMs`. */
export async function until(what: string, check: () => Promise<boolean>, withinMs = 30_000): Promise<void> {
  const giveUp = Date.now() + withinMs;
  while (!(await check())) {
    if (Date.now() > giveUp) throw new Error(`gave up waiting: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

export type Spawned = { code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string };

/** Runs the CLI with stdout given (a file descriptor, or piped), `during` called once it has started. */
export function spawnCli(args: string[], env: Record<string, string>, options: { stdout?: number | 'pipe'; during?: (child: ChildProcess) => void } = {}): Promise<Spawned> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(REPO, 'bin', 'interlock.js'), ...args], { cwd: REPO, env: { ...process.env, INTERLOCK_LOG_LEVEL: 'silent', INTERLOCK_SIGNING_KEY_FILE: '', ...env }, stdio: ['ignore', options.stdout ?? 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    options.during?.(child);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}
