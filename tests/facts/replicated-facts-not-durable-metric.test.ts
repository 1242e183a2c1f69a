// Rule: with INTERLOCK_REDIS_MIN_REPLICAS=N, a facts job whose facts too few replicas acknowledged waits (delayed) with
// nothing failed, so a process running the facts role says so itself: each such run is counted in
// interlock_redis_not_durable_total{where="facts"}, and its /readyz answers 503 (a failed redis_replicas check) while the
// replica is stopped, and 200 again once it is back and the job completed.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startService } from '../../src/main.js';
import { freePort } from '../support/private-redis.js';
import { replicatedFacts } from './replicated-facts-rig.js';

// The route and the sender run in the rig; the facts worker only in the facts-only process.
const replicated = replicatedFacts({ label: 'rn', waitMs: 2_000, factsWorker: false });

function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((item) => item.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('serve --roles facts under INTERLOCK_REDIS_MIN_REPLICAS=1', () => {
  it('counts each facts run put back to wait for the replica, and its /readyz answers 503 while the replica is stopped', async () => {
    const { rig, pair } = replicated;
    const dir = mkdtempSync(join(tmpdir(), 'replicated-facts-metric-'));
    writeFileSync(join(dir, 'signing-key.pem'), rig.signingKeyPem, { mode: 0o600 });
    const facts = await startService({ ...rig.config, durabilityCheckMs: 200, signingKeyFile: join(dir, 'signing-key.pem'), dataDir: join(dir, 'data'), metricsAddr: { host: '127.0.0.1', port: await freePort() } }, ['facts']);
    try {
      const metricsUrl = facts.metricsUrl ?? '';
      const readyz = async () => {
        const answer = await fetch(metricsUrl.replace(/\/metrics$/, '/readyz'));
        const body = (await answer.json()) as { checks: { name: string; ok: boolean }[] };
        return { status: answer.status, failed: body.checks.filter((check) => !check.ok).map((check) => check.name) };
      };
      const refused = async () => sample(await (await fetch(metricsUrl)).text(), 'interlock_redis_not_durable_total{where="facts"}');
      const { effectId, refund } = await rig.committedRefund();
      await expect.poll(async () => (await readyz()).status, { timeout: 20_000, interval: 100 }).toBe(200);
      expect(await refused()).toBe(0);

      // The replica stops (a stalled host); the refund fails at Stripe, and its events are queued on the master.
      let whileStopped: { readyz: { status: number; failed: string[] }; refused: number | undefined };
      pair.replica.process.kill('SIGSTOP');
      try {
        await rig.sandbox.control.request('POST', `/refunds/${refund.id}/fail`, { failure_reason: 'lost_or_stolen_card' });
        await expect.poll(refused, { timeout: 30_000, interval: 100 }).toBeGreaterThan(0);
        await expect.poll(async () => (await readyz()).status, { timeout: 20_000, interval: 100 }).toBe(503);
        whileStopped = { readyz: await readyz(), refused: await refused() };
      } finally {
        pair.replica.process.kill('SIGCONT');
      }
      expect(whileStopped).toEqual({ readyz: { status: 503, failed: ['redis_replicas'] }, refused: expect.any(Number) });

      // The replica back: the job completes (the failure reaches the receipt) and the process is ready again.
      await rig.until(effectId, (verification) => verification.finalMoney.refunds.some((one) => one.status === 'failed'), 30_000);
      await expect.poll(async () => (await readyz()).status, { timeout: 20_000, interval: 100 }).toBe(200);
    } finally {
      await facts.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
