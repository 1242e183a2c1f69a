// The shape every scenario writes (issue 12 §2): one cell per row x column x repetition, judged against Stripe.
import { checkDecision, proposalDecision, type Decider, type DecisionCase } from '../src/interlock.js';
import type { Selection } from './run.js';

export const COLUMNS = ['no_check', 'hand_check', 'hand_lock', 'interlock'] as const;
export type Column = (typeof COLUMNS)[number];

export type Cell = {
  row: string;
  column: Column;
  rep: number;
  outcome: string;
  held: boolean;
  answer_matches_final_money: boolean;
  proof: boolean;
  tamper_evident: boolean;
  /** Crash seen -> the column's answer (includes the outage). */
  settle_s: number | null;
  /** Restart -> the column's answer. For the gate, from the moment the restarted worker was serving. */
  settle_after_restart_s: number | null;
  stripe: Record<string, unknown>;
  [more: string]: unknown;
};

export type ScenarioResult = {
  scenario: string;
  generated: string;
  model: string;
  backend: 'sandbox' | 'test_mode';
  delays: 'stripe' | 'fast';
  reps: number;
  cells: Cell[];
  [more: string]: unknown;
};

/**
 * A cell's line on the progress bar. `wait` sleeps `ms` while the line says what the cell waits for and how long is
 * left (test mode's fixed waits run for minutes: the line must say the run is waiting, and why).
 */
export type Progress = { start(label: string): void; wait(what: string, ms: number): Promise<void>; done(): void };

/** One cell of a scenario's plan. */
export type Step = { row: string; column: Column; rep: number };

/** Every selected row × column, `reps` times each, row by row (the order the seeds ran them). */
export function rowMajorPlan<R extends string>(rows: readonly R[], columns: readonly Column[], reps: number, only: Selection): (Step & { row: R })[] {
  return rows.filter((row) => only.row(row)).flatMap((row) => columns.filter((column) => only.column(column)).flatMap((column) => Array.from({ length: reps }, (_, index) => ({ row, column, rep: index + 1 }))));
}

/** The outcome of a cell that threw before it could be judged: its `error` says why. */
export const CELL_FAILED = 'CELL_FAILED';

export function cellFailed(cell: Cell): boolean {
  return cell.outcome === CELL_FAILED;
}

/** A step of the plan recorded as failed to run, judged on nothing: `why` is its error. */
export function failedCell(step: Step, why: string): Cell {
  return { row: step.row, column: step.column, rep: step.rep, outcome: CELL_FAILED, error: why, held: false, answer_matches_final_money: false, proof: false, tamper_evident: false, settle_s: null, settle_after_restart_s: null, stripe: {} };
}

/**
 * Runs the steps of a plan, `lanes` at a time, in order. A cell that throws (a process that did not start, a wait
 * that timed out) is recorded as failed, with its error, and the other cells still run: one harness error must not
 * throw away the cells finished and those to come. The run then lists it and exits 1 (verdict.ts, runFailures).
 */
export async function runPlan<S extends Step>(plan: readonly S[], lanes: number, run: (step: S) => Promise<Cell>): Promise<Cell[]> {
  const cells = new Array<Cell>(plan.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      while (next < plan.length) {
        const index = next++;
        const step = plan[index];
        if (step === undefined) return;
        try {
          cells[index] = await run(step);
        } catch (error) {
          cells[index] = failedCell(step, error instanceof Error ? error.message : String(error));
        }
      }
    }),
  );
  return cells;
}

export type SavedDecision = { amount: number; text: string; model: string; valid: boolean; description: string; verdict: string };

/** The decider asked once per cell, its answer checked against the case's approval and facts as every caller must. */
export async function decide(decider: Decider, input: DecisionCase, expectedCents: number): Promise<SavedDecision> {
  const decision = await decider.decide(input);
  const check = checkDecision(decision, input.approval, input.kind, input);
  const recorded = proposalDecision(decision);
  const amount = decision.action === 'decline' ? 0 : decision.amountCents;
  const description = decision.action === 'refund' ? decision.reason : decision.action === 'credit' ? decision.description : decision.reason;
  return { amount, text: recorded.text, model: recorded.model, valid: check.verdict === 'accepted' && amount === expectedCents, description, verdict: check.verdict };
}

export const LANDED = new Set(['REFUNDED', 'CREDITED', 'REPLAYED_BY_STRIPE', 'FOUND_BY_LOOKUP', 'COMMITTED', 'COMMITTED_ON_QUERY', 'COMMITTED_BY_RETRY', 'REAPPLIED_AFTER_QUERY', 'DUPLICATE_IGNORED']);
