// Ed25519 signing of entry hashes and receipt heads. Keys carry a key id derived from the public key, so a
// verifier holding several public keys (rotation) picks the right one without trusting the signer's label.
import { createHash, createPrivateKey, createPublicKey, KeyObject, sign, verify } from 'node:crypto';

export type SigningKey = { kid: string; privateKey: KeyObject; publicKey: KeyObject };

/** Signs entry hashes, on this thread or another (src/keys/signer.ts); the signatures are the same either way. */
export type Signer = { kid: string; sign(text: string): Promise<string> };

/** A signer that signs inline, on the calling thread. */
export function inlineSigner(key: SigningKey): Signer {
  return { kid: key.kid, sign: async (text) => signText(text, key) };
}
export type PublicKeySet = ReadonlyMap<string, KeyObject>;

export function keyIdOf(publicKey: KeyObject): string {
  const spki = publicKey.export({ type: 'spki', format: 'der' });
  return `ed25519:${createHash('sha256').update(spki).digest('hex').slice(0, 16)}`;
}

/**
 * The signing key a PEM text holds. A text of several blocks is refused rather than read as its first key
 * (createPrivateKey reads only the first): a file of an old and a new key would go on signing with the old one.
 */
export function signingKeyFromPem(privatePem: string): SigningKey {
  const none = noPemBlock(privatePem, 'PRIVATE KEY', 'a signing key', '`npx interlock keys generate` writes');
  if (none !== null) throw new Error(none);
  const blocks = pemBlocks(privatePem);
  if (blocks.length > 1) throw new Error(`The text holds ${blocks.length} PEM blocks, not one private key; a signing key file holds only the key this service signs with (keep a retired key's public half, \`npx interlock keys public --key FILE\`, for verifying).`);
  const notPlain = notAPlainPrivateKey(privatePem) ?? indentedPem(privatePem);
  if (notPlain !== null) throw new Error(notPlain);
  const privateKey = createPrivateKey(privatePem);
  if (privateKey.asymmetricKeyType !== 'ed25519') throw new Error(`The signing key is ${privateKey.asymmetricKeyType ?? 'unknown'}, not Ed25519. Generate one with \`npx interlock keys generate\`.`);
  const publicKey = createPublicKey(privateKey);
  return { kid: keyIdOf(publicKey), privateKey, publicKey };
}

/** What signingKeyProblem signs and verifies: a key whose halves are not one pair fails on it. */
const PAIR_PROBE = 'interlock signing key pair check';

/**
 * Why `key` cannot sign receipts its own public key verifies, or null when it can. A SigningKey built by hand (a
 * library caller's) is held to what signingKeyFromPem makes: an Ed25519 private and public KeyObject that are one pair
 * (a signature of the one verifies with the other), labelled with the public key's id (keyIdOf). Any other label makes
 * receipts name a key no verifier holds; halves of two keys make signatures that verify with neither.
 */
export function signingKeyProblem(key: unknown): string | null {
  if (typeof key === 'string') return 'it is a text, not a SigningKey (build one from a PEM text with signingKeyFromPem)';
  if (typeof key !== 'object' || key === null) return `it is ${key === null ? 'null' : typeof key}, not a SigningKey { kid, privateKey, publicKey }`;
  const { kid, privateKey, publicKey } = key as { kid?: unknown; privateKey?: unknown; publicKey?: unknown };
  if (!(privateKey instanceof KeyObject) || privateKey.type !== 'private') return 'its privateKey is not a private KeyObject (a SigningKey is { kid, privateKey, publicKey }, as signingKeyFromPem builds it)';
  if (!(publicKey instanceof KeyObject) || publicKey.type !== 'public') return 'its publicKey is not a public KeyObject (a SigningKey is { kid, privateKey, publicKey }, as signingKeyFromPem builds it)';
  if (privateKey.asymmetricKeyType !== 'ed25519' || publicKey.asymmetricKeyType !== 'ed25519') {
    return `it is ${privateKey.asymmetricKeyType ?? 'unknown'}/${publicKey.asymmetricKeyType ?? 'unknown'}, not Ed25519 (generate one with \`npx interlock keys generate\`)`;
  }
  const id = keyIdOf(publicKey);
  if (kid !== id) return `its kid ${typeof kid === 'string' ? JSON.stringify(kid.slice(0, 80)) : `(a ${typeof kid})`} is not its public key's id ${id}: receipts would name a key no verifier holds (build the key with signingKeyFromPem, which sets the kid)`;
  if (!verifyText(PAIR_PROBE, signText(PAIR_PROBE, { kid: id, privateKey, publicKey }), publicKey)) return 'its privateKey and publicKey are halves of two different keys, so nothing it signs would verify';
  return null;
}

