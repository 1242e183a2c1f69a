// After the signing key is rotated, the service still calls the receipts its old key signed valid: `effect show`,
// GET /v1/effects/:id's receipt_valid and the page verify with the current key and the retired ones
// (INTERLOCK_RETIRED_PUBLIC_KEYS_FILE), and GET /v1/keys lists each with its status. A retired-keys file the service
// cannot use (missing, not public keys, a private key) is refused at start, saying what to put there.
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { publicKeySet, verify } from '../../src/interlock.js';
import { verifyingKeys } from '../../src/keys/key-store.js';
import { REPO, runCli, tempDir } from '../cli/run-cli.js';
import { spawnServe } from '../facts/facts-rig.js';
import { pageSession } from '../http/page-sessions.js';
import { approvalBody, bearer, refundBody, startRig, TOKENS, type Rig } from '../http/rig.js';
import { REDIS_URL, removePrefixes, testKey } from '../support/harness.js';

const temp = tempDir('rotation');
const RETIRED_SETTING = 'INTERLOCK_RETIRED_PUBLIC_KEYS_FILE';

const before = testKey();
const after = testKey();
const retiredFile = join(temp.dir, 'retired.pem');
const afterKeyFile = join(temp.dir, 'after.pem');
writeFileSync(retiredFile, before.publicPem);
writeFileSync(afterKeyFile, after.privatePem, { mode: 0o600 });

afterAll(() => temp.remove());

