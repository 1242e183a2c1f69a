// Rule: a scenario judges the gate as it is deployed. Its post-send facts, which turn the receipt of a refund Stripe
// failed after the chargeback from "returned" into "not_returned", come from the product's own reconciliation:
// before judging a receipt the harness runs `interlock reconcile` with the scenario's settings (what a deployment's
// facts worker runs on its schedule), and the cell records that command and its report. It used to re-read the effect
// in the harness's own process, a step no deployment process made and the pages credited to a facts worker.
import { describe, expect, it } from 'vitest';
import { runScenarios } from '../../scenarios/run.js';
import { tempDir } from '../cli/run-cli.js';

type Judged = { stripe: { refunds: { status: string }[] }; reconcile?: { command: string; report: { effects: number; appended: number; unread: number } } };

describe("the gate's answer against the final money", () => {
  it('comes from `interlock reconcile` run before judging: a refund failed after the chargeback reads not_returned', { timeout: 180_000 }, async () => {
    const out = tempDir('scenario-reconcile');
    try {
      const env: NodeJS.ProcessEnv = { ...process.env, REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', INTERLOCK_UNSAFE_DURABILITY: '1' };
      delete env.STRIPE_SECRET_KEY;
      delete env.STRIPE_API_BASE;
      delete env.ANTHROPIC_API_KEY;
      const { results } = await runScenarios({ scenarios: ['stripe-dispute'], reps: 1, delays: 'fast', out: out.dir, rows: ['crash_before_send_restart_during_warning_under_review'], columns: ['interlock'], env, startedBy: process.ppid });
      const cell = results[0]?.cells[0];
      expect(cell?.error ?? null).toBeNull();
      const judged = cell as unknown as Judged;
      // What Stripe holds: the refund the restart sent, failed once the chargeback posted.
      expect(judged.stripe.refunds.map((refund) => refund.status)).toEqual(['failed']);
      expect({ outcome: cell?.outcome, receipt_answer: cell?.receipt_answer, answer_matches_final_money: cell?.answer_matches_final_money }).toEqual({ outcome: 'COMMITTED_BY_RETRY', receipt_answer: 'not_returned', answer_matches_final_money: true });
      // The command re-read the effect and appended the refund's failure: the receipt's answer is its doing.
      expect(judged.reconcile?.command).toMatch(/^interlock reconcile --since \d+s$/);
      expect(judged.reconcile?.report).toMatchObject({ effects: 1, unread: 0 });
      expect(judged.reconcile?.report.appended).toBeGreaterThan(0);
    } finally {
      out.remove();
    }
  });
});
