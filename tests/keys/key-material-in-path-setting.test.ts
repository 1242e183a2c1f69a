// Rule: a key path setting (INTERLOCK_SIGNING_KEY_FILE, INTERLOCK_RETIRED_PUBLIC_KEYS_FILE) that holds key material (a
// PEM block, or text of several lines) instead of a path is refused, saying so, and no message ever quotes it: as "the
// path" it reached stderr and so the container's log, where whoever reads it could sign receipts as this gate. The
// base64 of an Ed25519 key given without its PEM lines is key material too (it begins with the key's fixed header);
// another long value that reads as no path is shown by its length only, a short relative path as given.
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkKeySettings, loadConfig } from '../../src/interlock.js';
import { keyFilePath, loadOrCreateSigningKey, verifyingKeys } from '../../src/keys/key-store.js';
import { runCli } from '../cli/run-cli.js';

const privatePem = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const publicPem = generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'pem' }).toString();
/** The base64 of the private key, the secret part of its PEM. */
const body = privatePem.split('\n')[1] ?? '';
const dataDir = mkdtempSync(join(tmpdir(), 'key-material-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

function refusal(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('expected a refusal');
}

describe('key material given where a key path setting wants a path', () => {
  it.each([
    ['the PEM as it is', privatePem],
    ['the PEM on one line, its breaks written \\n (as many env files hold it)', privatePem.replaceAll('\n', '\\n')],
    ['the PEM without its BEGIN line', privatePem.split('\n').slice(1).join('\n')],
  ])('INTERLOCK_SIGNING_KEY_FILE holding %s is refused as key material, never quoted', (_, value) => {
    for (const run of [() => loadOrCreateSigningKey({ dataDir, signingKeyFile: value }), () => keyFilePath({ dataDir, signingKeyFile: value })]) {
      const message = refusal(run);
      expect(message).toContain('INTERLOCK_SIGNING_KEY_FILE holds key material, not a path');
      expect(message).toContain('set INTERLOCK_SIGNING_KEY_FILE to its path');
      expect(message).not.toContain(body);
    }
  });

  it('INTERLOCK_RETIRED_PUBLIC_KEYS_FILE holding a PEM (public or, by mistake, private) is refused, never quoted', () => {
    for (const value of [publicPem, privatePem]) {
      const message = refusal(() => verifyingKeys(null, value));
      expect(message).toContain('INTERLOCK_RETIRED_PUBLIC_KEYS_FILE holds key material, not a path');
      expect(message).not.toContain(value.split('\n')[1] ?? '');
    }
  });

  it('the start-up check (serve) refuses it without quoting it', () => {
    const config = { ...loadConfig({}), dataDir, signingKeyFile: privatePem };
    expect(refusal(() => checkKeySettings(config))).not.toContain(body);
  });

  it('the base64 alone, on one line, is refused as key material (an Ed25519 key begins with its fixed header); a long value that is no path is shown by its length; a path as given, a short relative one too', () => {
    for (const value of [body, publicPem.split('\n')[1] ?? '']) {
      const message = refusal(() => keyFilePath({ dataDir, signingKeyFile: value }));
      expect(message).toContain('INTERLOCK_SIGNING_KEY_FILE holds key material, not a path');
      expect(message).not.toContain(value);
    }
    const opaque = 'q7Zk2LmX9vRt4NbW8sJd0PfhXk9q2LmZ7vRt4NbW8sJd';
    const message = refusal(() => loadOrCreateSigningKey({ dataDir, signingKeyFile: opaque }));
    expect(message).toContain(`INTERLOCK_SIGNING_KEY_FILE points at the path given (${opaque.length} characters, not shown), which does not exist`);
    expect(message).not.toContain(opaque);
    for (const relative of ['keys/signing', 'secrets/interlock_signing_key']) {
      expect(refusal(() => loadOrCreateSigningKey({ dataDir, signingKeyFile: relative }))).toContain(`INTERLOCK_SIGNING_KEY_FILE points at ${relative}, which does not exist. Create it with \`npx interlock keys generate --out ${relative}\``);
    }
    const path = join(dataDir, 'missing', 'signing-key.pem');
    expect(refusal(() => loadOrCreateSigningKey({ dataDir, signingKeyFile: path }))).toContain(`INTERLOCK_SIGNING_KEY_FILE points at ${path}, which does not exist. Create it with \`npx interlock keys generate --out ${path}\``);
    expect(refusal(() => verifyingKeys(null, body))).not.toContain(body);
  });

  it('`interlock keys public` refuses it, exit 2, printing no part of the key', async () => {
    const run = await runCli(['keys', 'public'], { INTERLOCK_DATA_DIR: dataDir, INTERLOCK_SIGNING_KEY_FILE: privatePem });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain('INTERLOCK_SIGNING_KEY_FILE holds key material, not a path');
    expect(`${run.stdout}${run.stderr}`).not.toContain(body);
  });

  it('`interlock receipt verify` refuses a PEM in INTERLOCK_RETIRED_PUBLIC_KEYS_FILE without printing it', async () => {
    const run = await runCli(['receipt', 'verify', join(dataDir, 'no-receipt.json')], { INTERLOCK_DATA_DIR: dataDir, INTERLOCK_RETIRED_PUBLIC_KEYS_FILE: privatePem });
    expect(run.stderr).toContain('INTERLOCK_RETIRED_PUBLIC_KEYS_FILE holds key material, not a path');
    expect(`${run.stdout}${run.stderr}`).not.toContain(body);
  });
});
