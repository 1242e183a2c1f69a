// Rule: the proposal made for a re-approval carries the note and the facts of the click that closed the item (the note
// the signed RESOLVED entry records); a click that lost the close never supplies them, neither when it proposes for the
// item itself nor through a note it leaves for the recovery pass. Both clicks are the same person's under the same
// approval (two tabs, two processes sharing one Redis): they used to be noted under one field, the second writing over
// the first, so the losing tab proposed its own note and facts. The steps are interleaved by promises, not by timing.
import { describe, expect, it } from 'vitest';
import { createInboxActions, effectIdFor, latestProposal, repairReapprovals, type Actor, type Inbox, type PendingReapproval, type ProposeNow } from '../../src/interlock.js';
import { inboxSuite } from '../http/inbox-items.js';

const { rig, make } = inboxSuite();
const alex: Actor = { name: 'alex', role: 'approver' };
// Both tabs read the facts the item shows on every premise it was decided on (chargebacks, refunded_by_others: a
// re-approval on other facts is refused facts_changed before it notes anything), and differ in a fact read beside them
// that the decision did not stand on (refundable, in both more than the refund's 2000, which a re-approval is refused
// over), which the proposal records as read: it tells whose facts were proposed.
const seenByA: PendingReapproval['premises'] = { chargebacks: ['du_opened'], refunded_by_others: 0, refundable: 3_000 };
const seenByB: PendingReapproval['premises'] = { chargebacks: ['du_opened'], refunded_by_others: 0, refundable: 2_500 };
const NOTE_A = 'first tab: customer confirmed by phone';
const NOTE_B = 'second tab';

function signal(): { wait: Promise<void>; give: () => void } {
  let give = () => undefined as void;
  const wait = new Promise<void>((resolve) => (give = resolve));
  return { wait, give };
}

async function proposalsOf(effectId: string): Promise<number> {
  const { journal } = rig.stores;
  const partition = await journal.partitionOf(effectId);
  return partition === null ? 0 : (await journal.entries(partition, effectId)).filter((entry) => entry.kind === 'PROPOSED').length;
}

/**
 * Tab A notes its attempt, tab B notes its own after it, A closes the item and pauses (or stops) before proposing, B
 * loses the close and takes the repeat path. `a.stops`/`b.stops`: that tab's process stops where it would propose.
 * `a.stopsBeforeMove`: A's process stops once it closed the item, before it writes any other note.
 */
async function twoTabs(how: { aStops?: boolean; aStopsBeforeMove?: boolean; bStops?: boolean }) {
  const { item, pi } = await make.stale();
  const approval = await make.grant(pi);
  const real = rig.stores.inbox;
  const aNoted = signal();
  const bNoted = signal();
  const aClosed = signal();
  const bDone = signal();
  const stopped: ProposeNow = () => Promise.reject(new Error('the process stopped before proposing'));
  const queued: ProposeNow = (proposal, options) => rig.queue.propose(proposal, options);

  let aNotes = 0;
  const inboxA: Inbox = {
    ...real,
    markReapproval: async (field, pending) => {
      aNotes += 1;
      if (aNotes > 1 && how.aStopsBeforeMove === true) throw new Error('the process stopped after closing the item');
      await real.markReapproval(field, pending);
      aNoted.give();
    },
    act: async (id, request) => {
      await bNoted.wait;
      try {
        return await real.act(id, request);
      } finally {
        aClosed.give();
      }
    },
  };
  const inboxB: Inbox = {
    ...real,
    markReapproval: async (field, pending) => {
      await real.markReapproval(field, pending);
      bNoted.give();
    },
    act: async (id, request) => {
      await aClosed.wait;
      return real.act(id, request);
    },
  };
  const actionsA = createInboxActions({
    inbox: inboxA,
    journal: rig.stores.journal,
    approvals: rig.stores.approvals,
    checkFourEyes: async () => undefined,
    readFacts: async () => seenByA,
    // A pauses before proposing until B is done (or its process stopped there).
    propose: async (proposal, options) => {
      await bDone.wait;
      return (how.aStops === true ? stopped : queued)(proposal, options);
    },
  });
  const actionsB = createInboxActions({
    inbox: inboxB,
    journal: rig.stores.journal,
    approvals: rig.stores.approvals,
    checkFourEyes: async () => undefined,
    readFacts: async () => {
      await aNoted.wait;
      return seenByB;
    },
    propose: how.bStops === true ? stopped : queued,
  });

  const a = actionsA.reapprove(item, { approval, note: NOTE_A, by: alex });
  const b = actionsB.reapprove(item, { approval, note: NOTE_B, by: alex }).finally(() => bDone.give());
  const [answerA, answerB] = await Promise.allSettled([a, b]);
  return { item, answerA, answerB, newEffect: effectIdFor({ requestId: `reapproval:${item}`, effect: null }) };
}