describe('a receipt signed before a rotation', { timeout: 60_000 }, () => {
  // `old` signed the effect with the key used before the rotation; `rotated` and `forgetful` read the same journal
  // signing with the new key, the first knowing the old public key as retired, the second not.
  let old: Rig;
  let rotated: Rig;
  let forgetful: Rig;
  let effectId: string;

  beforeAll(async () => {
    old = await startRig({ worker: true, signingKey: before.key });
    old.target.world.set('payment:pi_rotate', { chargebacks: [], refunded_by_others: 0 });
    const approval = approvalBody({ scope: 'payment:pi_rotate' });
    expect((await request(old.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(approval)).status).toBe(201);
    const answer = await request(old.app).post('/v1/refunds?wait=10').set(bearer(TOKENS.support)).send(refundBody({ payment_intent: 'pi_rotate', approval: approval.id }));
    expect(answer.body.outcome).toBe('COMMITTED');
    effectId = answer.body.effect_id;
    const keyPrefix = old.stores.config.keyPrefix;
    rotated = await startRig({ signingKey: after.key, config: { keyPrefix, retiredPublicKeysFile: retiredFile } });
    forgetful = await startRig({ signingKey: after.key, config: { keyPrefix } });
  }, 60_000);

  afterAll(async () => {
    // The rigs share one prefix: whichever closes first deletes its keys, so the others find nothing left to delete.
    await forgetful?.close();
    await rotated?.close();
    await old?.close();
  });

  it('is valid in GET /v1/effects/:id when its key is retired, and invalid to a service that was not told the retired key', async () => {
    const known = await request(rotated.app).get(`/v1/effects/${effectId}`).set(bearer(TOKENS.auditor));
    expect(known.status).toBe(200);
    expect(known.body.receipt_valid).toBe(true);
    const unknown = await request(forgetful.app).get(`/v1/effects/${effectId}`).set(bearer(TOKENS.auditor));
    expect(unknown.body.receipt_valid).toBe(false);
  });

  it('GET /v1/keys lists the current key, then the retired one, each with its status; together they verify the receipt', async () => {
    const keys = await request(rotated.app).get('/v1/keys').set(bearer(TOKENS.auditor));
    expect(keys.status).toBe(200);
    expect(keys.body.keys).toEqual([
      { kid: after.key.kid, pem: after.publicPem, status: 'current' },
      { kid: before.key.kid, pem: before.publicPem, status: 'retired' },
    ]);
    const receipt = await request(rotated.app).get(`/v1/effects/${effectId}/receipt`).set(bearer(TOKENS.auditor));
    expect(verify(receipt.body, { publicKeys: publicKeySet(keys.body.keys.map((key: { pem: string }) => key.pem)) }).valid).toBe(true);
    expect((await request(forgetful.app).get('/v1/keys').set(bearer(TOKENS.auditor))).body.keys).toEqual([{ kid: after.key.kid, pem: after.publicPem, status: 'current' }]);
  });

  it('the page verifies it with the retired key: each entry signed by it shows as verified, and the receipt as valid', async () => {
    const page = await request(rotated.app).get(`/ui/effects/${effectId}`).set('cookie', (await pageSession(rotated.app, TOKENS.auditor)).cookie);
    expect(page.status).toBe(200);
    expect(page.text).toContain('Receipt verifies');
    expect(page.text).toContain(`signed, verified</span> <small>(key <code>${before.key.kid}</code>)`);
    expect(page.text).not.toContain('signed with an unknown key');
    const unknown = await request(forgetful.app).get(`/ui/effects/${effectId}`).set('cookie', (await pageSession(forgetful.app, TOKENS.auditor)).cookie);
    expect(unknown.text).toContain('signed with an unknown key');
  });

  it('effect show verifies it with INTERLOCK_RETIRED_PUBLIC_KEYS_FILE, and without it says it could not authenticate it, naming the key (valid null, not a forgery)', async () => {
    const env = { REDIS_URL, INTERLOCK_KEY_PREFIX: rotated.stores.config.keyPrefix, INTERLOCK_DATA_DIR: join(temp.dir, 'data'), INTERLOCK_SIGNING_KEY_FILE: afterKeyFile };
    const [known, unknown] = await Promise.all([runCli(['effect', 'show', effectId], { ...env, [RETIRED_SETTING]: retiredFile }), runCli(['effect', 'show', effectId], env)]);
    expect(known.code, known.stderr).toBe(0);
    const shown = JSON.parse(known.stdout) as { outcome: string; verification: { valid: boolean; problems: string[] } };
    expect(shown.outcome).toBe('COMMITTED');
    expect(shown.verification).toMatchObject({ valid: true, problems: [] });
    const unverified = JSON.parse(unknown.stdout) as { verification: { valid: boolean | null; problems: string[]; unchecked: string[] } };
    expect(unverified.verification.valid).toBeNull();
    expect(unverified.verification.problems).toEqual([]);
    expect(unverified.verification.unchecked.join(' ')).toContain(`signed with key ${before.key.kid}`);
    expect(unverified.verification.unchecked.join(' ')).toContain(RETIRED_SETTING);
  });

  // Rule: an error says what to do. After a rotation, `receipt export` run with the service's new key but not its
  // retired keys is refused (its heads would not verify), naming the missing INTERLOCK_RETIRED_PUBLIC_KEYS_FILE as well
  // as the other possibility, a key that is not the service's; never only "the new key is not the service's".
  it('receipt export with the new key but no retired keys is refused naming INTERLOCK_RETIRED_PUBLIC_KEYS_FILE; with them it exports', async () => {
    const env = { REDIS_URL, INTERLOCK_KEY_PREFIX: rotated.stores.config.keyPrefix, INTERLOCK_DATA_DIR: join(temp.dir, 'data'), INTERLOCK_SIGNING_KEY_FILE: afterKeyFile };
    const out = join(temp.dir, 'exported-after-rotation.json');
    const refused = await runCli(['receipt', 'export', effectId, '--out', out], env);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`set ${RETIRED_SETTING} to the file of its retired public keys, which holds ${before.key.kid}`);
    expect(refused.stderr).toContain('if it is not, set INTERLOCK_SIGNING_KEY_FILE');
    const exported = await runCli(['receipt', 'export', effectId, '--out', out], { ...env, [RETIRED_SETTING]: retiredFile });
    expect(exported.code, exported.stderr).toBe(0);
  });

  it('receipt verify without --public-key checks it with the local signing key and the retired ones, as the service does', async () => {
    const receipt = await request(rotated.app).get(`/v1/effects/${effectId}/receipt`).set(bearer(TOKENS.auditor));
    const file = join(temp.dir, 'receipt.json');
    writeFileSync(file, JSON.stringify(receipt.body));
    const env = { INTERLOCK_DATA_DIR: join(temp.dir, 'data'), INTERLOCK_SIGNING_KEY_FILE: afterKeyFile };
    const [known, unknown] = await Promise.all([runCli(['receipt', 'verify', file], { ...env, [RETIRED_SETTING]: retiredFile }), runCli(['receipt', 'verify', file], env)]);
    expect(known.code, known.stderr).toBe(0);
    expect(JSON.parse(known.stdout)).toMatchObject({ valid: true, publicKeys: `${afterKeyFile}, ${retiredFile}` });
    // Without the retired key, the entries it signed are not authenticated here (valid null, naming it), never forged.
    expect(unknown.code, unknown.stderr).toBe(3);
    expect(JSON.parse(unknown.stdout)).toMatchObject({ valid: null, problems: [], unchecked: [expect.stringContaining(`signed with key ${before.key.kid}`)] });
    const secret = join(temp.dir, 'verify-secret.pem');
    writeFileSync(secret, before.privatePem);
    const refused = await runCli(['receipt', 'verify', file], { ...env, [RETIRED_SETTING]: secret });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`Cannot use ${afterKeyFile}, ${secret} to check signatures: ${RETIRED_SETTING} (${secret}) holds a private key.`);
  });
});

