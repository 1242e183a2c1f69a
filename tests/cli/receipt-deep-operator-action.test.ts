// Rule: verify() hands back only bounded plain JSON of the receipt's own objects (verify.ts boundedOrNull: "the answer is
// written out as JSON by callers"), so `receipt verify` prints the verification of any hostile receipt: invalid, exit 1
// (as tests/cli/receipt-hostile.test.ts requires for a deep `rechecked`). A RESOLVED entry's `by` and `reapproval` are
// handed back as they are in `operatorActions`, so a deep value there makes the answer unprintable: exit 2, no verdict.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { signingKeyFromPem } from '../../src/core/signing.js';
import { verify } from '../../src/core/verify.js';
import { generateSigningKeyPem } from '../../src/keys/key-store.js';
import { chainReceipt, drafts } from '../core/entry-chain.js';
import { runCli, tempDir } from './run-cli.js';

const temp = tempDir('receipts-deep-by');
afterAll(() => temp.remove());

const DEPTH = 100_000;
const pem = generateSigningKeyPem();
const key = signingKeyFromPem(pem.privatePem);

/** A genuine committed receipt with a RESOLVED entry appended whose `by` (or `reapproval`) holds a deep extra member. */
function hostileText(field: 'by' | 'reapproval'): string {
  const receipt = chainReceipt('deep_by', [drafts.proposed(), drafts.authorized(), drafts.dispatched(), drafts.committed('re_deep')], key);
  const copy = JSON.parse(JSON.stringify(receipt)) as { entries: Record<string, unknown>[]; head: Record<string, unknown> };
  const last = copy.entries.at(-1) as Record<string, unknown>;
  const resolved: Record<string, unknown> = {
    v: 3, effectId: receipt.effectId, at: last.at, prev: last.hash, hash: 'h', sig: null, kind: 'RESOLVED', item: 'item_1', action: 'dismiss',
    by: { name: 'eve', role: 'admin' }, note: '', resolution: null, reapproval: null,
  };
  if (field === 'by') resolved.by = { name: 'eve', role: 'admin', extra: 'DEEP' };
  else resolved.reapproval = { approval: 'ap', requestId: 'r', effectId: receipt.effectId, extra: 'DEEP' };
  copy.entries.push(resolved);
  return JSON.stringify(copy).replace('"extra":"DEEP"', `"extra":${'['.repeat(DEPTH)}${']'.repeat(DEPTH)}`);
}

describe('a RESOLVED entry whose by/reapproval holds a value nested 100,000 deep', () => {
  it.each(['by', 'reapproval'] as const)('%s: verify() answers invalid with an answer that can be written out as JSON', (field) => {
    const result = verify(JSON.parse(hostileText(field)), { publicKeys: new Map([[key.kid, key.publicKey]]) });
    expect(result.valid).toBe(false);
    expect(() => JSON.stringify(result)).not.toThrow();
  });

  it('receipt verify prints the verification (invalid, exit 1), as it does for a deep `rechecked`', { timeout: 60_000 }, async () => {
    writeFileSync(join(temp.dir, 'deep-by.json'), hostileText('by'));
    writeFileSync(join(temp.dir, 'public-key.pem'), pem.publicPem);
    const run = await runCli(['receipt', 'verify', join(temp.dir, 'deep-by.json'), '--public-key', join(temp.dir, 'public-key.pem')], { INTERLOCK_DATA_DIR: join(temp.dir, 'data') });
    expect(run.stderr).not.toContain('could not be written out');
    expect(run.code).toBe(1);
    expect((JSON.parse(run.stdout) as { valid: unknown }).valid).toBe(false);
  });
});
