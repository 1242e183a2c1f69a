// End to end with the official Stripe CLI (issue 10 §6): the sandbox stands in for Stripe, the genuine `stripe
// listen` from the npm package holds the session and forwards to the service's webhook route, and the facts worker
// appends what Stripe did after the send. The seeds' two inquiry cases:
// - the inquiry escalates within the refund-vs-chargeback window: Stripe fails the refund, and the receipt says the
//   money did not go back (`not_returned`, `charge_for_pending_refund_disputed`) although the send happened;
// - the inquiry escalates after the window: the refund stands, the chargeback takes the payment too, and the
//   receipt shows the exposure ($20 + $100) with an alert saying what to do.
// And what `stripe trigger charge.dispute.created` makes, a payment the gate never touched: verified, answered 200,
// and dropped: nothing appended, no alert, no error logged.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FACT_EVENTS } from '../../src/interlock.js';
import { apiBase, cliEnvironment, runStripe, startListen, tempConfigDir, type Listener, type TempDir } from '../../sandbox/tests/stripe-cli-driver.js';
import { disputeOf, pay, SANDBOX_KEY, startFactsRig, type FactsRig } from './facts-rig.js';

let rig: FactsRig;
let listener: Listener;
let configDir: TempDir;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  // No forwarding by the sandbox itself: every event reaches the route through the CLI's websocket.
  rig = await startFactsRig({ forward: false });
  configDir = tempConfigDir();
  env = cliEnvironment(configDir.path, { STRIPE_API_KEY: SANDBOX_KEY });
  listener = startListen(['--api-base', apiBase(rig.sandbox.port), '--skip-update', '--events', FACT_EVENTS.join(','), '--forward-to', rig.webhookUrl.replace('http://', '')], env);
  const ready = await listener.waitFor(/Ready!/, 30_000);
  const secret = /whsec_[A-Za-z0-9]+/.exec(ready)?.[0];
  if (secret === undefined) throw new Error(`no signing secret in the Ready line: ${ready}`);
  // The route verifies with the secret the CLI printed, as a user sets STRIPE_WEBHOOK_SECRET.
  rig.useSecrets([secret]);
}, 60_000);

afterAll(async () => {
  await listener?.stop();
  await rig?.close();
  configDir?.remove();
});

/** Deliveries of the event over the CLI session, with what the route answered through the CLI. */
async function cliResponses(eventId: string): Promise<number[]> {
  const deliveries = await rig.sandbox.control.deliveries({ event: eventId });
  return deliveries.flatMap((delivery) => (delivery.endpoint.startsWith('cliws_') ? (delivery.cli?.responses ?? []).map((response) => response.status) : []));
}

