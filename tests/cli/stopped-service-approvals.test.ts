// Rule: a command that records no journal entry (approvals grant / revoke, caps set) signs nothing, so the key of a
// stopped service named in service.json is no reason to refuse it: `approvals revoke` is the brake an operator pulls
// while the service is down (a restart for a key rotation), and must work (exit 0/1 on its own merits), never exit 2
// with "This command signs the entries it records ... nothing was recorded". Control: a refund (records entries) in
// the same setting is refused (exit 2), as the README says.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REDIS_URL, removePrefixes, testKey } from '../support/harness.js';
import { runCli, tempDir } from './run-cli.js';

const temp = tempDir('review-stopped-nonsigning');
const prefix = `review-stopped-${process.pid}-${Date.now()}:`;
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

describe('commands that record no entry, while the service is stopped and its key file is not readable here', { timeout: 60_000 }, () => {
  it('approvals grant, approvals revoke and caps set are not refused for a key they never sign with', async () => {
    const grant = await runCli(['approvals', 'grant', '--id', 'ap_stopped', '--approver', 'dana@support', '--cap-cents', '3000', '--scope', 'payment:pi_stopped'], env);
    const revoke = await runCli(['approvals', 'revoke', 'ap_stopped', '--by', 'lee@support'], env);
    const caps = await runCli(['caps', 'set', 'payment:pi_stopped', '0'], env);
    const summary = (run: { code: number; stderr: string }) => ({ code: run.code, refusedForKey: run.stderr.includes('signs the entries it records') });
    expect({ grant: summary(grant), revoke: summary(revoke), caps: summary(caps) }, grant.stderr + revoke.stderr + caps.stderr).toEqual({
      grant: { code: 0, refusedForKey: false },
      revoke: { code: 0, refusedForKey: false },
      caps: { code: 0, refusedForKey: false },
    });
  });
});
