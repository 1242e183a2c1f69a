// Rule: `interlock inbox reapprove` of a refund whose payment has less still refundable at Stripe than the refund's
// amount (refunded by hand since it was decided) is refused (exit 1, action_not_allowed) stating both sums in the
// payment's currency and what to do, nothing recorded and the item left open, as the API refuses it: re-approved, the
// item would close and the new request end refused before the send (amount_exceeds_refundable), nothing left to act on.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { effectIdFor } from '../../src/interlock.js';
import { bearer, refundBody, TOKENS } from '../http/rig.js';
import { inboxCliSuite } from './inbox-cli-rig.js';
import { runCli } from './run-cli.js';

const { rig, make, stripe, env } = inboxCliSuite('inbox-over-refundable', 'sk_test_inboxOverRefundable1');

describe('interlock inbox reapprove of a refund over what is still refundable', { timeout: 180_000 }, () => {
  it('exits 1 stating both sums in yen, records nothing, and leaves the item open', async () => {
    // A ¥9,000 payment; a ¥3,000 refund decided on it, then ¥7,000 refunded by hand: ¥2,000 is left refundable.
    const intent = await stripe.stripe.paymentIntents.create({ amount: 9_000, currency: 'jpy', payment_method: 'pm_card_visa', confirm: true });
    const paymentIntent = intent.id;
    rig.target.world.set(`payment:${paymentIntent}`, { chargebacks: [], refunded_by_others: 0 });
    const body = refundBody({ payment_intent: paymentIntent, approval: await make.grant(paymentIntent), amount: 3_000 });
    expect((await request(rig.app).post('/v1/refunds').set(bearer(TOKENS.support)).send(body)).status).toBe(202);
    const effectId = effectIdFor({ requestId: String(body.request_id), effect: null });
    await stripe.stripe.refunds.create({ payment_intent: paymentIntent, amount: 7_000 });
    rig.target.world.set(`payment:${paymentIntent}`, { chargebacks: [], refunded_by_others: 7_000 });
    expect(await make.submitLatest(effectId)).toBe('REFUSED:stale_premise');
    const item = `stale_premise:${effectId}`;
    const approval = await make.grant(paymentIntent);

    const refused = await runCli(['inbox', 'reapprove', item, '--approval', approval, '--by', 'lee@support', '--note', 'Refund anyway.'], env);
    expect(refused.code, refused.stderr).toBe(1);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toContain(`a refund of 3000 JPY is more than the 2000 JPY still refundable on ${paymentIntent}`);
    expect(refused.stderr).toContain('decide a refund of at most 2000 JPY under a new request id');
    expect(refused.stderr).toContain('Nothing was recorded, and the item stays open');
    const shown = await request(rig.app).get(`/v1/inbox/${item}`).set(bearer(TOKENS.approver));
    expect(shown.body).toMatchObject({ status: 'open', actions: ['reapprove', 'dismiss'] });
    expect(await rig.stores.journal.partitionOf(effectIdFor({ requestId: `reapproval:${item}`, effect: null }))).toBeNull();
  });
});
