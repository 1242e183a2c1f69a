// Rule (src/cli/stores.ts withServiceRetiredKeys): a command that follows a service through service.json checks
// receipts with the keys the service holds, its retired ones too, whether REDIS_URL was taken from service.json or
// exported with the service's value (and its key prefix): `effect show` of an effect sealed before the rotation says
// valid, and `receipt export` of it is not refused. A retired-keys file given to the command wins.
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createMemoryTarget } from '../../src/targets/memory-target.js';
import { approvalTerms, REDIS_URL, refundProposal, removePrefixes, startNode, testConfig, testKey } from '../support/harness.js';
import { runCli, tempDir } from './run-cli.js';

const temp = tempDir('service-json-retired-url');
const prefix = `svcretiredurl${process.pid}`;
afterAll(async () => {
  await removePrefixes([prefix]);
  temp.remove();
});

describe('a command beside a rotated service, with its REDIS_URL and key prefix exported', { timeout: 60_000 }, () => {
  it('checks an effect sealed with the retired key as the service does', async () => {
    const old = testKey();
    const current = testKey();
    const config = testConfig({ keyPrefix: prefix });
    const target = createMemoryTarget({ tier: 1, sendTimeoutMs: config.sendTimeoutMs });
    target.world.set('payment:pi_rotated_url', { chargebacks: [], refunded_by_others: 0 });
    const node = await startNode({ config, target, key: old.key });
    let effectId: string;
    try {
      const terms = approvalTerms({ scope: 'payment:pi_rotated_url' });
      await node.approvals.grant(terms);
      const result = await node.gate.submit(refundProposal({ approval: terms.id, paymentIntent: 'pi_rotated_url' }));
      expect(result.outcome).toBe('COMMITTED');
      effectId = result.effectId;
    } finally {
      await node.close();
    }

    // The service after the rotation (stopped: its file is followed all the same), its new key in the data directory.
    const dataDir = join(temp.dir, 'data');
    mkdirSync(join(dataDir, 'keys'), { recursive: true, mode: 0o700 });
    chmodSync(dataDir, 0o700);
    const keyFile = join(dataDir, 'keys', 'signing-key.pem');
    writeFileSync(keyFile, current.privatePem, { mode: 0o600 });
    const retiredFile = join(temp.dir, 'retired-keys.pem');
    writeFileSync(retiredFile, old.publicPem, { mode: 0o600 });
    writeFileSync(join(dataDir, 'service.json'), `${JSON.stringify({ pid: 999_999, redis_url: REDIS_URL, key_prefix: prefix, signing_kid: current.key.kid, signing_key_file: keyFile, retired_public_keys_file: retiredFile, stopped_at: new Date().toISOString() })}\n`, { mode: 0o600 });

    const exported = { REDIS_URL, INTERLOCK_KEY_PREFIX: prefix, INTERLOCK_RETIRED_PUBLIC_KEYS_FILE: undefined, INTERLOCK_UNSAFE_DURABILITY: '1', INTERLOCK_DATA_DIR: dataDir };
    const shown = await runCli(['effect', 'show', effectId], exported);
    expect(shown.code, shown.stderr).toBe(0);
    expect(JSON.parse(shown.stdout).verification).toMatchObject({ valid: true });
    const out = join(temp.dir, 'receipt.json');
    const exportRun = await runCli(['receipt', 'export', effectId, '--out', out], exported);
    expect(exportRun.code, exportRun.stderr).toBe(0);
    const verified = await runCli(['receipt', 'verify', out], exported);
    expect(verified.code, verified.stdout).toBe(0);

    // A file of the command's own wins: one without the old key leaves the old entries unauthenticated.
    const other = join(temp.dir, 'other-retired.pem');
    writeFileSync(other, testKey().publicPem, { mode: 0o600 });
    const given = await runCli(['effect', 'show', effectId], { ...exported, INTERLOCK_RETIRED_PUBLIC_KEYS_FILE: other });
    expect(given.code, given.stderr).toBe(0);
    expect(JSON.parse(given.stdout).verification.valid).not.toBe(true);
  });
});
