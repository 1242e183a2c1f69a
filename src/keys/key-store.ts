// Signing keys on disk: a configured PEM file, or one generated on first use into the data directory (never
// into the repository). Public keys are exported for auditors, who verify receipts without being able to sign.
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { existsSync, lstatSync, readlinkSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { InterlockError } from '../core/errors.js';
import { redactSecrets, shownSetting } from '../core/redact.js';
import { publicKeySet, signingKeyFromPem, type PublicKeySet, type SigningKey } from '../core/signing.js';
import { pathMeaning } from '../cli/path-problems.js';
import { createFileOnce, readRegularFile } from '../files.js';

export const DEFAULT_KEY_FILE = 'signing-key.pem';

/**
 * Largest key file read, in bytes: a PEM key is about 120 bytes, so 1 MiB holds thousands of retired public keys; a
 * bigger file (a device, a wrong path) is refused before it is read.
 */
export const MAX_KEY_FILE_BYTES = 1024 * 1024;

/**
 * The text of a key file (a signing key, a public key, a bundle of them). Only a regular file of at most
 * MAX_KEY_FILE_BYTES is read, opened without waiting: a FIFO or a device named as a key throws, saying what it is,
 * instead of holding the command (or the service's start) for ever.
 */
export function readKeyFile(path: string): string {
  return readRegularFile(path, MAX_KEY_FILE_BYTES, 'a key file');
}

export function generateSigningKeyPem(): { privatePem: string; publicPem: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return {
    privatePem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  };
}

/**
 * Key text where a path goes: a PEM block, text of several lines (no key file's path holds a line break), or the
 * base64 of an Ed25519 key without its PEM lines (it begins with the key's fixed header: MC4CAQAw… private, MCowBQYD…
 * public). Many tools
 * take a key's content from the environment (a Kubernetes secret mapped to a variable), so an operator may put the PEM
 * itself in INTERLOCK_SIGNING_KEY_FILE; quoted as "the path" it would reach stderr and the container's log, where
 * whoever reads it could sign receipts as this gate.
 */
const KEY_MATERIAL = /-----BEGIN|[\r\n]|^MC4CAQAwBQYDK2Vw|^MCowBQYDK2VwAyEA/;

/**
 * The value of a key path setting, refused when it holds key material instead of a path; the refusal says how long
 * the value is, never what it holds.
 */
export function keyPathSetting(variable: 'INTERLOCK_SIGNING_KEY_FILE' | 'INTERLOCK_RETIRED_PUBLIC_KEYS_FILE', value: string): string {
  if (!KEY_MATERIAL.test(value)) return value;
  const put = variable === 'INTERLOCK_SIGNING_KEY_FILE' ? 'put the key in a file readable by its owner only (chmod 600)' : 'put the public keys in a file';
  throw new InterlockError('invalid_config', `${variable} holds key material, not a path (${value.length} characters, not shown): ${put} and set ${variable} to its path. Nothing was read or written.`);
}

/** Whether a key path setting reads as a path: it starts with /, ./, ../, ~/ or a drive, or holds a dot (base64 never does). */
const PATH_SHAPED = /^(?:\.{0,2}\/|~\/|[A-Za-z]:[\\/])|\./;
/** Shorter than any key's text (an Ed25519 key is 44 base64 characters raw, 64 as PKCS8): a relative path, shown as given. */
const SHORTER_THAN_A_KEY = 40;

/**
 * A key file's path as messages quote it: as given when it reads as one, else as shownSetting shows a value that may
 * be a secret (its length, "the path given (64 characters, not shown)"): the base64 of a key without its PEM lines
 * is no path, and is not printed as one.
 */
export function shownKeyPath(path: string): string {
  return !KEY_MATERIAL.test(path) && (PATH_SHAPED.test(path) || path.length < SHORTER_THAN_A_KEY) ? redactSecrets(path) : `the path given (${shownSetting(path)})`;
}

/** The signing key's path: INTERLOCK_SIGNING_KEY_FILE (refused when it holds the key itself), else the data directory's. */
export function keyFilePath(options: { dataDir: string; signingKeyFile: string | null }): string {
  return options.signingKeyFile === null ? join(options.dataDir, 'keys', DEFAULT_KEY_FILE) : keyPathSetting('INTERLOCK_SIGNING_KEY_FILE', options.signingKeyFile);
}

/**
 * Writes a new key; null, writing nothing, when a file is already there: a key is never overwritten, since receipts
 * signed by it would lose their verifier.
 */
export function writeNewSigningKey(path: string): SigningKey | null {
  const { privatePem } = generateSigningKeyPem();
  return createFileOnce(path, privatePem) ? signingKeyFromPem(privatePem) : null;
}

/** A key file others can read or write: what to tell the operator, and the file's permission bits (octal, e.g. "644"). */
export type KeyExposure = { message: string; mode: string };

/** The permission bits of `path` (following a link), and who besides its owner the `group` and `others` bits let in. */
function othersWith(path: string, group: number, others: number): { octal: string; who: string | null } {
  const mode = statSync(path).mode & 0o777;
  const who = [mode & group ? 'its group' : null, mode & others ? 'all users' : null].filter((name) => name !== null);
  return { octal: mode.toString(8).padStart(3, '0'), who: who.length === 0 ? null : who.join(' and ') };
}

/**
 * The owner of `path` (following a link) when it is another user than this process's and not root: whatever the
 * mode, that user can read the file and change it (chmod it open, write a key of their own), so a file of secrets it
 * owns is exposed to it. Null for a file this process's user or root owns, and on Windows.
 */
function foreignOwner(path: string): { uid: number; advice: string } | null {
  if (process.platform === 'win32' || typeof process.getuid !== 'function') return null;
  const { uid } = statSync(path);
  const self = process.getuid();
  return uid === self || uid === 0 ? null : { uid, advice: `chown ${self} ${path}` };
}

/**
 * Whether users other than the key file's owner may read or write it. The key is still used (a container often
 * mounts a secret with such a mode, and refusing would stop the gate over a setting the operator may not control),
 * but whoever can read the file can sign receipts as this gate, and whoever can write it can put in a key of their
 * own, so the operator is told and given the chmod. Null where the mode is private, and on Windows, whose file modes
 * do not say who may read.
 */
export function keyFileExposure(path: string): KeyExposure | null {
  return secretFileExposure(path, `The signing key file ${path}`, { read: 'whoever reads it can sign receipts as this gate', write: 'whoever writes it can replace the key this gate signs with' });
}

/** Who besides its owner may read or write a file of secrets, with the harm each does, and the chmod that stops it. */
function secretFileExposure(path: string, file: string, harms: { read: string; write: string }): KeyExposure | null {
  if (process.platform === 'win32') return null;
  const read = othersWith(path, 0o040, 0o004);
  const write = othersWith(path, 0o020, 0o002);
  const owner = foreignOwner(path);
  if (owner !== null) {
    const open = read.who === null && write.who === null ? '' : ` (mode ${read.octal} lets ${[read.who, write.who].find((who) => who !== null) ?? ''} in too)`;
    return { mode: read.octal, message: `${file} is owned by another user (uid ${owner.uid}), not this process's user or root, who can read and write it whatever its mode${open}: ${harms.read}, and ${harms.write}. Own it and make it readable by its owner only: ${owner.advice} && chmod 600 ${path}` };
  }
  if (read.who === null && write.who === null) return null;
  const can = [read.who === null ? null : `read by ${read.who}`, write.who === null ? null : `written by ${write.who}`].filter((part) => part !== null).join(' and ');
  const harm = [read.who === null ? null : harms.read, write.who === null ? null : harms.write].filter((part) => part !== null).join(', and ');
  return { mode: read.octal, message: `${file} can be ${can} (mode ${read.octal}): ${harm}. Make it readable by its owner only: chmod 600 ${path}` };
}

/**
 * Whether users other than its owner may read or write the API tokens file (INTERLOCK_API_TOKENS given as a path, or
 * the one generated into the data directory, `source` then saying so): its tokens propose and approve refunds. Used all
 * the same, with a warning, as a signing key file others can read is.
 */
export function tokensFileExposure(path: string, source = 'INTERLOCK_API_TOKENS'): KeyExposure | null {
  return secretFileExposure(path, `The API tokens file ${path} (${source})`, { read: "whoever reads it can call the support API as any caller it names, an approver's token included", write: 'whoever writes it can add a caller of their own' });
}

/**
 * Whether users other than its owner may write the retired public keys file (INTERLOCK_RETIRED_PUBLIC_KEYS_FILE):
 * every key in it is one whose signatures this service calls valid, so whoever can add one can make receipts of
 * their own pass. Used all the same, with a warning, as a signing key file others can read is.
 */
export function retiredKeysFileExposure(path: string): KeyExposure | null {
  if (process.platform === 'win32') return null;
  const write = othersWith(path, 0o020, 0o002);
  const owner = foreignOwner(path);
  if (owner !== null) {
    return { mode: write.octal, message: `The retired public keys file ${path} is owned by another user (uid ${owner.uid}), not this process's user or root, who can write it whatever its mode: whoever writes it can add a key whose signatures this service calls valid. Own it and make it writable by its owner only: ${owner.advice} && chmod 644 ${path}` };
  }
  if (write.who === null) return null;
  return { mode: write.octal, message: `The retired public keys file ${path} can be written by ${write.who} (mode ${write.octal}): whoever writes it can add a key whose signatures this service calls valid. Make it writable by its owner only: chmod 644 ${path}` };
}

/**
 * Where `path` leads when it is a symbolic link to nothing (a secret volume not mounted, a key moved away), or null.
 * Such a path is neither a key nor free: reading it finds no file and creating a key there is refused (the name is
 * taken), so "create it" and "one is already there" would send the operator from one to the other.
 */
export function danglingLink(path: string): string | null {
  try {
    if (!lstatSync(path).isSymbolicLink() || existsSync(path)) return null;
    return resolve(dirname(path), readlinkSync(path));
  } catch {
    return null;
  }
}

/** What to tell the operator about a key path that is a link to nothing, naming where it leads. */
export function danglingLinkMessage(path: string, target: string): string {
  return `The signing key path ${path} is a symbolic link to ${target}, which does not exist (a volume not mounted, a key moved away?). Put the key at ${target}, or point at the key file itself; \`npx interlock keys generate\` writes no key through a link to nothing.`;
}

export function loadOrCreateSigningKey(options: { dataDir: string; signingKeyFile: string | null }): { key: SigningKey; path: string; created: boolean; exposure: KeyExposure | null } {
  const path = keyFilePath(options);
  if (existsSync(path)) return { key: readSigningKey(path, options.signingKeyFile !== null), path, created: false, exposure: keyFileExposure(path) };
  const target = danglingLink(path);
  if (target !== null) throw new InterlockError('invalid_config', danglingLinkMessage(path, target));
  if (options.signingKeyFile !== null) {
    const shown = shownKeyPath(path);
    const create = shown === path ? `\`npx interlock keys generate --out ${path}\`` : '`npx interlock keys generate --out FILE` and set INTERLOCK_SIGNING_KEY_FILE to FILE';
    throw new InterlockError('invalid_config', `INTERLOCK_SIGNING_KEY_FILE points at ${shown}, which does not exist. Create it with ${create}.`);
  }
  const { privatePem } = generateSigningKeyPem();
  // Another process starting at the same moment may have created it first: then its key is the key.
  if (!createFileOnce(path, privatePem)) return { key: readSigningKey(path, false), path, created: false, exposure: keyFileExposure(path) };
  return { key: signingKeyFromPem(privatePem), path, created: true, exposure: null };
}

/**
 * Why the key file could not be read: only a file that is not there is a missing key. A directory, a path through a
 * file or a file this user may not read is said as what it is, or the operator goes looking for a key that exists.
 */
export function unreadableKeyMessage(path: string, error: unknown): string {
  const code = (error as { code?: unknown }).code;
  const target = code === 'ENOENT' ? danglingLink(path) : null;
  if (target !== null) return danglingLinkMessage(path, target);
  const shown = shownKeyPath(path);
  if (code === 'ENOENT') return `No signing key at ${shown}. Create one with \`npx interlock keys generate\`.`;
  const why = `${pathMeaning(error) ?? (error instanceof Error ? error.message : String(error))}${typeof code === 'string' ? ` (${code})` : ''}`;
  const fix = code === 'EISDIR' ? `name the key file itself (e.g. ${join(path, 'signing-key.pem')})` : code === 'EACCES' || code === 'EPERM' ? 'run as the user that owns the key, or give this user read access to it' : 'give the path of the private key file';
  return `Could not read the signing key ${shown}: ${why}; ${fix}.`;
}

/** The key in a PEM file; a file that is unreadable or holds no Ed25519 private key is a configuration error naming it. */
function readSigningKey(path: string, configured: boolean): SigningKey {
  let pem: string;
  try {
    pem = readKeyFile(path);
  } catch (error) {
    throw new InterlockError('invalid_config', `${configured ? 'INTERLOCK_SIGNING_KEY_FILE: ' : ''}${unreadableKeyMessage(path, error)}`, { cause: error });
  }
  try {
    return signingKeyFromPem(pem);
  } catch (error) {
    const where = configured ? `INTERLOCK_SIGNING_KEY_FILE (${path})` : `The signing key file ${path}`;
    throw new InterlockError('invalid_config', `${where} holds no usable Ed25519 private key (${(error as Error).message.replace(/\.$/, '')}). Point INTERLOCK_SIGNING_KEY_FILE at the PEM file \`npx interlock keys generate --out FILE\` wrote (the key that signed this service's receipts, if it has any).`, { cause: error });
  }
}

export function publicKeyPem(key: { publicKey: KeyObject }): string {
  return key.publicKey.export({ type: 'spki', format: 'pem' }).toString();
}

const PRIVATE_KEY_BLOCK = /-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----/;

/**
 * The public keys this service's receipts verify with, by key id: the signing key's first, then those of
 * INTERLOCK_RETIRED_PUBLIC_KEYS_FILE (a PEM bundle, read as `receipt verify --public-key` reads one). A receipt signed
 * before a rotation is checked with the key that signed it. A file that is missing, unreadable, not Ed25519 public
 * keys, or holds a private key is a configuration error naming it and what to put there. Without a current key (a
 * machine that only verifies, holding no signing key), the retired ones alone.
 */
export function verifyingKeys(current: SigningKey | null, retiredFile: string | null): PublicKeySet {
  const own = current === null ? [] : [publicKeyPem(current)];
  if (retiredFile === null) return publicKeySet(own);
  keyPathSetting('INTERLOCK_RETIRED_PUBLIC_KEYS_FILE', retiredFile);
  const asGiven = shownKeyPath(retiredFile) === retiredFile;
  const setting = `INTERLOCK_RETIRED_PUBLIC_KEYS_FILE (${asGiven ? retiredFile : shownSetting(retiredFile)})`;
  const whatToPut = `It holds the public half of each key this service signed with before (\`npx interlock keys public --key OLD-KEY.pem >> ${asGiven ? retiredFile : 'FILE'}\`), or unset it. Nothing was changed.`;
  let text: string;
  try {
    text = readKeyFile(retiredFile);
  } catch (error) {
    throw new InterlockError('invalid_config', `${setting} cannot be read: ${pathMeaning(error) ?? (error as Error).message}. ${whatToPut}`, { cause: error });
  }
  // A private key here would still verify (its public half is derived from it), but this file is shared with
  // whoever verifies receipts: a retired key that can sign must not travel with it.
  if (PRIVATE_KEY_BLOCK.test(text)) throw new InterlockError('invalid_config', `${setting} holds a private key. Replace it with its public half and keep the private key elsewhere (or destroy it once retired). ${whatToPut}`);
  try {
    return publicKeySet([...own, text]);
  } catch (error) {
    throw new InterlockError('invalid_config', `${setting} holds no usable Ed25519 public keys (${(error as Error).message.replace(/\.$/, '')}). ${whatToPut}`, { cause: error });
  }
}
