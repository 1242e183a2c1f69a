// Rule: scenarios/README.md "Judging": the gate's answer is "what its receipt says about the money when the cell is
// judged (its post-send facts ...)", and proof means "the column's own record says who decided, which checks ran and
// an outcome that agrees with Stripe" (the receipt's evidence is an object Stripe holds for the effect). So a gate
// cell whose receipt says otherwise than Stripe must not be judged matching or proof, and the run must fail for it:
// - shared_cap: a receipt that says the money was NOT returned (and names a refund Stripe does not hold) while
//   Stripe holds the bot's succeeded refund;
// - billing_credit: a receipt that names, as its evidence, a credit Stripe does not hold.
import { describe, expect, it } from 'vitest';
import type { Cell } from '../../scenarios/cells.js';
import { runScenarios, type ScenarioName } from '../../scenarios/run.js';
import { runFailures } from '../../scenarios/verdict.js';
import { openWorld } from '../../scenarios/world.js';
import type { Verification } from '../../src/interlock.js';
import { inTempDir } from '../cli/run-cli.js';
import { REDIS_URL } from '../support/harness.js';

/** One gate cell of `scenario`'s `row`, its receipts judged through `alter` (a simulated lying receipt). */
async function gateCellWith(scenario: ScenarioName, row: string, alter: (real: Verification) => Verification): Promise<{ cell: Cell | undefined; runFails: boolean }> {
  return inTempDir(`scenarios-${scenario}-judging`, async (out) => {
    const { results } = await runScenarios({
      scenarios: [scenario],
      reps: 1,
      delays: 'fast',
      out,
      rows: [row],
      columns: ['interlock'],
      env: { REDIS_URL, INTERLOCK_UNSAFE_DURABILITY: '1' },
      openWorld: async (options) => {
        const world = await openWorld(options);
        const real = world.verifyReceipt;
        world.verifyReceipt = (receipt) => alter(real(receipt));
        return world;
      },
    });
    const cell = results[0]?.cells[0];
    expect(cell?.outcome, JSON.stringify(cell?.error ?? null)).not.toBe('CELL_FAILED');
    return { cell, runFails: runFailures(results).length > 0 };
  });
}

describe('shared_cap judging of the gate column', () => {
  it("fails a gate cell whose receipt's final money contradicts Stripe", { timeout: 180_000 }, async () => {
    // Valid, says it happened, but its final money says "not returned" and its evidence names a refund Stripe lacks.
    const { cell, runFails } = await gateCellWith('shared-cap', 'after_commit', (v) => ({ ...v, evidence: 're_forged_not_at_stripe', answer: 'not_returned', finalMoney: { ...v.finalMoney, status: 'not_returned' }, answerMatchesFinalMoney: false }));
    // Stripe holds at least one succeeded refund for a bot (the gate committed one).
    const refunds = (cell?.stripe.refunds ?? []) as { status: string }[];
    expect(refunds.some((r) => r.status === 'succeeded')).toBe(true);
    expect({ answer_matches_final_money: cell?.answer_matches_final_money, proof: cell?.proof, runFails }).toEqual({ answer_matches_final_money: false, proof: false, runFails: true });
  });
});

describe('billing_credit judging of the gate column', () => {
  it('fails a gate cell whose receipt names a credit Stripe does not hold', { timeout: 240_000 }, async () => {
    const { cell, runFails } = await gateCellWith('billing-credit', 'before_send/renewal', (v) => ({ ...v, evidence: 'cbtxn_forged_not_at_stripe' }));
    const credits = (cell?.stripe.case_credits ?? []) as string[];
    expect(credits).toHaveLength(1);
    expect(credits).not.toContain('cbtxn_forged_not_at_stripe');
    expect({ proof: cell?.proof, runFails }).toEqual({ proof: false, runFails: true });
  });
});
