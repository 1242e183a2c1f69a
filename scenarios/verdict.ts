// What the gate's column must show in every cell (issue 12 §3), as one function the pages and the fast scenario
// test both use: every invariant held; its answer (what the receipt says about the money when the cell is judged)
// equals Stripe's final money; proof and tamper-evidence; exposure flagged in the gap probe; settled within 1.5 s
// of the restart where the facts held, within the settle margin (plus the same 1.5 s) where they changed, and so
// never after a claim-TTL wait; and, in stripe_dispute, the outcome each row wants (below).
import { cellFailed, type Cell } from './cells.js';

export const RESTART_BUDGET_S = 1.5;

/**
 * The gate's outcome each stripe_dispute row wants. Stripe itself refuses a refund on a charged-back charge, so a
 * gate that resent without re-checking its premises leaves no refund object and a receipt that says not returned:
 * held, matched and proved on Stripe's side. Only the outcome shows that the gate, not Stripe, refused.
 */
export const GATE_OUTCOMES: Readonly<Record<string, string>> = {
  crash_before_send_chargeback_during_outage: 'REFUSED:stale_premise_at_recovery',
  crash_after_send_chargeback_during_outage: 'COMMITTED_ON_QUERY',
  crash_before_send_restart_during_warning_under_review: 'COMMITTED_BY_RETRY',
  gap_probe_chargeback_after_refund_window: 'COMMITTED',
};

/** The facts changed during the outage: recovery's re-check found a violation (whatever it then found at Stripe). */
export function factsChanged(cell: Cell): boolean {
  return cell.facts_changed_at_recovery === true || /_at_recovery\b/.test(cell.outcome);
}

export function gateProblems(cell: Cell, settleMarginS: number): string[] {
  // A cell that failed to run was not judged: the run lists it as failed (runFailures), not as a verdict.
  if (cell.column !== 'interlock' || cellFailed(cell)) return [];
  const problems: string[] = [];
  const where = `${cell.row} #${cell.rep}`;
  if (!cell.held) problems.push(`${where}: the invariant was VIOLATED (${cell.outcome})`);
  const wants = GATE_OUTCOMES[cell.row];
  if (wants !== undefined && cell.outcome !== wants) problems.push(`${where}: the gate answered ${cell.outcome} where the row wants ${wants}`);
  if (!cell.answer_matches_final_money) problems.push(`${where}: the receipt's answer (${String(cell.receipt_answer ?? '?')}) contradicts Stripe's final money`);
  if (!cell.proof) problems.push(`${where}: the receipt does not prove what happened`);
  if (!cell.tamper_evident) problems.push(`${where}: a tampered receipt still verified`);
  if (cell.receipt_reverified_from_results === false) problems.push(`${where}: its receipt did not verify from the results file with the run's public key`);
  if (cell.row.startsWith('gap_probe') && (cell.exposure ?? null) === null) problems.push(`${where}: the receipt did not flag the exposure ($120 out on $100)`);
  if (cell.settle_after_restart_s !== null) {
    const limit = factsChanged(cell) ? settleMarginS + RESTART_BUDGET_S : RESTART_BUDGET_S;
    if (cell.settle_after_restart_s > limit) problems.push(`${where}: settled ${cell.settle_after_restart_s} s after the restart, over ${limit} s (${factsChanged(cell) ? 'the settle margin' : 'the facts held'})`);
  }
  return problems;
}

/** Each cell that failed to run (any column), as `<row> / <column> #<rep>: <error>`. */
export function failedCellLines(cells: readonly Cell[]): string[] {
  return cells.filter(cellFailed).map((cell) => `${cell.row} / ${cell.column} #${cell.rep}: the cell failed to run: ${String(cell.error)}`);
}

/**
 * What `interlock scenario` prints and exits 1 for, each line naming its scenario: every cell that failed to run, in
 * any column (its result is missing, so the run did not show what it was asked to), then every check the gate's
 * column failed, so a script or CI running it hears what the pages say (the baselines' violations are what the
 * scenarios show, never a reason to fail the run).
 */
export function runFailures(results: readonly { scenario: string; cells: readonly Cell[]; [more: string]: unknown }[]): string[] {
  const lines = (result: (typeof results)[number]) => [...failedCellLines(result.cells), ...result.cells.flatMap((cell) => gateProblems(cell, Number(result.settle_margin_s ?? 10)))];
  return results.flatMap((result) => lines(result).map((line) => `${result.scenario} ${line}`));
}
