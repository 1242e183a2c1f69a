// The gate's verdict on a scenario cell (scenarios/verdict.ts, issue 12 §3) must be able to fail for the behaviour the
// row exists to check, not only for what Stripe would have stopped anyway.
import { describe, expect, it } from 'vitest';
import type { Cell } from '../../scenarios/cells.js';
import { gateProblems, runFailures } from '../../scenarios/verdict.js';

function gateCell(row: string, outcome: string): Cell {
  return { row, column: 'interlock', rep: 1, outcome, held: true, answer_matches_final_money: true, proof: true, tamper_evident: true, settle_s: 2.4, settle_after_restart_s: 0.1, stripe: {}, exposure: null };
}

describe("the gate's verdict on a stripe_dispute cell", () => {
  it('fails a gate that resent a refund on a charged-back charge and left Stripe to refuse it, though no refund object exists', () => {
    // What the page showed with recovery's premise re-check switched off: Stripe answered 400 charge_disputed, so
    // no refund exists, the receipt says not returned, and every other column of the verdict passes.
    const problems = gateProblems(gateCell('crash_before_send_chargeback_during_outage', 'REFUSED:target_error'), 10);
    expect(problems).toEqual([expect.stringContaining('REFUSED:stale_premise_at_recovery')]);
  });

  it('passes the outcome each row wants', () => {
    expect(gateProblems({ ...gateCell('crash_before_send_chargeback_during_outage', 'REFUSED:stale_premise_at_recovery'), settle_after_restart_s: 10.2 }, 10)).toEqual([]);
    expect(gateProblems(gateCell('crash_after_send_chargeback_during_outage', 'COMMITTED_ON_QUERY'), 10)).toEqual([]);
    expect(gateProblems(gateCell('crash_before_send_restart_during_warning_under_review', 'COMMITTED_BY_RETRY'), 10)).toEqual([]);
    expect(gateProblems({ ...gateCell('gap_probe_chargeback_after_refund_window', 'COMMITTED'), settle_after_restart_s: null, exposure: { cents: 12_000 } }, 10)).toEqual([]);
  });
});

describe('what interlock scenario exits with', () => {
  it("lists every check the gate's column failed, naming the scenario, and nothing for a baseline's violation", () => {
    const violated = { ...gateCell('crash_before_send_chargeback_during_outage', 'REFUSED:target_error'), column: 'no_check' as const, held: false };
    const results = [
      { scenario: 'stripe_dispute', settle_margin_s: 10, cells: [gateCell('crash_before_send_chargeback_during_outage', 'REFUSED:target_error'), violated] },
      { scenario: 'billing_credit', settle_margin_s: 10, cells: [{ ...gateCell('before_send/renewal', 'COMMITTED_BY_RETRY'), settle_after_restart_s: 3 }] },
    ];
    expect(runFailures(results)).toEqual([expect.stringMatching(/^stripe_dispute crash_before_send_chargeback_during_outage #1: the gate answered REFUSED:target_error/), expect.stringMatching(/^billing_credit before_send\/renewal #1: settled 3 s after the restart/)]);
    expect(runFailures([{ scenario: 'stripe_dispute', settle_margin_s: 10, cells: [violated, gateCell('crash_after_send_chargeback_during_outage', 'COMMITTED_ON_QUERY')] }])).toEqual([]);
  });
});