describe('the same person re-approves one item from two tabs at once, the tab that closed it pausing before proposing', () => {
  it('the losing tab proposes the closing tab\'s note and facts, once', async () => {
    const { item, answerA, answerB, newEffect } = await twoTabs({});
    expect(answerA.status, String(answerA.status === 'rejected' ? answerA.reason : '')).toBe('fulfilled');
    expect(answerB.status, String(answerB.status === 'rejected' ? answerB.reason : '')).toBe('fulfilled');
    const closure = (await rig.stores.inbox.get(item))?.closure;
    expect(closure?.note).toBe(NOTE_A);
    expect(await proposalsOf(newEffect)).toBe(1);
    expect(await latestProposal(rig.stores, newEffect)).toMatchObject({ premises: seenByA, request: { note: NOTE_A } });
    if (answerA.status === 'fulfilled' && answerB.status === 'fulfilled') {
      expect([answerA.value.recorded.status, answerB.value.recorded.status]).toEqual(['exists', 'recorded']);
      expect([answerA.value.premises, answerB.value.premises]).toEqual([seenByA, seenByA]);
    }
    const notes = await rig.stores.inbox.pendingReapprovals();
    expect(notes.filter(({ pending }) => pending?.item === item)).toEqual([]);
  });

  it('both processes stopping before they proposed, the recovery pass proposes the closing tab\'s note and facts, not the other\'s', async () => {
    const { item, answerA, answerB, newEffect } = await twoTabs({ aStops: true, bStops: true });
    expect([answerA.status, answerB.status]).toEqual(['rejected', 'rejected']);
    expect(await proposalsOf(newEffect)).toBe(0);
    const repaired = await repairReapprovals({ inbox: rig.stores.inbox, journal: rig.stores.journal, propose: (proposal) => rig.queue.propose(proposal) }, { graceMs: 0 });
    expect(repaired.proposed).toEqual([item]);
    expect(await proposalsOf(newEffect)).toBe(1);
    expect(await latestProposal(rig.stores, newEffect)).toMatchObject({ premises: seenByA, request: { note: NOTE_A } });
    expect((await rig.stores.inbox.pendingReapprovals()).filter(({ pending }) => pending?.item === item)).toEqual([]);
  });

  it('the closing tab\'s process stopping right after it closed the item, the losing tab and then the recovery pass still propose its note', async () => {
    const { item, answerA, answerB, newEffect } = await twoTabs({ aStopsBeforeMove: true, bStops: true });
    expect([answerA.status, answerB.status]).toEqual(['rejected', 'rejected']);
    const repaired = await repairReapprovals({ inbox: rig.stores.inbox, journal: rig.stores.journal, propose: (proposal) => rig.queue.propose(proposal) }, { graceMs: 0 });
    expect(repaired.proposed).toEqual([item]);
    expect(await latestProposal(rig.stores, newEffect)).toMatchObject({ premises: seenByA, request: { note: NOTE_A } });
    expect((await rig.stores.inbox.pendingReapprovals()).filter(({ pending }) => pending?.item === item)).toEqual([]);
  });
});
