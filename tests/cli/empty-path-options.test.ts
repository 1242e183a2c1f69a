// Rule: an empty path given to an option that writes a file (`keys generate --out ""`, `receipt export --out ""` or
// `--dir ""`, a shell variable that was never set) is bad input, refused up front (exit 2, nothing written, Redis not
// reached) in a line naming the option; never "Could not create : no such file or directory", a path nobody typed.
// So is an empty path to a key file an option reads (`keys public --key ""`, `receipt verify --public-key ""`): it said
// "No signing key at ." and "Cannot read public key : no such file or directory".
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli, tempDir } from './run-cli.js';

const temp = tempDir('empty-path-options');
afterAll(() => temp.remove());
const env = { INTERLOCK_DATA_DIR: join(temp.dir, 'data'), REDIS_URL: 'redis://127.0.0.1:1' };
const effectId = 'a'.repeat(64);

describe.concurrent('an empty path option', { timeout: 60_000 }, () => {
  it.each([
    ['keys generate --out ""', ['keys', 'generate', '--out', ''], '--out is empty: give the path of the new key file, or leave --out out for the default (INTERLOCK_SIGNING_KEY_FILE, or DATA_DIR/keys/signing-key.pem).'],
    ['receipt export --out ""', ['receipt', 'export', effectId, '--out', ''], '--out is empty: give the path of a new file to write the receipt to, or leave --out out to print it.'],
    ['receipt export --dir ""', ['receipt', 'export', effectId, '--dir', ''], '--dir is empty: give the directory to write the receipts to (. for this one).'],
    ['keys public --key ""', ['keys', 'public', '--key', ''], '--key is empty: give the path of the private key file, or leave --key out for the configured signing key (INTERLOCK_SIGNING_KEY_FILE, or DATA_DIR/keys/signing-key.pem).'],
    ['receipt verify --public-key ""', ['receipt', 'verify', 'tests/fixtures/receipts/failed-refund.json', '--public-key', ''], "--public-key is empty: give the path of a PEM public key file (`npx interlock keys public` prints it where the service runs), or leave --public-key out for this machine's keys."],
  ])('%s is refused naming the option', async (_name, args, said) => {
    const run = await runCli(args, env);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr.trim()).toBe(said);
  });
});
