// The public keys of signing keys retired by a rotation (INTERLOCK_RETIRED_PUBLIC_KEYS_FILE). A retired-keys file the
// service cannot use (missing, not public keys, a private key) is refused at start, saying what to put there.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { verifyingKeys } from '../../src/keys/key-store.js';
import { runCli, tempDir } from '../cli/run-cli.js';
import { REDIS_URL, testKey } from '../support/harness.js';

const temp = tempDir('rotation');
const RETIRED_SETTING = 'INTERLOCK_RETIRED_PUBLIC_KEYS_FILE';

const before = testKey();
const after = testKey();

afterAll(() => temp.remove());

describe('INTERLOCK_RETIRED_PUBLIC_KEYS_FILE', () => {
  const current = testKey();
  const at = (name: string, text: string) => {
    const path = join(temp.dir, name);
    writeFileSync(path, text);
    return path;
  };

  it('holds every public key of a bundle (`cat old.pem older.pem`), by key id, after the current key', () => {
    const older = testKey();
    const keys = verifyingKeys(current.key, at('bundle.pem', `${before.publicPem}${older.publicPem}`));
    expect([...keys.keys()]).toEqual([current.key.kid, before.key.kid, older.key.kid]);
    expect([...verifyingKeys(current.key, null).keys()]).toEqual([current.key.kid]);
  });

  it('is refused, naming the file, what is wrong and what to put there, when it is missing, holds no public key, or holds a private key', () => {
    const missing = join(temp.dir, 'nowhere.pem');
    expect(() => verifyingKeys(current.key, missing)).toThrow(`${RETIRED_SETTING} (${missing}) cannot be read: no such file or directory. It holds the public half of each key this service signed with before (\`npx interlock keys public --key OLD-KEY.pem >> ${missing}\`), or unset it. Nothing was changed.`);
    const garbage = at('garbage.pem', 'not a key\n');
    expect(() => verifyingKeys(current.key, garbage)).toThrow(`${RETIRED_SETTING} (${garbage}) holds no usable Ed25519 public keys (`);
    const cut = at('cut.pem', `${before.publicPem}${after.publicPem.slice(0, 60)}`);
    expect(() => verifyingKeys(current.key, cut)).toThrow('PEM block 2 of 2 has no END line matching its BEGIN line');
    const secret = at('secret.pem', `${before.publicPem}${after.privatePem}`);
    expect(() => verifyingKeys(current.key, secret)).toThrow(`${RETIRED_SETTING} (${secret}) holds a private key. Replace it with its public half and keep the private key elsewhere`);
  });

  it('that cannot be used stops `serve` at start (exit 2) with the same words, before it listens', async () => {
    const secret = at('serve-secret.pem', after.privatePem);
    const run = await runCli(['serve', '--roles', 'api', '--port', '0'], { REDIS_URL, INTERLOCK_KEY_PREFIX: `tr${Date.now().toString(36)}`, INTERLOCK_DATA_DIR: join(temp.dir, 'serve-data'), [RETIRED_SETTING]: secret }, { timeoutMs: 20_000 });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(`${RETIRED_SETTING} (${secret}) holds a private key.`);
  });
});
