// Rule: a cell that throws (a harness error: a process that did not start, a wait that timed out) is recorded as
// failed, with its error, and the run goes on with the other cells; the pages show it apart from the verdicts, and
// the run lists it with the gate's failed checks and exits 1 for it, whichever column it was in.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CELL_FAILED, runPlan, type Cell, type ScenarioResult, type Step } from '../../scenarios/cells.js';
import { writeResults } from '../../scenarios/report.js';
import { runFailures } from '../../scenarios/verdict.js';
import { generateSigningKeyPem } from '../../src/keys/key-store.js';
import { tempDir } from '../cli/run-cli.js';

const temp = tempDir('failed-cell');
afterAll(() => temp.remove());

function judged(step: Step): Cell {
  return { ...step, outcome: 'COMMITTED_ON_QUERY', held: true, answer_matches_final_money: true, proof: true, tamper_evident: true, settle_s: 2.4, settle_after_restart_s: 0.1, stripe: {}, exposure: null };
}

const PLAN: Step[] = [
  { row: 'crash_after_send_chargeback_during_outage', column: 'no_check', rep: 1 },
  { row: 'crash_after_send_chargeback_during_outage', column: 'hand_check', rep: 1 },
  { row: 'crash_after_send_chargeback_during_outage', column: 'interlock', rep: 1 },
  { row: 'crash_after_send_chargeback_during_outage', column: 'interlock', rep: 2 },
];

/** Runs the plan with a cell function that throws for hand_check and for the gate's second repetition. */
async function runWithFailures(): Promise<{ cells: Cell[]; ran: string[] }> {
  const ran: string[] = [];
  const cells = await runPlan(PLAN, 2, async (step) => {
    ran.push(`${step.column} #${step.rep}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
    if (step.column === 'hand_check') throw new Error('hand-check-worker.ts exited with code 1: | cannot read the log');
    if (step.rep === 2) throw new Error('effect 3f2a did not settle within 60 s');
    return judged(step);
  });
  return { cells, ran };
}

describe('a scenario cell that throws', () => {
  it('is recorded as failed with its error, in its place, and every other cell of the plan still runs', async () => {
    const { cells, ran } = await runWithFailures();
    expect(ran.sort()).toEqual(['hand_check #1', 'interlock #1', 'interlock #2', 'no_check #1']);
    expect(cells.map((cell) => [cell.column, cell.rep, cell.outcome])).toEqual([
      ['no_check', 1, 'COMMITTED_ON_QUERY'],
      ['hand_check', 1, CELL_FAILED],
      ['interlock', 1, 'COMMITTED_ON_QUERY'],
      ['interlock', 2, CELL_FAILED],
    ]);
    expect(cells[1]?.error).toBe('hand-check-worker.ts exited with code 1: | cannot read the log');
  });

  it('is listed by the run, whatever its column, so the run exits 1 naming it', async () => {
    const { cells } = await runWithFailures();
    expect(runFailures([{ scenario: 'stripe_dispute', settle_margin_s: 10, cells }])).toEqual([
      'stripe_dispute crash_after_send_chargeback_during_outage / hand_check #1: the cell failed to run: hand-check-worker.ts exited with code 1: | cannot read the log',
      'stripe_dispute crash_after_send_chargeback_during_outage / interlock #2: the cell failed to run: effect 3f2a did not settle within 60 s',
    ]);
  });

  it('is shown on the page as failed, apart from the verdict counts, for a table whose cells it cannot describe (billing_credit) too', async () => {
    const { cells } = await runWithFailures();
    const dispute: ScenarioResult = { scenario: 'stripe_dispute', generated: '2026-12-03T00:00:00.000Z', model: 'rules', backend: 'sandbox', delays: 'fast', reps: 2, settle_margin_s: 10, public_key: generateSigningKeyPem().publicPem, cells };
    const billing: ScenarioResult = { ...dispute, scenario: 'billing_credit', reps: 1, cells: [{ ...cells[1], row: 'before_send/renewal', column: 'no_check' } as Cell] };
    writeResults(temp.dir, [dispute, billing]);
    const page = readFileSync(join(temp.dir, 'stripe_dispute.md'), 'utf8');
    expect(page).toContain('**CELL FAILED**: hand-check-worker.ts exited with code 1: \\| cannot read the log');
    expect(page).toContain('## Cells that failed to run');
    expect(page).toContain('- crash_after_send_chargeback_during_outage / interlock #2: the cell failed to run: effect 3f2a did not settle within 60 s');
    expect(page).toContain('- **interlock**: invariant held 1/1');
    expect(page).toContain('**1 cell failed to run**');
    expect(readFileSync(join(temp.dir, 'billing_credit.md'), 'utf8')).toContain('| before_send/renewal | **CELL FAILED**: hand-check-worker.ts');
    expect(readFileSync(join(temp.dir, 'README.md'), 'utf8')).toContain('**CELL FAILED**');
  });
});
