// Rule: a keys command that cannot do what it was asked says so of the path the operator gave, in words they can act
// on, never OpenSSL's or a temporary file's (src/core/signing.ts: OpenSSL's own words, "DECODER routines::unsupported",
// "say neither what the file holds nor what to do"; src/cli/failure.ts: a path problem is said "with its path").
// - `keys public --key FILE` on an empty file, or on a key's base64 without its BEGIN and END lines, printed
//   "FILE is not a usable signing key: error:1E08010C:DECODER routines::unsupported", while the same files given as
//   --public-key to `receipt verify` were explained.
// - `keys generate --out newdir/` (a directory that does not exist, with its trailing slash) failed with "Could not
//   create .newdir.<pid>.<random>.tmp: ...": a temporary file that no longer exists, not the path given.
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { testKey } from '../support/harness.js';
import { runCli, tempDir } from './run-cli.js';

const temp = tempDir('keys-messages');
afterAll(() => temp.remove());

describe.concurrent('keys commands say what is wrong with the path given', { timeout: 60_000 }, () => {
  it('keys public --key on an empty file says it is empty, not OpenSSL\'s DECODER error', async () => {
    const file = join(temp.dir, 'empty.pem');
    writeFileSync(file, '');
    const run = await runCli(['keys', 'public', '--key', file]);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).not.toMatch(/DECODER routines/);
    expect(run.stderr.trim()).toBe(`${file} is not a usable signing key: The text is empty; a signing key is the lines from -----BEGIN PRIVATE KEY----- to -----END PRIVATE KEY----- that \`npx interlock keys generate\` writes`);
  });

  it('keys public --key on a key\'s base64 without its BEGIN and END lines says it holds no PEM block', async () => {
    const file = join(temp.dir, 'bare.pem');
    const { privatePem } = testKey();
    writeFileSync(file, privatePem.split('\n').filter((line) => !line.startsWith('-----')).join('\n'), { mode: 0o600 });
    const run = await runCli(['keys', 'public', '--key', file]);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).not.toMatch(/DECODER routines/);
    expect(run.stderr).toContain(`${file} is not a usable signing key: The text holds no PEM block (no -----BEGIN PRIVATE KEY----- line)`);
  });

  it('keys public --key names a path holding terminal escapes escaped, on its one line: a file name drives no terminal', async () => {
    const file = join(temp.dir, 'evil\u001b[2J\nname.pem');
    writeFileSync(file, '');
    const run = await runCli(['keys', 'public', '--key', file]);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).not.toContain('\u001b');
    expect(run.stderr).toContain('evil\\u001b[2J\\u000aname.pem is not a usable signing key');
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('keys generate --out DIR/ for a directory that does not exist names the path given, not a temporary file', async () => {
    const out = `${join(temp.dir, 'newdir')}/`;
    const run = await runCli(['keys', 'generate', '--out', out], { INTERLOCK_DATA_DIR: join(temp.dir, 'data') });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).not.toMatch(/\.tmp\b/);
    expect(run.stderr.trim()).toBe(`Could not create ${out}: no such file or directory (ENOENT). Give a path this user can write, or fix the one given.`);
    // Nothing left behind.
    expect(readdirSync(temp.dir).filter((name) => name.endsWith('.tmp'))).toEqual([]);
    expect(existsSync(join(temp.dir, 'newdir'))).toBe(false);
  });
});
