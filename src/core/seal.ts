// Seals (v3, issue 8): one Ed25519 signature for the batches that several effects write at about the same moment.
//
// A v2 batch carried its own signature over its last entry's hash. A v3 batch's last entry carries a seal: the
// batch's hash is a leaf of a small Merkle tree whose other leaves are the batches sealed in the same turn of the
// event loop (other effects, the same worker, the same key), and one signature covers the tree's root. The seal
// holds the leaf's place in the tree, the sibling hashes from the leaf up to the root, and the root's signature,
// so each entry is still verified on its own, offline, with nothing but the receipt and the public key. A busy
// worker signs once per tree instead of once per batch; a verifier checks each root once however many receipts
// share it (verifySeal keeps the roots it has checked).
//
// The tree is RFC 6962's (§2.1): a leaf is SHA-256(0x00 ‖ leaf text), an inner node SHA-256(0x01 ‖ left ‖ right),
// and a tree of n leaves splits at the largest power of two below n, so no leaf is ever duplicated to fill a level.
// The inclusion check is RFC 9162's (§2.1.3.2). The signed message names what the leaves are (`entries` or
// `heads`), the tree's size and its root, so a seal can be taken for nothing else.
import { hash, verify, type KeyObject } from 'node:crypto';
import { canonicalBase64url, isCanonicalSignature, SIGNATURE_CHARS, verifyText } from './signing.js';

/** Batches one signature covers at most: each doubling adds one sibling hash (44 bytes) to every sealed entry. */
export const SEAL_MAX_LEAVES = 8;

/** What a tree's leaves are: the hashes of journal entries (a batch's last) or of receipt heads. */
export type SealDomain = 'entries' | 'heads';

/**
 * A leaf or node hash: its 32 bytes as a binary string, one character per byte (Node's 'binary', an alias of
 * 'latin1'). Node's hash() hands back such a string about three times faster than a Buffer (a Buffer output gets a
 * backing store of its own per call), and verify() climbs a path per sealed entry, so trees are kept in strings
 * from leaf to root.
 */
export type Digest = string;

export type Seal = { size: number; index: number; path: Digest[]; signature: string };

const PREFIX = 's1';
const LONE_PREFIX = `${PREFIX}.1.0..`;
const DIGEST_BYTES = 32;
// Size and index as plain decimals, no sign or leading zero; a tree is never larger than a million leaves.
const COUNT = /^(?:0|[1-9][0-9]{0,5})$/;

// Hash inputs are assembled in scratch buffers (hashing is synchronous, so they are never shared by two at once).
let scratch = Buffer.allocUnsafeSlow(256);
const NODE_INPUT = Buffer.allocUnsafeSlow(1 + 2 * DIGEST_BYTES);

/** The bytes a leaf hashes: the leaf byte, then the text it stands for (an entry's or a head's hash) as UTF-8. */
function leafInput(text: string): Buffer {
  // Room for any text at 3 UTF-8 bytes per UTF-16 unit, so one write says how long it was.
  const room = 1 + text.length * 3;
  if (scratch.length < room) scratch = Buffer.allocUnsafeSlow(Math.max(room, scratch.length * 2));
  scratch[0] = 0;
  return scratch.subarray(0, 1 + scratch.write(text, 1, 'utf8'));
}

/** A leaf: the text it stands for (an entry's or a head's hash), as UTF-8, after the leaf byte. */
export function leafHash(text: string): Digest {
  return hash('sha256', leafInput(text), 'binary');
}

/** An inner node: the node byte, then its two children. */
function nodeHash(left: Digest, right: Digest): Digest {
  NODE_INPUT[0] = 1;
  NODE_INPUT.write(left, 1, DIGEST_BYTES, 'latin1');
  NODE_INPUT.write(right, 1 + DIGEST_BYTES, DIGEST_BYTES, 'latin1');
  return hash('sha256', NODE_INPUT, 'binary');
}

