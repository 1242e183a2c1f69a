// A command that only reads (effect show, alerts, inbox list and show, approvals describe, case show, receipt export)
// never creates a signing key. Run on an operator's laptop against the service's Redis, it used to write a new key
// into its data directory and then judge the service's receipts against that key, so every one of them read as
// signed by an unknown key (valid: false, as a forgery would). Without the service's key a receipt is checked but
// not authenticated (valid: null); with it, it verifies. `receipt export` signs the heads it writes, so it needs the
// service's key and refuses without it.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMemoryTarget, openStores, startSender, type Sender, type Stores } from '../../src/interlock.js';
import { keyFilePath } from '../../src/keys/key-store.js';
import { verify } from '../../src/core/verify.js';
import { approvalTerms, refundProposal, REDIS_URL, removePrefixes, testConfig, testKey } from '../support/harness.js';
import { runCli, tempDir } from './run-cli.js';

const service = testKey();
const temp = tempDir('read-only-key');
let stores: Stores;
let sender: Sender;
let effectId: string;

beforeAll(async () => {
  stores = await openStores(testConfig(), { logger: pino({ level: 'silent' }), signingKey: service.key });
  const target = createMemoryTarget({ tier: 1, sendTimeoutMs: 1_000 });
  target.world.set('payment:pi_1', { chargebacks: [], refunded_by_others: 0 });
  sender = await startSender(stores, target);
  const terms = approvalTerms();
  await stores.approvals.grant(terms);
  const answer = await sender.gate.submit(refundProposal({ approval: terms.id }));
  expect(answer.outcome).toBe('COMMITTED');
  effectId = answer.effectId;
});

afterAll(async () => {
  await sender?.close();
  await stores?.close();
  await removePrefixes([stores.config.keyPrefix]);
  temp.remove();
});

describe('commands that only read, on a machine without the service\'s signing key', { timeout: 90_000 }, () => {
  it('create no key, and read a receipt as checked but not authenticated; with the service\'s key it verifies', async () => {
    const dataDir = join(temp.dir, 'laptop');
    const env = { REDIS_URL, INTERLOCK_KEY_PREFIX: stores.config.keyPrefix, INTERLOCK_DATA_DIR: dataDir };
    const keyFile = keyFilePath({ dataDir, signingKeyFile: null });
    const shown = await runCli(['effect', 'show', effectId], env);
    expect(shown.code, shown.stderr).toBe(0);
    const effect = JSON.parse(shown.stdout) as { outcome: string; verification: { valid: boolean | null; problems: string[] } };
    expect(effect.outcome).toBe('COMMITTED');
    expect(effect.verification.valid).toBeNull();
    expect(effect.verification.problems.join(' ')).not.toMatch(/unknown key/);
    for (const args of [['alerts'], ['inbox', 'list'], ['approvals', 'describe', 'ap_none'], ['case', 'show', 'case-none'], ['receipt', 'export', effectId]]) {
      await runCli(args, env);
      expect(existsSync(keyFile), `${args.join(' ')} left a key file`).toBe(false);
    }
    mkdirSync(dirname(keyFile), { recursive: true });
    writeFileSync(keyFile, service.privatePem, { mode: 0o600 });
    const verified = JSON.parse((await runCli(['effect', 'show', effectId], env)).stdout) as { verification: { valid: boolean | null } };
    expect(verified.verification.valid).toBe(true);
  });

  it("receipt export refuses in one line (exit 2, nothing written) without the service's key, whose head it would sign with a key no auditor holds; with the key, what it writes verifies with the service's public key", async () => {
    const dataDir = join(temp.dir, 'exporter');
    const env = { REDIS_URL, INTERLOCK_KEY_PREFIX: stores.config.keyPrefix, INTERLOCK_DATA_DIR: dataDir };
    const out = join(temp.dir, 'exported.json');
    const refused = await runCli(['receipt', 'export', effectId, '--out', out], env);
    expect(refused.code).toBe(2);
    expect(refused.stderr.trim().split('\n')).toEqual([expect.stringContaining('INTERLOCK_SIGNING_KEY_FILE')]);
    expect(existsSync(out)).toBe(false);
    // Nor is a --dir made for receipts it will not write.
    const dir = join(temp.dir, 'exports');
    expect((await runCli(['receipt', 'export', effectId, '--dir', dir], env)).code).toBe(2);
    expect(existsSync(dir)).toBe(false);
    const keyFile = join(temp.dir, 'service.pem');
    writeFileSync(keyFile, service.privatePem, { mode: 0o600 });
    const exported = await runCli(['receipt', 'export', effectId, '--out', out], { ...env, INTERLOCK_SIGNING_KEY_FILE: keyFile });
    expect(exported.code, exported.stderr).toBe(0);
    expect(verify(JSON.parse(readFileSync(out, 'utf8')), { publicKeys: service.publicKeys })).toMatchObject({ valid: true, problems: [] });
  });

  it("effect show on a machine that only verifies (retired public keys, no signing key) authenticates the receipt with them, instead of calling it signed by an unknown key", async () => {
    const retired = join(temp.dir, 'retired.pem');
    writeFileSync(retired, service.publicPem, { mode: 0o644 });
    const env = { REDIS_URL, INTERLOCK_KEY_PREFIX: stores.config.keyPrefix, INTERLOCK_DATA_DIR: join(temp.dir, 'verifier'), INTERLOCK_RETIRED_PUBLIC_KEYS_FILE: retired };
    const shown = await runCli(['effect', 'show', effectId], env);
    expect(shown.code, shown.stderr).toBe(0);
    expect((JSON.parse(shown.stdout) as { verification: unknown }).verification).toMatchObject({ valid: true, problems: [] });
  });
});
