// Rule: `effect show` checks every signature by a key this machine holds (its signing key's, the retired ones),
// whatever other keys sign entries of the chain: an entry a held key signed that does not verify is invalid (valid
// false, naming it), as `receipt verify` and the API's receipt_valid say. Only a chain whose every failing signature is
// by a key this machine does not hold is valid null, and its note says those signatures were not checked here.
// An attacker with write access to Redis (not to the key) changed an entry under the service's signature and re-sealed
// the last entry with a key of their own: `effect show` used to verify with no key at all as soon as one entry named a
// key it did not hold, and showed that forgery as "checked but not authenticated" (valid null, no problem, exit 0).
// Rule: an effect whose journal does not verify (valid false) exits 1 whatever its outcome, saying so on stderr; it used
// to exit as its outcome did, 0 for a committed refund.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeStored } from '../../src/core/stored-form.js';
import { entryHash, sealAlone } from '../../src/core/entries.js';
import { createMemoryTarget, openStores, startSender, verify, type Sender, type Stores } from '../../src/interlock.js';
import { createKeys } from '../../src/redis/keys.js';
import { approvalTerms, refundProposal, REDIS_URL, removePrefixes, testConfig, testKey } from '../support/harness.js';
import { runCli, tempDir } from './run-cli.js';

const service = testKey();
const attacker = testKey();
const temp = tempDir('effect-show-held-key');
const partition = 'payment:pi_1';
let stores: Stores;
let sender: Sender;
let redis: Redis;
let env: Record<string, string>;

type Shown = { verification: { valid: boolean | null; problems: string[]; unchecked: string[] } };

beforeAll(async () => {
  stores = await openStores(testConfig(), { logger: pino({ level: 'silent' }), signingKey: service.key });
  const target = createMemoryTarget({ tier: 1, sendTimeoutMs: 1_000 });
  target.world.set(partition, { chargebacks: [], refunded_by_others: 0 });
  sender = await startSender(stores, target);
  redis = new Redis(REDIS_URL);
  // The service's machine: its key file, named for the command.
  const keyFile = join(temp.dir, 'service.pem');
  writeFileSync(keyFile, service.privatePem, { mode: 0o600 });
  env = { REDIS_URL, INTERLOCK_KEY_PREFIX: stores.config.keyPrefix, INTERLOCK_DATA_DIR: join(temp.dir, 'data'), INTERLOCK_SIGNING_KEY_FILE: keyFile };
});

afterAll(async () => {
  await sender?.close();
  await stores?.close();
  redis?.disconnect();
  await removePrefixes([stores.config.keyPrefix]);
  temp.remove();
});

/** A committed refund's effect id. */
async function committedRefund(): Promise<string> {
  const terms = approvalTerms();
  await stores.approvals.grant(terms);
  const answer = await sender.gate.submit(refundProposal({ approval: terms.id }));
  expect(answer.outcome).toBe('COMMITTED');
  return answer.effectId;
}

/**
 * What an attacker with write access to Redis does to an effect's journal: each entry changed by `change` (its index,
 * its plain fields), the chain linked again and its last entry re-sealed with the attacker's key.
 */
async function resealed(effectId: string, change: (entry: Record<string, unknown>, index: number) => Record<string, unknown>): Promise<void> {
  const keys = createKeys(stores.config.keyPrefix);
  const entriesKey = keys.entries(partition, effectId);
  let previousAt: number | null = null;
  const plain = ((await redis.get(entriesKey)) ?? '').split('\n').map((line) => {
    const entry = JSON.parse(decodeStored(line, previousAt)) as Record<string, unknown>;
    previousAt = entry.at as number;
    return entry;
  });
  expect(plain.map((entry) => entry.kind)).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED']);
  let prev: string | null = null;
  const rebuilt = plain.map((entry, index) => {
    const last = index === plain.length - 1;
    const next: Record<string, unknown> = { ...change(entry, index), ...(last ? { kid: attacker.key.kid } : {}) };
    const hash = entryHash({ ...next, effectId, prev });
    if (last) next.sig = sealAlone(hash, attacker.key);
    prev = hash;
    return next;
  });
  await redis.set(entriesKey, rebuilt.map((entry) => JSON.stringify(entry)).join('\n'));
  await redis.hset(keys.state(partition, effectId), 'head', prev ?? '');
}

describe('effect show, on the machine that holds the service\'s key', { timeout: 60_000 }, () => {
  it('calls an entry changed under the service\'s signature invalid, naming it, though the last entry is re-sealed with a key it does not hold', async () => {
    const effectId = await committedRefund();
    // The refund said to have been asked for by another agent: covered by the service's signature on DISPATCHED.
    await resealed(effectId, (entry, index) => (index === 0 ? { ...entry, agent: 'someone-else' } : entry));
    // The service's own view (all its keys) and the command's agree.
    const receipt = await stores.journal.receipt(effectId);
    expect(verify(JSON.parse(JSON.stringify(receipt)), { publicKeys: stores.publicKeys }).valid).toBe(false);
    const shown = await runCli(['effect', 'show', effectId], env);
    const effect = JSON.parse(shown.stdout) as Shown;
    expect(effect.verification, shown.stdout).toMatchObject({ valid: false, problems: expect.arrayContaining([expect.stringContaining('entry 3 (DISPATCHED) has a signature that does not verify')]) });
    // A committed effect whose journal does not verify does not exit 0 (a script would read "refunded, and the record
    // is sound"): 1, with a line on stderr saying why.
    expect({ code: shown.code, stderr: shown.stderr }).toEqual({ code: 1, stderr: expect.stringContaining(`The journal of effect ${effectId} does not verify (`) });
    expect(shown.stderr).toContain('the outcome it shows cannot be trusted');
  });

  it('calls a chain whose only failing signature is by a key it does not hold not authenticated (valid null), saying that signature was not checked', async () => {
    const effectId = await committedRefund();
    await resealed(effectId, (entry) => entry);
    const shown = await runCli(['effect', 'show', effectId], env);
    expect(shown.code, shown.stderr).toBe(0);
    const effect = JSON.parse(shown.stdout) as Shown;
    expect(effect.verification).toMatchObject({ valid: null, problems: [] });
    expect(effect.verification.unchecked).toEqual([expect.stringContaining(`signed with key ${attacker.key.kid}`)]);
    expect(effect.verification.unchecked[0]).toContain('so those signatures were not checked here (every signature by a key it holds verified)');
  });
});
