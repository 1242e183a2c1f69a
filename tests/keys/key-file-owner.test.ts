// Rule: a file of secrets (the signing key, the API tokens) or of trust (the retired public keys) owned by another user
// than the process's, and not root, is exposed to that user whatever its mode: they can read it and change it (chmod it
// open, add a key of their own, which `receipt verify` then calls valid). It draws the same warning as a file whose mode
// lets others in, naming the owner and the chown to run; a file the process's user or root owns, private by its mode,
// draws none.
import { chmodSync, chownSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { generateSigningKeyPem, keyFileExposure, retiredKeysFileExposure, tokensFileExposure } from '../../src/keys/key-store.js';
import { tempDir } from '../cli/run-cli.js';

const temp = tempDir('key-owner');
afterAll(() => temp.remove());

/** Another user than this process's: `nobody` where the tests run as root, else root's files cannot be made. */
const OTHER_UID = 65534;
const asRoot = typeof process.getuid === 'function' && process.getuid() === 0;

function file(name: string, text: string, mode: number, uid: number | null): string {
  const path = join(temp.dir, name);
  writeFileSync(path, text);
  chmodSync(path, mode);
  if (uid !== null) chownSync(path, uid, uid);
  return path;
}

describe.skipIf(!asRoot)('files of secrets and of trust owned by another user', () => {
  it('a private signing key file (0600) owned by another user is named with its owner and the chown', () => {
    const path = file('key-nobody', generateSigningKeyPem().privatePem, 0o600, OTHER_UID);
    const exposure = keyFileExposure(path);
    expect(exposure?.message).toContain(`is owned by another user (uid ${OTHER_UID}), not this process's user or root, who can read and write it whatever its mode`);
    expect(exposure?.message).toContain(`chown 0 ${path} && chmod 600 ${path}`);
  });

  it('a retired public keys file (0644) owned by another user is named: they can add a key the service calls valid', () => {
    const path = file('retired-nobody', generateSigningKeyPem().publicPem, 0o644, OTHER_UID);
    expect(retiredKeysFileExposure(path)?.message).toContain(`is owned by another user (uid ${OTHER_UID})`);
    expect(retiredKeysFileExposure(path)?.message).toContain('whoever writes it can add a key whose signatures this service calls valid');
  });

  it('an API tokens file owned by another user is named too', () => {
    const path = file('tokens-nobody', 'lee:approver:itk_lee0123456789abcdef0123\n', 0o600, OTHER_UID);
    expect(tokensFileExposure(path)?.message).toContain(`is owned by another user (uid ${OTHER_UID})`);
  });

  it('files the process\'s own user owns, private by their modes, draw nothing', () => {
    expect(keyFileExposure(file('key-own', generateSigningKeyPem().privatePem, 0o600, null))).toBeNull();
    expect(retiredKeysFileExposure(file('retired-own', generateSigningKeyPem().publicPem, 0o644, null))).toBeNull();
    expect(tokensFileExposure(file('tokens-own', 'lee:approver:itk_lee0123456789abcdef0123\n', 0o600, null))).toBeNull();
  });
});
