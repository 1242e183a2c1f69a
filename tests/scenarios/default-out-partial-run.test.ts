// Rule: without --out, only a full run (--delays stripe, --reps FULL_RUN_REPS, every row and column) writes
// into the committed results, scenarios/results in the checkout whatever folder the command runs from; a try-out
// (--delays fast, --reps 1, the default --reps) goes to <data dir>/scenario-runs/<time>, as a run of some rows or
// columns does, and says so on stderr. A `--delays fast --reps 1` run used to replace the committed results without a word, and a run from
// another folder wrote into a scenarios/results of its own there.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { defaultOut, FULL_RUN_REPS, partialRun, RESULTS_DIR } from '../../scenarios/run.js';
import { REPO, runCli, tempDir } from '../cli/run-cli.js';

const temp = tempDir('scenario-default-out');
afterAll(() => temp.remove());
const now = new Date('2026-12-04T07:31:02.123Z');
const full = { scenarios: ['shared-cap'] as const, reps: FULL_RUN_REPS, delays: 'stripe' as const, rows: null, columns: null };

describe('where a run writes without --out', () => {
  it('the committed results, found from the checkout, only for a full run', () => {
    expect(RESULTS_DIR).toBe(join(REPO, 'scenarios', 'results'));
    expect(defaultOut(full, '.data', now)).toBe(RESULTS_DIR);
    expect(partialRun({ ...full, scenarios: ['shared-cap', 'stripe-dispute'] })).toBeNull();
  });

  it('a folder of its own for --delays fast, or --reps other than the full run\'s', () => {
    const own = '/srv/data/scenario-runs/2026-12-04T07-31-02-123Z';
    expect(defaultOut({ ...full, delays: 'fast' }, '/srv/data', now)).toBe(own);
    expect(defaultOut({ ...full, reps: 1 }, '/srv/data', now)).toBe(own);
    expect(defaultOut({ ...full, reps: null }, '/srv/data', now)).toBe(own);
    expect(partialRun({ ...full, reps: 1, delays: 'fast' })).toBe('--delays fast, --reps 1');
  });

  it('a try-out run says where its pages went, and leaves the committed results alone', { timeout: 60_000 }, async () => {
    const before = readdirSync(RESULTS_DIR).map((name) => [name, readFileSync(join(RESULTS_DIR, name), 'utf8')]);
    // No Redis at that address: the world does not open and the run records its cells as failed, in its own folder.
    const run = await runCli(['scenario', 'shared-cap', '--delays', 'fast', '--reps', '1'], { REDIS_URL: 'redis://127.0.0.1:1', STRIPE_SECRET_KEY: undefined, INTERLOCK_DATA_DIR: temp.dir }, { timeoutMs: 50_000 });
    expect(run.stderr).toContain(`This run (--delays fast, --reps 1) is not the full one whose results are committed in ${RESULTS_DIR}: its pages go to ${temp.dir}/scenario-runs/`);
    // The world's failure is one sentence on stderr, its error's last line break and full stop not doubled.
    expect(run.stderr).toMatch(/[^.\n]\. Its 8 cells are recorded as failed/);
    const [folder] = readdirSync(join(temp.dir, 'scenario-runs'));
    expect(readdirSync(join(temp.dir, 'scenario-runs', String(folder))).sort()).toEqual(['README.md', 'shared_cap.json', 'shared_cap.md']);
    expect(readdirSync(RESULTS_DIR).map((name) => [name, readFileSync(join(RESULTS_DIR, name), 'utf8')])).toEqual(before);
  });
});
