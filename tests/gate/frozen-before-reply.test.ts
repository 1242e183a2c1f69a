// Rule (gate/send.ts sendOnce; DESIGN §7, I2 and I4): a sender asks Redis for its claim right before every request
// leaves, so a process that froze and woke fenced out sends nothing. The check was once skipped just after a script
// proved the claim, counted from when the dispatch step's answer was READ, and a beat that found the key lapsed wrote
// it anew without a word: a worker frozen (a real SIGSTOP) after its dispatch step ran in Redis and before it read the
// answer, longer than its heartbeat TTL and shorter than its send timeout, was taken over and settled by another worker,
// and on SIGCONT sent anyway: a second refund (tier 2), or a refund under an approval revoked meanwhile after recovery
// had refused it (tier 1). tests/gate/paused-vm-claim-check.test.ts holds the same for a paused VM, whose clocks stop.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { signingKeyFromPem } from '../../src/core/signing.js';
import { REDIS_URL, removePrefixes, sleep, startNode, testConfig, testKey } from '../support/harness.js';
import { createRedisTarget } from '../support/redis-target.js';

const WORKER = fileURLToPath(new URL('../support/frozen-worker.ts', import.meta.url));
const prefixes: string[] = [];
afterAll(() => removePrefixes(prefixes));

async function frozenAndRecovered(options: { watchdog: boolean; tier: 1 | 2; revoke: boolean }) {
  const prefix = `frz${randomBytes(4).toString('hex')}`;
  prefixes.push(prefix, `${prefix}x`);
  const key = testKey();
  // As the child's: a heartbeat that lapses in 0.8 s, a send deadline of 8 s.
  const config = testConfig({ keyPrefix: prefix, sendTimeoutMs: 8_000, claimTtlMs: 20_000, settleMarginMs: 300, dedupMarginMs: 60_000, heartbeatMs: 200, heartbeatTtlMs: 800, recoveryIntervalMs: 600_000 });
  const targetRedis = new Redis(REDIS_URL);
  const target = createRedisTarget({ redis: targetRedis, prefix: `${prefix}x`, tier: options.tier, sendTimeoutMs: config.sendTimeoutMs });
  await target.setFacts('payment:pi_frozen', { chargebacks: [], refunded_by_others: 0 });
  const other = await startNode({ config, target, key: signingKeyFromPem(key.privatePem), workerId: 'other' });
  const child = spawn(process.execPath, ['--import', 'tsx', WORKER], {
    env: { ...process.env, FROZEN_PREFIX: prefix, FROZEN_KEY: key.privatePem, FROZEN_WATCHDOG: options.watchdog ? '1' : '0', FROZEN_TIER: String(options.tier), INTERLOCK_LOG_LEVEL: 'silent' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    for (let i = 0; i < 600 && !stdout.includes('stopping'); i += 1) await sleep(50);
    expect(stdout, stderr).toContain('stopping');
    // The child is stopped with its dispatch step on its way to Redis. A person revokes the approval meanwhile.
    if (options.revoke) await other.approvals.revoke('ap_frozen', 'dana@support');
    // Its heartbeat lapses; another worker recovers the open dispatch.
    await sleep(1_200);
    const settled: string[] = [];
    for (let i = 0; i < 40 && settled.length === 0; i += 1) {
      settled.push(...(await other.gate.recover()).settled.map((one) => one.outcome));
      if (settled.length === 0) await sleep(150);
    }
    const afterRecovery = [...(await target.applications()).values()];
    // Resumed well inside its 8 s send deadline; it answers and exits.
    child.kill('SIGCONT');
    await Promise.race([exited, sleep(20_000)]);
    return { settled, afterRecovery, applications: [...(await target.applications()).values()], answer: /answer (\S+)/.exec(stdout)?.[1] ?? null, log: `${stdout}\n${stderr}` };
  } finally {
    child.kill('SIGCONT');
    child.kill('SIGKILL');
    await other.close().catch(() => undefined);
    targetRedis.disconnect();
  }
}

describe('a worker frozen between its dispatch step and reading its answer, past its heartbeat', () => {
  it('tier 2 (looked up, no dedupe), watchdog on: does not land the refund a second time after another worker reapplied it', async () => {
    const run = await frozenAndRecovered({ watchdog: true, tier: 2, revoke: false });
    expect({ settled: run.settled, afterRecovery: run.afterRecovery }).toEqual({ settled: ['REAPPLIED_AFTER_QUERY'], afterRecovery: [1] });
    expect({ applications: run.applications, answered: run.answer !== null }, run.log).toEqual({ applications: [1], answered: true });
  }, 60_000);

  it('tier 2, watchdog off: the same (its heartbeat timer alone writes the lapsed key again before the send)', async () => {
    const run = await frozenAndRecovered({ watchdog: false, tier: 2, revoke: false });
    expect(run.settled).toEqual(['REAPPLIED_AFTER_QUERY']);
    expect({ applications: run.applications, answered: run.answer !== null }, run.log).toEqual({ applications: [1], answered: true });
  }, 60_000);

  it('tier 1 (dedupes on the key): sends nothing under an approval revoked while it was frozen, after recovery refused it', async () => {
    const run = await frozenAndRecovered({ watchdog: true, tier: 1, revoke: true });
    expect({ settled: run.settled, afterRecovery: run.afterRecovery }).toEqual({ settled: ['REFUSED:lease_at_recovery'], afterRecovery: [] });
    expect({ applications: run.applications, answered: run.answer !== null }, run.log).toEqual({ applications: [], answered: true });
  }, 60_000);
});
