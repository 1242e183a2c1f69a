// Rule: money that landed is on the subject's running total, whatever approval the landing is charged to. A
// fenced-out sender's late landing names the approval of the dispatch it sent under; the same request, refused and
// decided again under another approval, may have been dispatched and refused since under that other one. The landing
// still moves the subject's total (and the approval it was sent under), so a shared cap stops the same cents moving
// a second time (late-5.lua).
import { afterEach, describe, expect, it } from 'vitest';
import { refundProposal, type World } from '../support/harness.js';
import { PAYMENT, gateWorld, grant, refusedUnderTwoApprovals } from './gate-support.js';

let world: World;
afterEach(async () => {
  await world?.close();
});

describe('late landing after a re-dispatch under another approval', () => {
  it('keeps the landed cents on the subject total, so the shared cap still binds', async () => {
    world = await gateWorld();
    // Dispatched under ap1, whose sender stalls (modelled as a crash before its bytes are recorded as sent), refused at
    // recovery once ap1 is revoked (2000 given back); decided again under ap2, dispatched, refused the same way.
    const { b, ap1, effectId } = await refusedUnderTwoApprovals(world, 'case-late-totals');
    const ap3 = await grant(b, { capCents: 5_000, maxUses: 5 });
    expect((await b.approvals.subjectCap(PAYMENT)).movedCents).toBe(0);

    // Dispatch 1's sender was only frozen: its request reached Stripe and it now reports the landing, as
    // settle.ts recordLate does, quoting the approval of the dispatch it sent under.
    const partition = await b.journal.partitionOf(effectId);
    expect(partition).toBe(PAYMENT);
    const late = await b.journal.late(PAYMENT, effectId, { kind: 'LATE_RESULT', owner: 'a', epoch: 1, outcome: 'landed', result: { id: 're_late', object: 'refund', status: 'succeeded', amount: 2_000 }, error: null }, ap1.id);
    expect(late.effect).not.toBe('open');

    // 2000 cents moved on the payment: the subject total must say so, whatever approval the landing is charged to.
    expect((await b.approvals.subjectCap(PAYMENT)).movedCents).toBe(2_000);
    // And so the cap of 2000 must stop another 2000.
    const second = await b.gate.submit(refundProposal({ requestId: 'case-late-totals-2', approval: ap3.id, amount: 2_000 }));
    expect(second.outcome).toBe('REFUSED:over_cap');
  });
});
