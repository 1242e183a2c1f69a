// Rule: a re-approval stands on the facts the item showed the person (README, The escalation inbox): when the facts
// read at the click differ from them, in any premise the item presents (a fact it lists as changed, or one it shows as
// decided on), it is refused 409 facts_changed naming what changed since, nothing is recorded, and the item then shows
// the facts as they stand, so reading it again and re-approving works. The page says the same. It used to record the
// facts of the click as the new request's premises: a second chargeback nobody was shown went out approved.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { reapprovalRequestId, effectIdFor } from '../../src/interlock.js';
import { inboxSuite } from './inbox-items.js';
import { factsShownOnPage } from './page-facts-shown.js';
import { pageSession } from './page-sessions.js';
import { bearer, TOKENS } from './rig.js';

const { rig, make } = inboxSuite();

/** Whether anything was recorded for the item's re-approval (its request's effect has a chain). */
async function reapprovalRecorded(item: string): Promise<boolean> {
  return (await rig.stores.journal.partitionOf(effectIdFor({ requestId: reapprovalRequestId(item), effect: null }))) !== null;
}

describe('a re-approval whose facts changed since the item showed them', () => {
  it('is refused naming the change, records nothing, and the item then shows the new facts to be re-approved on', async () => {
    const { pi, item } = await make.stale();
    const shown = await request(rig.app).get(`/v1/inbox/${item}`).set(bearer(TOKENS.approver));
    expect(shown.body.changes).toEqual([{ field: 'chargebacks', was: [], now: ['du_opened'] }]);
    // A second chargeback arrives while the approver reads the item.
    rig.target.world.set(`payment:${pi}`, { chargebacks: ['du_opened', 'du_second'], refunded_by_others: 0 });
    const approval = await make.grant(pi);
    const refused = await request(rig.app).post(`/v1/inbox/${item}/reapprove`).set(bearer(TOKENS.approver)).send({ approval, note: 'du_opened is an inquiry; refund anyway.' });
    expect({ status: refused.status, code: refused.body.error?.code }).toEqual({ status: 409, code: 'facts_changed' });
    expect(refused.body.error.message).toContain('chargebacks: shown ["du_opened"], now ["du_opened","du_second"]');
    expect(await reapprovalRecorded(item)).toBe(false);

    const again = await request(rig.app).get(`/v1/inbox/${item}`).set(bearer(TOKENS.approver));
    expect({ status: again.body.status, actions: again.body.actions, changes: again.body.changes }).toEqual({ status: 'open', actions: ['reapprove', 'dismiss'], changes: [{ field: 'chargebacks', was: [], now: ['du_opened', 'du_second'] }] });
    const accepted = await request(rig.app).post(`/v1/inbox/${item}/reapprove`).set(bearer(TOKENS.approver)).send({ approval, note: 'Both are inquiries; refund anyway.' });
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(202);
    expect(accepted.body.premises).toEqual({ chargebacks: ['du_opened', 'du_second'], refunded_by_others: 0 });
  });

  it('is refused when a fact the item showed as unchanged moved, and from the page too', async () => {
    const { pi, item } = await make.stale();
    const dana = await pageSession(rig.app, TOKENS.danaApprover);
    const shown = await factsShownOnPage(rig.app, item, dana.cookie);
    // Not among the item's changes: it showed refunded_by_others as decided on, 0.
    rig.target.world.set(`payment:${pi}`, { chargebacks: ['du_opened'], refunded_by_others: 500 });
    const approval = await make.grant(pi);
    const page = await request(rig.app).post(`/ui/inbox/${item}/reapprove`).type('form').set('Cookie', dana.cookie).set('sec-fetch-site', 'same-origin').send({ csrf: dana.csrf, approval, note: 'refund anyway', token: TOKENS.danaApprover, facts_shown: shown });
    expect({ status: page.status, location: page.headers.location ?? null }).toEqual({ status: 409, location: null });
    expect(page.text).toContain('refunded_by_others: shown 0, now 500');
    // The page drawn with the refusal shows the fact as it stands.
    expect(page.text).toContain('<td>refunded_by_others</td><td><code>0</code></td><td><code>500</code></td>');
    expect(await reapprovalRecorded(item)).toBe(false);
  });
});
