// Rule: a refund waiting for another refund of its payment (REFUNDS_HOLD) recovers that holder when its sender died,
// rather than leave it to the recovery passes (submit.ts waitForRefunds, DESIGN §7), whatever the send timeout: every
// wait asks recovery about the holder at least once before it answers IN_FLIGHT. With a send timeout under a second
// (its wait ends before HOLDER_RECOVERY_EVERY_MS) it asked never, and with no recovery pass running the payment's
// refunds stayed held for good, however often the waiting refund was submitted again.
import { afterAll, expect, it } from 'vitest';
import { FACTS, gateWorld, grant, submitAndCrash } from './gate-support.js';
import { kill, refundProposal, sleep, type World } from '../support/harness.js';

let world: World | undefined;
afterAll(async () => {
  await world?.close();
});

it('a refund waiting under a send timeout shorter than a second recovers the holder whose sender died', async () => {
  // FAST: a 600 ms send timeout, so each wait ends after 600 ms; the dead sender's heartbeat lapses after 500 ms.
  world = await gateWorld({ target: { movedBySends: ['refunded_by_others'] } });
  expect(world.config.sendTimeoutMs).toBeLessThan(1_000);
  const [a, b] = [await world.node('a'), await world.node('b')];
  const first = await grant(a);
  world.target.inject({ kind: 'crash-before-send' });
  const holder = await submitAndCrash(a, refundProposal({ approval: first.id, premises: { ...FACTS } }));
  await kill(a);

  // No recovery pass runs: only the waiting refund's own submits can recover the holder.
  const second = await grant(b);
  const proposal = refundProposal({ approval: second.id, premises: { ...FACTS } });
  let answer = await b.gate.submit(proposal);
  for (let i = 0; i < 10 && answer.outcome === 'IN_FLIGHT'; i += 1) {
    await sleep(300);
    answer = await b.gate.submit(proposal);
  }
  const holderKinds = (await b.stores.journal.entries('payment:pi_1', holder)).map((entry) => entry.kind);
  expect({ holderSettled: holderKinds.includes('COMMITTED'), outcome: answer.outcome }).toEqual({ holderSettled: true, outcome: 'COMMITTED' });
}, 60_000);
