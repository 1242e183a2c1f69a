// Rule: the committed results (scenarios/results/*.json) are what the full run writes in place, and the README names
// that run's command: `npx interlock scenario all --reps 5 --delays stripe` (FULL_RUN_COMMAND, its --reps recorded once
// as FULL_RUN_REPS). A run of each scenario's default --reps (1, shared-cap 20) is another shape and goes to
// <data dir>/scenario-runs/<time>: the README's re-run line `npx interlock scenario all --delays stripe` used to count
// as the full run and replaced the committed --reps 5 pages (60, 90 and 40 cells) with 12, 18 and 160 cells, so the
// README's tables and its account of the run no longer matched the checkout.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { defaultOut, FULL_RUN_COMMAND, FULL_RUN_REPS, partialRun, RESULTS_DIR, SCENARIOS, type ScenarioName } from '../../scenarios/run.js';
import { REPO } from '../cli/run-cli.js';

const KEYS: Record<ScenarioName, string> = { 'stripe-dispute': 'stripe_dispute', 'billing-credit': 'billing_credit', 'shared-cap': 'shared_cap' };
const now = new Date('2026-12-04T07:31:02.123Z');

describe('the committed results and the command that makes them', () => {
  for (const name of SCENARIOS) {
    it(`${KEYS[name]}: a full run's shape, written in place by ${FULL_RUN_COMMAND}`, () => {
      const result = JSON.parse(readFileSync(join(RESULTS_DIR, `${KEYS[name]}.json`), 'utf8')) as { reps: number; delays: 'stripe' | 'fast'; command: string; rows?: unknown };
      expect(result.reps).toBe(FULL_RUN_REPS);
      const shape = { scenarios: [name], reps: result.reps, delays: result.delays, rows: null, columns: null };
      expect(partialRun(shape), `committed by "${result.command}"`).toBeNull();
      expect(defaultOut(shape, '/tmp/data', now)).toBe(RESULTS_DIR);
      expect(result.command).toBe(`npx interlock scenario ${name} --reps ${FULL_RUN_REPS} --delays stripe`);
    });
  }

  it('a run of the default repetitions is not the committed one, and says why', () => {
    const defaults = { scenarios: [...SCENARIOS], reps: null, delays: 'stripe' as const, rows: null, columns: null };
    expect(partialRun(defaults)).toBe(`each scenario's default --reps, not --reps ${FULL_RUN_REPS}`);
    expect(defaultOut(defaults, '/srv/data', now)).toBe('/srv/data/scenario-runs/2026-12-04T07-31-02-123Z');
    expect(partialRun({ ...defaults, reps: FULL_RUN_REPS })).toBeNull();
  });

  it('the README and scenarios/README.md give that command for the committed results', () => {
    const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('## The scenarios, reproduced'), readme.indexOf('\n## ', readme.indexOf('## The scenarios, reproduced') + 3));
    expect(section).toContain(FULL_RUN_COMMAND);
    // No re-run line offers the default repetitions as the full run.
    expect(section).not.toMatch(/^npx interlock scenario all --delays stripe\b/m);
    expect(readFileSync(join(REPO, 'scenarios', 'README.md'), 'utf8')).toContain(FULL_RUN_COMMAND);
  });
});
