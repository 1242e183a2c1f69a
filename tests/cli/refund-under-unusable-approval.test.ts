// Rule: `interlock refund` under a request not recorded yet, whose approval the gate could only refuse (revoked, or a
// cap below the amount), is refused before anything is recorded (exit 2, naming why and what to do), as the support
// API refuses it: recorded, it would be refused all the same and kept for ever. A usable approval still records.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { effectIdFor } from '../../src/interlock.js';
import { bearer, TOKENS, uid } from '../http/rig.js';
import { inboxCliSuite } from './inbox-cli-rig.js';
import { runCli } from './run-cli.js';

const { rig, make, stripe, env } = inboxCliSuite('refund-unusable-approval', 'sk_test_refundUnusableAppr1');

describe('interlock refund under an approval the gate could only refuse', { timeout: 180_000 }, () => {
  it('exits 2 naming why, records nothing; under a usable approval it records', async () => {
    const intent = await stripe.stripe.paymentIntents.create({ amount: 5_000, currency: 'usd', payment_method: 'pm_card_visa', confirm: true });
    const revoked = await make.grant(intent.id);
    expect((await request(rig.app).post(`/v1/approvals/${revoked}/revoke`).set(bearer(TOKENS.approver)).send({})).status).toBe(200);
    const requestId = `cli-unusable-${uid()}`;
    const refused = await runCli(['refund', '--request', requestId, '--payment-intent', intent.id, '--amount', '1000', '--approval', revoked, '--agent', 'support-bot'], env);
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toContain(`Approval ${revoked} cannot carry this refund: approval ${revoked} was revoked`);
    expect(refused.stderr).toContain(`Nothing was recorded, and request ${requestId} is still free`);
    const effectId = effectIdFor({ requestId, effect: null });
    expect(await rig.stores.journal.partitionOf(effectId)).toBeNull();

    const usable = await make.grant(intent.id);
    const recorded = await runCli(['refund', '--request', requestId, '--payment-intent', intent.id, '--amount', '1000', '--approval', usable, '--agent', 'support-bot'], env);
    expect(recorded.code === 2, recorded.stderr).toBe(false);
    expect(await rig.stores.journal.partitionOf(effectId)).toBe(`payment:${intent.id}`);
  });
});
