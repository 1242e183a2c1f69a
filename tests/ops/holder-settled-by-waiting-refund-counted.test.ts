// Rule: every effect this process settles is counted once, whichever path settled it (interlock_effects_total,
// interlock_approval_refusals_total, interlock_dispatch_to_settle_seconds). A refund whose sender died, settled by
// another refund of its payment waiting on it (submit.ts waitForRefunds recovers "a holder whose sender died"), is
// told through the gate's events as a recovery pass's settlement (metrics gateEvents `recovered`): otherwise nothing
// counts it, since the passes find nothing open and the dead refund's job, run again, finds its proposal refused.
import { afterAll, expect, it } from 'vitest';
import { startSender, type Sender } from '../../src/interlock.js';
import { createMetrics } from '../../webhooks/ops/metrics.js';
import { FACTS, gateWorld, grant, submitAndCrash } from '../gate/gate-support.js';
import { kill, refundProposal, sleep, type World } from '../support/harness.js';

let world: World | undefined;
let sender: Sender | undefined;
afterAll(async () => {
  await sender?.close();
  await world?.close();
});

function sample(text: string, line: string): number | undefined {
  const found = text.split('\n').find((one) => one.startsWith(`${line} `));
  return found === undefined ? undefined : Number(found.split(' ').at(-1));
}

it('counts a refund its payment\'s waiting refund settled by recovering it, once', async () => {
  // A send timeout over HOLDER_RECOVERY_EVERY_MS: the wait asks recovery while it waits, as in the service's defaults.
  world = await gateWorld({ target: { movedBySends: ['refunded_by_others'], sendTimeoutMs: 2_500 }, config: { sendTimeoutMs: 2_500, claimTtlMs: 8_000 } });
  const [a, b] = [await world.node('a'), await world.node('b')];
  const first = await grant(a);
  world.target.inject({ kind: 'crash-before-send' });
  const holder = await submitAndCrash(a, refundProposal({ approval: first.id, premises: { ...FACTS } }));
  await kill(a);
  // Revoked while its sender is dead: whoever recovers it refuses it (REFUSED:lease_at_recovery).
  await b.approvals.revoke(first.id, 'dana');

  // The service's wiring (src/main.ts): the sender tells the process's metrics its gate's events.
  const metrics = createMetrics({ stores: b.stores, defaultMetrics: false });
  sender = await startSender(b.stores, world.target, { workerId: 'c', events: metrics.gateEvents });
  const second = await grant(b);
  const proposal = refundProposal({ approval: second.id, premises: { ...FACTS } });
  // The effects worker asks again while the answer is IN_FLIGHT, counting each answer (effectAnswered).
  let answer = await sender.gate.submit(proposal);
  for (let i = 0; i < 20 && answer.outcome === 'IN_FLIGHT'; i += 1) {
    await metrics.effectAnswered(answer);
    await sleep(300);
    answer = await sender.gate.submit(proposal);
  }
  await metrics.effectAnswered(answer);
  expect(answer.outcome).toBe('COMMITTED');
  const holderEntries = await b.stores.journal.entries('payment:pi_1', holder);
  expect(holderEntries.filter((entry) => entry.kind === 'REFUSED').length).toBe(1);

  // Every other way its settlement could be heard: a recovery pass, and the dead worker's job run again.
  await metrics.recoveryReported(await sender.gate.recover());
  const rerun = await sender.gate.submitLatest(holder, null);
  if (rerun.judged) await metrics.effectAnswered(rerun.answer);

  // The event's count reads the holder's journal after the event returned.
  const counted = async () => {
    const { text } = await metrics.render();
    return {
      committed: sample(text, 'interlock_effects_total{kind="refund",outcome="COMMITTED"}'),
      refusedAtRecovery: sample(text, 'interlock_effects_total{kind="refund",outcome="REFUSED:lease_at_recovery"}'),
      revoked: sample(text, 'interlock_approval_refusals_total{reason="revoked"}'),
      settles: sample(text, 'interlock_dispatch_to_settle_seconds_count{kind="refund"}'),
    };
  };
  await expect.poll(counted, { timeout: 5_000 }).toEqual({ committed: 1, refusedAtRecovery: 1, revoked: 1, settles: 2 });
}, 60_000);
