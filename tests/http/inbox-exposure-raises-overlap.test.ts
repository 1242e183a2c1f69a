// Rule: an open exposure item shows the exposure as it stands (src/interlock.ts openExposureItem: "refreshes the open
// one to say what the alert says now"). Two raises of one exposure alert that overlap (a redelivered webhook for the
// first chargeback beside the second chargeback's) must not leave the item saying the older, smaller exposure while
// the alert says the newer one: a refresh made from an alert older than the one that stands loses the newer refresh.
// Worse, a dismissal of an item that shows one chargeback must not resolve the alert of a second one the person was
// never shown (exposureDisputesDecided: "a dispute that arrived after the item opened is never taken as handled").
import { describe, expect, it } from 'vitest';
import { raiseAlert, type Stores } from '../../src/interlock.js';
import { committedForExposure, inboxSuite } from './inbox-items.js';

const { rig, make } = inboxSuite();

/** Stores whose raise writes its alert, then waits for `release()` before it goes on to the inbox item. */
function slowAfterAlert(stores: Stores): { slow: Stores; release: () => void } {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const slow: Stores = { ...stores, alerts: { ...stores.alerts, raise: async (alert) => { const raised = await stores.alerts.raise(alert); await gate; return raised; } } };
  return { slow, release };
}

describe('two overlapping raises of one exposure alert', () => {
  it('leave the item saying what the alert says', async () => {
    const { effectId, first, second, exposure: body } = await committedForExposure(make);
    await raiseAlert(rig.stores, body(4_000, [first]));

    // Raise A (the first chargeback again) writes its alert, then is slow to reach the item; raise B (the second
    // chargeback) writes after it and refreshes the item first.
    const { slow, release } = slowAfterAlert(rig.stores);
    const a = raiseAlert(slow, body(4_000, [first]));
    await new Promise((resolve) => setTimeout(resolve, 200));
    const b = await raiseAlert(rig.stores, body(16_000, [first, second]));
    expect((await rig.stores.inbox.get(`exposure:${effectId}`))?.centsAtStake).toBe(16_000);
    release();
    await a;

    const alert = await rig.stores.alerts.get(b.alert.id);
    expect(alert?.centsAtStake).toBe(16_000);
    expect(alert?.disputes).toEqual([first, second]);
    const item = await rig.stores.inbox.get(`exposure:${effectId}`);
    expect({ cents: item?.centsAtStake, disputes: item?.detail?.['disputes'] }).toEqual({ cents: alert?.centsAtStake, disputes: alert?.disputes });
  });

  it('never resolves, with a dismissal, a chargeback the dismissed item did not show', async () => {
    const { effectId, first, second, exposure: body } = await committedForExposure(make);
    // The first chargeback's raise writes its alert and is slow to reach the inbox; the second's writes after it and
    // opens the item; then the first's refresh lands.
    const { slow, release } = slowAfterAlert(rig.stores);
    const a = raiseAlert(slow, body(4_000, [first]));
    await new Promise((resolve) => setTimeout(resolve, 200));
    const b = await raiseAlert(rig.stores, body(16_000, [first, second]));
    release();
    await a;
    const id = `exposure:${effectId}`;
    const shown = await rig.stores.inbox.get(id);
    const shownDisputes = shown?.detail?.['disputes'] as string[];

    const by = { name: 'dana', role: 'approver' as const };
    await rig.stores.inbox.act(id, { action: 'dismiss', by, note: 'answered the chargeback' });
    const alert = await rig.stores.alerts.get(b.alert.id);
    // The alert may be resolved only if the person was shown every dispute it names.
    const resolvedUnseen = alert?.resolvedAt !== null && (alert?.disputes ?? []).some((dispute) => !shownDisputes.includes(dispute));
    expect({ shownDisputes, resolvedUnseen }).toEqual({ shownDisputes: [first, second], resolvedUnseen: false });
  });
});
