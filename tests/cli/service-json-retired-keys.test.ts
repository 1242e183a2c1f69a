// Rule (src/main.ts service.json `retired_public_keys_file`): a command that follows a service through its
// service.json checks receipts with the keys the service holds, its retired ones too. After a key rotation the service
// knew the old key (INTERLOCK_RETIRED_PUBLIC_KEYS_FILE) but a command beside it did not: `effect show` of an effect
// sealed before the rotation answered `valid: null`, telling the user to "run this where the service runs", where they
// were. A retired-keys file given to the command wins.
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createMemoryTarget } from '../../src/targets/memory-target.js';
import { approvalTerms, REDIS_URL, refundProposal, removePrefixes, startNode, testConfig, testKey } from '../support/harness.js';
import { runCli, tempDir } from './run-cli.js';

const temp = tempDir('service-json-retired');
const prefix = `svcretired${process.pid}`;
afterAll(async () => {
  await removePrefixes([prefix]);
  temp.remove();
});

describe('a command beside a service that rotated its signing key', { timeout: 60_000 }, () => {
  it('checks an effect sealed with the retired key as the service does', async () => {
    const old = testKey();
    const current = testKey();
    // An effect sealed before the rotation, with the old key.
    const config = testConfig({ keyPrefix: prefix });
    const target = createMemoryTarget({ tier: 1, sendTimeoutMs: config.sendTimeoutMs });
    target.world.set('payment:pi_rotated', { chargebacks: [], refunded_by_others: 0 });
    const node = await startNode({ config, target, key: old.key });
    let effectId: string;
    try {
      const terms = approvalTerms({ scope: 'payment:pi_rotated' });
      await node.approvals.grant(terms);
      const result = await node.gate.submit(refundProposal({ approval: terms.id, paymentIntent: 'pi_rotated' }));
      expect(result.outcome).toBe('COMMITTED');
      effectId = result.effectId;
    } finally {
      await node.close();
    }

    // The service after the rotation (stopped: its file is followed all the same): the new key, the old one retired.
    const dataDir = join(temp.dir, 'data');
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    chmodSync(dataDir, 0o700);
    const keyFile = join(temp.dir, 'signing-key-2.pem');
    writeFileSync(keyFile, current.privatePem, { mode: 0o600 });
    const retiredFile = join(temp.dir, 'retired-keys.pem');
    writeFileSync(retiredFile, old.publicPem, { mode: 0o600 });
    writeFileSync(join(dataDir, 'service.json'), `${JSON.stringify({ pid: 999_999, redis_url: REDIS_URL, key_prefix: prefix, signing_kid: current.key.kid, signing_key_file: keyFile, retired_public_keys_file: retiredFile, stopped_at: new Date().toISOString() })}\n`, { mode: 0o600 });

    const following = { REDIS_URL: undefined, INTERLOCK_KEY_PREFIX: undefined, INTERLOCK_RETIRED_PUBLIC_KEYS_FILE: undefined, INTERLOCK_UNSAFE_DURABILITY: '1', INTERLOCK_DATA_DIR: dataDir };
    const shown = await runCli(['effect', 'show', effectId], following);
    expect(shown.code, shown.stderr).toBe(0);
    expect(JSON.parse(shown.stdout).verification).toMatchObject({ valid: true });
  });
});
