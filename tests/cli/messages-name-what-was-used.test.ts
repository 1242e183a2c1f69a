// Rule: what a command prints names what it was given and what it used, and carries what the next documented command
// needs. `receipt export` refused after a rotation names the key file it signed with (service.json's, not the data
// directory's old one) and does not send a person to "run it where the service runs" when it ran there; `interlock
// alerts` prints each alert's whole id, which `interlock alerts resolve` takes as printed; `effect show --request ID`
// for an unknown request names the request id it was given (quoted, cut, its control characters escaped).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approvalBody, bearer, refundBody, startRig, TOKENS, type Rig } from '../http/rig.js';
import { REDIS_URL, testKey } from '../support/harness.js';
import { alertsRig } from './alerts-rig.js';
import { runCli, tempDir } from './run-cli.js';

describe('receipt export after a rotation, its key taken from service.json', { timeout: 60_000 }, () => {
  const temp = tempDir('export-rotated-key');
  const before = testKey();
  const after = testKey();
  const dataDir = join(temp.dir, 'data');
  const oldKeyFile = join(dataDir, 'keys', 'signing-key.pem');
  const newKeyFile = join(temp.dir, 'signing-key-2.pem');
  let old: Rig;
  let effectId: string;

  beforeAll(async () => {
    old = await startRig({ worker: true, signingKey: before.key });
    old.target.world.set('payment:pi_rotated', { chargebacks: [], refunded_by_others: 0 });
    const approval = approvalBody({ scope: 'payment:pi_rotated' });
    expect((await request(old.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(approval)).status).toBe(201);
    const answer = await request(old.app).post('/v1/refunds?wait=10').set(bearer(TOKENS.support)).send(refundBody({ payment_intent: 'pi_rotated', approval: approval.id }));
    expect(answer.body.outcome).toBe('COMMITTED');
    effectId = answer.body.effect_id;
    // The data directory keeps the old key; the service now runs (this process stands for it) with the new key file.
    mkdirSync(join(dataDir, 'keys'), { recursive: true, mode: 0o700 });
    writeFileSync(oldKeyFile, before.privatePem, { mode: 0o600 });
    writeFileSync(newKeyFile, after.privatePem, { mode: 0o600 });
    writeFileSync(join(dataDir, 'service.json'), JSON.stringify({
      pid: process.pid, redis_url: REDIS_URL, key_prefix: old.stores.config.keyPrefix, signing_kid: after.key.kid, signing_key_file: newKeyFile,
    }), { mode: 0o600 });
  }, 60_000);

  afterAll(async () => {
    await old?.close();
    temp.remove();
  });

  it('names the key file it signed with, and says it is the service\'s', async () => {
    const env = { INTERLOCK_DATA_DIR: dataDir, REDIS_URL: undefined, INTERLOCK_KEY_PREFIX: undefined, STRIPE_SECRET_KEY: undefined, STRIPE_API_BASE: undefined };
    const refused = await runCli(['receipt', 'export', effectId], env);
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toContain(`with the signing key ${after.key.kid} (${newKeyFile})`);
    expect(refused.stderr).toContain(`It is the key of the service that wrote ${join(dataDir, 'service.json')}`);
    expect(refused.stderr).toContain(`set INTERLOCK_RETIRED_PUBLIC_KEYS_FILE to the file of its retired public keys, which holds ${before.key.kid}`);
    expect(refused.stderr).not.toContain(oldKeyFile);
    expect(refused.stderr).not.toContain('where the service runs');
  });
});

describe('interlock alerts, in text', { timeout: 60_000 }, () => {
  const { env, alerts } = alertsRig('alerts-whole-id');

  it('prints the whole alert id, and `alerts resolve` takes it as printed', async () => {
    const effectId = 'a99e246b7a95b3a6b0c7ef2f19f4026e087fb84975a2cec9d4d1964cc2f9598f';
    await alerts.raise({ kind: 'failed_after_landed', effectId, subject: 'payment:pi_line', centsAtStake: 2_000, currency: 'usd', refund: 're_line', disputes: [], sentence: 'Refund re_line was accepted, then failed at Stripe.', action: 'Tell the customer.' });
    const listed = await runCli(['alerts'], env);
    expect(listed.code, listed.stderr).toBe(0);
    const id = listed.stdout.trim().split(' ')[1] ?? '';
    expect(id).toBe(`failed_after_landed:${effectId}`);
    const resolved = await runCli(['alerts', 'resolve', id, '--by', 'lee'], env);
    expect(resolved.code, resolved.stderr).toBe(0);
  });
});

describe('effect show --request for a request nothing was proposed under', { timeout: 60_000 }, () => {
  const { env } = alertsRig('show-unknown-request');

  it('names the request id it was given', async () => {
    const shown = await runCli(['effect', 'show', '--request', 'case-pi_typo42'], env);
    expect(shown.code, shown.stderr).toBe(1);
    expect(shown.stderr).toMatch(/^No effect for request "case-pi_typo42" \(effect [0-9a-f]{64}\) in the Redis at /);
  });

  it('refuses a hostile one as no request id, never echoing it raw', async () => {
    const shown = await runCli(['effect', 'show', '--request', `case-\u001b[2J\u202e${'x'.repeat(500)}`], env);
    expect(shown.code, shown.stderr).toBe(2);
    expect(shown.stderr).toMatch(/^The request id is invalid \(--request: /);
    for (const raw of ['\u001b', '\u202e']) expect(shown.stderr).not.toContain(raw);
    expect(shown.stderr).not.toContain('x'.repeat(101));
  });
});
