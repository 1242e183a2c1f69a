// Rule: a run refused before any cell ran (REDIS_URL unset and no redis-server on the PATH: exit 2) leaves no empty
// folder of its own making, as the refusals before it (an unknown row, a live key) leave none: not the
// <data dir>/scenario-runs/<time> it named on stderr, nor an --out it created (with the folders above it it created).
// A folder that was there before the run stays. It used to leave an empty <time> folder (or --out) on every try.
import { existsSync, mkdirSync, readdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli, tempDir } from '../cli/run-cli.js';

const temp = tempDir('scenario-no-redis-server');
afterAll(() => temp.remove());

// A PATH with node on it and no redis-server.
const bin = join(temp.dir, 'bin');
mkdirSync(bin);
symlinkSync(process.execPath, join(bin, 'node'));
const args = ['scenario', 'stripe-dispute', '--delays', 'fast', '--rows', 'crash_after_send_chargeback_during_outage', '--columns', 'interlock'];
const env = (data: string) => ({ PATH: bin, REDIS_URL: undefined, STRIPE_SECRET_KEY: undefined, INTERLOCK_DATA_DIR: data });

describe('a run with no redis-server to start', () => {
  it('is refused and leaves no folder under <data dir>/scenario-runs', { timeout: 60_000 }, async () => {
    const data = join(temp.dir, 'data');
    const run = await runCli(args, env(data));
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('there is no redis-server');
    expect(run.stderr).toContain(`its pages go to ${data}/scenario-runs/`);
    expect(existsSync(join(data, 'scenario-runs'))).toBe(false);
  });

  it('removes an --out it created, and the folders above it it created, but not one that was there', { timeout: 60_000 }, async () => {
    const made = join(temp.dir, 'made');
    const created = await runCli([...args, '--out', join(made, 'deeper', 'out')], env(join(temp.dir, 'data-2')));
    expect(created.code).toBe(2);
    expect(existsSync(made)).toBe(false);
    const there = join(temp.dir, 'there');
    mkdirSync(there);
    const kept = await runCli([...args, '--out', there], env(join(temp.dir, 'data-3')));
    expect(kept.code).toBe(2);
    expect(readdirSync(there)).toEqual([]);
  });
});
