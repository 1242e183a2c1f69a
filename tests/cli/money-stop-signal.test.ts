// Rule: a refund or credit stopped by a signal (Ctrl-C, a kill, a closed terminal) once it may be recorded never ends
// silently: it says the effect is recorded, names `interlock effect show --request ID`, and exits 4 (README, The
// command line: recorded but not settled). Ended by the signal with nothing said, a hurried operator reads "nothing was
// changed" and proposes again under a new request id: two refunds.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './run-cli.js';
import { paymentWithApproval, refundsAt, spawnCli, startMoneyRig, until, type MoneyRig } from './money-rig.js';

let rig: MoneyRig;
beforeAll(async () => {
  rig = await startMoneyRig('stop-signal');
}, 90_000);
afterAll(async () => {
  await rig?.stop();
});

describe('refund --wait stopped by a signal', { timeout: 120_000 }, () => {
  it.each(['SIGINT', 'SIGTERM'] as const)('%s once the refund is recorded: says it is recorded and how to read it, exits 4, and the refund still goes out once', async (signal) => {
    const { pi, approval } = await paymentWithApproval(rig);
    // Stripe slow to answer the send: the refund is in flight, and the command waiting, when the signal comes.
    await rig.running.sandbox.control.slowDown({ path: '/v1/refunds', method: 'POST', ms: 8000, count: 1 });
    const request = `stop-${signal}-${randomBytes(3).toString('hex')}`;
    const run = await spawnCli(['refund', '--request', request, '--payment-intent', pi, '--amount', '1500', '--approval', approval, '--wait', '60'], rig.env, {
      during: (child) => {
        void until('the refund is recorded', async () => /"PROPOSED"/.test((await runCli(['effect', 'show', '--request', request], rig.env)).stdout)).then(() => child.kill(signal));
      },
    });
    expect(run.signal).toBeNull();
    expect(run.code, run.stderr).toBe(4);
    expect(run.stderr.trimEnd().split('\n'), run.stderr).toHaveLength(1);
    expect(run.stderr).toContain(`Stopped by ${signal}`);
    expect(run.stderr).toContain('is recorded');
    expect(run.stderr).toContain(`interlock effect show --request ${request}`);
    await until('the refund reaches Stripe', async () => (await refundsAt(rig, pi)).length > 0);
    expect(await refundsAt(rig, pi)).toEqual([1500]);
  });
});
