// Rule: verify() never calls a genuine receipt invalid because its caller handed the public keys in another form. A
// PEM text of public keys (a rotation bundle included) or a list of PEM texts is read as the key set it names; a value
// that holds no keys leaves the signatures unchecked (valid: null, never false) with a sentence that says the
// publicKeys option is wrong and what to pass, and verify() still throws nothing (its contract).
import { describe, expect, it } from 'vitest';
import { verify } from '../../src/core/verify.js';
import { testKey } from '../support/harness.js';
import { chainReceipt, drafts } from './entry-chain.js';

const signer = testKey();
const other = testKey();
const receipt = chainReceipt('verify-keys-option', [drafts.proposed(), drafts.authorized(), drafts.dispatched(), drafts.committed('re_keys_option')], signer.key);

describe('the publicKeys option of verify()', () => {
  it('reads a PEM text, a rotation bundle of PEM blocks, or a list of PEM texts as the keys they hold', () => {
    expect(verify(receipt, { publicKeys: signer.publicKeys })).toMatchObject({ valid: true, problems: [] });
    for (const publicKeys of [signer.publicPem, `${other.publicPem}${signer.publicPem}`, [other.publicPem, signer.publicPem]]) {
      const verdict = verify(receipt, { publicKeys });
      expect(verdict, JSON.stringify(verdict.problems)).toMatchObject({ valid: true, signed: true, problems: [], unchecked: [] });
    }
  });

  it("still finds a receipt signed by another key when the keys come as PEM text: that is the receipt's problem", () => {
    expect(verify(receipt, { publicKeys: other.publicPem })).toMatchObject({ valid: false, signed: false });
  });

  it('leaves the signatures unchecked, saying the option is wrong, for a value that holds no keys; the receipt is not called forged', () => {
    // An empty list of PEM texts and an empty key set hold no keys either: they were read as a key set with no key in it,
    // and every signature of the genuine receipt was called one by an unknown key (valid false).
    for (const publicKeys of [{}, 42, { [signer.key.kid]: signer.publicPem }, [signer.key.publicKey], 'not a key', '', [], new Map()]) {
      let verdict: ReturnType<typeof verify> | undefined;
      expect(() => (verdict = verify(receipt, { publicKeys: publicKeys as never }))).not.toThrow();
      expect(verdict, JSON.stringify(publicKeys)).toMatchObject({ valid: null, signed: null, problems: [], checked: { chain: true, rules: true, signatures: false } });
      expect(verdict?.unchecked).toEqual([expect.stringContaining('publicKeys option')]);
    }
  });
});