/** The largest power of two below n (n ≥ 2). */
function split(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/**
 * The tree over `leaves` (leaf hashes), each inner node hashed once: its root (RFC 6962 MTH) and each leaf's
 * sibling hashes from the leaf up to the root (RFC 6962 PATH).
 */
export function buildTree(leaves: readonly Digest[]): { root: Digest; paths: Digest[][] } {
  if (leaves.length === 0) throw new RangeError('a seal covers at least one leaf');
  if (leaves.some((leaf) => leaf.length !== DIGEST_BYTES)) throw new RangeError(`a leaf is a ${DIGEST_BYTES}-byte hash (leafHash)`);
  const paths: Digest[][] = leaves.map(() => []);
  const build = (lo: number, hi: number): Digest => {
    if (hi - lo === 1) return leaves[lo] as Digest;
    const mid = lo + split(hi - lo);
    const left = build(lo, mid);
    const right = build(mid, hi);
    // The deeper levels were pushed by the calls above, so each path runs from its leaf upwards.
    for (let at = lo; at < mid; at += 1) paths[at]?.push(right);
    for (let at = mid; at < hi; at += 1) paths[at]?.push(left);
    return nodeHash(left, right);
  };
  return { root: build(0, leaves.length), paths };
}

/** The root a leaf's path leads to, or null when the path cannot belong to a tree of `size` (RFC 9162 §2.1.3.2). */
export function rootFromPath(leaf: Digest, index: number, size: number, path: readonly Digest[]): Digest | null {
  if (!Number.isSafeInteger(index) || !Number.isSafeInteger(size) || index < 0 || index >= size) return null;
  // A node's input takes 32 bytes from each child: a shorter or longer hash is no hash of this tree.
  if (leaf.length !== DIGEST_BYTES) return null;
  for (const sibling of path) if (sibling.length !== DIGEST_BYTES) return null;
  let fn = index;
  let sn = size - 1;
  let node = leaf;
  for (const sibling of path) {
    if (sn === 0) return null;
    if (fn % 2 === 1 || fn === sn) {
      node = nodeHash(sibling, node);
      // A right edge of a smaller subtree: climb to where it joins a left sibling.
      while (fn % 2 === 0 && fn !== 0) {
        fn = Math.floor(fn / 2);
        sn = Math.floor(sn / 2);
      }
    } else {
      node = nodeHash(node, sibling);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 ? node : null;
}

/** The text a tree's root signature is made over. */
export function sealMessage(domain: SealDomain, size: number, root: Digest): string {
  NODE_INPUT.write(root, 0, DIGEST_BYTES, 'latin1');
  return messageOf(domain, size, NODE_INPUT.toString('hex', 0, DIGEST_BYTES));
}

/** sealMessage for a root already in hex. */
function messageOf(domain: SealDomain, size: number, rootHex: string): string {
  return `interlock.seal/v1 ${domain} ${size} ${rootHex}`;
}

/** `s1.SIZE.INDEX.PATH.SIGNATURE`: the path is its sibling hashes, 32 bytes each, in one base64url text. */
export function formatSeal(seal: Seal): string {
  return `${PREFIX}.${seal.size}.${seal.index}.${Buffer.from(seal.path.join(''), 'latin1').toString('base64url')}.${seal.signature}`;
}

/** A seal's parts, or null when the text is not a seal in its one canonical spelling. */
export function parseSeal(text: string): Seal | null {
  // A tree of one leaf (each batch of an effect sealed alone) has no path: its seal is this prefix and the signature.
  if (text.length === LONE_PREFIX.length + SIGNATURE_CHARS && text.startsWith(LONE_PREFIX)) {
    const signature = text.slice(LONE_PREFIX.length);
    return isCanonicalSignature(signature) ? { size: 1, index: 0, path: [], signature } : null;
  }
  const parts = text.split('.');
  if (parts.length !== 5 || parts[0] !== PREFIX) return null;
  const [, sizeText = '', indexText = '', pathText = '', signature = ''] = parts;
  if (!COUNT.test(sizeText) || !COUNT.test(indexText)) return null;
  const size = Number(sizeText);
  const index = Number(indexText);
  if (size < 1 || index >= size) return null;
  if (!isCanonicalSignature(signature)) return null;
  // A tree of at most a million leaves has at most 20 levels: a longer path is refused before it is decoded.
  const nodes = Math.floor((pathText.length * 6) / 8 / DIGEST_BYTES);
  if (nodes > 20 || !canonicalBase64url(pathText, nodes * DIGEST_BYTES)) return null;
  const path: Digest[] = [];
  if (nodes > 0) {
    const bytes = Buffer.from(pathText, 'base64url').toString('latin1');
    for (let at = 0; at < bytes.length; at += DIGEST_BYTES) path.push(bytes.slice(at, at + DIGEST_BYTES));
  }
  return { size, index, path, signature };
}

/**
 * Seals leaf texts (entry or head hashes) under one signature: `sign` signs the root's message once, and each leaf
 * gets its own seal, in order.
 */
export function sealLeaves(texts: readonly string[], domain: SealDomain, sign: (message: string) => string): string[] {
  const tree = buildTree(texts.map(leafHash));
  const signature = sign(sealMessage(domain, texts.length, tree.root));
  return tree.paths.map((path, index) => formatSeal({ size: texts.length, index, path, signature }));
}

// Root signatures already checked, per public key: receipts sealed in the same tree share their root, and a
// verifier of many receipts (`receipt verify` over a directory) checks each root once. Only signatures that verified
// are kept, each with the one message it verified (an Ed25519 signature verifies one message under one key), so
// the memo can answer true for nothing else.
const checked = new WeakMap<KeyObject, Map<string, string>>();
const CHECKED_PER_KEY = 20_000;

function rootSignatureValid(message: string, signature: string, key: KeyObject): boolean {
  let memo = checked.get(key);
  if (!memo) {
    memo = new Map();
    checked.set(key, memo);
  }
  if (memo.get(signature) === message) return true;
  if (!verifyText(message, signature, key)) return false;
  if (memo.size >= CHECKED_PER_KEY) memo.clear();
  memo.set(signature, message);
  return true;
}

// A lone seal's message, per domain, in a buffer made once: only its root's 64 hex digits change from one to the next,
// so verifying one writes those and the signature's 64 bytes, and allocates nothing (verifyText would encode the whole
// message and make two views each time). Checks are synchronous, so the buffers are never shared by two at once.
const HEX_CHARS = 2 * DIGEST_BYTES;
const loneMessage = (domain: SealDomain): Buffer => {
  const text = messageOf(domain, 1, '0'.repeat(HEX_CHARS));
  const bytes = Buffer.allocUnsafeSlow(text.length);
  bytes.write(text, 0, 'latin1');
  return bytes;
};
const LONE_MESSAGES: Record<SealDomain, Buffer> = { entries: loneMessage('entries'), heads: loneMessage('heads') };
const LONE_SIGNATURE = Buffer.allocUnsafeSlow(64);
const ANY_SURROGATE = /[\uD800-\uDFFF]/;

/**
 * verifyText(messageOf(domain, 1, root), signature, key) for a tree of one leaf, whose root is its leaf: the same
 * bytes checked, the same answer. The leaf is hashed from the text itself with its leaf byte before it (a NUL
 * character is that byte in UTF-8), unless the text holds a surrogate, whose encoding leafInput decides.
 */
function loneSealValid(text: string, signature: string, domain: SealDomain, key: KeyObject): boolean {
  if (!isCanonicalSignature(signature)) return false;
  const root = ANY_SURROGATE.test(text) ? hash('sha256', leafInput(text), 'hex') : hash('sha256', `\u0000${text}`, 'hex');
  const message = LONE_MESSAGES[domain];
  message.write(root, message.length - HEX_CHARS, HEX_CHARS, 'latin1');
  LONE_SIGNATURE.write(signature, 0, 'base64url');
  try {
    return verify(null, message, key, LONE_SIGNATURE);
  } catch {
    return false;
  }
}

/** Whether `sealText` seals leaf text `text` in `domain` under a root signed by `key`. */
export function verifySeal(text: string, sealText: string, domain: SealDomain, key: KeyObject): boolean {
  // A tree of one leaf, read without parseSeal's object: the same texts it reads as one, and loneSealValid refuses a
  // signature not in its one spelling just as parseSeal does.
  if (sealText.length === LONE_PREFIX.length + SIGNATURE_CHARS && sealText.startsWith(LONE_PREFIX)) return loneSealValid(text, sealText.slice(LONE_PREFIX.length), domain, key);
  const seal = parseSeal(sealText);
  if (seal === null) return false;
  // A tree of one leaf is its leaf, and no other receipt's: its root, hashed straight to the hex the message names,
  // is checked once whatever is kept.
  if (seal.size === 1) return seal.path.length === 0 && verifyText(messageOf(domain, 1, hash('sha256', leafInput(text), 'hex')), seal.signature, key);
  const root = rootFromPath(leafHash(text), seal.index, seal.size, seal.path);
  return root !== null && rootSignatureValid(sealMessage(domain, seal.size, root), seal.signature, key);
}
