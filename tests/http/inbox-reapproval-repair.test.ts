// A re-approval closes its inbox item (a signed RESOLVED entry naming the new request), then records the new request's
// proposal. A process that stops in between used to leave the item reading "re-approved" while nothing was ever
// proposed: the approved refund silently never happened. Each attempt is now noted, with the premises the person
// decided on, before the item closes, and cleared once the proposal is recorded; the recovery pass proposes what a
// stopped process left (repairReapprovals), on those premises, once. The tests run one after another on a rig of
// their own: the repair reads every note of its prefix.
import { describe, expect, it, vi } from 'vitest';
import { startRecovery } from '../../queues/recovery.js';
import { createInboxActions, effectIdFor, latestProposal, repairReapprovals, settledOutcome, type Actor, type PendingReapproval, type ProposeNow } from '../../src/interlock.js';
import { inboxSuite } from './inbox-items.js';

const { rig, make } = inboxSuite();
const alex: Actor = { name: 'alex', role: 'approver' };
const dana: Actor = { name: 'dana', role: 'approver' };
/** What the person saw when they re-approved: the chargeback that stopped the first send is there. */
const SEEN: PendingReapproval['premises'] = { chargebacks: ['du_opened'], refunded_by_others: 0 };

function actions(propose: ProposeNow) {
  return createInboxActions({ inbox: rig.stores.inbox, journal: rig.stores.journal, approvals: rig.stores.approvals, checkFourEyes: async () => undefined, readFacts: async () => SEEN, propose });
}

const queued: ProposeNow = (proposal) => rig.queue.propose(proposal);
const stopped: ProposeNow = () => Promise.reject(new Error('the process stopped before proposing'));
const repair = (propose: ProposeNow, graceMs = 0) => repairReapprovals({ inbox: rig.stores.inbox, journal: rig.stores.journal, propose }, { graceMs });
const pending = async () => (await rig.stores.inbox.pendingReapprovals()).map((note) => note.field);
const newEffectOf = (item: string) => effectIdFor({ requestId: `reapproval:${item}`, effect: null });

/** A stale-premise item re-approved by alex under a fresh approval, the process stopping before the proposal. */
async function stoppedReapproval(): Promise<{ item: string; pi: string; approval: string }> {
  const { item, pi } = await make.stale();
  const approval = await make.grant(pi);
  await expect(actions(stopped).reapprove(item, { approval, note: 'Not a chargeback; refund.', by: alex })).rejects.toThrow('the process stopped');
  return { item, pi, approval };
}

