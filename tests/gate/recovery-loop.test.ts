// Recovery runs on its own schedule: at start, then exactly when the last pass said more can be done (a send
// deadline plus the settle margin), not on a fixed poll.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { ProcessCrash } from '../../src/core/target.js';
import { recoverUntilSettled, startRecoveryLoop, type RecoveryLoop } from '../../src/gate/recovery-loop.js';
import { approvalTerms, createWorld, kill, refundProposal, sleep, type World } from '../support/harness.js';

describe('the recovery schedule', () => {
  let world: World;
  let loop: RecoveryLoop | null = null;
  beforeAll(async () => {
    world = await createWorld({ target: { tier: 2 } });
  });
  afterEach(async () => {
    loop?.stop();
    await loop?.done;
    loop = null;
  });
  afterAll(async () => {
    await world.close();
  });

  async function crashBeforeSend(paymentIntent: string) {
    const subject = `payment:${paymentIntent}`;
    world.target.world.set(subject, { chargebacks: [], refunded_by_others: 0 });
    const terms = approvalTerms({ scope: subject });
    const sender = await world.node();
    await sender.approvals.grant(terms);
    const proposal = refundProposal({ approval: terms.id, paymentIntent });
    world.target.inject({ kind: 'crash-before-send' });
    await expect(sender.gate.submit(proposal)).rejects.toBeInstanceOf(ProcessCrash);
    await kill(sender);
    return sender.gate.effectIdOf(proposal);
  }

  it('a running loop wakes at the send deadline plus the settle margin and reapplies a tier-2 effect a dead worker left open', async () => {
    const effectId = await crashBeforeSend('pi_loop');
    const recoverer = await world.node();
    // An interval far longer than the test: only the scheduled wake-up can settle the effect in time.
    loop = startRecoveryLoop(recoverer.gate, recoverer.journal, pino({ level: 'silent' }), { intervalMs: 60_000 });
    const giveUp = Date.now() + 8_000;
    while (world.target.landedCount(effectId) === 0 && Date.now() < giveUp) await sleep(50);
    expect(world.target.landedCount(effectId)).toBe(1);
    const receipt = await recoverer.journal.receipt(effectId);
    expect(receipt?.entries.at(-1)).toMatchObject({ kind: 'COMMITTED', via: 'recovery-reapply' });
  });

  it('recoverUntilSettled sleeps until each reported instant and returns every pass', async () => {
    const effectId = await crashBeforeSend('pi_until');
    const recoverer = await world.node();
    const reports = await recoverUntilSettled(recoverer.gate, recoverer.journal, { only: [effectId], timeoutMs: 10_000 });
    expect(reports[0]?.waiting.map((item) => item.effectId)).toEqual([effectId]);
    expect(reports.at(-1)?.settled.map((item) => item.outcome)).toEqual(['REAPPLIED_AFTER_QUERY']);
    expect(world.target.landedCount(effectId)).toBe(1);
  });
});
