// Rule: a scenario page names the command that reproduces it: a run made with --rows, --columns or --reps other than
// the scenario's default shows them, so a reader who runs the command gets the same cells, not every cell.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { reproducingCommand } from '../../scenarios/run.js';
import { inTempDir, runCli } from '../cli/run-cli.js';

describe('the command a scenario page names', () => {
  it('is the one that ran its cells: its rows, columns and repetitions', { timeout: 120_000 }, async () => {
    await inTempDir('scenario-command', async (dir) => {
      const run = await runCli(['scenario', 'shared-cap', '--delays', 'fast', '--reps', '1', '--rows', 'after_commit', '--columns', 'no_check', '--out', dir], { REDIS_URL: undefined, STRIPE_SECRET_KEY: undefined }, { timeoutMs: 100_000 });
      expect(run.code, run.stderr).toBe(0);
      const page = readFileSync(join(dir, 'shared_cap.md'), 'utf8');
      expect(page).toContain('by `npx interlock scenario shared-cap --reps 1 --delays fast --rows after_commit --columns no_check` against');
      expect((JSON.parse(readFileSync(join(dir, 'shared_cap.json'), 'utf8')) as { command: string }).command).toBe('npx interlock scenario shared-cap --reps 1 --delays fast --rows after_commit --columns no_check');
    });
  });

  it("names only the rows and columns of its own scenario (from `all`), and --reps only where it is not the scenario's default", () => {
    const rows = ['crash_after_send_chargeback_during_outage', 'after_commit'];
    expect(reproducingCommand('stripe-dispute', { reps: 1, defaultReps: 1, delays: 'stripe', rows, columns: ['no_check', 'hand_lock'] })).toBe('npx interlock scenario stripe-dispute --delays stripe --rows crash_after_send_chargeback_during_outage --columns no_check');
    expect(reproducingCommand('shared-cap', { reps: 20, defaultReps: 20, delays: 'fast', rows, columns: null })).toBe('npx interlock scenario shared-cap --delays fast --rows after_commit');
    expect(reproducingCommand('billing-credit', { reps: 3, defaultReps: 1, delays: 'fast', rows: null, columns: null })).toBe('npx interlock scenario billing-credit --reps 3 --delays fast');
  });
});
