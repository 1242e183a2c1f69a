// Rule: a signing key file that its group or all users can read is still used (a container may mount a secret with
// such a mode), but never in silence: the service logs a warning naming the file, its mode and the chmod to run, and
// every CLI command that reads the key says it on stderr. A key readable by its owner only draws no warning. The
// same for a key file others can write (they could put in a key of their own), and for a retired public keys file
// others can write (every key in it is one whose signatures the service calls valid).
import { chmodSync, writeFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { openStores } from '../../src/interlock.js';
import { generateSigningKeyPem, keyFileExposure, retiredKeysFileExposure, tokensFileExposure } from '../../src/keys/key-store.js';
import { spawnServe } from '../facts/facts-rig.js';
import { runCli, tempDir } from '../cli/run-cli.js';
import { testConfig } from '../support/harness.js';

const temp = tempDir('key-mode');
afterAll(() => temp.remove());

/** A private key file with exactly `mode` (chmod after writing: the umask would narrow the mode given at creation). */
function keyFile(name: string, mode: number): string {
  const path = join(temp.dir, name);
  writeFileSync(path, generateSigningKeyPem().privatePem);
  chmodSync(path, mode);
  return path;
}

describe.skipIf(process.platform === 'win32')('API tokens file mode', { timeout: 60_000 }, () => {
  const tokensFile = (name: string, mode: number) => {
    const path = join(temp.dir, name);
    writeFileSync(path, 'lee:approver:itk_lee0123456789abcdef0123\n');
    chmodSync(path, mode);
    return path;
  };

  it('names who besides the owner can read or write the tokens, what they could do, and the chmod; nothing for 0600', () => {
    const open = tokensFile('tokens-open', 0o644);
    expect(tokensFileExposure(open)).toEqual({ mode: '644', message: `The API tokens file ${open} (INTERLOCK_API_TOKENS) can be read by its group and all users (mode 644): whoever reads it can call the support API as any caller it names, an approver's token included. Make it readable by its owner only: chmod 600 ${open}` });
    expect(tokensFileExposure(tokensFile('tokens-writable', 0o622))?.message).toContain('can be written by its group and all users (mode 622): whoever writes it can add a caller of their own');
    expect(tokensFileExposure(tokensFile('tokens-private', 0o600))).toBeNull();
  });

  it('serve uses a tokens file others can read, and logs a warning naming it and the chmod', async () => {
    const open = tokensFile('tokens-serve', 0o644);
    const config = testConfig();
    const served = await spawnServe(['--roles', 'api', '--port', '0'], { REDIS_URL: config.redisUrl, INTERLOCK_KEY_PREFIX: config.keyPrefix, INTERLOCK_UNSAFE_DURABILITY: '1', INTERLOCK_DATA_DIR: join(temp.dir, 'serve-data'), INTERLOCK_API_TOKENS: open });
    served.child.kill('SIGTERM');
    expect(await served.exited).toBe(0);
    const warnings = served.lines.filter((line) => line.includes('"file"') && line.includes('INTERLOCK_API_TOKENS')).map((line) => JSON.parse(line) as { level: number; file: string; mode: string; msg: string });
    expect(warnings).toEqual([expect.objectContaining({ level: 40, file: open, mode: '644', msg: expect.stringContaining(`chmod 600 ${open}`) as string })]);
  });
});

describe.skipIf(process.platform === 'win32')('signing key file mode', { timeout: 60_000 }, () => {
  it('names who besides the owner can read the key, and the chmod that stops it; nothing for 0600 or 0400', () => {
    const open = keyFile('open.pem', 0o644);
    expect(keyFileExposure(open)).toEqual({ mode: '644', message: `The signing key file ${open} can be read by its group and all users (mode 644): whoever reads it can sign receipts as this gate. Make it readable by its owner only: chmod 600 ${open}` });
    expect(keyFileExposure(keyFile('group.pem', 0o640))?.message).toContain('can be read by its group (mode 640)');
    expect(keyFileExposure(keyFile('others.pem', 0o604))?.message).toContain('can be read by all users (mode 604)');
    expect(keyFileExposure(keyFile('private.pem', 0o600))).toBeNull();
    expect(keyFileExposure(keyFile('read-only.pem', 0o400))).toBeNull();
  });

  it('the service uses a key file others can read, and logs a warning naming the file, its mode and the chmod', async () => {
    const open = keyFile('service.pem', 0o644);
    const lines: string[] = [];
    const sink = new Writable({ write: (chunk: Buffer, _encoding, done) => { lines.push(chunk.toString()); done(); } });
    const stores = await openStores(testConfig({ signingKeyFile: open }), { logger: pino({ level: 'warn' }, sink) });
    await stores.close();
    const warnings = lines.map((line) => JSON.parse(line) as { level: number; keyFile?: string; mode?: string; msg: string }).filter((record) => record.keyFile !== undefined);
    expect(warnings).toEqual([expect.objectContaining({ level: 40, keyFile: open, mode: '644', msg: expect.stringContaining(`chmod 600 ${open}`) as string })]);
  });

  it('keys public says so on stderr and still prints the public key; a 0600 key prints no warning', async () => {
    const open = keyFile('cli-open.pem', 0o640);
    const closed = keyFile('cli-closed.pem', 0o600);
    const [loose, tight] = await Promise.all([runCli(['keys', 'public', '--key', open]), runCli(['keys', 'public', '--key', closed])]);
    expect([loose.code, tight.code], `${loose.stderr}\n${tight.stderr}`).toEqual([0, 0]);
    expect(loose.stdout).toContain('BEGIN PUBLIC KEY');
    expect(loose.stderr).toContain(`The signing key file ${open} can be read by its group (mode 640): whoever reads it can sign receipts as this gate. Make it readable by its owner only: chmod 600 ${open}\n`);
    expect(tight.stderr).not.toContain('can be read by');
  });

  it('a command that opens the stores (approvals describe) says it on stderr as one plain line, then answers', async () => {
    const open = keyFile('cli-stores.pem', 0o644);
    const run = await runCli(['approvals', 'describe', 'ap_none'], { INTERLOCK_SIGNING_KEY_FILE: open, INTERLOCK_KEY_PREFIX: testConfig().keyPrefix, REDIS_URL: testConfig().redisUrl });
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr).toBe(`The signing key file ${open} can be read by its group and all users (mode 644): whoever reads it can sign receipts as this gate. Make it readable by its owner only: chmod 600 ${open}\nNo approval ap_none.\n`);
  });

  it('names who besides the owner can write the key, and what that allows', () => {
    const writable = keyFile('writable.pem', 0o622);
    expect(keyFileExposure(writable)).toEqual({ mode: '622', message: `The signing key file ${writable} can be written by its group and all users (mode 622): whoever writes it can replace the key this gate signs with. Make it readable by its owner only: chmod 600 ${writable}` });
    expect(keyFileExposure(keyFile('both.pem', 0o666))?.message).toContain('can be read by its group and all users and written by its group and all users (mode 666): whoever reads it can sign receipts as this gate, and whoever writes it can replace the key this gate signs with.');
  });

  it('a retired public keys file others can write draws a warning from the service and from receipt verify; one only they can read does not', async () => {
    const publicFile = (name: string, mode: number) => {
      const path = join(temp.dir, name);
      writeFileSync(path, generateSigningKeyPem().publicPem);
      chmodSync(path, mode);
      return path;
    };
    const open = publicFile('retired-open.pem', 0o666);
    const readable = publicFile('retired-readable.pem', 0o644);
    expect(retiredKeysFileExposure(readable)).toBeNull();
    expect(retiredKeysFileExposure(open)).toEqual({ mode: '666', message: `The retired public keys file ${open} can be written by its group and all users (mode 666): whoever writes it can add a key whose signatures this service calls valid. Make it writable by its owner only: chmod 644 ${open}` });
    const lines: string[] = [];
    const sink = new Writable({ write: (chunk: Buffer, _encoding, done) => { lines.push(chunk.toString()); done(); } });
    const stores = await openStores(testConfig({ signingKeyFile: keyFile('with-retired.pem', 0o600), retiredPublicKeysFile: open }), { logger: pino({ level: 'warn' }, sink) });
    await stores.close();
    const warnings = lines.map((line) => JSON.parse(line) as { retiredKeysFile?: string; mode?: string; msg: string }).filter((record) => record.retiredKeysFile !== undefined);
    expect(warnings).toEqual([expect.objectContaining({ retiredKeysFile: open, mode: '666', msg: expect.stringContaining(`chmod 644 ${open}`) as string })]);
    const run = await runCli(['receipt', 'verify', join(temp.dir, 'no-such-receipt.json')], { INTERLOCK_SIGNING_KEY_FILE: keyFile('verify-key.pem', 0o600), INTERLOCK_RETIRED_PUBLIC_KEYS_FILE: open });
    expect(run.stderr).toContain(`The retired public keys file ${open} can be written by its group and all users (mode 666)`);
  });
});
