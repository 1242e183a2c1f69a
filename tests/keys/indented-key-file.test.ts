// Rule: a key file whose PEM lines are indented (a key pasted from a YAML manifest, a Markdown page, an e-mail) is
// refused naming the file and saying in words that its lines are indented and to remove the leading spaces, never in
// OpenSSL's ("DECODER routines::unsupported"), for INTERLOCK_SIGNING_KEY_FILE and INTERLOCK_RETIRED_PUBLIC_KEYS_FILE
// alike. It is not mended: a key file holds the key exactly.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadOrCreateSigningKey, verifyingKeys } from '../../src/keys/key-store.js';
import { publicKeySet } from '../../src/core/signing.js';
import { testKey } from '../support/harness.js';
import { tempDir } from '../cli/run-cli.js';

const temp = tempDir('indented-key-file');
afterAll(() => temp.remove());
const current = testKey();
const retired = testKey();

/** `text` with every line that is not empty indented by `indent`, as a YAML block scalar holds it. */
const indented = (text: string, indent = '    ') => text.split('\n').map((line) => (line === '' ? line : `${indent}${line}`)).join('\n');
const at = (name: string, text: string, mode = 0o644) => {
  const path = join(temp.dir, name);
  writeFileSync(path, text, { mode });
  return path;
};
const thrown = (run: () => unknown): string => {
  try {
    run();
  } catch (error) {
    return (error as Error).message;
  }
  return '';
};

describe('a key file whose PEM lines are indented', () => {
  it('as INTERLOCK_RETIRED_PUBLIC_KEYS_FILE is refused naming it, saying its lines are indented and to remove the leading spaces', () => {
    const file = at('retired.pem', indented(retired.publicPem));
    const message = thrown(() => verifyingKeys(current.key, file));
    expect(message).toContain(`INTERLOCK_RETIRED_PUBLIC_KEYS_FILE (${file}) holds no usable Ed25519 public keys (The text's PEM lines are indented: line 1 starts with 4 spaces before -----BEGIN PUBLIC KEY-----`);
    expect(message).toContain('remove the leading spaces from each line');
    expect(message).not.toMatch(/routines|DECODER/);
  });

  it('as a bundle of retired keys, or pasted under a YAML key with tabs, is refused in the same words, naming its line', () => {
    const bundle = at('bundle.pem', indented(`${retired.publicPem}${testKey().publicPem}`, '  '));
    expect(thrown(() => verifyingKeys(current.key, bundle))).toContain('line 1 starts with 2 spaces before -----BEGIN PUBLIC KEY-----');
    const yaml = at('yaml.pem', `retired: |\n${indented(retired.publicPem, '\t')}`);
    const message = thrown(() => verifyingKeys(null, yaml));
    expect(message).toContain('line 2 starts with 1 tab before -----BEGIN PUBLIC KEY-----');
    expect(message).not.toMatch(/routines|DECODER/);
  });

  it('as INTERLOCK_SIGNING_KEY_FILE is refused naming it, in the same words', () => {
    const file = at('signing.pem', indented(current.privatePem), 0o600);
    const message = thrown(() => loadOrCreateSigningKey({ dataDir: join(temp.dir, 'data'), signingKeyFile: file }));
    expect(message).toContain(`INTERLOCK_SIGNING_KEY_FILE (${file}) holds no usable Ed25519 private key (The text's PEM lines are indented: line 1 starts with 4 spaces before -----BEGIN PRIVATE KEY-----`);
    expect(message).toContain('remove the leading spaces from each line');
    expect(message).not.toMatch(/routines|DECODER/);
  });

  it('is read once its lines start at the start of the line again, as it was before (only the BEGIN and END lines are judged)', () => {
    const file = at('fixed.pem', indented(retired.publicPem).replace(/^ +/gm, ''));
    expect([...verifyingKeys(current.key, file).keys()]).toEqual([current.key.kid, retired.key.kid]);
    // Base64 lines indented between BEGIN and END lines that start their lines are read, as OpenSSL reads them.
    const body = retired.publicPem.replace(/\n(?!-----)(?=.)/g, '\n  ');
    expect([...publicKeySet([body]).keys()]).toEqual([retired.key.kid]);
  });
});
