// Signing keys on disk: a configured PEM file, or one generated on first use into the data directory (never
// into the repository). Public keys are exported for auditors, who verify receipts without being able to sign.
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { InterlockError } from '../core/errors.js';
import { signingKeyFromPem, type SigningKey } from '../core/signing.js';
import { createFileOnce } from '../files.js';

export const DEFAULT_KEY_FILE = 'signing-key.pem';

export function generateSigningKeyPem(): { privatePem: string; publicPem: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return {
    privatePem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  };
}

export function keyFilePath(options: { dataDir: string; signingKeyFile: string | null }): string {
  return options.signingKeyFile ?? join(options.dataDir, 'keys', DEFAULT_KEY_FILE);
}

/**
 * Writes a new key; null, writing nothing, when a file is already there: a key is never overwritten, since receipts
 * signed by it would lose their verifier.
 */
export function writeNewSigningKey(path: string): SigningKey | null {
  const { privatePem } = generateSigningKeyPem();
  return createFileOnce(path, privatePem) ? signingKeyFromPem(privatePem) : null;
}

export function loadOrCreateSigningKey(options: { dataDir: string; signingKeyFile: string | null }): { key: SigningKey; path: string; created: boolean } {
  const path = keyFilePath(options);
  if (existsSync(path)) return { key: readSigningKey(path, options.signingKeyFile !== null), path, created: false };
  if (options.signingKeyFile !== null) throw new InterlockError('invalid_config', `INTERLOCK_SIGNING_KEY_FILE points at ${path}, which does not exist. Create it with \`npx interlock keys generate --out ${path}\`.`);
  const { privatePem } = generateSigningKeyPem();
  // Another process starting at the same moment may have created it first: then its key is the key.
  if (!createFileOnce(path, privatePem)) return { key: readSigningKey(path, false), path, created: false };
  return { key: signingKeyFromPem(privatePem), path, created: true };
}

/** The key in a PEM file; a file that is unreadable or holds no Ed25519 private key is a configuration error naming it. */
function readSigningKey(path: string, configured: boolean): SigningKey {
  try {
    return signingKeyFromPem(readFileSync(path, 'utf8'));
  } catch (error) {
    const where = configured ? `INTERLOCK_SIGNING_KEY_FILE (${path})` : `The signing key file ${path}`;
    throw new InterlockError('invalid_config', `${where} holds no usable Ed25519 private key (${(error as Error).message.replace(/\.$/, '')}). Point INTERLOCK_SIGNING_KEY_FILE at the PEM file \`npx interlock keys generate --out FILE\` wrote (the key that signed this service's receipts, if it has any).`, { cause: error });
  }
}

export function publicKeyPem(key: SigningKey): string {
  return key.publicKey.export({ type: 'spki', format: 'pem' }).toString();
}
