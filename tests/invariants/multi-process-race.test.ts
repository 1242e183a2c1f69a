// A real race: eight or more OS processes, each a gate on one Redis prefix, submit and recover the same 200 effects
// against one target that counts applications across processes, while the test SIGKILLs some of them mid-send and
// starts replacements. Every effect must land exactly once and end committed (I1, I2, P; DESIGN §7).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import type { Tier } from '../../src/core/decisions.js';
import { outcomeOf, verify } from '../../src/core/verify.js';
import { approvalTerms, REDIS_URL, sleep, startNode, testConfig, testKey } from '../support/harness.js';
import { createRedisTarget } from '../support/redis-target.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const WORKER = join(ROOT, 'tests', 'support', 'race-worker.ts');
const WORKERS = 8;
const EFFECTS = 200;
const PAYMENTS = 10;
const KILLS = 6;
/** Short timings so a killed worker's claim is taken over in well under a second; every process uses the same. */
// The settle margin is generous because eight processes on two cores can stall for hundreds of ms between a
// send's last abort check and its write, and the margin is what absorbs such late bytes (DESIGN §7).
const RACE_TIMING = { claimTtlMs: 2_000, sendTimeoutMs: 500, settleMarginMs: 1_500, dedupMarginMs: 10_000, heartbeatMs: 100, heartbeatTtlMs: 1_000 };
const COMMITTED_FAMILY = new Set(['COMMITTED', 'COMMITTED_ON_QUERY', 'COMMITTED_BY_RETRY', 'REAPPLIED_AFTER_QUERY']);

type Worker = { child: ChildProcess; pid: number; ready: boolean; exited: Promise<number | null>; output: string[] };

/** Set while the test wants to kill the next process that reports a send starting. */
let killNextSender: ((worker: Worker) => void) | null = null;

const dirs: string[] = [];
const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups) await cleanup().catch(() => undefined);
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function spawnWorker(env: Record<string, string>): Worker {
  const child = spawn(process.execPath, ['--import', 'tsx', WORKER], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const worker: Worker = {
    child,
    pid: child.pid ?? -1,
    ready: false,
    output: [],
    exited: new Promise((resolve) => child.once('exit', (code) => resolve(code))),
  };
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    for (const line of chunk.split('\n').filter(Boolean)) {
      if (line === 'ready') worker.ready = true;
      else if (line === 'sending') killNextSender?.(worker);
      else worker.output.push(line);
    }
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => worker.output.push(chunk.trim()));
  return worker;
}