describe('post-send facts through the real `stripe listen`', () => {
  it('an inquiry escalated within the window fails the committed $20 refund: the receipt verifies with happened true, not_returned, charge_for_pending_refund_disputed', async () => {
    const { paymentIntent } = await pay(rig.stripe, 'pm_card_createDisputeInquiry', 10_000);
    const effectId = await rig.refund(paymentIntent, 2_000);
    const inquiry = await disputeOf(rig.stripe, paymentIntent);
    expect(inquiry.status).toBe('warning_needs_response');
    await rig.sandbox.control.request('POST', `/disputes/${inquiry.id}/escalate`);

    const verification = await rig.until(effectId, (v) => v.finalMoney.status === 'not_returned' && v.finalMoney.disputes.some((d) => d.status === 'needs_response'));
    expect(verification).toMatchObject({ valid: true, signed: true, happened: true, finalMoney: { status: 'not_returned', failureReason: 'charge_for_pending_refund_disputed' }, answerMatchesFinalMoney: false, exposure: null });
    // The facts came as webhooks through the CLI: their events are on the receipt, and the route's answers went back
    // to the sandbox over the CLI's websocket. The refund's failure is recorded once, by whichever job read it first:
    // its refund.failed event, or the dispute's event, whose job re-reads the payment's refunds (source reread).
    const observed = await rig.observed(effectId);
    expect(observed.find((entry) => entry.status === 'failed')).toMatchObject({ source: expect.stringMatching(/^(webhook|reread)$/), objectId: expect.stringMatching(/^re_/) });
    // However the jobs raced (under load the dispute's job, which re-reads the payment's refunds, can record every fact
    // as a re-read before the refund's own job does), the refund's failure reached the route through the CLI as an
    // event, answered 200 over its websocket; every fact recorded from a webhook names an event the CLI delivered.
    const failedOverCli = (await rig.sandbox.control.deliveries()).filter((delivery) => delivery.type === 'refund.failed' && delivery.endpoint.startsWith('cliws_'));
    expect(failedOverCli.flatMap((delivery) => delivery.cli?.responses ?? []).map((response) => response.status)).toContain(200);
    const viaWebhook = observed.filter((entry) => entry.source === 'webhook');
    for (const entry of viaWebhook) {
      expect(entry.eventId).toMatch(/^evt_/);
      expect(await cliResponses(String(entry.eventId))).toContain(200);
    }
    const alerts = await rig.stores.alerts.list();
    expect(alerts.filter((alert) => alert.effectId === effectId).map((alert) => alert.kind)).toEqual(['failed_after_landed']);
  });

  it('an inquiry escalated after the window leaves the refund succeeded: the receipt shows the refund returned twice (the $20 exposure) and an alert names the dispute', async () => {
    const { paymentIntent } = await pay(rig.stripe, 'pm_card_createDisputeInquiry', 10_000);
    const effectId = await rig.refund(paymentIntent, 2_000);
    const inquiry = await disputeOf(rig.stripe, paymentIntent);
    await rig.until(effectId, (v) => v.finalMoney.status === 'returned');
    // Past the refund-vs-chargeback window (60 s in the sandbox, 300 s in the seeds).
    await rig.sandbox.control.advanceClock(120);
    await rig.sandbox.control.request('POST', `/disputes/${inquiry.id}/escalate`);

    const verification = await rig.until(effectId, (v) => v.exposure !== null);
    expect(verification).toMatchObject({ valid: true, happened: true, finalMoney: { status: 'returned', failureReason: null }, answerMatchesFinalMoney: true });
    expect(verification.exposure).toMatchObject({ cents: 2_000, refundCents: 2_000, chargebackCents: 10_000, chargeCents: 10_000, refundedCents: 2_000, dispute: inquiry.id, disputes: [inquiry.id] });
    const dispute = (await rig.observed(effectId)).find((entry) => entry.objectId === inquiry.id && entry.status === 'needs_response');
    expect(dispute?.source).toBe('webhook');
    const alert = (await rig.stores.alerts.list()).find((item) => item.effectId === effectId);
    expect(alert).toMatchObject({ kind: 'exposure', centsAtStake: 2_000, disputes: [inquiry.id] });
    expect(alert?.action).toContain(inquiry.id);
  });

  it('`stripe trigger charge.dispute.created` (a payment the gate never touched) is verified, answered 200 and dropped: nothing appended, no alert, no error', async () => {
    const earlier = await rig.stores.alerts.list({ all: true });
    const alertsBefore = earlier.length;
    const warningsBefore = rig.warnings.length;
    const trigger = await runStripe(['trigger', 'charge.dispute.created', '--api-base', apiBase(rig.sandbox.port)], env);
    expect(trigger.code, trigger.stderr).toBe(0);
    const events = await rig.stripe.events.list({ type: 'charge.dispute.created', limit: 1 });
    const event = events.data[0];
    if (event === undefined) throw new Error('the trigger made no charge.dispute.created');
    const deadline = Date.now() + 15_000;
    while (!rig.applied.some((item) => item.event.id === event.id) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(rig.applied.find((item) => item.event.id === event.id)?.applied).toEqual([]);
    expect(await cliResponses(event.id)).toContain(200);
    expect((await rig.stores.alerts.list({ all: true })).length).toBe(alertsBefore);
    // An alert an earlier case raised can be listed before its warning reaches the log (the raise's reply and the
    // listing's come back on different connections): that warning is the earlier case's, not this event's.
    const raisedEarlier = new Set(earlier.map((alert) => alert.id));
    expect(rig.warnings.slice(warningsBefore).filter((line) => !raisedEarlier.has(String(line.alert)))).toEqual([]);
  });
});
