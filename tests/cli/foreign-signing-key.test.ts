// A machine whose signing key is not the service's (an operator's checkout where `npm start` once ran, reading the
// service's Redis; a stale INTERLOCK_SIGNING_KEY_FILE) holds no key that signed the journal's entries. `receipt
// export` used to sign the heads with that key and exit 0, writing receipts the service's public key calls invalid,
// and `effect show` called the service's genuine receipt signed by an unknown key (valid: false, as a forgery).
// Export refuses instead, naming both keys; `effect show` says the receipt is not authenticated here (valid: null).
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMemoryTarget, openStores, startSender, type Sender, type Stores } from '../../src/interlock.js';
import { keyFilePath } from '../../src/keys/key-store.js';
import { approvalTerms, refundProposal, REDIS_URL, removePrefixes, testConfig, testKey } from '../support/harness.js';
import { spawnWorker } from '../pipeline/pipeline-support.js';
import { runCli, tempDir } from './run-cli.js';
import { lastEffect, serveGivenSandbox, shell, type GivenSandboxServe } from './serve-given-sandbox.js';

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

// Rule: every entry a command records verifies with the service's keys. A command that writes into the journal of the
// running service its data directory's service.json names signs with that service's key (service.json names its key
// id and key file): never with a key it makes for itself, as the printed Try-it lines did against a service given
// INTERLOCK_SIGNING_KEY_FILE (or after a rotation moved the data directory's key away), leaving a refund that moved
// money with a receipt the service calls signed by an unknown key. Unable to read that key file, it is refused (exit
// 2) naming INTERLOCK_SIGNING_KEY_FILE, having recorded nothing.
describe('commands run against a running service that signs with INTERLOCK_SIGNING_KEY_FILE', { timeout: 150_000 }, () => {
  const serviceKey = testKey();
  const stale = testKey();
  const serviceKeyFile = join(temp.dir, 'service-key.pem');
  const dataDir = join(temp.dir, 'service-data');
  // The Stripe settings exported, so that what these lines are judged on is only the key they sign with.
  const terminal = () => ({ STRIPE_SECRET_KEY: 'sk_test_sandbox', STRIPE_API_BASE: running.sandbox.url });
  let running: GivenSandboxServe;

  beforeAll(async () => {
    writeFileSync(serviceKeyFile, serviceKey.privatePem, { mode: 0o600 });
    running = await serveGivenSandbox(dataDir, { INTERLOCK_SIGNING_KEY_FILE: serviceKeyFile });
  }, 60_000);

  afterAll(async () => {
    await running?.stop();
  });

  async function receiptOf(effectId: string): Promise<{ valid: boolean | null; kids: string[] }> {
    const auth = { authorization: `Bearer ${running.facts.tokens.auditor ?? ''}` };
    const effect = (await (await fetch(`${running.facts.api_url}/v1/effects/${effectId}`, { headers: auth })).json()) as { receipt_valid: boolean | null };
    const receipt = (await (await fetch(`${running.facts.api_url}/v1/effects/${effectId}/receipt`, { headers: auth })).json()) as { entries: { kid?: string; sig: string | null }[] };
    return { valid: effect.receipt_valid, kids: [...new Set(receipt.entries.filter((entry) => entry.sig !== null).map((entry) => entry.kid ?? '-'))] };
  }

  it("the printed Try-it lines sign the refund's PROPOSED entry with the service's key: its receipt is valid to the service, and no key is made in the data directory", async () => {
    const ran = await shell(running.facts.try.join(' && '), terminal());
    expect(ran.code, ran.stderr).toBe(0);
    const refund = lastEffect(ran.stdout);
    expect(refund.outcome).toBe('COMMITTED');
    expect(await receiptOf(refund.effectId)).toEqual({ valid: true, kids: [serviceKey.key.kid] });
    expect(existsSync(keyFilePath({ dataDir, signingKeyFile: null }))).toBe(false);
  });

  it("with a stale key left in the data directory (a rotation's old one), a refund is still signed with the service's key", async () => {
    const staleFile = keyFilePath({ dataDir, signingKeyFile: null });
    mkdirSync(dirname(staleFile), { recursive: true });
    writeFileSync(staleFile, stale.privatePem, { mode: 0o600 });
    const lines = running.facts.try.map((line) => line.replaceAll('case-$PI', 'stale-$PI'));
    const ran = await shell(lines.join(' && '), terminal());
    expect(ran.code, ran.stderr).toBe(0);
    const refund = lastEffect(ran.stdout);
    expect(refund.outcome).toBe('COMMITTED');
    expect(await receiptOf(refund.effectId)).toEqual({ valid: true, kids: [serviceKey.key.kid] });
    rmSync(staleFile);
  });

  it('a refund that cannot read the key file service.json names is refused (exit 2) naming INTERLOCK_SIGNING_KEY_FILE; nothing is recorded and no key is made', async () => {
    const hidden = `${serviceKeyFile}.elsewhere`;
    renameSync(serviceKeyFile, hidden);
    try {
      const run = await runCli(['refund', '--request', 'case-unreadable-key', '--payment-intent', 'pi_unreadable_key', '--amount', '100', '--approval', 'ap_unreadable_key'], { ...terminal(), INTERLOCK_DATA_DIR: dataDir, REDIS_URL: undefined, INTERLOCK_KEY_PREFIX: undefined });
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr).toContain('INTERLOCK_SIGNING_KEY_FILE');
      expect(run.stderr).toContain(serviceKey.key.kid);
      expect(run.stderr).toContain('nothing was recorded');
      expect(existsSync(keyFilePath({ dataDir, signingKeyFile: null }))).toBe(false);
      const shown = await runCli(['effect', 'show', '--request', 'case-unreadable-key'], { INTERLOCK_DATA_DIR: dataDir, REDIS_URL: undefined, INTERLOCK_KEY_PREFIX: undefined });
      expect(shown.code).not.toBe(0);
    } finally {
      renameSync(hidden, serviceKeyFile);
    }
  });

  // Rule: so while that service is stopped (a restart, the rotation's step 3, a crash): its Redis still takes the
  // entry and the service sends it when it starts again, so a refund recorded meanwhile is signed with the key file its
  // service.json names, or refused (exit 2) when that file is unreadable; never with a key the command makes. Runs
  // last: it stops the service.
  it('while the service is stopped, a refund is signed with the key file its service.json names (valid once the restarted service sends it), or refused (exit 2) when it cannot read it; no key is made', async () => {
    const paid = await shell(`${running.facts.try.slice(0, 2).join(' && ')} && echo "PI=$PI"`, terminal());
    expect(paid.code, paid.stderr).toBe(0);
    const pi = /PI=(\S+)/.exec(paid.stdout)?.[1] ?? '';
    await running.service.stop();
    const facts = JSON.parse(readFileSync(join(dataDir, 'service.json'), 'utf8')) as { stopped_at?: string; key_prefix: string };
    expect(facts.stopped_at).toBeDefined();
    const commandEnv = { ...terminal(), INTERLOCK_DATA_DIR: dataDir, REDIS_URL: undefined, INTERLOCK_KEY_PREFIX: undefined };
    const refund = ['refund', '--request', `stopped-${pi}`, '--payment-intent', pi, '--amount', '2000', '--approval', `ap_${pi}`];
    const hidden = `${serviceKeyFile}.elsewhere`;
    renameSync(serviceKeyFile, hidden);
    let refused;
    try {
      refused = await runCli(refund, commandEnv);
    } finally {
      renameSync(hidden, serviceKeyFile);
    }
    expect(refused.code, refused.stdout + refused.stderr).toBe(2);
    expect(refused.stderr).toContain('INTERLOCK_SIGNING_KEY_FILE');
    expect(refused.stderr).toContain('nothing was recorded');
    const recorded = await runCli(refund, commandEnv);
    expect([0, 4], recorded.stdout + recorded.stderr).toContain(recorded.code);
    expect(existsSync(keyFilePath({ dataDir, signingKeyFile: null }))).toBe(false);
    const { effectId } = JSON.parse(recorded.stdout) as { effectId: string };
    // The service started again as it was (same key file, Redis and prefix) sends the refund the command recorded.
    const again = spawnWorker({ REDIS_URL, INTERLOCK_KEY_PREFIX: facts.key_prefix, INTERLOCK_DATA_DIR: dataDir, STRIPE_API_BASE: running.sandbox.url, STRIPE_SECRET_KEY: 'sk_test_sandbox', INTERLOCK_SIGNING_KEY_FILE: serviceKeyFile, INTERLOCK_UNSAFE_DURABILITY: '1' }, ['serve', '--roles', 'worker,api', '--port', '0']);
    try {
      await again.ready;
      let settled: { outcome: string | null; receipt_valid: boolean | null } = { outcome: null, receipt_valid: null };
      const giveUp = Date.now() + 30_000;
      while (settled.outcome === null && Date.now() < giveUp) {
        const now = JSON.parse(readFileSync(join(dataDir, 'service.json'), 'utf8')) as { api_url: string; tokens: Record<string, string>; stopped_at?: string };
        const response = now.stopped_at === undefined ? await fetch(`${now.api_url}/v1/effects/${effectId}`, { headers: { authorization: `Bearer ${now.tokens.auditor ?? ''}` } }).catch(() => null) : null;
        if (response?.ok === true) settled = (await response.json()) as typeof settled;
        if (settled.outcome === null) await new Promise((resolve) => setTimeout(resolve, 300));
      }
      expect(settled).toMatchObject({ outcome: 'COMMITTED', receipt_valid: true });
    } finally {
      await again.stop();
    }
  });
});
