// Ed25519 signing of entry hashes and receipt heads. Keys carry a key id derived from the public key, so a
// verifier holding several public keys (rotation) picks the right one without trusting the signer's label.
import { createHash, createPrivateKey, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';

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

export function signingKeyFromPem(privatePem: string): SigningKey {
  const privateKey = createPrivateKey(privatePem);
  if (privateKey.asymmetricKeyType !== 'ed25519') throw new Error(`The signing key is ${privateKey.asymmetricKeyType ?? 'unknown'}, not Ed25519. Generate one with \`npx interlock keys generate\`.`);
  const publicKey = createPublicKey(privateKey);
  return { kid: keyIdOf(publicKey), privateKey, publicKey };
}

export function publicKeyFromPem(pem: string): KeyObject {
  const key = createPublicKey(pem);
  if (key.asymmetricKeyType !== 'ed25519') throw new Error(`The public key is ${key.asymmetricKeyType ?? 'unknown'}, not Ed25519.`);
  return key;
}

export function publicKeySet(pems: readonly string[]): PublicKeySet {
  const keys = new Map<string, KeyObject>();
  for (const pem of pems) {
    const key = publicKeyFromPem(pem);
    keys.set(keyIdOf(key), key);
  }
  return keys;
}

export function signText(text: string, key: SigningKey): string {
  return sign(null, Buffer.from(text, 'utf8'), key.privateKey).toString('base64url');
}

// verifyText decodes the message and the signature into one scratch buffer instead of two new Buffers: a check is
// synchronous, so the buffer is never shared by two at once, and verify() makes one check per sealed batch. Texts too
// long for it (none the gate writes) get Buffers of their own, so a hostile receipt cannot make it grow for good.
const CHECK_SCRATCH_BYTES = 4_096;
const checkScratch = Buffer.allocUnsafeSlow(CHECK_SCRATCH_BYTES);

export function verifyText(text: string, signature: string, publicKey: KeyObject): boolean {
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
