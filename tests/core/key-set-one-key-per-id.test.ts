// Rule: a key set names each key id once. Two different public keys under one id (64 bits of a key's hash, so a pair
// can be searched for) are refused, never the later replacing the earlier: a retired-keys file or a --public-key
// bundle holding a key made to collide with the service's would otherwise have receipts signed by it verify as the
// service's. The same key given twice (the current key also in the retired file) is one entry.
import { describe, expect, it } from 'vitest';
import type { KeyObject } from 'node:crypto';
import { addKey, keyIdOf, publicKeySet } from '../../src/core/signing.js';
import { testKey } from '../support/harness.js';

const one = testKey();
const other = testKey();

describe('a key set', () => {
  it('refuses a second, different key under a key id it holds, and keeps the first', () => {
    const keys = new Map<string, KeyObject>();
    addKey(keys, one.key.kid, one.key.publicKey);
    expect(() => addKey(keys, one.key.kid, other.key.publicKey)).toThrow(`two different public keys have the key id ${one.key.kid}`);
    expect(keys.get(one.key.kid)?.equals(one.key.publicKey)).toBe(true);
  });

  it('takes the same key twice as one entry, and keys of other ids beside it', () => {
    const set = publicKeySet([one.publicPem, `${one.publicPem}\n${other.publicPem}`]);
    expect([...set.keys()].sort()).toEqual([keyIdOf(one.key.publicKey), keyIdOf(other.key.publicKey)].sort());
  });
});