const GENERATE_ADVICE = 'generate a new one with `npx interlock keys generate --out FILE`';

/**
 * Why a PEM text that is not a plain private key cannot sign, in words: OpenSSL's own ("DECODER routines::unsupported"
 * for a public key or an OpenSSH key, "interrupted or cancelled" for a passphrase nobody can type) say neither what the file holds nor
 * what to do. Null for any other text, which createPrivateKey then reads or refuses.
 */
function notAPlainPrivateKey(pem: string): string | null {
  const label = /-----BEGIN ([A-Z0-9 ]+)-----/.exec(pem)?.[1];
  if (label === undefined) return null;
  if (label === 'ENCRYPTED PRIVATE KEY' || /^Proc-Type: 4,ENCRYPTED\s*$/m.test(pem)) {
    return `The private key is protected by a passphrase (BEGIN ${label}), which the service has no way to enter. Write it out without one, \`openssl pkey -in FILE -out PLAIN.pem\` (asks for the passphrase once), keep PLAIN.pem readable by its owner only (chmod 600) and use it instead, or ${GENERATE_ADVICE}`;
  }
  if (label === 'OPENSSH PRIVATE KEY') {
    // ssh-keygen writes its Ed25519 keys only in this format (-m PKCS8 is ignored for them), so there is no
    // conversion to offer; an SSH login key should not sign receipts anyway.
    return `It holds an OpenSSH private key (BEGIN OPENSSH PRIVATE KEY, as ssh-keygen writes), a format the service does not read and ssh-keygen cannot convert for Ed25519; a signing key is a PKCS#8 PEM file (BEGIN PRIVATE KEY). Give such a file, or ${GENERATE_ADVICE}`;
  }
  if (label.endsWith('PUBLIC KEY') || label === 'CERTIFICATE') {
    return `It holds a public key (BEGIN ${label}), which verifies receipts but cannot sign them; the signing key file must hold the private key (BEGIN PRIVATE KEY). Give the private key's file instead, or ${GENERATE_ADVICE}`;
  }
  return null;
}

// One PEM block: its label, and everything up to the END line with the same label.
const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----[\s\S]*?-----END \1-----/g;

const PEM_BEGIN = /-----BEGIN /g;

/**
 * The PEM blocks in `text`, in order; the whole text when it holds none (its callers refuse such a text first, noPemBlock).
 * A BEGIN line that starts no whole block (a block cut short, an END line mangled) refuses the text: createPublicKey
 * would read the blocks before it and the key in it would be dropped without a word.
 */
function pemBlocks(text: string): string[] {
  const blocks = [...text.matchAll(PEM_BLOCK)];
  const begins = [...text.matchAll(PEM_BEGIN)].map((begin) => begin.index);
  if (begins.length === 0) return [text];
  const starts = new Set(blocks.map((block) => block.index));
  const broken = begins.findIndex((at) => !starts.has(at));
  if (broken !== -1) throw new Error(`PEM block ${broken + 1} of ${begins.length} has no END line matching its BEGIN line: it was cut short or altered (copy the whole key again)`);
  return blocks.map((block) => block[0]);
}

