// Rule: a signing key handed to openStores (or createInterlock) is checked before anything starts: it must be an
// Ed25519 key pair whose halves match and whose kid is its public key's id (keyIdOf), as signingKeyFromPem builds it.
// Any other key signs receipts that the service's own public keys call forged while the money still moves; such a
// key, or a value that is no key at all, is refused as invalid_config, naming what is wrong, before Redis is touched.
import { generateKeyPairSync } from 'node:crypto';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createInterlock, createMemoryTarget, InterlockError, openStores, signingKeyFromPem, verify, type Interlock, type SigningKey } from '../../src/interlock.js';
import { approvalTerms, refundProposal, removePrefixes, testConfig, testKey } from '../support/harness.js';

const logger = pino({ level: 'silent' });
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

/** Starts a service with `signingKey` and sends one refund: refused at start, or the landings and the receipt's verdict. */
async function startAndRefund(signingKey: unknown): Promise<{ refusedAtStart: unknown } | { landings: number; valid: boolean | null; problems: string[] }> {
  const config = testConfig({ workerId: 'signing-key-checked' });
  cleanups.push(() => removePrefixes([config.keyPrefix]));
  const target = createMemoryTarget({ tier: 1, sendTimeoutMs: config.sendTimeoutMs });
  target.world.set('payment:pi_1', { chargebacks: [], refunded_by_others: 0 });
  let service: Interlock;
  try {
    service = await createInterlock({ config, target, signingKey: signingKey as SigningKey, logger });
  } catch (error) {
    return { refusedAtStart: error };
  }
  cleanups.push(() => service.close());
  const terms = approvalTerms();
  await service.approvals.grant(terms);
  const { effectId } = await service.gate.submit(refundProposal({ approval: terms.id }));
  const verdict = verify(await service.gate.receipt(effectId), { publicKeys: service.stores.publicKeys });
  return { landings: target.landings.length, valid: verdict.valid, problems: verdict.problems.slice(0, 2) };
}

describe('the signing key given to createInterlock', () => {
  it('a key built from its PEM text with signingKeyFromPem starts, and its receipts verify with the service\'s public keys', async () => {
    expect(await startAndRefund(signingKeyFromPem(testKey().privatePem))).toEqual({ landings: 1, valid: true, problems: [] });
  });

  it("a key labelled with a kid that is not its public key's id is refused at start (it signs receipts its own service calls forged)", async () => {
    const result = await startAndRefund({ ...testKey().key, kid: 'receipts-2025' });
    expect(result).toMatchObject({ refusedAtStart: { code: 'invalid_config', message: expect.stringContaining('receipts-2025') } });
  });

  it('a key whose private half does not match its public half is refused at start', async () => {
    const result = await startAndRefund({ ...testKey().key, publicKey: testKey().key.publicKey });
    expect(result).toMatchObject({ refusedAtStart: { code: 'invalid_config' } });
  });

  it('a key that is not Ed25519 is refused at start', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const result = await startAndRefund({ kid: 'ec', privateKey, publicKey });
    expect(result).toMatchObject({ refusedAtStart: { code: 'invalid_config', message: expect.stringContaining('not Ed25519') } });
  });

  it('a value that is no key at all (a PEM text, an empty object, null) is refused as invalid_config, not a TypeError', async () => {
    const { privatePem } = testKey();
    for (const notAKey of [privatePem, {}, null]) {
      const result = await startAndRefund(notAKey);
      expect(result).toMatchObject({ refusedAtStart: { code: 'invalid_config', message: expect.stringMatching(/key/i) } });
      expect((result as { refusedAtStart: unknown }).refusedAtStart).toBeInstanceOf(InterlockError);
    }
  });

  it('openStores refuses such a key too, before it opens a connection', async () => {
    const config = testConfig({ redisUrl: 'redis://127.0.0.1:1' });
    await expect(openStores(config, { logger, signingKey: { ...testKey().key, kid: 'mine' } })).rejects.toMatchObject({ code: 'invalid_config' });
  });
});
