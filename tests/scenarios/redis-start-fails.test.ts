// Rule: scenarios/README.md "Redis": without REDIS_URL the run's private redis-server lives "in a temporary directory,
// removed afterwards", and tests/scenarios/usage.test.ts's rule: a run refused with a clear error "leaves nothing
// running behind it (no private redis-server, no temporary directory)". That holds when no redis-server can be
// started (none installed): the run says so, exits 2 and leaves no interlock-scenario-redis-* directory in TMPDIR;
// and when the one installed exits as it starts: the run fails saying so, and leaves no directory either.
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { inTempDir, runCli } from '../cli/run-cli.js';

const ARGS = ['scenario', 'shared-cap', '--delays', 'fast', '--reps', '1', '--rows', 'after_commit', '--columns', 'interlock'];

describe('interlock scenario without REDIS_URL, whose private Redis does not start', () => {
  it('without redis-server: exits 2 saying so and leaves no temporary directory', { timeout: 60_000 }, async () => {
    await inTempDir('scenario-noredis', async (dir) => {
      const bin = join(dir, 'bin');
      const tmp = join(dir, 'tmp');
      mkdirSync(bin);
      mkdirSync(tmp);
      // A PATH with node and nothing else: no redis-server.
      symlinkSync(execFileSync('sh', ['-c', 'command -v node'], { encoding: 'utf8' }).trim(), join(bin, 'node'));
      const run = await runCli([...ARGS, '--out', join(dir, 'out')], { REDIS_URL: undefined, STRIPE_SECRET_KEY: undefined, PATH: bin, TMPDIR: tmp }, { timeoutMs: 40_000 });
      expect(run.stderr).toContain('no redis-server to start a private one');
      expect(run.code, run.stderr).toBe(2);
      expect(readdirSync(tmp).filter((name) => name.startsWith('interlock-'))).toEqual([]);
    });
  });

  it('with a redis-server that exits as it starts: fails saying so and leaves no temporary directory', { timeout: 60_000 }, async () => {
    await inTempDir('scenario-redis-exits', async (dir) => {
      const bin = join(dir, 'bin');
      const tmp = join(dir, 'tmp');
      mkdirSync(bin);
      mkdirSync(tmp);
      // Answers --version, as an installed one does, then exits at once when started.
      writeFileSync(join(bin, 'redis-server'), '#!/bin/sh\nif [ "$1" = "--version" ]; then echo "Redis server v=7.0.0"; exit 0; fi\necho "Fatal error, cannot start" >&2\nexit 1\n');
      chmodSync(join(bin, 'redis-server'), 0o755);
      const run = await runCli([...ARGS, '--out', join(dir, 'out')], { REDIS_URL: undefined, STRIPE_SECRET_KEY: undefined, PATH: `${bin}:${process.env.PATH ?? ''}`, TMPDIR: tmp }, { timeoutMs: 40_000 });
      expect(run.stderr).toContain('The private redis-server exited at start (code 1)');
      expect(run.code, run.stderr).not.toBe(0);
      expect(readdirSync(tmp).filter((name) => name.startsWith('interlock-'))).toEqual([]);
    });
  });
});