/**
 * Why a text meant to hold a PEM block labelled `label` (`what`, which `source` gives) cannot, when it has no BEGIN
 * line at all (an empty file, as a failed `keys public >> FILE` leaves; a key's base64 copied without its BEGIN and
 * END lines); null when it has one. OpenSSL's words for such a text ("DECODER routines::unsupported") say nothing an
 * operator can act on.
 */
function noPemBlock(text: string, label: string, what: string, source: string): string | null {
  if (text.includes('-----BEGIN ')) return null;
  const holds = text.trim() === '' ? 'is empty' : `holds no PEM block (no -----BEGIN ${label}----- line)`;
  return `The text ${holds}; ${what} is the lines from -----BEGIN ${label}----- to -----END ${label}----- that ${source}`;
}

// A BEGIN or END line with spaces or tabs before it on its line, and that white space.
const INDENTED_BOUNDARY = /^([ \t]+)(-----(?:BEGIN|END) [A-Z0-9 ]+-----)/m;

/**
 * Why a text whose PEM lines are indented (a key pasted from a YAML manifest, a Markdown page, an e-mail) cannot be
 * read, in words; null when its BEGIN and END lines start their lines. OpenSSL refuses such a text as "DECODER
 * routines::unsupported", which says neither what is wrong nor what to do. The text is not mended here: a key file
 * holds the key exactly, and one that was changed on its way there is for its owner to look at.
 */
function indentedPem(text: string): string | null {
  const found = INDENTED_BOUNDARY.exec(text);
  if (found === null) return null;
  const indent = found[1] ?? '';
  const line = text.slice(0, found.index).split('\n').length;
  const plural = indent.length === 1 ? '' : 's';
  const shown = /^ +$/.test(indent) ? `${indent.length} space${plural}` : /^\t+$/.test(indent) ? `${indent.length} tab${plural}` : `${indent.length} spaces and tabs`;
  return `The text's PEM lines are indented: line ${line} starts with ${shown} before ${(found[2] ?? '').slice(0, 60)}, as a key pasted from a YAML file, a Markdown page or an e-mail often does. A PEM line starts at the first character of its line: remove the leading spaces from each line`;
}

/** The PEM blocks of a text meant to hold public keys; a text with none, or indented, is refused, saying so (noPemBlock, indentedPem). */
function publicKeyBlocks(text: string): string[] {
  const none = noPemBlock(text, 'PUBLIC KEY', 'a public key', '`npx interlock keys public` prints');
  if (none !== null) throw new Error(none);
  const blocks = pemBlocks(text);
  const indented = indentedPem(text);
  if (indented !== null) throw new Error(indented);
  return blocks;
}

function ed25519PublicKey(pem: string): KeyObject {
  const key = createPublicKey(pem);
  if (key.asymmetricKeyType !== 'ed25519') throw new Error(`The public key is ${key.asymmetricKeyType ?? 'unknown'}, not Ed25519.`);
  return key;
}

/**
 * The one public key a PEM text holds. A text of several blocks is refused rather than read as its first key
 * (createPublicKey reads only the first): give a rotation bundle to publicKeysFromPem or publicKeySet.
 */
export function publicKeyFromPem(pem: string): KeyObject {
  const blocks = publicKeyBlocks(pem);
  if (blocks.length > 1) throw new Error(`The text holds ${blocks.length} PEM blocks, not one public key; read a bundle of rotated keys with publicKeySet, which uses every key in it.`);
  return ed25519PublicKey(pem);
}

/**
 * Every public key in a PEM text, in order: a rotation bundle (`cat old.pem new.pem`) holds one block per key, and
 * a verifier given it must know each of them, not the first alone. Any block that is not an Ed25519 key refuses the text.
 */
