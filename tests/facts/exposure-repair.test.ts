// An exposure's alert and its inbox item are one matter, closed in two steps (the item's signed RESOLVED entry lives
// with the effect, the alert in the index's slot). A process that dies between the two leaves one half open; the
// exposure repair (repairExposures, run with every facts reconciliation pass) closes the other half, once, naming who
// closed the first. Each crash is simulated by doing only the first step.
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { createFacts, journalOf, raiseAlert, repairExposures, resolveAlert, type Entry, type Stores } from '../../src/interlock.js';
import { createInbox } from '../../src/redis/inbox.js';
import { startReconciler } from '../../queues/facts.js';
import { inboxSuite } from '../http/inbox-items.js';
import { bearer, TOKENS, uid } from '../http/rig.js';

const { rig, make } = inboxSuite();
let stores: Stores;

beforeAll(() => {
  stores = rig.stores;
});

/** A committed $20 refund whose charge was then charged back: its exposure alert raised and its item opened. */
async function exposure() {
  const pi = `pi_${uid()}`;
  const effectId = await make.proposed(pi);
  expect(await make.submitLatest(effectId)).toBe('COMMITTED');
  const { alert } = await raiseAlert(stores, { kind: 'exposure', effectId, subject: `payment:${pi}`, centsAtStake: 4_000, refund: `re_${uid()}`, disputes: [`du_${uid()}`], sentence: 'Refunded and charged back.', action: 'Answer the dispute.' });
  expect(await stores.inbox.get(`exposure:${effectId}`)).toMatchObject({ status: 'open' });
  return { effectId, item: `exposure:${effectId}`, alert: alert.id };
}

async function dismissals(effectId: string): Promise<Entry[]> {
  const answer = await request(rig.app).get(`/v1/effects/${effectId}/receipt`).set(bearer(TOKENS.auditor));
  expect(answer.status).toBe(200);
  return (answer.body as { entries: Entry[] }).entries.filter((entry) => entry.kind === 'RESOLVED');
}

/** The inbox's act with the process dying right after the item closed in the index, before it resolved the alert. */
const actDyingBeforeTheAlert = () => createInbox({ redis: rig.redis, keys: stores.keys, journal: journalOf(stores), alerts: { resolve: async () => null } });

describe('the exposure repair', () => {
  it('goes on past a pair it cannot close now, repairing the others, and names the one it could not', async () => {
    const stuck = await exposure();
    const other = await exposure();
    for (const pair of [stuck, other]) expect(await stores.alerts.resolve(pair.alert, 'lee (cli)')).toMatchObject({ resolved: true });
    // The stuck item's close fails with something the repair does not expect (its effect's chain cannot be read now).
    const act = stores.inbox.act;
    stores.inbox.act = (id, request) => (id === stuck.item ? Promise.reject(new Error('the chain cannot be read now')) : act(id, request));
    try {
      const repaired = await repairExposures(stores);
      expect(repaired.closedItems).toContain(other.item);
      expect(repaired.failed).toContain(stuck.item);
      expect(await stores.inbox.get(other.item)).toMatchObject({ status: 'closed' });
      expect(await stores.inbox.get(stuck.item)).toMatchObject({ status: 'open' });
    } finally {
      stores.inbox.act = act;
    }
    // The next pass closes it.
    expect((await repairExposures(stores)).closedItems).toContain(stuck.item);
  });

  it('dismisses an open exposure item whose alert a person resolved (the resolver died before closing it), naming that person, once', async () => {
    const { effectId, item, alert } = await exposure();
    // resolveAlert's first step only.
    expect(await stores.alerts.resolve(alert, 'lee (cli)')).toMatchObject({ resolved: true });
    expect(await stores.inbox.get(item)).toMatchObject({ status: 'open' });

    const repaired = await repairExposures(stores);
    expect(repaired.closedItems).toContain(item);
    expect(await stores.inbox.get(item)).toMatchObject({ status: 'closed', closure: { action: 'dismiss', by: { name: 'lee', role: 'cli' } } });
    expect(await dismissals(effectId)).toEqual([expect.objectContaining({ item, action: 'dismiss', by: { name: 'lee', role: 'cli' }, note: expect.stringContaining(`alert ${alert}, which lee (cli) resolved`) })]);
    // Again: nothing is left to close, and nothing more is written.
    expect((await repairExposures(stores)).closedItems).not.toContain(item);
    expect(await dismissals(effectId)).toHaveLength(1);
  });

  it('dismisses an open exposure item whose alert the facts resolved, naming the facts', async () => {
    const { effectId, item, alert } = await exposure();
    // The facts' settle, first step only (createFacts' alerts.settle).
    expect(await stores.alerts.settle(effectId, [])).toEqual([expect.objectContaining({ id: alert })]);
    expect((await repairExposures(stores)).closedItems).toContain(item);
    expect(await dismissals(effectId)).toEqual([expect.objectContaining({ item, by: { name: 'facts', role: 'worker' } })]);
  });

  it('resolves an open exposure alert whose item a person closed (the actor died before resolving it), naming that person, once', async () => {
    const { item, alert } = await exposure();
    await actDyingBeforeTheAlert().act(item, { action: 'dismiss', by: { name: 'kim', role: 'approver' }, note: 'Dispute answered.' });
    expect(await stores.inbox.get(item)).toMatchObject({ status: 'closed' });
    expect(await stores.alerts.get(alert)).toMatchObject({ resolvedAt: null });

    expect((await repairExposures(stores)).resolvedAlerts).toContain(alert);
    expect(await stores.alerts.get(alert)).toMatchObject({ resolvedBy: 'kim (approver)', resolvedAt: expect.any(Number) });
    expect((await repairExposures(stores)).resolvedAlerts).not.toContain(alert);
  });

  it('resolves the alert of an item whose RESOLVED entry was appended but whose index entry was not (the actor died in between)', async () => {
    const { effectId, item, alert } = await exposure();
    const partition = await stores.journal.partitionOf(effectId);
    if (partition === null) throw new Error(`effect ${effectId} is recorded`);
    const by = { name: 'ana', role: 'approver' };
    const acted = await journalOf(stores).act(partition, effectId, { kind: 'RESOLVED', item, action: 'dismiss', by, note: 'Answered.', resolution: null, reapproval: null }, JSON.stringify({ action: 'dismiss', by }), '');
    expect(acted.status).toBe('OK');
    expect(await rig.redis.zscore(stores.keys.inboxOpen, item)).not.toBeNull();

    const repaired = await repairExposures(stores);
    expect(repaired.closedItems).not.toContain(item);
    expect(repaired.resolvedAlerts).toContain(alert);
    expect(await stores.alerts.get(alert)).toMatchObject({ resolvedBy: 'ana (approver)' });
    expect(await dismissals(effectId)).toHaveLength(1);
  });

  it('closes each half exactly once when several workers repair at once', async () => {
    const resolvedFirst = [await exposure(), await exposure(), await exposure()];
    const closedFirst = [await exposure(), await exposure(), await exposure()];
    for (const { alert } of resolvedFirst) await stores.alerts.resolve(alert, 'sam (approver)');
    for (const { item } of closedFirst) await actDyingBeforeTheAlert().act(item, { action: 'dismiss', by: { name: 'joe', role: 'approver' }, note: 'Answered.' });

    const passes = await Promise.all([repairExposures(stores), repairExposures(stores), repairExposures(stores)]);
    const closedItems = passes.flatMap((pass) => pass.closedItems).filter((id) => resolvedFirst.some((made) => made.item === id));
    const resolvedAlerts = passes.flatMap((pass) => pass.resolvedAlerts).filter((id) => closedFirst.some((made) => made.alert === id));
    expect(closedItems.sort()).toEqual(resolvedFirst.map((made) => made.item).sort());
    expect(resolvedAlerts.sort()).toEqual(closedFirst.map((made) => made.alert).sort());
    for (const { effectId } of resolvedFirst) expect(await dismissals(effectId)).toEqual([expect.objectContaining({ by: { name: 'sam', role: 'approver' } })]);
    for (const { alert } of closedFirst) expect(await stores.alerts.get(alert)).toMatchObject({ resolvedBy: 'joe (approver)' });
  });

  it('runs with every facts reconciliation pass', async () => {
    const { item, alert } = await exposure();
    await stores.alerts.resolve(alert, 'eve (approver)');
    const reconciler = startReconciler(stores, createFacts(stores, null), { intervalMs: 3_600_000, horizonMs: 60_000, atStart: false });
    try {
      await reconciler.pass();
    } finally {
      await reconciler.close();
    }
    expect(await stores.inbox.get(item)).toMatchObject({ status: 'closed', closure: { by: { name: 'eve', role: 'approver' } } });
  });
});