async function race(tier: Tier) {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-race-'));
  dirs.push(dir);
  const config = testConfig(RACE_TIMING);
  const key = testKey();
  const redis = new Redis(REDIS_URL);
  const target = createRedisTarget({ redis, prefix: config.keyPrefix, tier, sendTimeoutMs: RACE_TIMING.sendTimeoutMs });
  const admin = await startNode({ config, target, key: key.key, workerId: 'race-admin' });
  cleanups.push(async () => {
    await admin.close();
    const stale = await redis.keys(`${config.keyPrefix}:*`);
    for (let i = 0; i < stale.length; i += 500) await redis.del(...stale.slice(i, i + 500));
    await redis.quit();
  });

  const approvals: string[] = [];
  for (let p = 0; p < PAYMENTS; p += 1) {
    const terms = approvalTerms({ scope: `payment:pi_race_${p}`, capCents: 1_000_000, maxUses: 1_000 });
    await admin.approvals.grant(terms);
    approvals.push(terms.id);
    await target.setFacts(`payment:pi_race_${p}`, { chargebacks: [], refunded_by_others: 0 });
  }
  const proposals = Array.from({ length: EFFECTS }, (_, i) => ({
    requestId: `race-case-${i}`,
    agent: 'support-bot',
    approval: approvals[i % PAYMENTS],
    premises: { chargebacks: [], refunded_by_others: 0 },
    effect: { kind: 'refund', paymentIntent: `pi_race_${i % PAYMENTS}`, amount: 100 + i, reason: 'requested_by_customer' },
  }));
  const effectIds = proposals.map((proposal) => admin.gate.effectIdOf(proposal));
  const keyFile = join(dir, 'signing-key.pem');
  const proposalsFile = join(dir, 'proposals.json');
  writeFileSync(keyFile, key.privatePem, { mode: 0o600 });
  writeFileSync(proposalsFile, JSON.stringify(proposals));
  const env = {
    REDIS_URL,
    RACE_PREFIX: config.keyPrefix,
    RACE_TIER: String(tier),
    RACE_KEY_FILE: keyFile,
    RACE_PROPOSALS_FILE: proposalsFile,
    RACE_DEADLINE: String(Date.now() + 120_000),
    RACE_TIMING: JSON.stringify(RACE_TIMING),
    INTERLOCK_LOG_LEVEL: 'silent',
  };

  const workers = Array.from({ length: WORKERS }, () => spawnWorker(env));
  const everyone = [...workers];
  cleanups.push(async () => {
    for (const worker of everyone) if (worker.child.exitCode === null && worker.child.signalCode === null) worker.child.kill('SIGKILL');
  });
  const started = Date.now();
  while (workers.some((worker) => !worker.ready && worker.child.exitCode === null) && Date.now() - started < 45_000) await sleep(20);
  await redis.set(`${config.keyPrefix}:race:go`, '1');
  const raceStarted = Date.now();

  // Each kill hits a process the moment it reports a send starting (after its DISPATCHED, before the settle), or
  // any live process when nobody sends for a while; a replacement starts at once.
  let killed = 0;
  let killedMidSend = 0;
  const alive = (worker: Worker) => worker.ready && worker.child.exitCode === null && worker.child.signalCode === null;
  const replace = (victim: Worker) => {
    victim.child.kill('SIGKILL');
    killed += 1;
    workers.splice(workers.indexOf(victim), 1);
    const replacement = spawnWorker(env);
    workers.push(replacement);
    everyone.push(replacement);
  };
  for (let k = 0; k < KILLS; k += 1) {
    await sleep(40 + Math.floor(Math.random() * 120));
    const hit = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => {
        killNextSender = null;
        resolve(false);
      }, 500);
      killNextSender = (worker) => {
        if (!workers.includes(worker) || !alive(worker)) return;
        killNextSender = null;
        clearTimeout(timer);
        replace(worker);
        resolve(true);
      };
    });
    if (hit) {
      killedMidSend += 1;
      continue;
    }
    for (const waitedAt = Date.now(); !workers.some(alive) && Date.now() - waitedAt < 20_000; ) await sleep(20);
    const candidates = workers.filter(alive);
    const victim = candidates[Math.floor(Math.random() * candidates.length)];
    if (victim) replace(victim);
  }
  const killsDoneMs = Date.now() - raceStarted;

  // The race is over once the journal holds every effect settled (or the time is up); the processes still running
  // are then stopped, and a send of theirs still on the wire gets the settle margin to land before counting.
  const settled = async () => {
    for (const effectId of effectIds) {
      const partition = await admin.journal.partitionOf(effectId);
      if (partition === null) return false;
      const { state } = await admin.journal.readState(partition, effectId);
      if (state.open || !state.committed) return false;
    }
    return true;
  };
  while (!(await settled()) && Date.now() - raceStarted < 45_000) await sleep(200);
  const settledMs = Date.now() - raceStarted;
  for (const worker of workers) worker.child.kill('SIGKILL');
  await Promise.all(workers.map((worker) => worker.exited));
  await sleep(RACE_TIMING.settleMarginMs);

  // Whatever the last processes left open, one more recoverer settles (P), waiting exactly as recovery asks.
  for (let pass = 0; pass < 40 && (await admin.journal.openDispatches()).length > 0; pass += 1) {
    const report = await admin.gate.recover();
    const now = await admin.journal.serverTime();
    await sleep(report.nextAt === null ? 50 : Math.min(2_000, Math.max(10, report.nextAt - now + 5)));
  }

  const applications = await target.applications();
  const sends = await target.sends();
  const outcomes = new Map<string, number>();
  const problems: string[] = [];
  for (const [index, effectId] of effectIds.entries()) {
    const receipt = await admin.journal.receipt(effectId);
    const applied = applications.get(effectId) ?? 0;
    if (applied !== 1) problems.push(`effect ${index} was applied ${applied} times`);
    if (receipt === null) {
      problems.push(`effect ${index} has no journal`);
      continue;
    }
    const outcome = outcomeOf(receipt.entries) ?? 'open';
    outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
    if (!COMMITTED_FAMILY.has(outcome)) problems.push(`effect ${index} ended ${outcome}, not committed`);
    const verification = verify(JSON.parse(JSON.stringify(receipt)), { publicKeys: key.publicKeys });
    if (!verification.valid) problems.push(`effect ${index}'s receipt does not verify: ${verification.problems.join('; ')}`);
  }
  const totalSends = [...sends.values()].reduce((sum, n) => sum + n, 0);
  const summary = { tier, processes: everyone.length, startupMs: raceStarted - started, killed, killedMidSend, killsDoneMs, settledMs, sends: totalSends, outcomes: Object.fromEntries(outcomes), ms: Date.now() - raceStarted };
  process.stdout.write(`multi-process race: ${JSON.stringify(summary)}\n`);
  const failedWorkers = everyone.filter((worker) => worker.output.some((line) => line.includes('failed:'))).map((worker) => worker.output.join('\n'));
  return { problems, summary, failedWorkers };
}

describe('a real multi-process race on one Redis', () => {
  it.each([1, 2] as const)('tier %i: 200 effects raced by 8+ processes, some SIGKILLed mid-send, each land exactly once and end committed', async (tier) => {
    const { problems, summary, failedWorkers } = await race(tier);
    expect(failedWorkers).toEqual([]);
    expect(problems).toEqual([]);
    expect(summary.processes).toBeGreaterThanOrEqual(WORKERS + KILLS);
    expect(summary.killedMidSend).toBeGreaterThan(0);
    expect(summary.killed).toBe(KILLS);
    // Proof the kills hit sends in progress: some effects were settled by recovery, not by their first sender.
    expect(EFFECTS - (summary.outcomes.COMMITTED ?? 0)).toBeGreaterThan(0);
  }, 90_000);
});
