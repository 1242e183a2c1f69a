// Rule: an exposure item shows the exposure as it stands (a second chargeback refreshes its money at stake), and a
// person's dismissal decides on the disputes the item opened with: an alert naming a chargeback that arrived after the
// item opened is new money at stake, not what they closed, so it stays open (as repairExposures leaves it) until a
// person resolves it. An alert naming only the disputes the item opened with is resolved with the dismissal.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { raiseAlert, repairExposures } from '../../src/interlock.js';
import { inboxSuite } from '../http/inbox-items.js';
import { pageSession } from '../http/page-sessions.js';
import { TOKENS, uid } from '../http/rig.js';

const { rig, make } = inboxSuite();
const session = (token: string) => pageSession(rig.app, token);

async function exposed(centsAtStake: number, disputes: string[]) {
  const pi = `pi_${uid()}`;
  const effectId = await make.proposed(pi);
  expect(await make.submitLatest(effectId)).toBe('COMMITTED');
  const raise = (cents: number, named: string[]) => raiseAlert(rig.stores, { kind: 'exposure', effectId, subject: `payment:${pi}`, centsAtStake: cents, currency: 'usd', refund: `re_${pi}`, disputes: named, sentence: `Charged back ${named.length} time(s).`, action: 'Answer the disputes.' });
  await raise(centsAtStake, disputes);
  return { effectId, item: `exposure:${effectId}`, raise };
}

async function dismiss(item: string) {
  const alex = await session(TOKENS.approver);
  return request(rig.app).post(`/ui/inbox/${item}/dismiss`).type('form').set('Cookie', alex.cookie).set('sec-fetch-site', 'same-origin').send({ csrf: alex.csrf, note: 'Answered the dispute with the refund.', token: TOKENS.approver });
}

describe('an exposure that grows while its item is open', () => {
  it('shows the money at stake now, and a dismissal leaves open the alert for the chargeback that came after the item opened', async () => {
    const first = `du_${uid()}`;
    const second = `du_${uid()}`;
    const { item, raise } = await exposed(4_000, [first]);
    const { alert } = await raise(16_000, [first, second]);
    expect(alert.resolvedAt).toBeNull();

    const page = await request(rig.app).get(`/ui/inbox/${item}`).set('Cookie', (await session(TOKENS.approver)).cookie);
    expect(/<h1>exposure: (\$[\d.]+) at stake<\/h1>/.exec(page.text)?.[1]).toBe('$160.00');
    expect((await rig.stores.inbox.get(item))?.detail).toMatchObject({ disputes: [first, second], disputesAtOpen: [first] });

    expect((await dismiss(item)).status).toBe(303);
    expect((await rig.stores.inbox.get(item))?.closure?.action).toBe('dismiss');
    expect((await rig.stores.alerts.get(alert.id))?.resolvedAt).toBeNull();
    // The repair pass reads the closed item and the open alert the same way: new money at stake, left open.
    await repairExposures(rig.stores);
    expect((await rig.stores.alerts.get(alert.id))?.resolvedAt).toBeNull();
  });

  it('resolves the alert with the dismissal when it names only the disputes the item opened with', async () => {
    const only = `du_${uid()}`;
    const { item, raise } = await exposed(4_000, [only]);
    const { alert } = await raise(4_000, [only]);
    expect((await dismiss(item)).status).toBe(303);
    expect((await rig.stores.alerts.get(alert.id))?.resolvedAt).not.toBeNull();
  });
});
