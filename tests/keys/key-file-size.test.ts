// Key files are read as receipts are: only a regular file of at most MAX_KEY_FILE_BYTES, so a wrong path (a device, a
// log file, a FIFO; tests/cli/key-file-not-regular.test.ts) is refused at start as a configuration error naming the
// setting and what the file is, instead of being read whole into memory first. A key file of ordinary size still loads.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { generateSigningKeyPem, loadOrCreateSigningKey, MAX_KEY_FILE_BYTES, verifyingKeys } from '../../src/keys/key-store.js';
import { tempDir } from '../cli/run-cli.js';

const temp = tempDir('key-file-size');
const oversized = join(temp.dir, 'huge.pem');
// A real key first, so only the size can be what is refused.
const { privatePem, publicPem } = generateSigningKeyPem();
writeFileSync(oversized, `${publicPem}${'#'.repeat(MAX_KEY_FILE_BYTES)}`);

afterAll(() => temp.remove());

describe('a key file past the size a key file may be', () => {
  it('INTERLOCK_RETIRED_PUBLIC_KEYS_FILE is refused as invalid_config, saying its size', () => {
    expect(() => verifyingKeys(null, oversized)).toThrow(expect.objectContaining({ code: 'invalid_config', message: expect.stringContaining(`INTERLOCK_RETIRED_PUBLIC_KEYS_FILE (${oversized}) cannot be read: it is 1.0 MiB, more than the 1 MiB a key file may be`) }));
  });

  it('INTERLOCK_SIGNING_KEY_FILE is refused as invalid_config, saying its size', () => {
    expect(() => loadOrCreateSigningKey({ dataDir: temp.dir, signingKeyFile: oversized })).toThrow(expect.objectContaining({ code: 'invalid_config', message: expect.stringContaining('more than the 1 MiB a key file may be') }));
  });

  it('key files of ordinary size still load', () => {
    const keyFile = join(temp.dir, 'signing-key.pem');
    const retired = join(temp.dir, 'retired.pem');
    writeFileSync(keyFile, privatePem, { mode: 0o600 });
    writeFileSync(retired, generateSigningKeyPem().publicPem);
    const { key } = loadOrCreateSigningKey({ dataDir: temp.dir, signingKeyFile: keyFile });
    expect(verifyingKeys(key, retired).size).toBe(2);
  });
});
