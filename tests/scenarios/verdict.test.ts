// The gate's verdict on a scenario cell (scenarios/verdict.ts, issue 12 §3) must be able to fail for the behaviour the
// row exists to check, not only for what Stripe would have stopped anyway.
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Cell, ScenarioResult } from '../../scenarios/cells.js';
import { writeResults } from '../../scenarios/report.js';
import { generateSigningKeyPem } from '../../src/keys/key-store.js';
import { tempDir } from '../cli/run-cli.js';
import { gateProblems, runFailures } from '../../scenarios/verdict.js';
import { handCheckProves } from '../../scenarios/billing-credit.js';

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
    expect(gateProblems({ ...gateCell('gap_probe_chargeback_after_refund_window', 'COMMITTED'), settle_after_restart_s: null, exposure: { cents: 2_000 } }, 10)).toEqual([]);
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

describe('a receipt that does not verify from the results file', () => {
  it("is one of the gate's problems: the run lists it (exit 1) and the page says which cell's receipt failed", () => {
    const temp = tempDir('reverify');
    try {
      const good = gateCell('crash_after_send_chargeback_during_outage', 'COMMITTED_ON_QUERY');
      const result: ScenarioResult = { scenario: 'stripe_dispute', generated: '2026-12-04T00:00:00.000Z', model: 'rules', backend: 'sandbox', delays: 'fast', reps: 1, settle_margin_s: 10, public_key: generateSigningKeyPem().publicPem, cells: [{ ...good, receipt: { format: 'interlock.receipt/v1', entries: [] } }] };
      writeResults(temp.dir, [result]);
      expect(result.cells[0]?.receipt_reverified_from_results).toBe(false);
      expect(runFailures([result])).toEqual(["stripe_dispute crash_after_send_chargeback_during_outage #1: its receipt did not verify from the results file with the run's public key"]);
      expect(readFileSync(join(temp.dir, 'stripe_dispute.md'), 'utf8')).toContain("**1 cell's receipts do not verify from it** (crash_after_send_chargeback_during_outage / interlock #1)");
    } finally {
      temp.remove();
    }
  });
});

describe("billing-credit's hand_check proof (its log against Stripe's credits)", () => {
  const sent = (credit: string) => ({ phase: 'sent', credit, replayed: false });
  it('holds when the log names the credit Stripe holds, sent or found by lookup, or a refusal where Stripe holds none', () => {
    expect(handCheckProves([{ phase: 'send' }, sent('cbtxn_1')], ['cbtxn_1'])).toBe(true);
    expect(handCheckProves([{ phase: 'send' }, { phase: 'lookup', found: ['cbtxn_1'] }], ['cbtxn_1'])).toBe(true);
    expect(handCheckProves([{ phase: 'premises', refused: {} }], [])).toBe(true);
    expect(handCheckProves([{ phase: 'approval', refused: {} }], [])).toBe(true);
  });
  it('fails when the log names another credit than Stripe holds, ends at the send, is empty, or refuses while Stripe holds a credit', () => {
    expect(handCheckProves([sent('cbtxn_other')], ['cbtxn_1'])).toBe(false);
    expect(handCheckProves([{ phase: 'send', key: 'k' }], ['cbtxn_1'])).toBe(false);
    expect(handCheckProves([{ phase: 'send', key: 'k' }], [])).toBe(false);
    expect(handCheckProves([], [])).toBe(false);
    expect(handCheckProves([{ phase: 'premises', refused: {} }], ['cbtxn_1'])).toBe(false);
  });
});

describe("shared_cap's page against the seeds", () => {
  const capCell = (column: 'no_check' | 'hand_check', outcome: string, held: boolean): Cell => ({ ...gateCell('after_commit', outcome), column, held });
  const pageOf = (cells: Cell[]) => {
    const temp = tempDir('seed-text');
    try {
      writeResults(temp.dir, [{ scenario: 'shared_cap', generated: '2026-12-04T00:00:00.000Z', model: 'rules', backend: 'sandbox', delays: 'fast', reps: 1, settle_margin_s: 10, public_key: generateSigningKeyPem().publicPem, cells }]);
      const page = readFileSync(join(temp.dir, 'shared_cap.md'), 'utf8');
      return page.slice(page.indexOf('## Against the seeds'), page.indexOf('## Columns'));
    } finally {
      temp.remove();
    }
  };

  it("explains hand_check's differences as its race, and never says no_check matched the seed when it did not", () => {
    // An outcome the seed never saw for hand_check; no_check as the seed saw it.
    const race = pageOf([capCell('hand_check', 'crashed REPLAYED_BY_STRIPE / other REFUNDED', false), capCell('no_check', 'crashed REPLAYED_BY_STRIPE / other REFUNDED', false)]);
    expect(race).toContain('hand_check is a race');
    const noCheckHeld = pageOf([capCell('hand_check', 'crashed REPLAYED_BY_STRIPE / other REFUNDED', false), capCell('no_check', 'crashed REPLAYED_BY_STRIPE / other REFUSED:over_cap', true)]);
    expect(noCheckHeld).toContain('after_commit / no_check #1');
    expect(noCheckHeld).not.toContain('those cells match the seed');
  });
});
