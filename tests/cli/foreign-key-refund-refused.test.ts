// Rule (cli/stores.ts withStores, enter-deployment-2.lua 'check'): a one-off command that records entries signs them,
// so it runs only with a key the deployment signs with (or holds as retired). An operator's shell with the
// deployment's REDIS_URL and INTERLOCK_KEY_PREFIX but its own data directory (its own, freshly made key) recorded a
// refund signed with a key the deployment does not hold: the service sent it and its receipt read as signed by an
// unknown key. It is refused, exit 2, naming both keys, with nothing recorded; the command records no key of its own.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { paymentWithApproval, refundsAt, startMoneyRig, type MoneyRig } from './money-rig.js';
import { runCli, tempDir } from './run-cli.js';

const temp = tempDir('cli-foreign-key');
let rig: MoneyRig;
beforeAll(async () => {
  rig = await startMoneyRig('cli-foreign-key');
}, 90_000);
afterAll(async () => {
  await rig?.stop();
  temp.remove();
});

describe('a CLI refund signing with a key the deployment does not sign with', { timeout: 120_000 }, () => {
  it('is refused (exit 2), naming the keys, and records nothing', async () => {
    const { pi, approval } = await paymentWithApproval(rig);
    const laptop = join(temp.dir, 'laptop');
    mkdirSync(laptop, { recursive: true, mode: 0o700 });
    const run = await runCli(['refund', '--request', 'case-cli-foreign', '--payment-intent', pi, '--amount', '100', '--approval', approval, '--wait', '20'], { ...rig.env, INTERLOCK_DATA_DIR: laptop });
    expect({ code: run.code, refunds: await refundsAt(rig, pi) }, run.stderr).toEqual({ code: 2, refunds: [] });
    expect(run.stderr).toContain('but the deployment on this Redis with key prefix');
    expect(run.stderr).toContain('Nothing was recorded.');
    // The same command with the deployment's key goes through.
    const ok = await runCli(['refund', '--request', 'case-cli-foreign', '--payment-intent', pi, '--amount', '100', '--approval', approval, '--wait', '20'], rig.env);
    expect(ok.code, ok.stderr).toBe(0);
  });
});
