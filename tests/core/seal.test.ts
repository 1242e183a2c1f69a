// Seals (src/core/seal.ts, issue 8): one signature over a Merkle tree of batches. Every leaf's seal leads to the
// signed root and to nothing else: a changed sibling, index, size, domain, key or signature, another leaf's seal,
// or a second spelling of the same seal is refused. The sealer (src/keys/sealer.ts) signs once per tree of the
// batches sealed in one turn of the event loop.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { buildTree, formatSeal, leafHash, parseSeal, rootFromPath, SEAL_MAX_LEAVES, sealLeaves, sealMessage, verifySeal } from '../../src/core/seal.js';
import { signText, verifyText, type Signer } from '../../src/core/signing.js';
import { createSealer } from '../../src/keys/sealer.js';
import { testKey } from '../support/harness.js';

const { key } = testKey();
const stranger = testKey().key;
const sign = (message: string) => signText(message, key);
const hashOf = (text: string) => createHash('sha256').update(text).digest('hex');
const leaves = (count: number) => Array.from({ length: count }, (_, index) => hashOf(`batch ${index}`));

/** The tree as the RFC defines it, written the slow and obvious way, to check the fast one against. */
function referenceRoot(nodes: string[]): string {
  if (nodes.length === 1) return nodes[0] as string;
  let k = 1;
  while (k * 2 < nodes.length) k *= 2;
  const bytes = (digest: string) => Buffer.from(digest, 'latin1');
  return createHash('sha256').update(Buffer.from([1])).update(bytes(referenceRoot(nodes.slice(0, k)))).update(bytes(referenceRoot(nodes.slice(k)))).digest('binary');
}

/** RFC 6962 PATH, the slow and obvious way. */
function referencePath(index: number, nodes: string[]): string[] {
  if (nodes.length <= 1) return [];
  let k = 1;
  while (k * 2 < nodes.length) k *= 2;
  return index < k ? [...referencePath(index, nodes.slice(0, k)), referenceRoot(nodes.slice(k))] : [...referencePath(index - k, nodes.slice(k)), referenceRoot(nodes.slice(0, k))];
}

/** A digest (a binary string, seal.ts) with bit `bit` (0-255) flipped. */
function flipBit(digest: string, bit: number): string {
  const bytes = Buffer.from(digest, 'latin1');
  bytes[bit >> 3] = (bytes[bit >> 3] as number) ^ (1 << (bit & 7));
  return bytes.toString('latin1');
}

/** A seal with one part replaced, spelled back out. */
function edited(sealText: string, change: (seal: NonNullable<ReturnType<typeof parseSeal>>) => void): string {
  const seal = parseSeal(sealText);
  if (!seal) throw new Error(`not a seal: ${sealText}`);
  change(seal);
  return formatSeal(seal);
}

describe('the tree', () => {
  it('every leaf of a tree of any size has a path that leads to the root, and only from its own index', () => {
    for (let size = 1; size <= 40; size += 1) {
      const nodes = leaves(size).map(leafHash);
      const { root, paths } = buildTree(nodes);
      expect(root).toBe(referenceRoot(nodes));
      nodes.forEach((leaf, index) => {
        const path = paths[index] as string[];
        expect(path).toEqual(referencePath(index, nodes));
        expect(rootFromPath(leaf, index, size, path)).toBe(root);
        // The same leaf and path under another index lead elsewhere, or nowhere. (Under another size they may lead to
        // the same root: the size is in the signed message, checked below.)
        if (size > 1) expect(rootFromPath(leaf, (index + 1) % size, size, path)).not.toBe(root);
      });
    }
  });

  it('a path one hash short or one hash long leads nowhere', () => {
    const nodes = leaves(6).map(leafHash);
    const { root, paths } = buildTree(nodes);
    const path = paths[2] as string[];
    expect(rootFromPath(nodes[2] as string, 2, 6, path.slice(0, -1))).not.toBe(root);
    expect(rootFromPath(nodes[2] as string, 2, 6, [...path, root])).toBeNull();
    // A hash one byte short or long, in the path or as the leaf, is no hash of this tree.
    expect(rootFromPath(nodes[2] as string, 2, 6, [...path.slice(0, -1), (path.at(-1) as string).slice(1)])).toBeNull();
    expect(rootFromPath(nodes[2] as string, 2, 6, [...path.slice(0, -1), `${path.at(-1) as string}x`])).toBeNull();
    expect(rootFromPath(`${nodes[2] as string}x`, 2, 6, path)).toBeNull();
    expect(() => buildTree([...nodes.slice(1), 'short'])).toThrow(RangeError);
  });
});

