// Rule: processes that start at the same moment on a fresh data directory end with one signing key and one token
// file, and every one of them reads it whole (none fails on EEXIST, none reads a half-written file).
import { spawn } from 'node:child_process';
import fs, { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createFileOnce } from '../../src/files.js';
import { loadOrCreateSigningKey, publicKeyPem } from '../../src/keys/key-store.js';
import { loadOrCreateLocalTokens, localToken } from '../../webhooks/api/tokens.js';

const root = mkdtempSync(join(tmpdir(), 'interlock-create-once-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** One child process that creates (or reads) the key and the tokens and prints what it got. */
const CHILD = `
  const { loadOrCreateSigningKey, publicKeyPem } = await import(${JSON.stringify(new URL('../../src/keys/key-store.ts', import.meta.url).pathname)});
  const { loadOrCreateLocalTokens, localToken } = await import(${JSON.stringify(new URL('../../webhooks/api/tokens.ts', import.meta.url).pathname)});
  const dataDir = process.argv[1];
  // Everyone loaded: start together (a spin, so no timer resolution spreads them).
  while (Date.now() < Number(process.argv[2]));
  const { key, created } = loadOrCreateSigningKey({ dataDir, signingKeyFile: null });
  const tokens = loadOrCreateLocalTokens(dataDir);
  process.stdout.write(JSON.stringify({ created, tokensCreated: tokens.created, pem: publicKeyPem(key), support: localToken(tokens.file, 'support') }));
`;

function child(dataDir: string, startAt: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const proc = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', CHILD, dataDir, String(startAt)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    proc.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    proc.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('files created on first use', () => {
  it('createFileOnce creates a file once, with its whole content, and leaves no temporary file behind', () => {
    const dir = join(root, 'unit');
    expect(createFileOnce(join(dir, 'f'), 'first')).toBe(true);
    expect(createFileOnce(join(dir, 'f'), 'second')).toBe(false);
    expect(readFileSync(join(dir, 'f'), 'utf8')).toBe('first');
    expect(statSync(join(dir, 'f')).mode & 0o777).toBe(0o600);
    expect(readdirSync(dir)).toEqual(['f']);
  });

  it('a process that saw no file and then lost the race to create it reads the winner\'s key and tokens instead of failing', () => {
    const dataDir = join(root, 'lost-race');
    const first = loadOrCreateSigningKey({ dataDir, signingKeyFile: null });
    const firstTokens = loadOrCreateLocalTokens(dataDir);
    // Every existence check now answers "absent", as it did for a process that checked just before the winner wrote.
    const existsSync = fs.existsSync;
    fs.existsSync = () => false;
    syncBuiltinESMExports();
    try {
      const second = loadOrCreateSigningKey({ dataDir, signingKeyFile: null });
      expect(second.created).toBe(false);
      expect(publicKeyPem(second.key)).toBe(publicKeyPem(first.key));
      const secondTokens = loadOrCreateLocalTokens(dataDir);
      expect(secondTokens.created).toBe(false);
      expect(localToken(secondTokens.file, 'support')).toBe(localToken(firstTokens.file, 'support'));
    } finally {
      fs.existsSync = existsSync;
      syncBuiltinESMExports();
    }
  });

  it('eight processes starting together on a fresh data directory all get the same key and tokens, and exactly one created them', { timeout: 60_000 }, async () => {
    const dataDir = join(root, 'race');
    const startAt = Date.now() + 6_000;
    const runs = await Promise.all(Array.from({ length: 8 }, () => child(dataDir, startAt)));
    for (const run of runs) expect(run.code, run.stderr).toBe(0);
    const answers = runs.map((run) => JSON.parse(run.stdout) as { created: boolean; tokensCreated: boolean; pem: string; support: string });
    expect(new Set(answers.map((answer) => answer.pem)).size).toBe(1);
    expect(new Set(answers.map((answer) => answer.support)).size).toBe(1);
    expect(answers.filter((answer) => answer.created)).toHaveLength(1);
    expect(answers.filter((answer) => answer.tokensCreated)).toHaveLength(1);
  });
});
