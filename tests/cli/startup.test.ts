// Start-up: a command that moves no money and asks no model loads neither the Stripe SDK nor the Anthropic SDK
// (together about 0.6 s of every command's start on a 2-core machine). The adapter loads Stripe's on first use
// (src/stripe/sdk.ts), the decider Anthropic's on its first call to the model.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { INLINED } from '../../bin/compiled.js';

/** Runs the CLI with a module hook that notes every bare package it imports, and returns them. */
function packagesImportedBy(args: readonly string[], env: NodeJS.ProcessEnv = {}): string[] {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-startup-'));
  const log = join(dir, 'imports.log');
  try {
    const hook = `import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  if (/^(@[a-z0-9-]+\\/)?[a-z0-9][a-z0-9._-]*/.test(specifier) && !specifier.startsWith('node:')) appendFileSync(${JSON.stringify(log)}, specifier + '\\n');
  return next(specifier, context);
}`;
    const register = `import { register } from 'node:module'; register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(hook)}));`;
    const run = spawnSync(process.execPath, ['--import', `data:text/javascript,${encodeURIComponent(register)}`, 'bin/interlock.js', ...args], {
      encoding: 'utf8',
      env: { ...process.env, INTERLOCK_LOG_LEVEL: 'silent', ...env },
      timeout: 60_000,
    });
    expect(run.status, run.stderr).toBe(0);
    return readFileSync(log, 'utf8').split('\n').filter((line) => line !== '');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('the CLI at start-up', () => {
  it('loads neither the Stripe SDK nor the Anthropic SDK for a command that uses neither', { timeout: 120_000 }, () => {
    for (const args of [['--help'], ['keys', '--help'], ['approvals', 'grant', '--help']]) {
      const imported = packagesImportedBy(args);
      // The hook sees the packages the program loads from node_modules (a check that it sees anything at all); those
      // bundled into the compiled copy (INLINED) it cannot see, and neither SDK may be one of them.
      expect(imported).toContain('pino');
      expect(INLINED.filter((name) => name === 'stripe' || name.startsWith('@anthropic-ai/'))).toEqual([]);
      expect(imported.filter((name) => name === 'stripe' || name.startsWith('stripe/') || name.startsWith('@anthropic-ai/sdk'))).toEqual([]);
    }
  });
});
