// `interlock keys generate` writes an Ed25519 signing key only its owner can read and never overwrites one
// (receipts it signed would lose their verifier); `interlock keys public` prints the PEM auditors verify with.
import { execFileSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { publicKeySet, signingKeyFromPem } from '../../src/core/signing.js';
import { verify } from '../../src/core/verify.js';
import { generateSigningKeyPem, loadOrCreateSigningKey } from '../../src/keys/key-store.js';
import { chainReceipt, drafts } from '../core/entry-chain.js';
import { runCli, tempDir } from './run-cli.js';

const temp = tempDir('keys');
const env = { INTERLOCK_DATA_DIR: join(temp.dir, 'data') };

afterAll(() => temp.remove());

describe.concurrent('keys', { timeout: 60_000 }, () => {
  it('keys generate --out writes an Ed25519 private key readable only by its owner (0600)', async () => {
    const out = join(temp.dir, 'generated', 'signing-key.pem');
    const run = await runCli(['keys', 'generate', '--out', out], env);
    expect(run.code, run.stderr).toBe(0);
    const printed = JSON.parse(run.stdout) as { kid: string; privateKeyFile: string; publicKey: string };
    expect(printed.privateKeyFile).toBe(out);
    expect(statSync(out).mode & 0o777).toBe(0o600);
    const key = signingKeyFromPem(readFileSync(out, 'utf8'));
    expect(key.privateKey.asymmetricKeyType).toBe('ed25519');
    expect(printed.kid).toBe(key.kid);
    expect(printed.publicKey).toContain('BEGIN PUBLIC KEY');
    expect(run.stdout).not.toContain('PRIVATE KEY');
  });

  it('keys generate --out with a path it cannot use exits 2 and says why: a file where a directory must be, a directory given as the file', async () => {
    const file = join(temp.dir, 'a-file');
    writeFileSync(file, 'not a directory');
    const [under, directory] = await Promise.all([runCli(['keys', 'generate', '--out', join(file, 'key.pem')], env), runCli(['keys', 'generate', '--out', temp.dir], env)]);
    expect([under.code, directory.code], `${under.stderr}\n${directory.stderr}`).toEqual([2, 2]);
    expect(under.stderr.trim()).toBe(`Could not create the directory ${file}: a file is already there (EEXIST). Give a path this user can write, or fix the one given.`);
    expect(directory.stderr.trim()).toBe(`${temp.dir} is a directory; --out takes the path of the key file to write (e.g. ${join(temp.dir, 'signing-key.pem')}).`);
  });

  it('keys generate --out a FIFO exits 2 saying what is there, never that a signing key already exists there', async () => {
    const fifo = join(temp.dir, 'fifo.pem');
    execFileSync('mkfifo', [fifo]);
    const run = await runCli(['keys', 'generate', '--out', fifo], env);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr.trim()).toBe(`${fifo} is a FIFO (named pipe), not a regular file; --out takes the path of a new key file.`);
  });

  it('keys generate refuses to overwrite an existing key and leaves it untouched', async () => {
    const existing = join(temp.dir, 'existing.pem');
    const { privatePem } = generateSigningKeyPem();
    writeFileSync(existing, privatePem, { mode: 0o600 });
    const run = await runCli(['keys', 'generate', '--out', existing], env);
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr).toContain(`A signing key already exists at ${existing}`);
    expect(readFileSync(existing, 'utf8')).toBe(privatePem);
  });

  it('keys public --key names a file that holds no key instead of crashing (bad input: exit 2)', async () => {
    const notAKey = join(temp.dir, 'not-a-key.pem');
    writeFileSync(notAKey, 'not a key\n');
    const run = await runCli(['keys', 'public', '--key', notAKey], env);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr.startsWith(`${notAKey} is not a usable signing key: `)).toBe(true);
  });

  it('a public key or a passphrase-protected private key given as the signing key is named for what it is, with what to do instead of OpenSSL\'s words', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const publicFile = join(temp.dir, 'given-public.pem');
    const lockedFile = join(temp.dir, 'given-locked.pem');
    writeFileSync(publicFile, publicKey.export({ type: 'spki', format: 'pem' }).toString());
    writeFileSync(lockedFile, privateKey.export({ type: 'pkcs8', format: 'pem', cipher: 'aes-256-cbc', passphrase: 'secret' }).toString(), { mode: 0o600 });
    const [given, locked] = await Promise.all([runCli(['keys', 'public', '--key', publicFile], env), runCli(['keys', 'public', '--key', lockedFile], env)]);
    expect([given.code, locked.code], `${given.stderr}\n${locked.stderr}`).toEqual([2, 2]);
    expect(given.stderr).toContain(`${publicFile} is not a usable signing key: It holds a public key (BEGIN PUBLIC KEY), which verifies receipts but cannot sign them; the signing key file must hold the private key (BEGIN PRIVATE KEY).`);
    expect(locked.stderr).toContain(`${lockedFile} is not a usable signing key: The private key is protected by a passphrase (BEGIN ENCRYPTED PRIVATE KEY), which the service has no way to enter. Write it out without one, \`openssl pkey -in FILE -out PLAIN.pem\``);
    for (const run of [given, locked]) {
      expect(run.stderr).toContain('npx interlock keys generate --out FILE');
      expect(run.stderr).not.toMatch(/routines|DECODER|cancelled/);
    }
    expect(() => loadOrCreateSigningKey({ dataDir: temp.dir, signingKeyFile: publicFile })).toThrow(`INTERLOCK_SIGNING_KEY_FILE (${publicFile}) holds no usable Ed25519 private key (It holds a public key (BEGIN PUBLIC KEY)`);
    expect(() => loadOrCreateSigningKey({ dataDir: temp.dir, signingKeyFile: lockedFile })).toThrow(`INTERLOCK_SIGNING_KEY_FILE (${lockedFile}) holds no usable Ed25519 private key (The private key is protected by a passphrase`);
  });

  it('an OpenSSH private key (what ssh-keygen writes) given as the signing key is named for what it is, with what to do instead of OpenSSL\'s words', async () => {
    const sshFile = join(temp.dir, 'id_ed25519');
    // The header and the format's opening bytes ("openssh-key-v1", cipher none): the label alone decides the answer.
    writeFileSync(sshFile, '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAAB\n-----END OPENSSH PRIVATE KEY-----\n', { mode: 0o600 });
    const run = await runCli(['keys', 'public', '--key', sshFile], env);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(`${sshFile} is not a usable signing key: It holds an OpenSSH private key (BEGIN OPENSSH PRIVATE KEY, as ssh-keygen writes), a format the service does not read`);
    expect(run.stderr).toContain('npx interlock keys generate --out FILE');
    expect(run.stderr).not.toMatch(/routines|DECODER/);
    expect(() => loadOrCreateSigningKey({ dataDir: temp.dir, signingKeyFile: sshFile })).toThrow(`INTERLOCK_SIGNING_KEY_FILE (${sshFile}) holds no usable Ed25519 private key (It holds an OpenSSH private key`);
  });

  it('keys public --key says why a key path could not be read (a directory, a path through a file), and calls only an absent file a missing key', async () => {
    const directory = join(temp.dir, 'key-directory');
    mkdirSync(directory);
    const file = join(temp.dir, 'plain-file');
    writeFileSync(file, 'not a directory');
    const absent = join(temp.dir, 'absent.pem');
    const [onDirectory, throughFile, missing] = await Promise.all([
      runCli(['keys', 'public', '--key', directory], env),
      runCli(['keys', 'public', '--key', join(file, 'key.pem')], env),
      runCli(['keys', 'public', '--key', absent], env),
    ]);
    expect([onDirectory, throughFile, missing].map((run) => run.code)).toEqual([2, 2, 2]);
    expect(onDirectory.stderr.trim()).toBe(`Could not read the signing key ${directory}: it is a directory (EISDIR); name the key file itself (e.g. ${join(directory, 'signing-key.pem')}).`);
    expect(throughFile.stderr.trim()).toBe(`Could not read the signing key ${join(file, 'key.pem')}: a part of the path is a file, not a directory (ENOTDIR); give the path of the private key file.`);
    expect(missing.stderr.trim()).toBe(`No signing key at ${absent}. Create one with \`npx interlock keys generate\`.`);
    // A command that signs (it opens the stores) says the same of a directory, not "holds no usable key (EISDIR)".
    const signing = await runCli(['effect', 'show', '0'.repeat(64)], { ...env, INTERLOCK_SIGNING_KEY_FILE: directory, REDIS_URL: 'redis://127.0.0.1:1', INTERLOCK_KEY_PREFIX: `keys-dir-${process.pid}` });
    expect(signing.code, signing.stderr).toBe(2);
    expect(signing.stderr).toContain(`INTERLOCK_SIGNING_KEY_FILE: Could not read the signing key ${directory}: it is a directory (EISDIR); name the key file itself`);
  });

  it('a key path that is a symbolic link to nothing is said to be one, naming where it leads, by keys public, keys generate and a command that signs, not called missing by one and taken by the other', async () => {
    const target = join(temp.dir, 'unmounted', 'signing-key.pem');
    const link = join(temp.dir, 'dangling-key.pem');
    symlinkSync(target, link);
    const said = `The signing key path ${link} is a symbolic link to ${target}, which does not exist`;
    const [shown, generated, signing] = await Promise.all([
      runCli(['keys', 'public', '--key', link], env),
      runCli(['keys', 'generate', '--out', link], env),
      runCli(['effect', 'show', '0'.repeat(64)], { ...env, INTERLOCK_SIGNING_KEY_FILE: link, REDIS_URL: 'redis://127.0.0.1:1', INTERLOCK_KEY_PREFIX: `keys-dangling-${process.pid}` }),
    ]);
    expect([shown, generated, signing].map((run) => run.code)).toEqual([2, 2, 2]);
    for (const run of [shown, generated, signing]) expect(run.stderr).toContain(said);
    expect(existsSync(target)).toBe(false);
  });

  it('a signing key file holding two private keys is refused, not read as its first: which one signs would be a guess', async () => {
    const older = generateSigningKeyPem().privatePem;
    const newer = generateSigningKeyPem().privatePem;
    const both = join(temp.dir, 'old-and-new.pem');
    writeFileSync(both, `${older}${newer}`, { mode: 0o600 });
    const run = await runCli(['keys', 'public', '--key', both], env);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain(`${both} is not a usable signing key: The text holds 2 PEM blocks, not one private key`);
    expect(() => loadOrCreateSigningKey({ dataDir: temp.dir, signingKeyFile: both })).toThrow(`INTERLOCK_SIGNING_KEY_FILE (${both}) holds no usable Ed25519 private key (The text holds 2 PEM blocks, not one private key`);
  });

  it('keys public --key prints a PEM that verifies receipts signed by that key', async () => {
    const keyFile = join(temp.dir, 'signer.pem');
    writeFileSync(keyFile, generateSigningKeyPem().privatePem, { mode: 0o600 });
    const signer = signingKeyFromPem(readFileSync(keyFile, 'utf8'));
    const run = await runCli(['keys', 'public', '--key', keyFile], env);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^-----BEGIN PUBLIC KEY-----\n[\s\S]+-----END PUBLIC KEY-----\n$/);
    expect(run.stderr).toContain(signer.kid);

    const receipt = chainReceipt('keys-public', [drafts.proposed(), drafts.authorized(), drafts.dispatched(), drafts.committed('re_1')], signer);
    expect(verify(JSON.parse(JSON.stringify(receipt)), { publicKeys: publicKeySet([run.stdout]) })).toMatchObject({ valid: true, signed: true, problems: [] });
  });
});