describe('serve after a rotation', () => {
  it('logs, as it starts, the key id it signs with and those it verifies as retired', { timeout: 60_000 }, async () => {
    const keyPrefix = `tk${randomBytes(6).toString('hex')}`;
    // The shared Redis keeps nothing on disk: the opt-out lets the api role start.
    const served = await spawnServe(['--roles', 'api', '--port', '0'], { REDIS_URL, INTERLOCK_KEY_PREFIX: keyPrefix, INTERLOCK_UNSAFE_DURABILITY: '1', INTERLOCK_DATA_DIR: join(temp.dir, 'serve-data'), INTERLOCK_SIGNING_KEY_FILE: afterKeyFile, [RETIRED_SETTING]: retiredFile });
    try {
      const line = JSON.parse(served.lines.find((text) => text.includes('interlock serving')) ?? '{}') as { kid?: string; retiredKids?: string[] };
      expect(line).toMatchObject({ kid: after.key.kid, retiredKids: [before.key.kid] });
    } finally {
      served.child.kill('SIGTERM');
      await served.exited;
      await removePrefixes([keyPrefix]);
    }
  });
});

describe('INTERLOCK_RETIRED_PUBLIC_KEYS_FILE', () => {
  const current = testKey();
  const at = (name: string, text: string) => {
    const path = join(temp.dir, name);
    writeFileSync(path, text);
    return path;
  };

  it('holds every public key of a bundle (`cat old.pem older.pem`), by key id, after the current key', () => {
    const older = testKey();
    const keys = verifyingKeys(current.key, at('bundle.pem', `${before.publicPem}${older.publicPem}`));
    expect([...keys.keys()]).toEqual([current.key.kid, before.key.kid, older.key.kid]);
    expect([...verifyingKeys(current.key, null).keys()]).toEqual([current.key.kid]);
  });

  it('is refused, naming the file, what is wrong and what to put there, when it is missing, holds no public key, or holds a private key', () => {
    const missing = join(temp.dir, 'nowhere.pem');
    expect(() => verifyingKeys(current.key, missing)).toThrow(`${RETIRED_SETTING} (${missing}) cannot be read: no such file or directory. It holds the public half of each key this service signed with before (\`npx interlock keys public --key OLD-KEY.pem >> ${missing}\`), or unset it. Nothing was changed.`);
    const garbage = at('garbage.pem', 'not a key\n');
    expect(() => verifyingKeys(current.key, garbage)).toThrow(`${RETIRED_SETTING} (${garbage}) holds no usable Ed25519 public keys (`);
    const cut = at('cut.pem', `${before.publicPem}${after.publicPem.slice(0, 60)}`);
    expect(() => verifyingKeys(current.key, cut)).toThrow('PEM block 2 of 2 has no END line matching its BEGIN line');
    const secret = at('secret.pem', `${before.publicPem}${after.privatePem}`);
    expect(() => verifyingKeys(current.key, secret)).toThrow(`${RETIRED_SETTING} (${secret}) holds a private key. Replace it with its public half and keep the private key elsewhere`);
  });

  it('that is empty (what `keys public --key TYPO >> FILE` leaves) or holds a key without its BEGIN and END lines is said as such, not in OpenSSL\'s words', () => {
    const empty = at('empty.pem', '');
    expect(() => verifyingKeys(current.key, empty)).toThrow(`${RETIRED_SETTING} (${empty}) holds no usable Ed25519 public keys (The text is empty; a public key is the lines from -----BEGIN PUBLIC KEY----- to -----END PUBLIC KEY----- that \`npx interlock keys public\` prints).`);
    const bare = at('bare.pem', `${before.publicPem.split('\n')[1] ?? ''}\n`);
    expect(() => verifyingKeys(current.key, bare)).toThrow(`${RETIRED_SETTING} (${bare}) holds no usable Ed25519 public keys (The text holds no PEM block (no -----BEGIN PUBLIC KEY----- line);`);
    for (const path of [empty, bare]) expect(() => verifyingKeys(current.key, path)).not.toThrow(/routines|DECODER/);
  });

  it('is used by receipt verify on a machine with no signing key of its own, and one that cannot be used is exit 2, not "no key configured"', async () => {
    const fixture = join(REPO, 'tests', 'fixtures', 'receipts', 'failed-refund.json');
    const retiredOnly = join(REPO, 'tests', 'fixtures', 'receipts', 'public-key.pem');
    const env = { INTERLOCK_DATA_DIR: join(temp.dir, 'no-key-data') };
    const known = await runCli(['receipt', 'verify', fixture], { ...env, [RETIRED_SETTING]: retiredOnly });
    expect(known.code, known.stderr).toBe(0);
    expect(JSON.parse(known.stdout)).toMatchObject({ valid: true, publicKeys: retiredOnly });
    const missing = join(temp.dir, 'verify-nowhere.pem');
    const refused = await runCli(['receipt', 'verify', fixture], { ...env, [RETIRED_SETTING]: missing });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`Cannot use ${missing} to check signatures: ${RETIRED_SETTING} (${missing}) cannot be read: no such file or directory.`);
  });

  it('that cannot be used stops `serve` at start (exit 2) with the same words, before it listens', async () => {
    const secret = at('serve-secret.pem', after.privatePem);
    const prefix = `tr${randomBytes(6).toString('hex')}`;
    onTestFinished(() => removePrefixes([prefix]));
    const run = await runCli(['serve', '--roles', 'api', '--port', '0'], { REDIS_URL, INTERLOCK_LOG_LEVEL: 'info', INTERLOCK_KEY_PREFIX: prefix, INTERLOCK_DATA_DIR: join(temp.dir, 'serve-data'), [RETIRED_SETTING]: secret }, { timeoutMs: 20_000 });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(`${RETIRED_SETTING} (${secret}) holds a private key.`);
    // Nothing started before the refusal: no embedded Stripe sandbox (nor a private redis-server) came up first.
    expect(`${run.stdout}${run.stderr}`).not.toContain('stripe sandbox listening');
  });
});
