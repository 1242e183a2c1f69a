// Rule: a late landing the facts worker records carries its refund's currency, as the one recovery records does (the
// refund's summary): the receipt's alerts then write the landed refund's amounts in its own currency, whichever process
// noticed the landing. Recorded without it, the exposure alert on a ¥2000 refund said "$20.00".
import { afterEach, describe, expect, it } from 'vitest';
import { createFacts, type StripeEvent, type StripeReader } from '../../src/interlock.js';
import { verify } from '../../src/core/verify.js';
import { kill, refundProposal, type World } from '../support/harness.js';
import { FACTS, PAYMENT, gateWorld, grant, recoverUntilSettled, submitAndCrash } from '../gate/gate-support.js';

let world: World;
afterEach(async () => {
  await world.close();
});

describe('a JPY refund that landed after its effect was refused, found by the facts worker', () => {
  it('is recorded as the landing with its currency, and the exposure alert reads in yen', async () => {
    world = await gateWorld();
    const recoverer = await world.node('recoverer');
    // A refund whose sender froze before its send and was given up: recovery found a chargeback and refused it.
    const frozen = await world.node('frozen');
    const { id } = await grant(frozen);
    world.target.inject({ kind: 'crash-before-send' });
    const effectId = await submitAndCrash(frozen, refundProposal({ approval: id }));
    world.target.world.set(PAYMENT, { ...FACTS, chargebacks: ['du_1'] });
    await kill(frozen);
    expect((await recoverUntilSettled(recoverer, effectId)).settled).toEqual([expect.objectContaining({ outcome: 'REFUSED:stale_premise_at_recovery' })]);

    // Its request reached Stripe after all: a ¥2000 refund on a ¥10000 charge, charged back whole.
    const reader: StripeReader = {
      refund: async (refund) => (refund === 're_1' ? { id: 're_1', status: 'succeeded', amount: 2_000, charge: 'ch_1', paymentIntent: 'pi_1', failureReason: null, effectId, created: 1, currency: 'jpy' } : null),
      refundsOf: async () => [],
      disputesOf: async () => [{ id: 'du_1', status: 'lost', amount: 10_000, charge: 'ch_1', paymentIntent: 'pi_1', reason: 'fraudulent', created: 2 }],
      charge: async () => ({ id: 'ch_1', amount: 10_000, refunded: 2_000, paymentIntent: 'pi_1' }),
      creditsOf: async () => [],
    };
    const event: StripeEvent = { id: 'evt_1', type: 'refund.updated', data: { object: { id: 're_1', object: 'refund' } } };
    await createFacts(recoverer.stores, reader).applyEvent(event);

    const receipt = await recoverer.journal.receipt(effectId);
    const late = receipt?.entries.find((entry) => entry.kind === 'LATE_RESULT');
    expect(late).toMatchObject({ owner: 'facts', outcome: 'landed', result: { id: 're_1', currency: 'jpy' } });
    const verification = verify(JSON.parse(JSON.stringify(receipt)), { publicKeys: world.key.publicKeys });
    expect(verification.exposure).toMatchObject({ cents: 2_000, currency: 'jpy' });
    const alert = await recoverer.stores.alerts.get(`exposure:${effectId}`);
    expect(alert?.sentence).toContain('2000 JPY');
    expect(alert?.sentence).not.toContain('$');
  });
});
