// Rule: a credit that may have landed is never settled REFUSED with its cents given back (DESIGN §3 "it never
// guesses"), whichever worker recovers it: the lookup judges the effect's money in the currency it was decided in
// (ReadContext.currency, its dispatch's `currency` premise), not the recovering worker's INTERLOCK_CREDIT_CURRENCY.
// During a rolling change of that setting (workers set to usd and jpy sharing one Redis) a usd worker's credit lands,
// its answer is lost, someone clears its interlock_effect_id at Stripe, and a jpy worker recovers it: the unlabelled
// usd credit of the effect's amount is a possible lookalike (lookup_blind), so the effect settles AMBIGUOUS with its
// cents held, and every sentence about it states $10.00, not 1000 JPY. A chain that records no currency premise has a
// lookalike of the amount in any currency.
import type Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import { errorCode } from '../../src/core/errors.js';
import { ProcessCrash, type Target } from '../../src/core/target.js';
import { currentOutcome } from '../../src/core/verify.js';
import { createCreditTarget } from '../../src/stripe/credit-target.js';
import { approvalTerms, kill } from '../support/harness.js';
import { creditSuite } from './credit-world.js';
import { effectIdFor } from './stripe-support.js';

const TIMING: Partial<Config> = { sendTimeoutMs: 1_000, settleMarginMs: 200, claimTtlMs: 2_500, heartbeatMs: 100, heartbeatTtlMs: 500 };
const READ = { timeoutMs: 2_000 };
const suite = creditSuite('rolling-currency', TIMING);

const failure = (query: Promise<unknown>) => query.then(() => null, (error: unknown) => ({ code: errorCode(error), message: error instanceof Error ? error.message : String(error) }));

describe('a usd credit whose label was cleared, looked up by a target set to jpy', () => {
  const effect = (customer: string) => ({ kind: 'credit' as const, customer, amount: 1_000, incident: 'INC-roll' });

  it('told the effect was decided in usd: lookup_blind naming the usd credit as $10.00; told eur: none', async () => {
    const yen = createCreditTarget(suite.open.client, { sendTimeoutMs: 2_000, currency: 'jpy' });
    const customer = (await suite.open.stripe.customers.create({ name: 'rolling lookalike' })).id;
    const dispatchedAt = Date.now();
    const made = await suite.open.stripe.customers.createBalanceTransaction(customer, { amount: -1_000, currency: 'usd', metadata: { interlock_incident: 'INC-roll' } });
    const answer = await failure(yen.query(effectIdFor('rolling'), effect(customer), { ...READ, dispatchedAt, currency: 'usd' }));
    expect(answer?.code).toBe('lookup_blind');
    expect(answer?.message).toContain(made.id);
    expect(answer?.message).toContain('$10.00');
    expect(answer?.message).not.toContain('JPY');
    expect(await yen.query(effectIdFor('rolling'), effect(customer), { ...READ, dispatchedAt, currency: 'eur' })).toBeNull();
  });

  it('told no currency (a chain without the premise): a lookalike in any currency', async () => {
    const yen = createCreditTarget(suite.open.client, { sendTimeoutMs: 2_000, currency: 'jpy' });
    const customer = (await suite.open.stripe.customers.create({ name: 'rolling lookalike, no premise' })).id;
    const dispatchedAt = Date.now();
    const made = await suite.open.stripe.customers.createBalanceTransaction(customer, { amount: -1_000, currency: 'usd' });
    const answer = await failure(yen.query(effectIdFor('rolling-none'), effect(customer), { ...READ, dispatchedAt }));
    expect(answer?.code).toBe('lookup_blind');
    expect(answer?.message).toContain(`${made.id}, a credit of $10.00`);
  });

  it('a deleted customer: the reason states the credit in the currency it was decided in', async () => {
    const yen = createCreditTarget(suite.open.client, { sendTimeoutMs: 2_000, currency: 'jpy' });
    const customer = (await suite.open.stripe.customers.create({ name: 'rolling deleted' })).id;
    const dispatchedAt = Date.now();
    await suite.open.stripe.customers.del(customer);
    const answer = await failure(yen.query(effectIdFor('rolling-deleted'), effect(customer), { ...READ, dispatchedAt, currency: 'usd' }));
    expect(answer?.code).toBe('lookup_blind');
    expect(answer?.message).toContain('credit of $10.00');
  });
});

describe('recovered by a jpy worker after a usd worker died with its credit landed and its label cleared', () => {
  it('settles AMBIGUOUS with its cents held, not REFUSED:stale_premise_at_recovery; no second credit', async () => {
    const dollars = createCreditTarget(suite.open.client, { sendTimeoutMs: suite.config.sendTimeoutMs, currency: 'usd' });
    const dying: Target = {
      ...dollars,
      async apply(effectId, effect, context) {
        await dollars.apply(effectId, effect, context);
        throw new ProcessCrash('after the credit landed');
      },
    };
    const a = await suite.start(dying, 'rolling-usd');
    const b = await suite.start(createCreditTarget(suite.open.client, { sendTimeoutMs: suite.config.sendTimeoutMs, currency: 'jpy' }), 'rolling-jpy');
    const customer = (await suite.open.stripe.customers.create({ name: 'rolling change' })).id;
    const partition = `customer:${customer}`;
    const terms = approvalTerms({ id: 'ap_credit_rolling_currency', scope: partition, capCents: 1_000, maxUses: 1 });
    await a.approvals.grant(terms);
    const proposal = { requestId: 'case-credit-rolling-currency', agent: 'support-bot', approval: terms.id, premises: { subscription_status: null, incident_compensation: 0, currency: 'usd' }, effect: { kind: 'credit', customer, amount: 1_000, incident: 'INC-rolling' } };
    const effectId = a.gate.effectIdOf(proposal);
    await expect(a.gate.submit(proposal)).rejects.toBeInstanceOf(ProcessCrash);
    await kill(a);
    const landed = (await suite.open.stripe.customers.listBalanceTransactions(customer)).data.find((t) => t.metadata?.['interlock_effect_id'] === effectId);
    expect(landed?.currency, 'the usd worker\'s credit landed').toBe('usd');
    await suite.open.stripe.customers.updateBalanceTransaction(customer, landed?.id ?? '', { metadata: { interlock_effect_id: '' } });

    const pass = await b.gate.recover({ only: [effectId] });
    expect(pass.settled.find((item) => item.effectId === effectId)?.outcome).toBe('AMBIGUOUS');
    const entries = await b.journal.entries(partition, effectId);
    expect(currentOutcome(entries)).toBe('AMBIGUOUS');
    const ambiguous = entries.find((entry) => entry.kind === 'AMBIGUOUS');
    const reason = ambiguous && 'reason' in ambiguous ? ambiguous.reason : '';
    expect(reason).toContain('$10.00');
    expect(reason).not.toContain('JPY');
    expect((await b.approvals.describe(terms.id)).snapshot?.reservedCents ?? 0, 'the approval holds the credit').toBe(1_000);
    const balance = ((await suite.open.stripe.customers.retrieve(customer)) as Stripe.Customer).balance;
    expect(balance, 'one credit at Stripe').toBe(-1_000);
  });
});
