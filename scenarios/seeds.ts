// What the seeds' Stripe test-mode runs recorded for the baseline columns (../shared/seeds/, scenarios.md §2.6,
// §3.6, §4.6), and what the seeds predicted for the rows they did not run. The baselines' cells are the control:
// a cell that differs from this means the sandbox or the baseline is wrong, and the page says which.
import { cellFailed, type Cell } from './cells.js';

export type Expected = { outcome: string; held: boolean; answerMatchesFinalMoney?: boolean; source: 'seed' | 'predicted by the seed' };

export const DISPUTE_SEED: Record<string, Partial<Record<'no_check' | 'hand_check', Expected>>> = {
  crash_before_send_chargeback_during_outage: {
    no_check: { outcome: 'STRIPE_ERROR', held: true, answerMatchesFinalMoney: true, source: 'seed' },
    hand_check: { outcome: 'REFUSED:charged_back', held: true, answerMatchesFinalMoney: true, source: 'seed' },
  },
  crash_after_send_chargeback_during_outage: {
    no_check: { outcome: 'REPLAYED_BY_STRIPE', held: true, answerMatchesFinalMoney: false, source: 'seed' },
    hand_check: { outcome: 'FOUND_BY_LOOKUP', held: true, answerMatchesFinalMoney: false, source: 'seed' },
  },
  crash_before_send_restart_during_warning_under_review: {
    no_check: { outcome: 'REFUNDED', held: true, answerMatchesFinalMoney: false, source: 'predicted by the seed' },
    hand_check: { outcome: 'REFUNDED', held: true, answerMatchesFinalMoney: false, source: 'predicted by the seed' },
  },
  gap_probe_chargeback_after_refund_window: {
    no_check: { outcome: 'REFUNDED', held: true, answerMatchesFinalMoney: true, source: 'seed' },
    hand_check: { outcome: 'REFUNDED', held: true, answerMatchesFinalMoney: true, source: 'seed' },
  },
};

export const BILLING_SEED: Record<string, Record<'no_check' | 'hand_check', Expected>> = {
  'before_send/renewal': { no_check: { outcome: 'CREDITED', held: true, source: 'seed' }, hand_check: { outcome: 'CREDITED', held: true, source: 'seed' } },
  'before_send/billing_credit': { no_check: { outcome: 'CREDITED', held: false, source: 'seed' }, hand_check: { outcome: 'REFUSED:stale_premise', held: true, source: 'seed' } },
  'before_send/proration': { no_check: { outcome: 'CREDITED', held: true, source: 'seed' }, hand_check: { outcome: 'CREDITED', held: true, source: 'seed' } },
  'after_send/renewal': { no_check: { outcome: 'REPLAYED_BY_STRIPE', held: true, source: 'seed' }, hand_check: { outcome: 'FOUND_BY_LOOKUP', held: true, source: 'seed' } },
  'after_send/proration': { no_check: { outcome: 'REPLAYED_BY_STRIPE', held: true, source: 'seed' }, hand_check: { outcome: 'FOUND_BY_LOOKUP', held: true, source: 'seed' } },
  'before_send/unrelated_credit': { no_check: { outcome: 'CREDITED', held: true, source: 'seed' }, hand_check: { outcome: 'CREDITED', held: true, source: 'seed' } },
};

/**
 * shared_cap's baselines race, so the seed's numbers are counts over 20 runs, not one outcome: no_check never held
 * (both $20 land every time), hand_lock always held; hand_check held 3/20 and 1/20 (a race it mostly loses).
 * The outcomes below are the only ones the seed saw in each cell.
 */
export const CAP_SEED: Record<string, Record<'no_check' | 'hand_check' | 'hand_lock', { held: string; outcomes: string[] }>> = {
  after_commit: {
    no_check: { held: '0/20', outcomes: ['crashed REPLAYED_BY_STRIPE / other REFUNDED'] },
    hand_check: { held: '3/20', outcomes: ['crashed FOUND_BY_LOOKUP / other REFUNDED', 'crashed FOUND_BY_LOOKUP / other REFUSED:over_cap'] },
    hand_lock: { held: '20/20', outcomes: ['crashed FOUND_BY_LOOKUP / other REFUSED:over_cap'] },
  },
  before_send: {
    no_check: { held: '0/20', outcomes: ['crashed REFUNDED / other REFUNDED'] },
    hand_check: { held: '1/20', outcomes: ['crashed REFUNDED / other REFUNDED', 'crashed REFUNDED / other REFUSED:over_cap'] },
    hand_lock: { held: '20/20', outcomes: ['crashed REFUSED:over_cap / other REFUNDED', 'crashed REFUNDED / other REFUSED:over_cap'] },
  },
};

/** One sentence per baseline cell that differs from the seed (empty when every cell reproduces it). */
export function seedDifferences(scenario: string, cells: Cell[]): string[] {
  return differingCells(scenario, cells).map((difference) => difference.line);
}

/** seedDifferences with the column of each cell that differs. */
export function differingCells(scenario: string, cells: Cell[]): { column: string; line: string }[] {
  const out: { column: string; line: string }[] = [];
  for (const cell of cells) {
    // A cell that failed to run has no outcome to compare; the page lists it apart.
    if (cell.column === 'interlock' || cellFailed(cell)) continue;
    if (scenario === 'shared_cap') {
      const seed = CAP_SEED[cell.row]?.[cell.column as 'no_check'];
      if (seed === undefined) continue;
      const never = seed.held === '0/20' && cell.held;
      const always = seed.held === '20/20' && !cell.held;
      if (never || always || !seed.outcomes.includes(cell.outcome)) out.push({ column: cell.column, line: `${cell.row} / ${cell.column} #${cell.rep}: ${cell.outcome}, ${cell.held ? 'held' : 'VIOLATED'}; the seed saw ${seed.outcomes.join(' or ')}, held ${seed.held}.` });
      continue;
    }
    const table = scenario === 'stripe_dispute' ? DISPUTE_SEED : BILLING_SEED;
    const seed = table[cell.row]?.[cell.column as 'no_check'];
    if (seed === undefined) continue;
    const finalMoney = seed.answerMatchesFinalMoney === undefined || seed.answerMatchesFinalMoney === cell.answer_matches_final_money;
    if (seed.outcome !== cell.outcome || seed.held !== cell.held || !finalMoney) {
      out.push({ column: cell.column, line: `${cell.row} / ${cell.column}${cell.rep > 1 ? ` #${cell.rep}` : ''}: ${cell.outcome}, ${cell.held ? 'held' : 'VIOLATED'}, answer vs final money ${cell.answer_matches_final_money ? 'matches' : 'CONTRADICTS'}; the ${seed.source} says ${seed.outcome}, ${seed.held ? 'held' : 'VIOLATED'}${seed.answerMatchesFinalMoney === undefined ? '' : `, ${seed.answerMatchesFinalMoney ? 'matches' : 'CONTRADICTS'}`}.` });
    }
  }
  return out;
}
