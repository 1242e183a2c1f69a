// Rule: `interlock recover` exits 4 when its pass left an effect open for later (README, The command line), and says
// when to look again. A refund recorded by `interlock refund` while no service runs is unjudged, so its money may still
// move: a recover run within the outbox grace (30 s) of it reported it skipped with no retryAt and nextAt null, and
// exited 0, "nothing left"; the same command 30 s later exited 4.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../sandbox/index.js';
import { runCli } from './run-cli.js';
import { sharedRedisCli } from './money-rig.js';

let sandbox: Sandbox;
let cli: ReturnType<typeof sharedRedisCli>;
beforeAll(async () => {
  sandbox = await startSandbox({ port: 0, delays: 'fast' });
  cli = sharedRedisCli('cli-young-recover', { STRIPE_API_BASE: sandbox.url, STRIPE_SECRET_KEY: 'sk_test_sandbox', INTERLOCK_UNSAFE_DURABILITY: '1' });
}, 60_000);
afterAll(async () => {
  await cli?.remove();
  await sandbox?.close();
});

it('recover right after a refund recorded with no service running exits 4 and says when to look again', async () => {
  const auth = { authorization: 'Basic ' + Buffer.from('sk_test_sandbox:').toString('base64'), 'content-type': 'application/x-www-form-urlencoded' };
  const paid = await fetch(`${sandbox.url}/v1/payment_intents`, { method: 'POST', headers: auth, body: 'amount=5000&currency=usd&payment_method=pm_card_visa&confirm=true' });
  const pi = ((await paid.json()) as { id: string }).id;
  const granted = await runCli(['approvals', 'grant', '--id', `ap_${pi}`, '--approver', 'dana', '--cap-cents', '2000', '--scope', `payment:${pi}`], cli.env);
  expect(granted.code, granted.stderr).toBe(0);
  const refund = await runCli(['refund', '--request', `young-${pi}`, '--payment-intent', pi, '--amount', '1000', '--approval', `ap_${pi}`], cli.env);
  expect(refund.code, refund.stderr).toBe(4);
  const effectId = (JSON.parse(refund.stdout) as { effectId: string }).effectId;

  const recover = await runCli(['recover'], cli.env);
  const report = JSON.parse(recover.stdout) as { skipped: { effectId: string; retryAt?: number }[]; nextAt: number | null };
  expect(report.skipped.map((each) => each.effectId)).toContain(effectId);
  expect(recover.code, recover.stdout).toBe(4);
  expect(report.nextAt).not.toBeNull();
});
