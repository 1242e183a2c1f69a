// Rule: a command that records no journal entry (approvals grant / revoke, caps set, alerts resolve of an alert other
// than an exposure, case) signs nothing, so the key of a stopped service named in service.json is no reason to refuse
// it: `approvals revoke` is the brake an operator pulls while the service is down (a restart for a key rotation), and
// must work (exit 0/1 on its own merits), never exit 2 with "This command signs the entries it records ... nothing
// was recorded". Control: a refund (records entries) in the same setting is refused (exit 2), as the README says.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openStores } from '../../src/interlock.js';
import { REDIS_URL, removePrefixes, testConfig, testKey } from '../support/harness.js';
import { runCli, tempDir } from './run-cli.js';

const temp = tempDir('stopped-service-unsigned');
const prefix = `tstop${process.pid}x${Date.now()}`;
const dataDir = join(temp.dir, 'data');
mkdirSync(dataDir, { recursive: true });
const serviceKey = testKey();
// A service that ran with INTERLOCK_SIGNING_KEY_FILE on another volume (not readable from this shell), then stopped.
writeFileSync(join(dataDir, 'service.json'), JSON.stringify({
  pid: 999_999, redis_url: REDIS_URL, key_prefix: prefix, signing_kid: serviceKey.key.kid,
  signing_key_file: join(temp.dir, 'mounted-elsewhere', 'signing-key.pem'), stopped_at: new Date().toISOString(),
}));
const env = { INTERLOCK_DATA_DIR: dataDir, REDIS_URL: undefined, INTERLOCK_KEY_PREFIX: undefined, STRIPE_SECRET_KEY: undefined, STRIPE_API_BASE: undefined };

afterAll(async () => {
  await removePrefixes([prefix]);
  temp.remove();
});

const summary = (run: { code: number; stderr: string }) => ({ code: run.code, refusedForKey: run.stderr.includes('signs the entries it records') });

describe('commands that record no entry, while the service is stopped and its key file is not readable here', { timeout: 60_000 }, () => {
  it('approvals grant, approvals revoke and caps set are not refused for a key they never sign with', async () => {
    const grant = await runCli(['approvals', 'grant', '--id', 'ap_stopped', '--approver', 'dana@support', '--cap-cents', '3000', '--scope', 'payment:pi_stopped'], env);
    const revoke = await runCli(['approvals', 'revoke', 'ap_stopped', '--by', 'lee@support'], env);
    const caps = await runCli(['caps', 'set', 'payment:pi_stopped', '0'], env);
    expect({ grant: summary(grant), revoke: summary(revoke), caps: summary(caps) }, grant.stderr + revoke.stderr + caps.stderr).toEqual({
      grant: { code: 0, refusedForKey: false },
      revoke: { code: 0, refusedForKey: false },
      caps: { code: 0, refusedForKey: false },
    });
  });

  it('alerts resolve of a late_landing alert is not refused for a key it never signs with', async () => {
    const effectId = 'a'.repeat(64);
    const stores = await openStores(testConfig({ keyPrefix: prefix }), { signingKey: serviceKey.key });
    try {
      await stores.alerts.raise({ kind: 'late_landing', effectId, subject: 'payment:pi_x', centsAtStake: 1_000, refund: null, disputes: [], sentence: 'Landed late.', action: 'Tell the customer.' });
    } finally {
      await stores.close();
    }
    const run = await runCli(['alerts', 'resolve', `late_landing:${effectId}`, '--by', 'lee'], env);
    expect(summary(run), run.stderr).toEqual({ code: 0, refusedForKey: false });
  });

  it('case (stores and queues a case; the service records its proposal) is not refused for a key it never signs with', async () => {
    const grant = await runCli(['approvals', 'grant', '--id', 'ap_case', '--approver', 'dana@support', '--cap-cents', '3000', '--scope', 'payment:pi_case'], env);
    expect(grant.code, grant.stderr).toBe(0);
    const run = await runCli(['case', '--case', 'c_stopped', '--payment-intent', 'pi_case', '--story', 'double charged', '--approval', 'ap_case'], env);
    expect(summary(run).refusedForKey, run.stderr).toBe(false);
  });

  it('control: a refund, which records entries, is refused (exit 2) naming INTERLOCK_SIGNING_KEY_FILE', async () => {
    const run = await runCli(['refund', '--request', 'case-stopped', '--payment-intent', 'pi_stopped', '--amount', '100', '--approval', 'ap_stopped'], { ...env, STRIPE_SECRET_KEY: 'sk_test_stoppedServiceKey01' });
    expect({ ...summary(run), names: run.stderr.includes('INTERLOCK_SIGNING_KEY_FILE') }, run.stderr).toEqual({ code: 2, refusedForKey: true, names: true });
  });
});
