// Rule: recovery never sends a second credit for one effect and incident, nor settles REFUSED (cents given back) a
// credit that may have landed (DESIGN §3 "it never guesses"; credit-target.ts header). The effect's own credit is only
// the transaction its lookup would take (findOwn: its id AND its amount): one carrying its id with another amount is
// someone else's compensation for the incident, and counts in incident_compensation. And a lookup told the first
// dispatch (ReadContext.dispatchedAt) that finds no credit of its own, while the customer has a credit of the effect's
// amount made since then that carries no interlock_effect_id (its label cleared in the Dashboard), does not answer
// "nothing landed": it throws lookup_blind, and the gate settles the effect AMBIGUOUS with its cents held.
import type Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import { errorCode } from '../../src/core/errors.js';
import { ProcessCrash, type Target } from '../../src/core/target.js';
import { DISPATCH_SKEW_MS, createCreditTarget, incidentCompensation } from '../../src/stripe/credit-target.js';
import { approvalTerms, kill, sleep } from '../support/harness.js';
import { creditSuite } from './credit-world.js';
import { effectIdFor } from './stripe-support.js';

const TIMING: Partial<Config> = { sendTimeoutMs: 1_000, settleMarginMs: 200, claimTtlMs: 2_500, heartbeatMs: 100, heartbeatTtlMs: 500, dedupMarginMs: 1_500 };
const READ = { timeoutMs: 2_000 };
const suite = creditSuite('marker', TIMING);

let count = 0;
/**
 * A credit of 1 000 cents dispatched by a worker that dies `when` (after its credit landed, or before anything left),
 * then `meanwhile` at Stripe, then recovery passes by another worker until it settles. `window`: the target's dedup
 * window (ms), to recover after Stripe forgot the key.
 */
async function crashed(when: 'after-landing' | 'before-send', meanwhile: (customer: string, effectId: string, incident: string) => Promise<void>, window?: number): Promise<{ outcome: string | null; balance: number; reserved: number }> {
  count += 1;
  const credits = createCreditTarget(suite.open.client, { sendTimeoutMs: suite.config.sendTimeoutMs });
  const real: Target = window === undefined ? credits : { ...credits, dedupWindowMs: window };
  const dying: Target = {
    ...real,
    async apply(effectId, effect, context) {
      if (when === 'after-landing') await credits.apply(effectId, effect, context);
      throw new ProcessCrash(when);
    },
  };
  const a = await suite.start(dying, `marker-a-${count}`);
  const b = await suite.start(real, `marker-b-${count}`);
  const customer = (await suite.open.stripe.customers.create({ name: `marker ${count}` })).id;
  const terms = approvalTerms({ id: `ap_credit_marker_${count}`, scope: `customer:${customer}`, capCents: 1_000, maxUses: 1 });
  await a.approvals.grant(terms);
  const incident = `INC-marker-${count}`;
  const proposal = { requestId: `case-credit-marker-${count}`, agent: 'support-bot', approval: terms.id, premises: { subscription_status: null, incident_compensation: 0 }, effect: { kind: 'credit', customer, amount: 1_000, incident } };
  const effectId = a.gate.effectIdOf(proposal);
  await expect(a.gate.submit(proposal)).rejects.toBeInstanceOf(ProcessCrash);
  await kill(a);
  await meanwhile(customer, effectId, incident);
  if (window !== undefined) {
    await suite.open.control.ageIdempotencyKeys(2 * 24 * 60 * 60);
    await sleep(window + 200);
  }
  let outcome: string | null = null;
  for (let i = 0; i < 30 && outcome === null; i += 1) {
    const pass = await b.gate.recover({ only: [effectId] });
    outcome = pass.settled.find((item) => item.effectId === effectId)?.outcome ?? null;
    if (outcome === null) await sleep(200);
  }
  const balance = ((await suite.open.stripe.customers.retrieve(customer)) as Stripe.Customer).balance;
  const reserved = (await b.approvals.describe(terms.id)).snapshot?.reservedCents ?? 0;
  return { outcome, balance, reserved };
}

async function own(customer: string, effectId: string): Promise<Stripe.CustomerBalanceTransaction> {
  const found = (await suite.open.stripe.customers.listBalanceTransactions(customer)).data.find((t) => t.metadata?.['interlock_effect_id'] === effectId);
  if (found === undefined) throw new Error('the credit did not land');
  return found;
}

