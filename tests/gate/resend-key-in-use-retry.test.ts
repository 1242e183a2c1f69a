// Rule (gate/recover.ts resend, resendRetryMs): a resend in recovery that gets no definite answer (Stripe's 409
// idempotency_key_in_use while the dead sender's request under the key still runs) has its effect looked at again
// within about a second, later after each such answer, not at the next periodic pass: the pass's report names when
// (`retryAt`, and `nextAt` for the loop that schedules passes). It said nothing, and a worker restarted after a crash
// left the refund in flight for a minute (the service's periodic pass) although Stripe finished it in seconds.
import { afterEach, describe, expect, it } from 'vitest';
import { resendRetryMs } from '../../src/gate/recover.js';
import { recoverUntilSettled } from '../../src/gate/recovery-loop.js';
import { approvalTerms, createWorld, kill, refundProposal, type World } from '../support/harness.js';

let world: World | null = null;
afterEach(async () => {
  await world?.close();
  world = null;
});

describe('a resend met by the dead sender\'s request still running under the key', () => {
  it('is looked at again in about a second, and settles once that request has landed, with one refund', async () => {
    world = await createWorld({ config: { sendTimeoutMs: 5_000, claimTtlMs: 15_000, dedupMarginMs: 60_000 }, target: { sendTimeoutMs: 5_000 } });
    world.target.world.set('payment:pi_inuse', { chargebacks: [], refunded_by_others: 0 });
    const dead = await world.node('dead');
    const terms = approvalTerms({ scope: 'payment:pi_inuse' });
    await dead.approvals.grant(terms);
    // The first sender's request reaches the target and is still running there when the sender dies.
    world.target.inject({ kind: 'slow-answer', delayMs: 2_500, answer: 'landed' });
    const proposal = refundProposal({ approval: terms.id, paymentIntent: 'pi_inuse' });
    const first = dead.gate.submit(proposal).catch(() => null);
    await expect.poll(() => world?.target.sendStarts.length ?? 0).toBe(1);
    await kill(dead);

    const recoverer = await world.node('recoverer');
    const report = await recoverer.gate.recover();
    const now = await recoverer.journal.serverTime();
    expect(report.unresolved).toHaveLength(1);
    expect(report.unresolved[0]?.error).toContain('idempotency_key_in_use');
    const retryAt = report.unresolved[0]?.retryAt ?? Infinity;
    expect({ soon: retryAt <= now + resendRetryMs(0), nextAt: report.nextAt }).toEqual({ soon: true, nextAt: retryAt });

    const reports = await recoverUntilSettled(recoverer.gate, recoverer.journal, { only: [dead.gate.effectIdOf(proposal)], timeoutMs: 20_000 });
    expect(reports.at(-1)?.settled.map((one) => one.outcome)).toEqual([expect.stringMatching(/^COMMITTED/)]);
    expect(world.target.landedCount(dead.gate.effectIdOf(proposal))).toBe(1);
    await first;
  }, 40_000);

  it('waits longer after each such answer, at most 30 s', () => {
    expect([0, 1, 2, 3, 4, 5, 6, 40].map(resendRetryMs)).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000]);
  });
});
