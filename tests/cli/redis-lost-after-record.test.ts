// Rule: a command that has recorded and queued a proposal (`refund --wait`) or stored and queued a case (`case --wait`)
// never tells the operator "nothing was changed" and never hangs: when Redis goes away (dies, or stops answering)
// while it waits for the outcome, the refund is recorded and queued and will be sent once Redis is back, so the
// command says it is recorded, that its outcome is not known yet and how to check it, and exits 4 (not settled),
// within its --wait plus INTERLOCK_REDIS_COMMAND_TIMEOUT_MS or so. An operator who read "nothing was changed" would
// propose the refund again under a new request id, and two refunds would go out.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unknownSettings } from '../../src/config.js';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis.js';
import { pay, startStripeWorld, type StripeWorld } from '../stripe/stripe-support.js';
import { REPO, runCli, tempDir } from './run-cli.js';

let world: StripeWorld;
beforeAll(async () => {
  world = await startStripeWorld();
}, 60_000);
afterAll(async () => {
  await world.close();
});

/** What the command waits for, in seconds, and the Redis command timeout it runs with, in ms. */
const WAIT_S = 5;
const COMMAND_TIMEOUT_MS = 1_000;

type Run = { code: number | null; stdout: string; stderr: string; ended: boolean };
type Running = { kill(): void; done: Promise<Run> };

function start(args: string[], env: Record<string, string>): Running {
  const runnerOnly = Object.fromEntries(unknownSettings(process.env).map(({ variable }) => [variable, undefined]));
  const child = spawn(process.execPath, [join(REPO, 'bin', 'interlock.js'), ...args], {
    cwd: REPO,
    env: { ...process.env, ...runnerOnly, INTERLOCK_LOG_LEVEL: 'silent', INTERLOCK_SIGNING_KEY_FILE: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const done = new Promise<Run>((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr, ended: true })));
  return { kill: () => child.kill('SIGKILL'), done };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

type Waiting = { redis: PrivateRedis; remove(): void; running: Running; subject: string };

/**
 * A private Redis, a payment, an approval for it, and `refund --wait` or `case --wait` running until its job is
 * queued (and a little longer, so the command is in its wait).
 */
async function waiting(command: 'refund' | 'case', label: string): Promise<Waiting> {
  const redis = await startPrivateRedis(['--appendonly', 'yes', '--appendfsync', 'always', '--save', '']);
  const temp = tempDir(`lost-${label}`);
  const prefix = `lostcli${randomBytes(4).toString('hex')}`;
  const env = { REDIS_URL: redis.url, INTERLOCK_KEY_PREFIX: prefix, INTERLOCK_DATA_DIR: temp.dir, STRIPE_SECRET_KEY: 'sk_test_sandbox', STRIPE_API_BASE: world.sandbox.url, INTERLOCK_REDIS_COMMAND_TIMEOUT_MS: String(COMMAND_TIMEOUT_MS) };
  const { paymentIntent } = await pay(world.stripe, 'pm_card_visa', 5_000);
  const grant = await runCli(['approvals', 'grant', '--id', `ap_${label}`, '--approver', 'dana', '--cap-cents', '2000', '--scope', `payment:${paymentIntent}`], env);
  expect(grant.code, grant.stderr).toBe(0);
  const subject = `case-${label}`;
  const args =
    command === 'refund'
      ? ['refund', '--request', subject, '--payment-intent', paymentIntent, '--amount', '2000', '--approval', `ap_${label}`, '--wait', String(WAIT_S)]
      : ['case', '--case', subject, '--payment-intent', paymentIntent, '--story', 'The jar arrived cracked.', '--approval', `ap_${label}`, '--wait', String(WAIT_S)];
  const running = start(args, env);
  const probe = new Redis(redis.url);
  try {
    const queue = `{${prefix}-queues}:${command === 'refund' ? 'effects' : 'decisions'}:wait`;
    const giveUp = Date.now() + 30_000;
    while ((await probe.llen(queue)) < 1) {
      if (Date.now() > giveUp) throw new Error(`the ${command} was never queued`);
      await sleep(50);
    }
  } finally {
    probe.disconnect();
  }
  await sleep(500);
  return { redis, remove: temp.remove, running, subject };
}

/** The command's end, or `ended: false` when it still runs `ms` after it was asked. */
async function endWithin(running: Running, ms: number): Promise<Run> {
  return Promise.race([running.done, sleep(ms).then((): Run => ({ code: null, stdout: '', stderr: '', ended: false }))]);
}

/**
 * The --wait plus the command timeout, the read back and closes after it (each bounded by that timeout), and a margin.
 * A command whose Redis died also outlives BullMQ's watchdog on its event stream's blocked read (the 10 s block plus
 * 1 s, from the read's start), which no close clears: it ends about 11 s after Redis died whatever its --wait.
 */
const BOUND_MS = WAIT_S * 1_000 + COMMAND_TIMEOUT_MS + 10_000;

function expectRecordedNotKnown(run: Run, command: 'refund' | 'case', subject: string): void {
  expect(run.ended, `${command} --wait ${WAIT_S} was still running ${BOUND_MS} ms after Redis went away`).toBe(true);
  expect(run.stderr).not.toContain('nothing was changed');
  expect(run.code, run.stderr).toBe(4);
  if (command === 'refund') {
    expect(run.stderr).toMatch(/^Effect \S+ is recorded and queued; its outcome is not known yet \(/);
    expect(run.stderr).toContain(`check \`interlock effect show --request ${subject}\``);
    expect(run.stderr).toContain('sending the same request again is safe');
  } else {
    expect(run.stderr).toMatch(new RegExp(`^Case ${subject} is stored and queued; its outcome is not known yet \\(`));
    expect(run.stderr).toContain(`check \`interlock case show ${subject}\``);
    expect(run.stderr).toContain('submitting the same case again is safe');
  }
}

describe.concurrent('Redis lost while a command waits for what it recorded and queued', () => {
  for (const command of ['refund', 'case'] as const) {
    it(`${command} --wait, Redis killed: says it is recorded and its outcome not known (exit 4), never "nothing was changed"`, async () => {
      const { redis, remove, running, subject } = await waiting(command, `${command}-killed`);
      try {
        await redis.kill('SIGKILL');
        expectRecordedNotKnown(await endWithin(running, BOUND_MS), command, subject);
      } finally {
        running.kill();
        await redis.stop();
        remove();
      }
    }, 60_000);

    it(`${command} --wait, Redis frozen (stops answering): ends within --wait plus the command timeout, exit 4`, async () => {
      const { redis, remove, running, subject } = await waiting(command, `${command}-frozen`);
      try {
        redis.process.kill('SIGSTOP');
        expectRecordedNotKnown(await endWithin(running, BOUND_MS), command, subject);
      } finally {
        running.kill();
        redis.process.kill('SIGCONT');
        await redis.stop();
        remove();
      }
    }, 60_000);
  }
});
