// Rule (README "The command line": "`caps set SUBJECT 0` is allowed: nothing may move on that subject"; README
// "Redis": a lowered cap is a brake, as a revoke is): a subject cap set while an effect is in flight, below what is
// moved or in flight on the subject with that effect, stops recovery from sending it, as a revoke does: once nothing
// landed it is refused (REFUSED:lease_at_recovery, its reason naming the cap) and its totals are given back. A cap
// the effect still fits stops nothing.
import { afterEach, expect, it } from 'vitest';
import { explainRecorded } from '../../src/core/outcomes.js';
import { refundProposal, type World } from '../support/harness.js';
import { PAYMENT, gateWorld, grant, recoverUntilSettled, verifiedReceipt } from './gate-support.js';

let world: World;
afterEach(async () => {
  await world?.close();
});

/** A refund of 20.00 whose only request never left (the connection reset before it was written): IN_FLIGHT, nothing sent. */
async function refundNeverSent(tier: 1 | 2) {
  world = await gateWorld({ target: { tier } });
  const a = await world.node('a');
  const ap = await grant(a, { capCents: 5_000, maxUses: 5 });
  world.target.inject({ kind: 'error-before-send' });
  const answer = await a.gate.submit(refundProposal({ approval: ap.id, amount: 2_000 }));
  expect(answer.outcome).toBe('IN_FLIGHT');
  expect(world.target.sendStarts.length).toBe(0);
  return { a, approvalId: ap.id, effectId: answer.effectId };
}

it.each([1, 2] as const)('tier %i: a refund whose only request never left is refused at recovery, not sent, after caps set 0', async (tier) => {
  const { a, approvalId, effectId } = await refundNeverSent(tier);
  expect(await a.approvals.setSubjectCap(PAYMENT, 0)).toEqual({ limitCents: 0, movedCents: 2_000 });
  const report = await recoverUntilSettled(a, effectId);
  expect(report.settled).toEqual([expect.objectContaining({ effectId, outcome: 'REFUSED:lease_at_recovery' })]);
  expect({ sendStarts: world.target.sendStarts.length, landings: world.target.landings.length }).toEqual({ sendStarts: 0, landings: 0 });
  const receipt = await verifiedReceipt(world, a, effectId);
  expect(receipt).toMatchObject({ happened: false, refused: { code: 'REFUSED:lease_at_recovery', reason: expect.stringContaining(`the cap on ${PAYMENT} now allows`) } });
  // Its sentence says the cap, not that the approval lapsed or was revoked (it is still live).
  expect(explainRecorded('REFUSED:lease_at_recovery', receipt.refused?.reason)).toContain("subject's cap was lowered");
  // Refused as a revoke refuses: the subject's and the approval's totals are given back.
  expect((await a.approvals.subjectCap(PAYMENT)).movedCents).toBe(0);
  expect((await a.approvals.describe(approvalId)).snapshot).toMatchObject({ reservedCents: 0, uses: 0 });
});

it('a cap lowered to exactly what is moved or in flight on the subject still lets the effect be resent', async () => {
  const { a, effectId } = await refundNeverSent(1);
  expect(await a.approvals.setSubjectCap(PAYMENT, 2_000)).toEqual({ limitCents: 2_000, movedCents: 2_000 });
  const report = await recoverUntilSettled(a, effectId);
  expect(report.settled).toEqual([expect.objectContaining({ effectId, outcome: 'COMMITTED_BY_RETRY' })]);
  expect(world.target.landedCount(effectId)).toBe(1);
});

it('(contrast) a revoke in the same spot refuses the refund at recovery the same way, and nothing is sent', async () => {
  const { a, approvalId, effectId } = await refundNeverSent(1);
  await a.approvals.revoke(approvalId, 'lee@risk');
  const report = await recoverUntilSettled(a, effectId);
  expect(report.settled).toEqual([expect.objectContaining({ effectId, outcome: 'REFUSED:lease_at_recovery' })]);
  expect(world.target.landings.length).toBe(0);
  expect((await a.approvals.subjectCap(PAYMENT)).movedCents).toBe(0);
});
