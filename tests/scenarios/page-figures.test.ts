// Rule: a scenario page's figures come from the cells that ran and the receipts they hold: the gap probe's exposure is
// the receipt's own `cents`, weighed against the charge the receipt read (no figure written into the page); a premise
// candidate in a row none of whose cells ran is "not run", never right; a column none of whose cells restarted gives no
// time after a restart, never "median ?s".
import { describe, expect, it } from 'vitest';
import type { Cell, ScenarioResult } from '../../scenarios/cells.js';
import { premiseCandidates } from '../../scenarios/billing-credit.js';
import { page, table, verdictLines } from '../../scenarios/report.js';

const GAP = 'gap_probe_chargeback_after_refund_window';

function disputeCell(column: 'no_check' | 'interlock', exposure: Record<string, unknown> | null): Cell {
  return { row: GAP, column, rep: 1, outcome: 'COMMITTED', held: true, answer_matches_final_money: true, proof: true, tamper_evident: true, settle_s: null, settle_after_restart_s: null, stripe: { refunds: [] }, exposure };
}

function dispute(cells: Cell[]): ScenarioResult {
  return { scenario: 'stripe_dispute', generated: '2026-12-06T00:00:00.000Z', model: 'rules', backend: 'sandbox', delays: 'fast', reps: 1, cells };
}

describe("the gap probe's exposure on the stripe_dispute page", () => {
  it("states the receipt's cents returned twice and the charge the receipt read, not the refund plus the chargeback on $100", () => {
    const exposure = { cents: 2_000, refundCents: 2_000, chargebackCents: 10_000, chargeCents: 10_000, refundedCents: 2_000 };
    const text = table(dispute([disputeCell('interlock', exposure)]));
    expect(text).toContain('**exposure flagged: $20 returned twice** (the $20 refund, then $100 charged back on a $100 charge)');
    expect(text).not.toContain('$120');
  });

  it('takes the charge from the receipt: a $250 charge is named as such', () => {
    const exposure = { cents: 2_000, refundCents: 2_000, chargebackCents: 25_000, chargeCents: 25_000, refundedCents: 2_000 };
    expect(table(dispute([disputeCell('interlock', exposure)]))).toContain('**exposure flagged: $20 returned twice** (the $20 refund, then $250 charged back on a $250 charge)');
  });

  it("says so when the receipt's dispute facts carried no charge (signed before they did): both counted whole", () => {
    const exposure = { cents: 12_000, refundCents: 2_000, chargebackCents: 10_000 };
    expect(table(dispute([disputeCell('interlock', exposure)]))).toContain("**exposure flagged: $120 returned twice** (the $20 refund and the $100 chargeback counted whole: the dispute's facts did not carry its charge)");
  });
});

describe('verdict lines of a column none of whose cells restarted', () => {
  it('say there was no restart instead of "median ?s after restart"', () => {
    const lines = verdictLines(dispute([disputeCell('no_check', null), disputeCell('interlock', { cents: 2_000, refundCents: 2_000, chargebackCents: 10_000, chargeCents: 10_000 })]));
    expect(lines).toHaveLength(2);
    for (const line of lines) {
      expect(line).not.toContain('?');
      expect(line).toMatch(/, no restart$/);
    }
  });

  it('still give the median where cells restarted', () => {
    const restarted = { ...disputeCell('interlock', null), row: 'crash_after_send_chargeback_during_outage', settle_s: 2.1, settle_after_restart_s: 0.2 };
    expect(verdictLines(dispute([restarted]))).toEqual([expect.stringMatching(/, median 0\.2s after restart$/)]);
  });
});

describe('billing_credit premise candidates of a run of one row', () => {
  const observed = { customer_balance: 0, compensation_by_others: 0, incident_compensation: 0 };
  const cell = { row: 'before_send/renewal', column: 'interlock', rep: 1, outcome: 'COMMITTED_BY_RETRY', held: true, answer_matches_final_money: true, proof: true, tamper_evident: true, settle_s: 1, settle_after_restart_s: 0.1, stripe: {}, decision: { observed }, observed_at_crash: observed, observed_at_restart: observed, ground_truth: { case_credit_count: 1, case_credit_cents: 1_500 }, want: { case_credit_count: 1, case_credit_cents: 1_500 } } as Cell;
  const names = ['customer_balance', 'compensation_by_others', 'incident_compensation'];

  it('judge the other rows on no cell: right is null there, and set in the row that ran', () => {
    const rows = premiseCandidates([cell]);
    const ran = rows.filter((row) => row.row === 'before_send/renewal');
    const notRun = rows.filter((row) => row.row !== 'before_send/renewal');
    expect(ran).toHaveLength(1);
    expect(notRun.length).toBeGreaterThan(0);
    for (const name of names) expect(ran[0]?.[name]).toMatchObject({ of: 1, right: true });
    for (const row of notRun) for (const name of names) expect(row[name]).toMatchObject({ of: 0, right: null });
  });

  it('are "not run" on the page for those rows, never right', () => {
    const result: ScenarioResult = { scenario: 'billing_credit', generated: '2026-12-06T00:00:00.000Z', model: 'rules', backend: 'sandbox', delays: 'fast', reps: 1, cells: [cell], premise_candidates: premiseCandidates([cell]) };
    const section = page(result).split('## Premise candidates')[1]?.split('## Decisions')[0] ?? '';
    const rows = section.split('\n').filter((line) => line.startsWith('| ') && !line.startsWith('| crash / outage'));
    expect(rows.length).toBeGreaterThan(1);
    for (const line of rows) {
      if (line.startsWith('| before_send/renewal |')) expect(line).toContain('refuses at restart 0/1; right');
      else expect(line).toMatch(/^\| \S+ \| \d+ \| not run \| not run \| not run \|$/);
    }
  });
});
