// A scenario page's "Against the seeds" section says what was compared: it used to say every baseline cell reproduced
// the seed's outcome when no baseline cell ran at all (every one failed to run, or the run asked for the gate's column
// only), which nothing showed. The gate's section already says "No gate cell ran" in the same situation.
import { describe, expect, it } from 'vitest';
import { failedCell, type Cell, type ScenarioResult } from '../../scenarios/cells.js';
import { page } from '../../scenarios/report.js';

const ROWS = ['crash_before_send_chargeback_during_outage', 'crash_after_send_chargeback_during_outage'];
const EVERY = "Every baseline cell reproduces the seed's outcome";

function result(cells: Cell[]): ScenarioResult {
  return { scenario: 'stripe_dispute', generated: new Date(0).toISOString(), model: 'rules', backend: 'test_mode', delays: 'stripe', reps: 1, cells };
}

/** The text of the page's section that starts with `heading`, up to the next heading. */
function section(text: string, heading: string): string {
  return text.split(`## ${heading}\n`)[1]?.split('\n## ')[0]?.trim() ?? '';
}

describe("a scenario page's comparison with the seeds", () => {
  it('says no baseline cell ran when every baseline cell failed to run', () => {
    const cells = ROWS.flatMap((row) => (['no_check', 'hand_check'] as const).map((column) => failedCell({ row, column, rep: 1 }, 'Stripe did not answer.')));
    const text = page(result(cells));
    expect(text).not.toContain(EVERY);
    expect(section(text, 'Against the seeds')).toBe('No baseline cell ran (4 failed to run, listed above): nothing here is compared with the seeds.');
  });

  it('says no baseline cell was asked for when the run had the gate\'s column only', () => {
    const text = page(result([failedCell({ row: ROWS[1] ?? '', column: 'interlock', rep: 1 }, 'x')]));
    expect(section(text, 'Against the seeds')).toBe('No baseline cell was asked for: nothing here is compared with the seeds.');
  });

  it('counts only the baseline cells that ran when some failed to run', () => {
    // The seed's outcome for this cell (seeds.ts): no_check finds no refund before the crash-before-send chargeback.
    const seed: Cell = { row: ROWS[0] ?? '', column: 'no_check', rep: 1, outcome: 'STRIPE_ERROR', held: true, answer_matches_final_money: true, proof: false, tamper_evident: false, settle_s: 1, settle_after_restart_s: 0.5, stripe: {} };
    const text = page(result([seed, failedCell({ row: ROWS[0] ?? '', column: 'hand_check', rep: 1 }, 'x')]));
    expect(section(text, 'Against the seeds')).toMatch(/^Every baseline cell that ran \(1 of 2; the others are listed above\) reproduces the seed's outcome/);
  });
});
