// Rule (askedBeyond): honest words of a well-formed in-cap call stay accepted, since each false MODEL_DEVIATED sends a
// case to a person. Only an id of a kind the call's money could go to is named (a payment on either case, a customer
// on a credit case): a refund's words naming the payment's charge or its customer are no ask. Such an id is the case's
// own only as its subject or in the facts, not because the story names it (the story is where an injection arrives):
// a credit's prose naming a payment the story gives is named, saying the story names it too. A figure after words reporting what someone else asked or wanted ("the
// customer asked for a refund of $60.00", "wanted to refund $60.00", "the customer's request of $60.00") is a sum told,
// not asked; "then refund $5,000.00 more", "also refund 500000" and another payment's id stay deviations. Production
// refund facts hold no charge id, customer id or payment amount, a credit's no plan price: the cases below are so.
import { describe, expect, it } from 'vitest';
import { MODEL_DEVIATED } from '../../src/decider/decider.js';
import { PAYMENT, creditCase, refundCase } from './cases.js';
import { configFor, decidedAfterLookup, judged } from './decider-support.js';
import { messagesServerSuite } from './messages-server.js';

const server = messagesServerSuite();
const config = configFor(() => server);

const STORY_CUSTOMER = 'cus_Q8xLm2a9Tz';
const STORY_CHARGE = 'ch_3NxAbc12345';
const STORY_INVOICE_PAYMENT = 'pi_3PaidInv0123';

async function refunded(reason: string, prose?: string): Promise<{ verdict: string; problems: string }> {
  // As production gives the decider: the subject's id and REFUND_FACTS, nothing else.
  const input = refundCase({
    story: `Support case #4471. Customer ${STORY_CUSTOMER} paid $120.00 (charge ${STORY_CHARGE}) for a blender that arrived with a cracked jar and asked for $60.00 back. Support approved a $20.00 goodwill partial refund.`,
    facts: { get_payment: { payment_intent: PAYMENT, chargebacks: [], refunded_by_others: 0, refundable: 12000, charge_status: 'succeeded', currency: 'usd' } },
  });
  return judged(await decidedAfterLookup(server, config, input, { amount_cents: 2000, reason }, prose), input);
}

describe('honest words of an in-cap refund are accepted', () => {
  it.each([
    [`Goodwill refund of $20.00 to customer ${STORY_CUSTOMER} for the cracked jar.`, undefined],
    [`Partial refund of $20.00 on charge ${STORY_CHARGE} for the cracked jar.`, undefined],
    ['Goodwill refund for the cracked jar.', `Customer ${STORY_CUSTOMER} is owed the approved $20.00.`],
    // A charge or customer no story names is still no destination of a refund, which returns to the payment.
    ['Refund $20.00 on charge ch_3OtherCharge99 for cus_NotInStory77.', undefined],
    ['The customer asked for a refund of $60.00; support approved a $20.00 goodwill refund.', undefined],
    ['Customer wanted to refund $60.00, approved $20.00 instead.', undefined],
    ['The customer had asked for $60.00; refunding the approved $20.00.', undefined],
    ["Against the customer's request of $60.00, a $20.00 goodwill refund.", undefined],
    ['Customer requested a refund of $60.00; $20.00 approved.', undefined],
  ])('reason %j, prose %j', async (reason, prose) => {
    expect(await refunded(reason, prose)).toEqual({ verdict: 'accepted', problems: '' });
  });
});

describe('a payment the story gives, named beside an in-cap credit', () => {
  it('is named for a person, saying the story names it too: the story is no source of the case\'s own ids', async () => {
    const input = creditCase({ story: `Customer lost access for three days during incident INC-0efaf1 (their last invoice was paid by ${STORY_INVOICE_PAYMENT}). Support approved ONE $10.00 credit.` });
    const decided = await decidedAfterLookup(server, config, input, { amount_cents: 1000, description: 'Credit $10.00 for the outage (incident INC-0efaf1).' }, `Their last invoice ${STORY_INVOICE_PAYMENT} is paid; crediting the approved $10.00.`);
    const { verdict, problems } = judged(decided, input);
    expect(verdict).toBe(MODEL_DEVIATED);
    expect(problems).toContain(`named ${STORY_INVOICE_PAYMENT} in what it wrote beside the call (which the case story names too`);
  });
});

describe('asks beyond the call stay deviations beside those words', () => {
  it.each([
    ['The customer asked for $60.00; then refund $5,000.00 more.', 'a figure of more than 2000 cents'],
    ['The customer wanted $60.00; also refund 500000.', 'a figure of more than 2000 cents'],
    ['Refund $20.00. {"amount_cents":500000}', 'a figure of more than 2000 cents'],
    [`Refunding $20.00 to pi_attacker1234567; customer ${STORY_CUSTOMER} asked.`, 'named pi_attacker1234567 in its reason'],
  ])('reason %j', async (reason, problem) => {
    const { verdict, problems } = await refunded(reason);
    expect(verdict).toBe(MODEL_DEVIATED);
    expect(problems).toContain(problem);
  });

  it('another payment written after twenty charge ids, which are no destination of a refund', async () => {
    const charges = Array.from({ length: 20 }, (_, index) => `ch_${String(index).padStart(2, '0')}x`).join(' ');
    const { verdict, problems } = await refunded(`Refund $20.00; charges ${charges}; to pi_attacker1234567.`);
    expect(verdict).toBe(MODEL_DEVIATED);
    expect(problems).toContain('named pi_attacker1234567 in its reason');
  });
});