describe('a forged path', () => {
  it('one bit of one sibling changed, or another leaf under the same path, misses the root', () => {
    fc.assert(
      fc.property(fc.integer({ min: 2, max: 64 }), fc.nat(), fc.nat(), fc.nat({ max: 255 }), (size, at, which, bit) => {
        const nodes = leaves(size).map(leafHash);
        const { root, paths } = buildTree(nodes);
        const index = at % size;
        const path = paths[index] as string[];
        expect(rootFromPath(nodes[index] as string, index, size, path)).toBe(root);
        const position = which % path.length;
        const forged = path.map((sibling, place) => (place === position ? flipBit(sibling, bit) : sibling));
        expect(rootFromPath(nodes[index] as string, index, size, forged)).not.toBe(root);
        expect(rootFromPath(leafHash('another batch'), index, size, path)).not.toBe(root);
      }),
      { numRuns: 300 },
    );
  });
});

describe('seals', () => {
  it('each leaf of a signed tree verifies with its own seal, and with no other leaf\'s', () => {
    for (const size of [1, 2, 3, 5, SEAL_MAX_LEAVES]) {
      const texts = leaves(size);
      const seals = sealLeaves(texts, 'entries', sign);
      texts.forEach((text, index) => {
        expect(verifySeal(text, seals[index] as string, 'entries', key.publicKey)).toBe(true);
        if (size > 1) expect(verifySeal(text, seals[(index + 1) % size] as string, 'entries', key.publicKey)).toBe(false);
      });
    }
  });

  it('one signature per tree: all seals of a tree carry the same signature, over the tree\'s message', () => {
    const texts = leaves(5);
    const seals = sealLeaves(texts, 'entries', sign).map((text) => parseSeal(text));
    const signatures = new Set(seals.map((seal) => seal?.signature));
    expect(signatures.size).toBe(1);
    expect(verifyText(sealMessage('entries', 5, buildTree(texts.map(leafHash)).root), [...signatures][0] as string, key.publicKey)).toBe(true);
  });

  it('refuses every single change to a seal: a sibling bit, the index, the size, a dropped or added sibling, another tree\'s signature', () => {
    const texts = leaves(7);
    const seals = sealLeaves(texts, 'entries', sign);
    const other = parseSeal(sealLeaves(leaves(3), 'entries', sign)[0] as string);
    const text = texts[4] as string;
    const seal = seals[4] as string;
    expect(verifySeal(text, seal, 'entries', key.publicKey)).toBe(true);
    const changes: [string, string][] = [
      ['a sibling bit', edited(seal, (s) => void (s.path[0] = flipBit(s.path[0] as string, 0)))],
      ['the index', edited(seal, (s) => void (s.index = 5))],
      ['the size', edited(seal, (s) => void (s.size = 8))],
      ['a sibling dropped', edited(seal, (s) => void s.path.pop())],
      ['a sibling added', edited(seal, (s) => void s.path.push(s.path[0] as string))],
      ['the signature of another tree', edited(seal, (s) => void (s.signature = other?.signature ?? ''))],
    ];
    for (const [what, changed] of changes) expect([what, verifySeal(text, changed, 'entries', key.publicKey)]).toEqual([what, false]);
    expect(verifySeal(hashOf('another batch'), seal, 'entries', key.publicKey)).toBe(false);
  });

  it('a seal is bound to its domain and its key: a head seal is no entry seal, and another key verifies nothing', () => {
    const [text] = leaves(1);
    const asHead = sealLeaves([text as string], 'heads', sign)[0] as string;
    expect(verifySeal(text as string, asHead, 'heads', key.publicKey)).toBe(true);
    expect(verifySeal(text as string, asHead, 'entries', key.publicKey)).toBe(false);
    expect(verifySeal(text as string, asHead, 'heads', stranger.publicKey)).toBe(false);
  });

  it('a plain v2 signature over the hash is no seal, and a seal is no v2 signature', () => {
    const [text] = leaves(1) as [string];
    expect(verifySeal(text, signText(text, key), 'entries', key.publicKey)).toBe(false);
    const seal = sealLeaves([text], 'entries', sign)[0] as string;
    expect(verifyText(text, parseSeal(seal)?.signature ?? '', key.publicKey)).toBe(false);
  });

  it('reads only the one spelling of a seal: leading zeros, a sign, padding, stray bits or parts are refused', () => {
    const seal = sealLeaves(leaves(3), 'entries', sign)[1] as string;
    expect(parseSeal(seal)).not.toBeNull();
    const [prefix, size, index, path, signature] = seal.split('.') as [string, string, string, string, string];
    // Base64url of 32 (or 64) bytes leaves 2 (or 4) unused bits in its last character: setting one spells the same
    // bytes another way.
    const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const strayBit = (text: string) => `${text.slice(0, -1)}${ALPHABET[ALPHABET.indexOf(text.at(-1) as string) ^ 1] as string}`;
    expect(Buffer.from(strayBit(path), 'base64url').equals(Buffer.from(path, 'base64url'))).toBe(true);
    for (const spelled of [
      [prefix, `0${size}`, index, path, signature],
      [prefix, size, `+${index}`, path, signature],
      [prefix, size, index, `${path}=`, signature],
      [prefix, size, index, strayBit(path), signature],
      [prefix, size, index, path, strayBit(signature)],
      ['s2', size, index, path, signature],
      [prefix, size, index, path, signature, ''],
      [prefix, size, '3', path, signature],
      [prefix, '0', '0', '', signature],
    ]) {
      const text = spelled.join('.');
      expect([text, parseSeal(text)]).toEqual([text, null]);
      expect(verifySeal(leaves(3)[1] as string, text, 'entries', key.publicKey)).toBe(false);
    }
    expect(parseSeal('not a seal')).toBeNull();
  });

  it('reads a seal of one leaf (no path) in its one spelling too', () => {
    const text = leaves(1)[0] as string;
    const seal = sealLeaves([text], 'entries', sign)[0] as string;
    const signature = seal.split('.').at(-1) as string;
    expect(parseSeal(seal)).toEqual({ size: 1, index: 0, path: [], signature });
    expect(verifySeal(text, seal, 'entries', key.publicKey)).toBe(true);
    const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const strayBit = `${signature.slice(0, -1)}${ALPHABET[ALPHABET.indexOf(signature.at(-1) as string) ^ 1] as string}`;
    expect(Buffer.from(strayBit, 'base64url').equals(Buffer.from(signature, 'base64url'))).toBe(true);
    for (const spelled of [`s1.1.0..${strayBit}`, `s1.1.0..${signature}A`, `s1.1.0..${signature.slice(1)}`, `s1.1.0..${signature.slice(0, -1)}=`, `s1.01.0..${signature}`, `s1.1.0.AA.${signature}`]) {
      expect([spelled, parseSeal(spelled)]).toEqual([spelled, null]);
      expect(verifySeal(text, spelled, 'entries', key.publicKey)).toBe(false);
    }
  });

  it('refuses a path longer than any tree can have, before decoding it', () => {
    const seal = parseSeal(sealLeaves(leaves(2), 'entries', sign)[0] as string);
    if (!seal) throw new Error('no seal');
    const long = formatSeal({ ...seal, size: 999_999, path: Array.from({ length: 21 }, () => seal.path[0] as string) });
    expect(parseSeal(long)).toBeNull();
    expect(parseSeal(formatSeal({ ...seal, size: 999_999, path: Array.from({ length: 20 }, () => seal.path[0] as string) }))).not.toBeNull();
  });

  it('any seal text at all is answered true or false, never a throw', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (text, sealText) => {
        expect(typeof verifySeal(text, sealText, 'entries', key.publicKey)).toBe('boolean');
        expect(typeof verifySeal(text, `s1.${sealText}`, 'entries', key.publicKey)).toBe('boolean');
      }),
    );
  });

  it('remembers roots it checked without ever answering for another signature or message', () => {
    const texts = leaves(4);
    const seals = sealLeaves(texts, 'entries', sign);
    expect(verifySeal(texts[0] as string, seals[0] as string, 'entries', key.publicKey)).toBe(true);
    // Same root, checked from another leaf (the memo's hit), then the same tree with a forged signature.
    expect(verifySeal(texts[1] as string, seals[1] as string, 'entries', key.publicKey)).toBe(true);
    const forged = edited(seals[1] as string, (s) => void (s.signature = signText('something else', key)));
    expect(verifySeal(texts[1] as string, forged, 'entries', key.publicKey)).toBe(false);
    expect(verifySeal(texts[1] as string, seals[1] as string, 'entries', stranger.publicKey)).toBe(false);
    expect(verifySeal(texts[2] as string, seals[2] as string, 'entries', key.publicKey)).toBe(true);
  });
});

