// Rule: a cell that throws (a harness error: a process that did not start, a wait that timed out) is recorded as
// failed, with its error, and the run goes on with the other cells; the pages show it apart from the verdicts, and
// the run lists it with the gate's failed checks and exits 1 for it, whichever column it was in. A scenario whose
// world (sandbox, support API, Redis stores) does not open is handled the same way: its cells are recorded as
// failed with the reason, and the other scenarios of the run still run.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CELL_FAILED, runPlan, type Cell, type ScenarioResult, type Step } from '../../scenarios/cells.js';
import { writeResults } from '../../scenarios/report.js';
import { runScenarios } from '../../scenarios/run.js';
import { runFailures } from '../../scenarios/verdict.js';
import { openWorld } from '../../scenarios/world.js';
import { generateSigningKeyPem } from '../../src/keys/key-store.js';
import { inTempDir, tempDir } from '../cli/run-cli.js';
import { REDIS_URL } from '../support/harness.js';

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

describe('a scenario that stops outside its cells', { timeout: 60_000 }, () => {
  it('has its cells recorded as failed with the reason, and the run still runs the other scenarios to their end and writes them (it used to end the run and clean up under them)', async () => {
    await inTempDir('failed-scenario', async (out) => {
      const { results } = await runScenarios({
        scenarios: ['billing-credit', 'shared-cap'],
        reps: 1,
        delays: 'fast',
        out,
        rows: ['before_send/renewal', 'after_commit'],
        columns: ['no_check'],
        env: { REDIS_URL, INTERLOCK_UNSAFE_DURABILITY: '1' },
        openWorld: async (options) => {
          const world = await openWorld(options);
          if (options.scenario !== 'billing_credit') return world;
          // The billing scenario's prices cannot be read (a key without that permission, a network error).
          const get = world.stripe.get.bind(world.stripe);
          world.stripe.get = (path, query) => (path === '/v1/prices' ? Promise.reject(new Error('GET /v1/prices answered 403: this key may not read prices')) : get(path, query));
          return world;
        },
      });
      const billing = results.find((result) => result.scenario === 'billing_credit');
      expect(billing?.cells.map((cell) => [cell.row, cell.column, cell.outcome, cell.error])).toEqual([['before_send/renewal', 'no_check', CELL_FAILED, 'the scenario stopped outside its cells: GET /v1/prices answered 403: this key may not read prices']]);
      const cap = results.find((result) => result.scenario === 'shared_cap');
      expect(cap?.cells.map((cell) => [cell.row, cell.column, cell.outcome === CELL_FAILED ? String(cell.error) : 'ran'])).toEqual([['after_commit', 'no_check', 'ran']]);
      expect(readFileSync(join(out, 'billing_credit.md'), 'utf8')).toContain('**No cell of this scenario could be judged**: it stopped outside its cells: GET /v1/prices answered 403');
      expect(readFileSync(join(out, 'shared_cap.md'), 'utf8')).toContain('| after_commit | **held 0/1**');
    });
  });
});

describe('a scenario whose world does not open', { timeout: 60_000 }, () => {
  it('has its cells recorded as failed with the reason, and the other scenarios of the run still run and are written', async () => {
    await inTempDir('failed-world', async (out) => {
      const opened: string[] = [];
      const { results } = await runScenarios({
        scenarios: ['billing-credit', 'shared-cap'],
        reps: 1,
        delays: 'fast',
        out,
        rows: ['before_send/renewal', 'after_send/renewal', 'after_commit'],
        columns: ['no_check'],
        env: { REDIS_URL, INTERLOCK_UNSAFE_DURABILITY: '1' },
        openWorld: async (options) => {
          opened.push(options.scenario);
          if (options.scenario === 'billing_credit') throw new Error('the support API (serve --roles api) exited with code 2 before it listened');
          return openWorld(options);
        },
      });
      expect(opened.sort()).toEqual(['billing_credit', 'shared_cap']);
      const billing = results.find((result) => result.scenario === 'billing_credit');
      expect(billing?.cells.map((cell) => [cell.row, cell.column, cell.rep, cell.outcome])).toEqual([
        ['before_send/renewal', 'no_check', 1, CELL_FAILED],
        ['after_send/renewal', 'no_check', 1, CELL_FAILED],
      ]);
      const cap = results.find((result) => result.scenario === 'shared_cap');
      expect(cap?.cells.map((cell) => [cell.row, cell.column, cell.outcome === CELL_FAILED ? String(cell.error) : 'ran'])).toEqual([['after_commit', 'no_check', 'ran']]);
      const why = "the cell failed to run: the scenario's world did not open: the support API (serve --roles api) exited with code 2 before it listened";
      expect(runFailures(results)).toEqual([`billing_credit before_send/renewal / no_check #1: ${why}`, `billing_credit after_send/renewal / no_check #1: ${why}`]);
      const page = readFileSync(join(out, 'billing_credit.md'), 'utf8');
      expect(page).toContain("**None of these cells ran**: the scenario's world (sandbox or test mode, the support API, the Redis stores) did not open: the support API");
      expect(page).toContain(`- before_send/renewal / no_check #1: ${why}`);
      expect(page).toContain('`npx interlock scenario billing-credit --delays fast --rows before_send/renewal,after_send/renewal --columns no_check`');
      expect(readFileSync(join(out, 'shared_cap.md'), 'utf8')).toContain('| after_commit | **held 0/1**');
    });
  });
});
