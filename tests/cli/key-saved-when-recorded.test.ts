// Rule: a command with no signing key yet and no service to take one from saves the key it signs with in the data
// directory before anything it signed reaches Redis (stores.ts keyOf/withStores): a refund it recorded is verified
// with that key file, while a refund refused before it wrote leaves none (no-approval-names-where.test.ts).
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../sandbox/index.js';
import { runCli } from './run-cli.js';
import { sharedRedisCli } from './money-rig.js';

let sandbox: Sandbox;
let cli: ReturnType<typeof sharedRedisCli>;
beforeAll(async () => {
  sandbox = await startSandbox({ port: 0, delays: 'fast' });
  cli = sharedRedisCli('key-saved-recorded', { STRIPE_API_BASE: sandbox.url, STRIPE_SECRET_KEY: 'sk_test_sandbox', INTERLOCK_UNSAFE_DURABILITY: '1' });
}, 60_000);
afterAll(async () => {
  await cli?.remove();
  await sandbox?.close();
});

it('a refund recorded from a data dir with no key saves the key that signed it there', async () => {
  const auth = { authorization: 'Basic ' + Buffer.from('sk_test_sandbox:').toString('base64'), 'content-type': 'application/x-www-form-urlencoded' };
  const paid = await fetch(`${sandbox.url}/v1/payment_intents`, { method: 'POST', headers: auth, body: 'amount=5000&currency=usd&payment_method=pm_card_visa&confirm=true' });
  const pi = ((await paid.json()) as { id: string }).id;
  const granted = await runCli(['approvals', 'grant', '--id', `ap_${pi}`, '--approver', 'dana', '--cap-cents', '2000', '--scope', `payment:${pi}`], cli.env);
  expect(granted.code, granted.stderr).toBe(0);
  const key = join(cli.env.INTERLOCK_DATA_DIR ?? '', 'keys', 'signing-key.pem');
  // A grant records no entry: it needs no key, and makes none.
  expect(existsSync(key)).toBe(false);
  const refund = await runCli(['refund', '--request', `saved-${pi}`, '--payment-intent', pi, '--amount', '1000', '--approval', `ap_${pi}`], cli.env);
  expect(refund.code, refund.stderr).toBe(4);
  expect(existsSync(key)).toBe(true);
  const effectId = (JSON.parse(refund.stdout) as { effectId: string }).effectId;
  const out = join(cli.env.INTERLOCK_DATA_DIR ?? '', 'receipt.json');
  const exported = await runCli(['receipt', 'export', effectId, '--out', out], cli.env);
  expect(exported.code, exported.stderr).toBe(0);
  const publicKey = join(cli.env.INTERLOCK_DATA_DIR ?? '', 'public-key.pem');
  const printed = await runCli(['keys', 'public'], cli.env);
  expect(printed.code, printed.stderr).toBe(0);
  writeFileSync(publicKey, printed.stdout);
  const verified = await runCli(['receipt', 'verify', out, '--public-key', publicKey], cli.env);
  expect(verified.code, verified.stdout + verified.stderr).toBe(0);
}, 60_000);