describe('the exposure repair and an alert the facts opened again', () => {
  it('leaves open an exposure alert the facts re-opened after they resolved it and closed its item', async () => {
    const { effectId, item, alert } = await exposure();
    // The facts undo the exposure: the alert is resolved naming them, and its item dismissed naming them.
    expect(await stores.alerts.settle(effectId, [])).toEqual([expect.objectContaining({ id: alert })]);
    expect((await repairExposures(stores)).closedItems).toContain(item);
    // Later facts call for it again (a new dispute): the alert opens again; its item stays closed (one action each).
    const again = await raiseAlert(stores, { kind: 'exposure', effectId, subject: 'payment:pi_again', centsAtStake: 4_000, refund: null, disputes: [`du_${uid()}`], sentence: 'Charged back again.', action: 'Answer the dispute.' });
    expect(again.alert.resolvedAt).toBeNull();

    expect((await repairExposures(stores)).resolvedAlerts).not.toContain(alert);
    expect(await stores.alerts.get(alert)).toMatchObject({ resolvedAt: null, resolvedBy: null });
  });

  it('leaves open an exposure alert a second chargeback re-opened after a person closed its item on the first', async () => {
    const { effectId, item, alert } = await exposure();
    const handled = ((await stores.inbox.get(item))?.detail?.disputes ?? []) as string[];
    // The person answers the first dispute and resolves the alert; its item is dismissed with it.
    expect(await resolveAlert(stores, alert, { name: 'alice', role: 'cli' })).toMatchObject({ resolved: true });
    expect(await stores.inbox.get(item)).toMatchObject({ status: 'closed' });
    // A second chargeback: the alert opens again, naming a dispute the person never saw.
    const again = await raiseAlert(stores, { kind: 'exposure', effectId, subject: 'payment:pi_again', centsAtStake: 16_000, refund: null, disputes: [...handled, `du_${uid()}`], sentence: 'Charged back again.', action: 'Answer the dispute.' });
    expect(again.alert.resolvedAt).toBeNull();

    // The repair sees an open alert beside an item a person closed, but not on these disputes: new money at stake.
    expect((await repairExposures(stores)).resolvedAlerts).not.toContain(alert);
    expect(await stores.alerts.get(alert)).toMatchObject({ resolvedAt: null, resolvedBy: null });
  });
});
