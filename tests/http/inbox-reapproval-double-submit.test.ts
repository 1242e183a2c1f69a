// Rule: a re-approval is decided once: a double submit (two tabs) records one proposal, and the recovery pass never
// proposes the losing copy's note (repairReapprovals proposes only while the request holds none). The copy that lost
// the race to close the item left its note, and the repair recorded a second PROPOSED, premises nobody was shown.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInboxActions, effectIdFor, latestProposal, repairReapprovals, type Actor, type ProposeNow } from '../../src/interlock.js';
import { createItemMaker, type ItemMaker } from './inbox-items.js';
import { startRig, type Rig } from './rig.js';

let rig: Rig;
let make: ItemMaker;
beforeAll(async () => {
  rig = await startRig({ config: { keyPrefix: `rv-stop-diff-${randomBytes(4).toString('hex')}` } });
  make = await createItemMaker(rig);
});
afterAll(async () => {
  await make?.close();
  await rig?.close();
});

const alex: Actor = { name: 'alex', role: 'approver' };

describe('a double-submitted re-approval (two tabs, one click each, same person and approval)', () => {
  it('leaves no note behind that the repair later proposes as a second decision', async () => {
    const { item, pi } = await make.stale();
    const approval = await make.grant(pi);
    const newEffect = effectIdFor({ requestId: `reapproval:${item}`, effect: null });
    const queued: ProposeNow = (proposal, how) => rig.queue.propose(proposal, how);
    const seenByA = { chargebacks: ['du_opened'], refunded_by_others: 0 };
    const seenByB = { chargebacks: ['du_opened'], refunded_by_others: 500 };

    let aDone!: () => void;
    const aFinished = new Promise<void>((resolve) => (aDone = resolve));
    const actionsA = createInboxActions({ inbox: rig.stores.inbox, journal: rig.stores.journal, approvals: rig.stores.approvals, checkFourEyes: async () => undefined, readFacts: async () => seenByA, propose: queued });
    // B's Stripe read is slower: it answers after A finished (and meanwhile someone else refunded 500 at Stripe).
    const actionsB = createInboxActions({ inbox: rig.stores.inbox, journal: rig.stores.journal, approvals: rig.stores.approvals, checkFourEyes: async () => undefined, readFacts: async () => { await aFinished; return seenByB; }, propose: queued });

    const b = actionsB.reapprove(item, { approval, note: 'Refund it.', by: alex });
    const a = await actionsA.reapprove(item, { approval, note: 'Refund it.', by: alex });
    expect(a.recorded.status).toBe('recorded');
    rig.target.world.set(`payment:${pi}`, { chargebacks: ['du_opened'], refunded_by_others: 500 });
    aDone();
    const bAnswer = await b;
    // B is answered as a repeat: nothing new, A's premises.
    expect(bAnswer.recorded.status).toBe('exists');
    expect(bAnswer.premises).toEqual(seenByA);

    // The re-approval is judged at the gate: the 500 refunded since A's read refuses it.
    expect(await make.submitLatest(newEffect)).toBe('REFUSED:stale_premise');

    // Nobody acts again. The recovery pass's repair runs (past its grace).
    const notes = (await rig.stores.inbox.pendingReapprovals()).map((note) => note.field);
    const repaired = await repairReapprovals({ inbox: rig.stores.inbox, journal: rig.stores.journal, propose: (proposal) => rig.queue.propose(proposal) }, { graceMs: 0 });
    const latest = await latestProposal(rig.stores, newEffect);
    const partition = await rig.stores.journal.partitionOf(newEffect);
    const proposals = (await rig.stores.journal.entries(partition ?? '', newEffect)).filter((entry) => entry.kind === 'PROPOSED').length;
    // Expected: B's attempt leaves no note, the repair proposes nothing, the re-approval's request holds A's proposal alone.
    // Actual: B's note (premises read after A's, which B was never told about) is left behind; the repair records it as a
    // second PROPOSED under the re-approval's request and queues it, to be judged again with nobody acting.
    expect({ notes, proposed: repaired.proposed, proposals, premises: latest?.premises }).toEqual({ notes: [], proposed: [], proposals: 1, premises: seenByA });
  });
});
