// Rule: a closed exposure item keeps what the person acted on (refresh-inbox-2.lua: "A closed item is left as it was:
// it says what the person acted on"), and an item whose chain holds an action is closed "whatever the index says"
// (src/redis/inbox.ts header). A refresh that lands after the person's dismissal was appended (act-3) but before the
// index closed the item (close-inbox-3) must not rewrite what the closed item says.
import { describe, expect, it } from 'vitest';
import { journalOf, raiseAlert, type Stores } from '../../src/interlock.js';
import { committedForExposure, inboxSuite } from './inbox-items.js';

const { rig, make } = inboxSuite();

describe('an exposure refreshed while its dismissal is being recorded', () => {
  it('keeps, closed, the money at stake the person dismissed', async () => {
    const { effectId, first, second, exposure: body } = await committedForExposure(make);
    await raiseAlert(rig.stores, body(4_000, [first]));
    const id = `exposure:${effectId}`;
    expect((await rig.stores.inbox.get(id))?.centsAtStake).toBe(4_000);

    // The person's dismissal: act-3 appends it to the chain just after the raise's open() read the item as open, and
    // just before its refresh writes; close-inbox-3 comes after.
    const by = { name: 'dana', role: 'approver' as const };
    const dismissNow = async () => {
      const partition = await rig.stores.journal.partitionOf(effectId);
      const reply = await journalOf(rig.stores).act(partition ?? '', effectId, { kind: 'RESOLVED', item: id, action: 'dismiss', by, note: 'answered the chargeback', resolution: null, reapproval: null }, JSON.stringify({ action: 'dismiss', by }), '');
      expect(reply.status).toBe('OK');
    };
    const racing: Stores = { ...rig.stores, inbox: { ...rig.stores.inbox, refresh: async (...args: Parameters<Stores['inbox']['refresh']>) => { await dismissNow(); return rig.stores.inbox.refresh(...args); } } };
    await raiseAlert(racing, body(16_000, [first, second]));

    const item = await rig.stores.inbox.get(id);
    expect(item?.closure?.action).toBe('dismiss');
    expect({ cents: item?.centsAtStake, disputes: item?.detail?.['disputes'] }).toEqual({ cents: 4_000, disputes: [first] });
  });
});