/** A signer that counts what it signs. */
function countingSigner(fail = false): Signer & { signed: string[] } {
  const signed: string[] = [];
  return {
    kid: key.kid,
    signed,
    async sign(text) {
      if (fail) throw new Error('the signing key is gone');
      signed.push(text);
      return signText(text, key);
    },
  };
}

describe('the sealer', () => {
  it('seals the batches of one turn as trees of at most SEAL_MAX_LEAVES, one signature each, every seal valid', async () => {
    const signer = countingSigner();
    const sealer = createSealer(signer, { domain: 'entries' });
    const texts = leaves(SEAL_MAX_LEAVES * 2 + 3);
    const seals = await Promise.all(texts.map((text) => sealer.seal(text)));
    expect(signer.signed).toHaveLength(3);
    expect(seals.map((seal) => parseSeal(seal)?.size)).toEqual([...Array(SEAL_MAX_LEAVES * 2).fill(SEAL_MAX_LEAVES), 3, 3, 3]);
    texts.forEach((text, index) => expect(verifySeal(text, seals[index] as string, 'entries', key.publicKey)).toBe(true));
  });

  it('a lone batch is sealed at the end of its turn, as a tree of one', async () => {
    const signer = countingSigner();
    const sealer = createSealer(signer, { domain: 'entries' });
    const [text] = leaves(1) as [string];
    const seal = await sealer.seal(text);
    expect(parseSeal(seal)).toMatchObject({ size: 1, index: 0, path: [] });
    expect(verifySeal(text, seal, 'entries', key.publicKey)).toBe(true);
    // A later turn starts a tree of its own.
    await sealer.seal(text);
    expect(signer.signed).toHaveLength(2);
  });

  it('a failed signature fails every batch of its tree, and nothing else', async () => {
    const sealer = createSealer(countingSigner(true), { domain: 'entries' });
    const results = await Promise.allSettled(leaves(3).map((text) => sealer.seal(text)));
    expect(results.map((result) => result.status)).toEqual(['rejected', 'rejected', 'rejected']);
    expect((results[0] as PromiseRejectedResult).reason).toMatchObject({ message: 'the signing key is gone' });
  });
});

