// Rule: an item whose chain already holds an action reads as closed everywhere (README, The escalation inbox): the open
// list (GET /v1/inbox, the /ui/inbox page) never shows as open an item whose own page says a person closed it, as when
// the process that appended the RESOLVED entry (act-3) stopped before it closed the index (close-inbox-3). The list
// closes such an item from the chain, so the closed list shows it too.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { journalOf } from '../../src/interlock.js';
import { inboxSuite } from './inbox-items.js';
import { pageSession } from './page-sessions.js';
import { bearer, TOKENS } from './rig.js';

const { rig, make } = inboxSuite();

describe('an item acted on in the chain, its index not yet closed', () => {
  it('is listed as closed, as its own page shows it, and open items beside it still fill the page', async () => {
    const still = await make.stale();
    // Opened after the other on the same payment: the newer, so listed first.
    const { effectId, item } = await make.staleOn(still.pi);
    const partition = await rig.stores.journal.partitionOf(effectId);
    if (partition === null) throw new Error('no partition');
    // The first half of inbox.act: the signed entry, and the process stops before close-inbox-3.
    const by = { name: 'alex', role: 'approver' };
    const reply = await journalOf(rig.stores).act(partition, effectId, { kind: 'RESOLVED', item, action: 'dismiss', by, note: 'handled by phone', resolution: null, reapproval: null }, JSON.stringify({ action: 'dismiss', by }), '');
    expect(reply.status).toBe('OK');

    const listed = await request(rig.app).get('/v1/inbox').set(bearer(TOKENS.auditor));
    const ids = (listed.body.data as { id: string; status: string }[]).map((entry) => entry.id);
    const page = await request(rig.app).get('/ui/inbox').set('Cookie', (await pageSession(rig.app, TOKENS.approver)).cookie);
    expect(page.status).toBe(200);
    expect({ listedOpen: ids.includes(item), onOpenPage: page.text.includes(`href="/ui/inbox/${item}"`), otherListed: ids.includes(still.item) }).toEqual({ listedOpen: false, onOpenPage: false, otherListed: true });
    // A page of one skips the acted item (the newest on the payment) and brings the next open one.
    const one = await rig.stores.inbox.list({ status: 'open', subject: `payment:${still.pi}` }, 1);
    expect(one.data.map((entry) => entry.id)).toEqual([still.item]);
    const closed = await rig.stores.inbox.list({ status: 'closed', effect: effectId }, 10);
    expect(closed.data.map((entry) => ({ id: entry.id, by: entry.closure?.by.name }))).toEqual([{ id: item, by: 'alex' }]);
  });
});
