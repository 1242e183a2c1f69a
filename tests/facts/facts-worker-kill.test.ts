// A facts worker process SIGKILLed between accepting an event and appending it (issue 10 §6): the route answered
// 200 once the event was durably queued, the worker that took the job died while it re-read the refund at Stripe,
// and after a restart the event is appended exactly once (by the restarted worker's reconciliation pass at start
// or by the job, which BullMQ hands out again once the dead worker's lock lapses), and the job completes.
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnServe, startFactsRig, type FactsRig } from './facts-rig.js';

let rig: FactsRig;
let dir: string;
const children: ChildProcess[] = [];

beforeAll(async () => {
  // The route and the effects worker run here; the facts worker only in the child process.
  rig = await startFactsRig({ factsWorker: false });
  dir = mkdtempSync(join(tmpdir(), 'interlock-facts-kill-'));
  writeFileSync(join(dir, 'signing-key.pem'), rig.signingKeyPem, { mode: 0o600 });
}, 60_000);

afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await rig?.close();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

/** `interlock serve --roles facts` on the rig's Redis prefix and sandbox; resolves once it serves. */
async function startFactsProcess(): Promise<ChildProcess> {
  const serve = await spawnServe(['--roles', 'facts'], {
    REDIS_URL: rig.config.redisUrl,
    INTERLOCK_KEY_PREFIX: rig.config.keyPrefix,
    INTERLOCK_UNSAFE_DURABILITY: '1',
    INTERLOCK_DATA_DIR: join(dir, 'data'),
    INTERLOCK_SIGNING_KEY_FILE: join(dir, 'signing-key.pem'),
    STRIPE_SECRET_KEY: 'sk_test_interlockFactsKill0001',
    STRIPE_API_BASE: rig.sandbox.url,
    INTERLOCK_FACTS_LOCK_MS: '1500',
  });
  children.push(serve.child);
  return serve.child;
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('a facts worker killed with an event in hand', () => {
  it('appends the event once after a restart, and nothing is lost', async () => {
    const first = await startFactsProcess();
    const { effectId, refund } = await rig.committedRefund();

    // Stripe is slow to answer the worker's re-read: the worker holds the failure's events when it is killed.
    await rig.sandbox.control.slowDown({ path: '/v1/refunds', ms: 60_000, count: 20 });
    await rig.sandbox.control.request('POST', `/refunds/${refund.id}/fail`, { failure_reason: 'lost_or_stolen_card' });
    await rig.sandbox.control.idle();
    await until('the worker taking the failure events', async () => (await rig.factsQueue.queue.getActiveCount()) > 0);
    const accepted = (await rig.factsQueue.queue.getActive()).map((job) => job.id);
    expect(rig.answers.at(-1)).toBe(200);
    first.kill('SIGKILL');
    await new Promise((resolve) => first.once('exit', resolve));
    await rig.sandbox.control.clearFaults();
    expect((await rig.observed(effectId)).filter((entry) => entry.status === 'failed')).toEqual([]);

    await startFactsProcess();
    await rig.until(effectId, (v) => v.finalMoney.status === 'not_returned', 30_000);
    // The jobs the dead worker held run again and complete; what they say was recorded once.
    for (const id of accepted) await until(`job ${String(id)} completing`, async () => (await rig.factsQueue.queue.getJob(String(id)))?.finishedOn !== undefined, 30_000);
    await rig.drained();
    const failed = (await rig.observed(effectId)).filter((entry) => entry.status === 'failed');
    expect(failed).toHaveLength(1);
    expect(await rig.receipt(effectId)).toMatchObject({ valid: true, signed: true, finalMoney: { status: 'not_returned', failureReason: 'lost_or_stolen_card' } });
  }, 90_000);
});