describe('a re-approval whose process stops between closing its item and proposing', () => {
  it('is proposed by the repair, once, under its request id and approval, on the premises its approver saw; the refund then lands', async () => {
    const { item, approval } = await stoppedReapproval();
    const closed = await rig.stores.inbox.get(item);
    expect(closed?.closure).toMatchObject({ action: 'reapprove', by: alex, reapproval: { approval, requestId: `reapproval:${item}` } });
    expect(await rig.hasEffect(newEffectOf(item))).toBe(false);
    expect(await pending()).toEqual([`${item} alex ${approval}`]);

    // A note younger than the grace is a re-approval still on its way: left alone.
    expect(await repair(queued, 60_000)).toEqual({ proposed: [], recordedBefore: [], dropped: [], unproposable: [], failed: [] });
    expect(await rig.hasEffect(newEffectOf(item))).toBe(false);

    expect(await repair(queued)).toEqual({ proposed: [item], recordedBefore: [], dropped: [], unproposable: [], failed: [] });
    expect(await pending()).toEqual([]);
    const proposal = await latestProposal(rig.stores, newEffectOf(item));
    expect(proposal).toMatchObject({ requestId: `reapproval:${item}`, approval, agent: 'alex', premises: SEEN, request: { reapproves: item, by: 'alex', note: 'Not a chargeback; refund.' } });
    expect(await repair(queued)).toEqual({ proposed: [], recordedBefore: [], dropped: [], unproposable: [], failed: [] });
    expect(await make.submitLatest(newEffectOf(item))).toBe('COMMITTED');
  });

  it('is judged on what its approver saw: facts that changed after the re-approval refuse it at the send', async () => {
    const { item, pi } = await stoppedReapproval();
    rig.target.world.set(`payment:${pi}`, { chargebacks: ['du_opened', 'du_second'], refunded_by_others: 0 });
    expect((await repair(queued)).proposed).toEqual([item]);
    expect((await latestProposal(rig.stores, newEffectOf(item)))?.premises).toEqual(SEEN);
    expect(await make.submitLatest(newEffectOf(item))).toBe('REFUSED:stale_premise');
  });

  it('the approver retrying after the stop proposes it and clears the note: the repair then finds nothing', async () => {
    const { item, approval } = await stoppedReapproval();
    const retried = await actions(queued).reapprove(item, { approval, note: 'Not a chargeback; refund.', by: alex });
    expect(retried.recorded.status).toBe('recorded');
    expect(await pending()).toEqual([]);
    expect(await repair(queued)).toEqual({ proposed: [], recordedBefore: [], dropped: [], unproposable: [], failed: [] });
  });

  // Rule: a repeat of a re-approval that stopped before proposing proposes its note (the note and premises its
  // approver decided on), as the repair would; it used to propose the repeat's own note on the facts read now.
  it('the approver retrying after the stop with another note, the facts moved since, proposes what the note holds', async () => {
    const { item, approval } = await stoppedReapproval();
    const moved = createInboxActions({ inbox: rig.stores.inbox, journal: rig.stores.journal, approvals: rig.stores.approvals, checkFourEyes: async () => undefined, readFacts: async () => ({ chargebacks: ['du_opened', 'du_second'], refunded_by_others: 700 }), propose: queued });
    const retried = await moved.reapprove(item, { approval, note: 'Refund, second try.', by: alex });
    expect(retried).toMatchObject({ recorded: { status: 'recorded' }, premises: SEEN });
    expect(await latestProposal(rig.stores, newEffectOf(item))).toMatchObject({ premises: SEEN, request: { note: 'Not a chargeback; refund.' } });
    expect(await pending()).toEqual([]);
  });

  it('a note whose proposal was recorded already (stopped before clearing it) is cleared without a second proposal', async () => {
    const { item } = await stoppedReapproval();
    const recordThenStop: ProposeNow = async (proposal) => {
      await queued(proposal);
      throw new Error('the process stopped before clearing its note');
    };
    expect((await repair(recordThenStop)).failed).toHaveLength(1);
    expect(await repair(queued)).toEqual({ proposed: [], recordedBefore: [item], dropped: [], unproposable: [], failed: [] });
    expect(await pending()).toEqual([]);
    expect((await latestProposal(rig.stores, newEffectOf(item)))?.premises).toEqual(SEEN);
  });

  it('a re-approval whose old effect landed after all is not proposed: its note is dropped and the item named', async () => {
    const { item } = await stoppedReapproval();
    // The old effect's chain as if it were not refused (a landing reported after the item closed): no outcome yet.
    const closed = await rig.stores.inbox.get(item);
    const partition = closed === null ? null : await rig.stores.journal.partitionOf(closed.effectId);
    if (closed === null || partition === null) throw new Error('the item names no recorded effect');
    const proposedOnly = (await rig.stores.journal.entries(partition, closed.effectId)).slice(0, 1);
    const payloadOf = vi.spyOn(rig.stores.journal, 'entries').mockResolvedValueOnce(proposedOnly);
    try {
      const done = await repair(queued);
      expect(done.unproposable).toEqual([{ item, reason: expect.stringContaining('not refused') as unknown }]);
    } finally {
      payloadOf.mockRestore();
    }
    expect(await pending()).toEqual([]);
    expect(await rig.hasEffect(newEffectOf(item))).toBe(false);
  });

  it('a proposal that fails in the repair keeps the note for the next pass', async () => {
    const { item } = await stoppedReapproval();
    const failed = await repair(stopped);
    expect(failed.proposed).toEqual([]);
    expect(failed.failed).toEqual([{ field: expect.stringContaining(item) as unknown, error: 'the process stopped before proposing' }]);
    expect(await pending()).toHaveLength(1);
    expect((await repair(queued)).proposed).toEqual([item]);
  });

  it('the recovery pass at a worker\'s start runs the repair', async () => {
    const { item } = await stoppedReapproval();
    const recovery = startRecovery(rig.stores, make.sender, { safetyIntervalMs: 3_600_000, reapprovals: { propose: queued, graceMs: 0 } });
    try {
      await recovery.started;
      expect(await rig.hasEffect(newEffectOf(item))).toBe(true);
      expect(await pending()).toEqual([]);
    } finally {
      await recovery.close();
    }
  });
});

describe('notes whose attempt closed nothing', () => {
  it('are dropped, proposing nothing: a process that stopped before closing, an item someone else closed, a note that is not one', async () => {
    const open = await make.stale();
    const approval = await make.grant(open.pi);
    await rig.stores.inbox.markReapproval(`${open.item} alex ${approval}`, { item: open.item, approval, by: alex, note: '', premises: SEEN, at: 0 });

    const beaten = await make.stale();
    const mine = await make.grant(beaten.pi);
    await rig.stores.inbox.markReapproval(`${beaten.item} alex ${mine}`, { item: beaten.item, approval: mine, by: alex, note: '', premises: SEEN, at: 0 });
    await actions(queued).dismiss(beaten.item, { note: 'Refund refused on review.', by: dana });

    await rig.redis.hset(rig.stores.keys.reapprovalsPending, 'written by hand', '{"item":');

    const done = await repair(queued);
    expect(done.proposed).toEqual([]);
    expect(done.failed).toEqual([]);
    expect(done.dropped.sort()).toEqual([`${beaten.item} alex ${mine}`, `${open.item} alex ${approval}`, 'written by hand'].sort());
    expect(await pending()).toEqual([]);
    expect((await rig.stores.inbox.get(open.item))?.status).toBe('open');
    for (const item of [open.item, beaten.item]) expect(await rig.hasEffect(newEffectOf(item))).toBe(false);
    expect(await settledOutcome(rig.stores, open.effectId)).toBe('REFUSED:stale_premise');
  });

  it('a re-approval refused before the item closes (beaten by someone else) leaves no note', async () => {
    const { item, pi } = await make.stale();
    await actions(queued).dismiss(item, { note: 'no', by: dana });
    await expect(actions(queued).reapprove(item, { approval: await make.grant(pi), note: '', by: alex })).rejects.toMatchObject({ code: 'inbox_item_closed' });
    expect(await pending()).toEqual([]);
  });

  it('a re-approval that completes leaves no note', async () => {
    const { item, pi } = await make.stale();
    const done = await actions(queued).reapprove(item, { approval: await make.grant(pi), note: '', by: alex });
    expect(done.recorded.status).toBe('recorded');
    expect(await pending()).toEqual([]);
  });
});
