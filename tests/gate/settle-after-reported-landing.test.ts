// Rule: a fenced-out sender's landing reported while the dispatch is still open (late-5: `late = landed`) is the
// truth about the effect: whoever holds the claim commits it and never releases its amount. A REFUSED (or AMBIGUOUS)
// about to be settled after that report is not (settle-5 answers LATE): what landed is committed, and the cents (and
// the use, and a credit's incident) stay on the approval and the subject cap: the money moved (DESIGN I6, late-5.lua,
// settle-5.lua). Before, the refusal was settled and gave the landed cents back, and the cap let them move again.
import { afterEach, expect, it } from 'vitest';
import { kill, refundProposal, sleep, type TestNode, type World } from '../support/harness.js';
import { PAYMENT, entryKinds, gateWorld, grant, untilRedisTime } from './gate-support.js';

let world: World;
afterEach(async () => {
  await world?.close();
});

const CHARGED_BACK = { chargebacks: ['du_1'], refunded_by_others: 0 };

/**
 * a's 2000-cent refund is on the wire (Stripe slow to answer) when a's heartbeat lapses; a chargeback arrives, so b's
 * re-check fails. b's trusted lookup is answered "nothing" a moment before a's request lands; a then hears its landing
 * and reports it (settle FENCED -> LATE_RESULT landed; late-5 marks the still-open dispatch `late = landed`) before
 * b settles its REFUSED:stale_premise_at_recovery, which settle-5 turns away: b commits the landing instead.
 */
async function settledAfterLateLanding(): Promise<{ b: TestNode; effectId: string; proposal: ReturnType<typeof refundProposal>; approval: string }> {
  world = await gateWorld({ target: { tier: 2 } });
  const [a, b] = [await world.node('a'), await world.node('b')];
  const ap = await grant(b, { capCents: 10_000, maxUses: 5 });
  await b.approvals.setSubjectCap(PAYMENT, 2_000);
  world.target.inject({ kind: 'slow-answer', delayMs: 450, answer: 'landed' });
  const proposal = refundProposal({ requestId: 'case-late-open', approval: ap.id, amount: 2_000 });
  const effectId = a.gate.effectIdOf(proposal);
  const sending = a.gate.submit(proposal);
  await sleep(60);
  world.target.world.set(PAYMENT, { ...CHARGED_BACK });
  await kill(a);
  const first = await b.gate.recover({ only: [effectId] });
  expect(first.waiting).toEqual([expect.objectContaining({ effectId })]);
  if (first.nextAt !== null) await untilRedisTime(b, first.nextAt);
  const query = world.target.query.bind(world.target);
  world.target.query = async (...args) => {
    const found = await query(...args);
    await sending;
    return found;
  };
  const second = await b.gate.recover({ only: [effectId] });
  world.target.query = query;
  expect(second.settled).toEqual([expect.objectContaining({ effectId, outcome: 'COMMITTED_ON_QUERY' })]);
  // The landing is on the chain, then its commit; no refusal.
  expect((await entryKinds(b, effectId)).slice(-2)).toEqual(['LATE_RESULT', 'COMMITTED']);
  expect(world.target.landedCount(effectId)).toBe(1);
  return { b, effectId, proposal, approval: ap.id };
}

it('keeps the landed cents on the subject cap and the approval, so the cap stops the same cents moving again', async () => {
  const { b, approval } = await settledAfterLateLanding();
  const cap = await b.approvals.subjectCap(PAYMENT);
  const { snapshot } = await b.approvals.describe(approval);
  expect.soft({ moved: cap.movedCents, reserved: snapshot?.reservedCents }).toEqual({ moved: 2_000, reserved: 2_000 });
  const other = await b.gate.submit(refundProposal({ requestId: 'case-late-open-2', approval, amount: 2_000, premises: CHARGED_BACK }));
  expect(other.outcome).toBe('REFUSED:over_cap');
});
