// Rule: commands that name no key file (`keys public`, `receipt verify`, `keys generate`, `keys adopt`) beside a
// service found through its service.json (running or stopped) go by the key that service signs with, as commands that
// sign with it do (stores.ts keyOf), never by a stale data-directory key (a rotation's old key, left behind):
// `keys public` prints the service's key and says on stderr that the local file holds another; `receipt verify`
// checks with the service's key and its retired keys; `keys generate` makes no key beside it, and `keys adopt` adopts
// no data-directory key that is not the service's (a key to adopt on purpose is named with INTERLOCK_SIGNING_KEY_FILE).
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createMemoryTarget } from '../../src/targets/memory-target.js';
import { approvalTerms, REDIS_URL, refundProposal, removePrefixes, startNode, testConfig, testKey } from '../support/harness.js';
import { runCli, tempDir } from './run-cli.js';

type Key = ReturnType<typeof testKey>;
const temp = tempDir('keys-beside-service');
const prefix = `keysbeside${process.pid}`;
afterAll(async () => {
  await removePrefixes([prefix]);
  temp.remove();
});

/**
 * A data directory whose service.json names a stopped service signing with `service` from a key file of its own
 * (started with INTERLOCK_SIGNING_KEY_FILE), and holding `stale` (or no key) as its own key file.
 */
function besideService(name: string, service: Key, stale: Key | null, extra: { retired?: Key } = {}): { dataDir: string; keyFile: string; env: Record<string, string | undefined> } {
  const dataDir = join(temp.dir, name);
  mkdirSync(join(dataDir, 'keys'), { recursive: true, mode: 0o700 });
  chmodSync(dataDir, 0o700);
  const keyFile = join(temp.dir, `${name}-signing-key-2.pem`);
  writeFileSync(keyFile, service.privatePem, { mode: 0o600 });
  if (stale !== null) writeFileSync(join(dataDir, 'keys', 'signing-key.pem'), stale.privatePem, { mode: 0o600 });
  let retiredFile: string | null = null;
  if (extra.retired !== undefined) {
    retiredFile = join(temp.dir, `${name}-retired.pem`);
    writeFileSync(retiredFile, extra.retired.publicPem, { mode: 0o644 });
  }
  const facts = { pid: 999_999, redis_url: REDIS_URL, key_prefix: prefix, signing_kid: service.key.kid, signing_key_file: keyFile, retired_public_keys_file: retiredFile, stopped_at: new Date().toISOString() };
  writeFileSync(join(dataDir, 'service.json'), `${JSON.stringify(facts)}\n`, { mode: 0o600 });
  return { dataDir, keyFile, env: { REDIS_URL: undefined, INTERLOCK_KEY_PREFIX: undefined, INTERLOCK_RETIRED_PUBLIC_KEYS_FILE: undefined, INTERLOCK_DATA_DIR: dataDir } };
}

describe('key commands beside a service that signs with a key file of its own', { timeout: 60_000 }, () => {
  it('keys public prints the service key and says the data directory holds another', async () => {
    const stale = testKey();
    const current = testKey();
    const { env, keyFile } = besideService('public-stale', current, stale);
    const run = await runCli(['keys', 'public'], env);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe(current.publicPem);
    expect(run.stderr).toContain(`kid ${current.key.kid}`);
    expect(run.stderr).toContain(`holds key ${stale.key.kid}; the key the service that wrote`);
    expect(run.stderr).toContain(keyFile);
    // --key still names the file to read.
    const named = await runCli(['keys', 'public', '--key', join(env.INTERLOCK_DATA_DIR ?? '', 'keys', 'signing-key.pem')], env);
    expect(named.stdout).toBe(stale.publicPem);
  });

  it('keys public with no key in the data directory prints the service key, without advice to make one', async () => {
    const current = testKey();
    const { env } = besideService('public-none', current, null);
    const run = await runCli(['keys', 'public'], env);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe(current.publicPem);
    expect(run.stderr.trim()).toBe(`kid ${current.key.kid}`);
  });

  it('keys public refuses, printing no key, when the service key file cannot be read here', async () => {
    const stale = testKey();
    const current = testKey();
    const { env, keyFile } = besideService('public-gone', current, stale);
    writeFileSync(keyFile, stale.privatePem);
    const run = await runCli(['keys', 'public'], env);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain(`signs its receipts with key ${current.key.kid}`);
    expect(run.stderr).toContain(`now holds key ${stale.key.kid}`);
  });

  it('receipt verify checks a receipt the service signed with its key, and one sealed before a rotation with its retired key', async () => {
    const older = testKey();
    const stale = testKey();
    const current = testKey();
    const receipts: string[] = [];
    for (const [key, payment] of [[current, 'pi_beside_now'], [older, 'pi_beside_then']] as const) {
      const config = testConfig({ keyPrefix: `${prefix}-${payment}` });
      const target = createMemoryTarget({ tier: 1, sendTimeoutMs: config.sendTimeoutMs });
      target.world.set(`payment:${payment}`, { chargebacks: [], refunded_by_others: 0 });
      const node = await startNode({ config, target, key: key.key });
      try {
        const terms = approvalTerms({ scope: `payment:${payment}` });
        await node.approvals.grant(terms);
        const result = await node.gate.submit(refundProposal({ approval: terms.id, paymentIntent: payment }));
        expect(result.outcome).toBe('COMMITTED');
        const [receipt] = await node.journal.receipts([result.effectId]);
        const file = join(temp.dir, `${payment}.json`);
        writeFileSync(file, `${JSON.stringify(receipt, null, 2)}\n`);
        receipts.push(file);
      } finally {
        await node.close();
        await removePrefixes([config.keyPrefix]);
      }
    }
    const { env } = besideService('verify', current, stale, { retired: older });
    for (const file of receipts) {
      const run = await runCli(['receipt', 'verify', file], env);
      expect(run.code, `${run.stdout}${run.stderr}`).toBe(0);
      expect(JSON.parse(run.stdout).valid).toBe(true);
    }
  });

  it('keys generate makes no key in the data directory beside the service; --out names one on purpose', async () => {
    const current = testKey();
    const { dataDir, env } = besideService('generate', current, null);
    const run = await runCli(['keys', 'generate'], env);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`signs with key ${current.key.kid}`);
    expect(run.stderr).toContain('--out FILE');
    expect(existsSync(join(dataDir, 'keys', 'signing-key.pem'))).toBe(false);
    const out = join(temp.dir, 'generated.pem');
    const named = await runCli(['keys', 'generate', '--out', out], env);
    expect(named.code, named.stderr).toBe(0);
    expect(existsSync(out)).toBe(true);
  });

  it('keys adopt --yes does not adopt a stale data-directory key in place of the service key', async () => {
    const stale = testKey();
    const current = testKey();
    const { env, keyFile } = besideService('adopt', current, stale);
    const run = await runCli(['keys', 'adopt', '--yes'], env);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain('Nothing was changed');
    expect(run.stderr).toContain(`is ${stale.key.kid}, not it`);
    expect(run.stderr).toContain(keyFile);
    // Named on purpose, the key is adopted.
    const named = await runCli(['keys', 'adopt', '--yes'], { ...env, INTERLOCK_SIGNING_KEY_FILE: join(env.INTERLOCK_DATA_DIR ?? '', 'keys', 'signing-key.pem') });
    expect(named.code, named.stderr).toBe(0);
    expect(JSON.parse(named.stdout)).toMatchObject({ kid: stale.key.kid, changed: true });
  });
});
