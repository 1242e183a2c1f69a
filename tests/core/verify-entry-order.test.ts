// Rule: verify() answers a hostile receipt in time about linear in its size, whatever order its entries come in
// (tests/cli/receipt-hostile.test.ts measures the same way: the same entries in two orders, side by side, no clock
// limit). A receipt file may be 32 MiB (MAX_RECEIPT_BYTES), and no key is needed to build either order below:
// - DISPATCHED x n then REFUSED(resolves) x n: each resolving refusal copied the whole list of sends, and 120,000
//   such entries (32 MiB) took about 55 s.
// - RESOLVED dismiss x n then RESOLVED reapprove x n: each re-approval looked for the first one among every action
//   before it, and 120,000 such entries took about 25 s.
import { describe, expect, it } from 'vitest';
import { verify } from '../../src/core/verify.js';

const EFFECT_ID = 'a'.repeat(64);
const BASE = { v: 3, effectId: EFFECT_ID, at: 0, prev: null, hash: 'h', sig: null };
const CHECKS = { approvalLive: true, approval: null, approvalProblems: [], violations: [], changes: [] };

const proposed = () => ({ ...BASE, kind: 'PROPOSED', agent: 'a', approval: null, premises: {}, effect: { kind: 'refund', paymentIntent: 'pi_1', amount: 100 }, request: null, decision: null });
const dispatched = () => ({ ...BASE, kind: 'DISPATCHED', approval: 'ap', premises: {}, checks: CHECKS, owner: 'o', epoch: 1, sendDeadline: 1 });
const refused = () => ({ ...BASE, kind: 'REFUSED', code: 'REFUSED:x', reason: 'r', checks: null, rechecked: null, changes: [], resolves: true });
const resolved = (action: string, index: number) => ({ ...BASE, kind: 'RESOLVED', item: `i${index}`, action, by: { name: 'n', role: 'r' }, note: '', resolution: null, reapproval: null });

function receipt(entries: unknown[]): unknown {
  return JSON.parse(JSON.stringify({ format: 'interlock.receipt/v3', effectId: EFFECT_ID, entries, head: { format: 'interlock.receipt-head/v2', effectId: EFFECT_ID, count: entries.length, lastHash: 'h', signedAt: 0, kid: 'k', sig: 's' } })) as unknown;
}

function timed(input: unknown): number {
  const started = performance.now();
  expect(verify(input).valid).toBe(false);
  return performance.now() - started;
}

// Entries of each kind: enough that the quadratic orders cost 10 to 40 times the linear ones (seconds), few enough
// that the linear ones take a fraction of a second each. A look through the actions is cheaper than a copy of the
// sends, so the re-approvals need twice as many for the same margin.
const N = 25_000;

describe('verify() stays linear on hostile entry orders', () => {
  it('n DISPATCHED then n resolving REFUSED cost about what the same entries cost interleaved', { timeout: 120_000 }, () => {
    const grouped = receipt([proposed(), ...Array.from({ length: N }, dispatched), ...Array.from({ length: N }, refused)]);
    const interleaved = receipt([proposed(), ...Array.from({ length: N }, () => [dispatched(), refused()]).flat()]);
    // Each twice, interleaved, so a pause of the machine's cannot fail the test alone.
    const ratios = [0, 1].map(() => timed(grouped) / timed(interleaved));
    expect(Math.min(...ratios)).toBeLessThan(5);
  });

  it('n dismissals then n re-approvals cost about what the same entries cost re-approvals first', { timeout: 120_000 }, () => {
    const M = 2 * N;
    const dismissals = Array.from({ length: M }, (_, index) => resolved('dismiss', index));
    const reapprovals = Array.from({ length: M }, (_, index) => resolved('reapprove', M + index));
    const slow = receipt([proposed(), ...dismissals, ...reapprovals]);
    const fast = receipt([proposed(), ...reapprovals, ...dismissals]);
    const ratios = [0, 1].map(() => timed(slow) / timed(fast));
    expect(Math.min(...ratios)).toBeLessThan(5);
  });
});