export function publicKeysFromPem(text: string): KeyObject[] {
  const blocks = publicKeyBlocks(text);
  if (blocks.length === 1) return [ed25519PublicKey(text)];
  return blocks.map((block, index) => {
    try {
      return ed25519PublicKey(block);
    } catch (error) {
      throw new Error(`PEM block ${index + 1} of ${blocks.length}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
  });
}

/** The keys in each PEM text (each may be a bundle of several), by key id. */
export function publicKeySet(pems: readonly string[]): PublicKeySet {
  const keys = new Map<string, KeyObject>();
  for (const pem of pems) {
    for (const key of publicKeysFromPem(pem)) addKey(keys, keyIdOf(key), key);
  }
  return keys;
}

/**
 * Puts `key` in a key set under `kid`; the same key twice is one entry. Two different keys under one id are refused:
 * the later would replace the earlier, and a signature by either would be checked with the other. A key id is 64 bits
 * of the key's hash, so a colliding pair can be searched for (about 2^32 keys), and a retired-keys file or a
 * `--public-key` bundle from elsewhere could hold one made to replace the service's own key.
 */
export function addKey(keys: Map<string, KeyObject>, kid: string, key: KeyObject): void {
  const known = keys.get(kid);
  if (known !== undefined && !known.equals(key)) throw new Error(`two different public keys have the key id ${kid}; a key set names each key once (remove the one that does not belong)`);
  keys.set(kid, key);
}

export function signText(text: string, key: SigningKey): string {
  return sign(null, Buffer.from(text, 'utf8'), key.privateKey).toString('base64url');
}

/** Characters of an Ed25519 signature (64 bytes) in base64url, unpadded: the only length a signature is read at. */
export const SIGNATURE_CHARS = 86;
const SIGNATURE_BYTES = 64;
const BASE64URL = /^[A-Za-z0-9_-]*$/;
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/**
 * Whether base64url text of `bytes` bytes is spelled the one way: unpadded, only the 64 base64url characters, and the
 * bits its last character carries beyond the bytes are zero (otherwise two texts would decode to one value).
 */
export function canonicalBase64url(text: string, bytes: number): boolean {
  if (text.length !== Math.ceil((bytes * 8) / 6) || !BASE64URL.test(text)) return false;
  const spare = text.length * 6 - bytes * 8;
  return spare === 0 || (ALPHABET.indexOf(text.at(-1) ?? '') & ((1 << spare) - 1)) === 0;
}

/**
 * Whether `signature` is an Ed25519 signature in its one spelling (SIGNATURE_CHARS base64url characters). Node's
 * base64url decoder stops at the first `=` and skips characters outside the alphabet, so without this a signature
 * with text after it ("<sig>= APPROVED BY CFO"), `+` and `/` for `-` and `_`, or padding still decoded to the signed
 * bytes and verified: a signed field would carry words nobody signed.
 */
export function isCanonicalSignature(signature: string): boolean {
  return canonicalBase64url(signature, SIGNATURE_BYTES);
}

// verifyText decodes the message and the signature into one scratch buffer instead of two new Buffers: a check is
// synchronous, so the buffer is never shared by two at once, and verify() makes one check per sealed batch. Texts too
// long for it (none the gate writes) get Buffers of their own, so a hostile receipt cannot make it grow for good.
const CHECK_SCRATCH_BYTES = 4_096;
const checkScratch = Buffer.allocUnsafeSlow(CHECK_SCRATCH_BYTES);

/** Whether `signature` (in its one spelling, isCanonicalSignature) is `publicKey`'s signature of `text`. */
export function verifyText(text: string, signature: string, publicKey: KeyObject): boolean {
  if (!isCanonicalSignature(signature)) return false;
  try {
    // At most 3 UTF-8 bytes per UTF-16 unit, and 3 bytes per 4 base64url characters.
    if (text.length * 3 + signature.length > CHECK_SCRATCH_BYTES) return verify(null, Buffer.from(text, 'utf8'), publicKey, Buffer.from(signature, 'base64url'));
    const textBytes = checkScratch.write(text, 0, 'utf8');
    const signatureBytes = checkScratch.write(signature, textBytes, 'base64url');
    return verify(null, checkScratch.subarray(0, textBytes), publicKey, checkScratch.subarray(textBytes, textBytes + signatureBytes));
  } catch {
    return false;
  }
}
