// Rule: a re-approval whose closing step ran but whose answer was lost (a Redis command that timed out after it ran,
// close-inbox-3 failing after act-3) still gets its proposal: the item reads re-approved in the signed chain and the old
// request is blocked for good, so the re-approved payload is proposed at once, and its note is never dropped while the
// item may yet close this way. Only an item closed by someone else, or an answer act() gave itself, clears the note.
import { describe, expect, it } from 'vitest';
import { createInboxActions, effectIdFor, InterlockError, repairReapprovals, type Actor, type Inbox, type PendingReapproval, type ProposeNow } from '../../src/interlock.js';
import { inboxSuite } from './inbox-items.js';

const { rig, make } = inboxSuite();
const alex: Actor = { name: 'alex', role: 'approver' };
const SEEN: PendingReapproval['premises'] = { chargebacks: ['du_opened'], refunded_by_others: 0 };

function actionsOver(act: Inbox['act']) {
  const lossy: Inbox = { ...rig.stores.inbox, act };
  const queued: ProposeNow = (proposal) => rig.queue.propose(proposal);
  return createInboxActions({ inbox: lossy, journal: rig.stores.journal, approvals: rig.stores.approvals, checkFourEyes: async () => undefined, readFacts: async () => SEEN, propose: queued });
}

async function notesOf(item: string): Promise<string[]> {
  return (await rig.stores.inbox.pendingReapprovals()).filter(({ pending }) => pending?.item === item).map(({ field }) => field);
}

describe('a re-approval whose closing answer was lost', () => {
  it('is proposed at once when the item reads closed by this very re-approval, and its note is cleared', async () => {
    const { item, pi } = await make.stale();
    const approval = await make.grant(pi);
    // act() runs to its end in Redis; its caller hears an error (a command timeout, a reset connection).
    const actions = actionsOver(async (id, request) => {
      await rig.stores.inbox.act(id, request);
      throw new Error('Command timed out');
    });
    const answer = await actions.reapprove(item, { approval, note: 'Not a chargeback; refund.', by: alex });
    const newEffect = effectIdFor({ requestId: `reapproval:${item}`, effect: null });
    expect({ closure: answer.item.closure?.action, recorded: answer.recorded.status, effect: answer.recorded.effectId }).toEqual({ closure: 'reapprove', recorded: 'recorded', effect: newEffect });
    expect(await rig.hasEffect(newEffect)).toBe(true);
    expect(await notesOf(item)).toEqual([]);
  });

  it('keeps the note when the item still reads open after an error of unknown outcome; the repair drops it past its grace', async () => {
    const { item, pi } = await make.stale();
    const approval = await make.grant(pi);
    const actions = actionsOver(async () => {
      throw new InterlockError('redis_unavailable', 'Redis did not answer within 2000 ms');
    });
    await expect(actions.reapprove(item, { approval, note: 'refund', by: alex })).rejects.toThrow('did not answer');
    expect(await notesOf(item)).toHaveLength(1);
    const repair = await repairReapprovals({ inbox: rig.stores.inbox, journal: rig.stores.journal, propose: (proposal) => rig.queue.propose(proposal) }, { graceMs: 0 });
    expect(repair.dropped.some((field) => field.startsWith(`${item} `))).toBe(true);
    expect((await rig.stores.inbox.get(item))?.status).toBe('open');
  });

  it('clears the note when act() itself refused: nothing was closed by this attempt', async () => {
    const { item, pi } = await make.stale();
    const approval = await make.grant(pi);
    const actions = actionsOver(async () => {
      throw new InterlockError('effect_in_flight', 'being sent right now');
    });
    await expect(actions.reapprove(item, { approval, note: 'refund', by: alex })).rejects.toThrow('being sent right now');
    expect(await notesOf(item)).toEqual([]);
  });
});