describe('a credit carrying the effect id with another amount is someone else\'s compensation', () => {
  it('counts in incident_compensation; one with the effect id and its amount is its own', () => {
    const effectId = 'e'.repeat(64);
    const adjustment = (id: string, amount: number, created: number): Stripe.CustomerBalanceTransaction =>
      ({ id, object: 'customer_balance_transaction', amount, created, currency: 'usd', type: 'adjustment', metadata: { interlock_effect_id: effectId, interlock_incident: 'INC-1' } }) as unknown as Stripe.CustomerBalanceTransaction;
    expect(incidentCompensation([], [adjustment('cbtxn_hand', -500, 2)], 'INC-1', effectId, 1_000, 'usd').cents).toBe(500);
    expect(incidentCompensation([], [adjustment('cbtxn_own', -1_000, 1)], 'INC-1', effectId, 1_000, 'usd').cents).toBe(0);
    expect(incidentCompensation([], [adjustment('cbtxn_hand', -500, 2), adjustment('cbtxn_own', -1_000, 1)], 'INC-1', effectId, 1_000, 'usd').cents).toBe(500);
  });

  it('the worker died before its send left; a credit of 500 by hand with the effect id and incident: recovery refuses, no second credit', async () => {
    const result = await crashed('before-send', async (customer, effectId, incident) => {
      await suite.open.stripe.customers.createBalanceTransaction(customer, { amount: -500, currency: 'usd', metadata: { interlock_effect_id: effectId, interlock_incident: incident } });
    });
    expect(result.balance, 'only the credit made by hand').toBe(-500);
    expect(result.outcome).toBe('REFUSED:stale_premise_at_recovery');
  });
});

describe('the credit landed, then someone cleared its interlock_effect_id at Stripe', () => {
  it('interlock_incident kept: AMBIGUOUS with its cents held, not REFUSED', async () => {
    const result = await crashed('after-landing', async (customer, effectId) => {
      await suite.open.stripe.customers.updateBalanceTransaction(customer, (await own(customer, effectId)).id, { metadata: { interlock_effect_id: '' } });
    });
    expect(result.balance, 'one credit at Stripe').toBe(-1_000);
    expect(result.outcome).toBe('AMBIGUOUS');
    expect(result.reserved, 'the approval holds the credit').toBe(1_000);
  });

  it('all metadata cleared, recovered after Stripe forgot the key: AMBIGUOUS, no second credit', async () => {
    const result = await crashed(
      'after-landing',
      async (customer, effectId) => {
        await suite.open.stripe.customers.updateBalanceTransaction(customer, (await own(customer, effectId)).id, { metadata: { interlock_effect_id: '', interlock_incident: '', interlock_request: '' } });
      },
      3_000,
    );
    expect(result.balance, 'the customer was credited once').toBe(-1_000);
    expect(result.outcome).toBe('AMBIGUOUS');
    expect(result.reserved).toBe(1_000);
  });
});

describe('the lookup told the first dispatch', () => {
  const effect = (customer: string) => ({ kind: 'credit' as const, customer, amount: 1_000, incident: 'INC-look' });
  const blind = (query: Promise<unknown>) => query.then(() => null, (error: unknown) => ({ code: errorCode(error), message: error instanceof Error ? error.message : String(error) }));

  it('an unlabelled credit of its amount made since the dispatch: lookup_blind naming it; untold, nothing landed as before', async () => {
    const credits = createCreditTarget(suite.open.client, { sendTimeoutMs: 2_000 });
    const customer = (await suite.open.stripe.customers.create({ name: 'lookalike' })).id;
    const dispatchedAt = Date.now();
    const made = await suite.open.stripe.customers.createBalanceTransaction(customer, { amount: -1_000, currency: 'usd', metadata: { interlock_incident: 'INC-look' } });
    const answer = await blind(credits.query(effectIdFor('lookalike'), effect(customer), { ...READ, dispatchedAt }));
    expect(answer?.code).toBe('lookup_blind');
    expect(answer?.message).toContain(made.id);
    expect(answer?.message).toContain('$10.00');
    expect(await credits.query(effectIdFor('lookalike'), effect(customer), READ)).toBeNull();
  });

  // Another effect's credit carries its incident, as every credit send writes it: one carrying an effect id but no
  // incident was edited, and is a possible lookalike (credit-marker-changed.test.ts).
  it('no lookalike: another amount, another effect\'s credit (its id and incident), another incident, or made before the dispatch less the margin', async () => {
    const credits = createCreditTarget(suite.open.client, { sendTimeoutMs: 2_000 });
    const others = (await suite.open.stripe.customers.create({ name: 'not lookalikes' })).id;
    const dispatchedAt = Date.now() - 1_000;
    await suite.open.stripe.customers.createBalanceTransaction(others, { amount: -999, currency: 'usd' });
    await suite.open.stripe.customers.createBalanceTransaction(others, { amount: -1_000, currency: 'usd', metadata: { interlock_effect_id: 'f'.repeat(64), interlock_incident: 'INC-other' } });
    await suite.open.stripe.customers.createBalanceTransaction(others, { amount: -1_000, currency: 'usd', metadata: { interlock_incident: 'INC-other' } });
    expect(await credits.query(effectIdFor('others'), effect(others), { ...READ, dispatchedAt })).toBeNull();
    // A credit made ten minutes more than the margin for clock skew (DISPATCH_SKEW_MS, a day) before the dispatch.
    const earlier = (await suite.open.stripe.customers.create({ name: 'credited before' })).id;
    await suite.open.stripe.customers.createBalanceTransaction(earlier, { amount: -1_000, currency: 'usd' });
    expect(await credits.query(effectIdFor('earlier'), effect(earlier), { ...READ, dispatchedAt: Date.now() + DISPATCH_SKEW_MS + 10 * 60 * 1000 })).toBeNull();
  });
});
