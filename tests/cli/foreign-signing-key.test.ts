// A machine whose signing key is not the service's (an operator's checkout where `npm start` once ran, reading the
// service's Redis; a stale INTERLOCK_SIGNING_KEY_FILE) holds no key that signed the journal's entries. `receipt
// export` used to sign the heads with that key and exit 0, writing receipts the service's public key calls invalid,
// and `effect show` called the service's genuine receipt signed by an unknown key (valid: false, as a forgery).
// Export refuses instead, naming both keys; `effect show` says the receipt is not authenticated here (valid: null).
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMemoryTarget, openStores, startSender, type Sender, type Stores } from '../../src/interlock.js';
import { keyFilePath } from '../../src/keys/key-store.js';
import { approvalTerms, refundProposal, REDIS_URL, removePrefixes, testConfig, testKey } from '../support/harness.js';
import { runCli, tempDir } from './run-cli.js';

const service = testKey();
const laptop = testKey();
const temp = tempDir('foreign-signing-key');
let stores: Stores;
let sender: Sender;
let effectId: string;
let env: Record<string, string>;

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
  // The laptop's data directory holds a key of its own, as `npm start` leaves one.
  const dataDir = join(temp.dir, 'laptop');
  const keyFile = keyFilePath({ dataDir, signingKeyFile: null });
  mkdirSync(dirname(keyFile), { recursive: true });
  writeFileSync(keyFile, laptop.privatePem, { mode: 0o600 });
  env = { REDIS_URL, INTERLOCK_KEY_PREFIX: stores.config.keyPrefix, INTERLOCK_DATA_DIR: dataDir };
});

afterAll(async () => {
  await sender?.close();
  await stores?.close();
  await removePrefixes([stores.config.keyPrefix]);
  temp.remove();
});

describe("a machine whose signing key did not sign the journal's entries", { timeout: 90_000 }, () => {
  it("receipt export refuses in one line naming both keys (exit 2, nothing written), instead of heads the service's public key calls invalid", async () => {
    const out = join(temp.dir, 'exported.json');
    const run = await runCli(['receipt', 'export', effectId, '--out', out], env);
    expect(run.code, run.stderr).toBe(2);
    const lines = run.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(service.key.kid);
    expect(lines[0]).toContain(laptop.key.kid);
    expect(lines[0]).toContain('nothing was exported');
    expect(existsSync(out)).toBe(false);
  });

  it("effect show reads the service's genuine receipt as not authenticated here (valid: null, saying why), not as signed by an unknown key", async () => {
    const shown = await runCli(['effect', 'show', effectId], env);
    expect(shown.code, shown.stderr).toBe(0);
    const effect = JSON.parse(shown.stdout) as { verification: { valid: boolean | null; problems: string[]; unchecked: string[] } };
    expect(effect.verification.valid).toBeNull();
    expect(effect.verification.problems).toEqual([]);
    expect(effect.verification.unchecked).toEqual([expect.stringContaining(`signed with key ${service.key.kid}`)]);
    expect(effect.verification.unchecked[0]).toContain(laptop.key.kid);
  });
});