describe('verifyText (signing.ts decodes into one scratch buffer)', () => {
  it('checks texts of any length, short or beyond the scratch buffer, and a longer or shorter one before leaves nothing behind', () => {
    for (const length of [0, 1, 64, 1_000, 4_096, 10_000, 50_000]) {
      const text = 'é'.repeat(length);
      const signature = signText(text, key);
      expect([length, verifyText(text, signature, key.publicKey)]).toEqual([length, true]);
      expect([length, verifyText(`${text}x`, signature, key.publicKey)]).toEqual([length, false]);
      expect([length, verifyText(text, signText(`${text}x`, key), key.publicKey)]).toEqual([length, false]);
    }
    // A long check, then a short one whose signature is the long one's cut short: no byte of the first is read.
    const long = 'a'.repeat(3_000);
    expect(verifyText(long, signText(long, key), key.publicKey)).toBe(true);
    expect(verifyText('a', signText(long, key).slice(0, 40), key.publicKey)).toBe(false);
  });

  it('reads a signature only in its one spelling: text after it, padding, a prefix, whitespace, + and /, or stray bits are refused', () => {
    const text = 'b'.repeat(64);
    const signature = signText(text, key);
    expect(signature).toMatch(/^[A-Za-z0-9_-]{86}$/);
    const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const strayBit = `${signature.slice(0, -1)}${ALPHABET[ALPHABET.indexOf(signature.at(-1) as string) ^ 1] as string}`;
    const standard = signature.replace(/-/g, '+').replace(/_/g, '/');
    // Every one decodes, with Node's lenient decoder, to the signed bytes: only the spelling tells them apart.
    const spellings = [`${signature}= APPROVED BY CFO`, `${signature}==`, `${signature}=`, `${signature} `, `${signature}\n`, `!${signature}`, ` ${signature}`, strayBit, `${signature.slice(0, 40)} ${signature.slice(40)}`];
    if (standard !== signature) spellings.push(standard);
    for (const spelled of spellings) {
      expect(Buffer.from(spelled, 'base64url').equals(Buffer.from(signature, 'base64url'))).toBe(true);
      expect([spelled, verifyText(text, spelled, key.publicKey)]).toEqual([spelled, false]);
    }
    expect(verifyText(text, signature, key.publicKey)).toBe(true);
    expect(verifyText('c'.repeat(5_000), `${signText('c'.repeat(5_000), key)}==`, key.publicKey)).toBe(false);
  });
});
