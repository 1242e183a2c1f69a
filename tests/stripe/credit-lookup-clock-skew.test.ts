// Rule: I2 at most once, and §4 COMMITTED_ON_QUERY (what landed is recorded): a credit that landed before its worker
// crashed is credited once, whatever the skew between Redis's clock (the dispatch's time) and Stripe's (`created`).
// The recovery lookup reads from a day before the first dispatch (DISPATCH_SKEW_MS), so a skew of minutes or hours
// still finds the credit (COMMITTED_ON_QUERY). And a send that is not a first one answers the credit carrying the
// effect's id with its amount that the customer read right before it holds, as Stripe's idempotent replay would
// (`replayed: true`), instead of making a second credit: with a window that misses the credit (Stripe's clock two days
// behind), the resend past the key window sends nothing, and the gate commits the credit that landed.
import type Stripe from 'stripe';
import { expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import { ProcessCrash, type Target } from '../../src/core/target.js';
import { createCreditTarget } from '../../src/stripe/credit-target.js';
import { approvalTerms, kill, sleep } from '../support/harness.js';
import { logMark, creditSuite } from './credit-world.js';
import { effectIdFor } from './stripe-support.js';

const TIMING: Partial<Config> = { sendTimeoutMs: 2_000, settleMarginMs: 200, claimTtlMs: 4_000, heartbeatMs: 100, heartbeatTtlMs: 500, dedupMarginMs: 2_500 };
const HOUR = 60 * 60;
const suite = creditSuite('skew', TIMING);

const listPath = (customer: string) => `/v1/customers/${customer}/balance_transactions`;
const posts = async (customer: string, since: number) => (await suite.open.control.requests(since)).filter((entry) => entry.method === 'POST' && entry.path === listPath(customer)).length;

it.each([
  { behind: 10 * 60, outcome: 'COMMITTED_ON_QUERY', why: 'the lookup finds it within its margin' },
  { behind: 5 * HOUR, outcome: 'COMMITTED_ON_QUERY', why: 'the lookup finds it within its margin' },
  { behind: 2 * 24 * HOUR, outcome: 'REAPPLIED_AFTER_QUERY', why: 'the lookup misses it, and the resend answers it instead of crediting again' },
])("Stripe's clock $behind s behind Redis's: a credit that landed before its worker crashed is credited once ($why)", async ({ behind, outcome: expected }) => {
  suite.open.world.core.clock.advance(-behind);
  try {
    const credits = createCreditTarget(suite.open.client, { sendTimeoutMs: suite.config.sendTimeoutMs });
    // Recovered after Stripe forgot the key (a window of 4 s, less the 2.5 s margin): recovery looks the credit up.
    const real: Target = { ...credits, dedupWindowMs: 4_000 };
    let landed: string | null = null;
    const dying: Target = {
      ...real,
      async apply(effectId, effect, context) {
        landed = String((await credits.apply(effectId, effect, context)).id);
        throw new ProcessCrash('after the credit landed');
      },
    };
    const a = await suite.start(dying, `skew-a-${behind}`);
    const b = await suite.start(real, `skew-b-${behind}`);
    const customer = (await suite.open.stripe.customers.create({ name: `skewed ${behind}` })).id;
    const terms = approvalTerms({ id: `ap_credit_skew_${behind}`, scope: `customer:${customer}`, capCents: 1_000, maxUses: 1 });
    await a.approvals.grant(terms);
    const proposal = { requestId: `case-credit-skew-${behind}`, agent: 'support-bot', approval: terms.id, premises: { subscription_status: null }, effect: { kind: 'credit', customer, amount: 1_000, incident: `INC-skew-${behind}` } };
    const effectId = a.gate.effectIdOf(proposal);
    await expect(a.gate.submit(proposal)).rejects.toBeInstanceOf(ProcessCrash);
    await kill(a);
    await suite.open.control.ageIdempotencyKeys(3 * 24 * HOUR);
    await sleep(2_000);
    const since = await logMark(suite.open);
    let outcome: string | null = null;
    for (let i = 0; i < 8 && outcome === null; i += 1) {
      const pass = await b.gate.recover({ only: [effectId] });
      outcome = pass.settled.find((entry) => entry.effectId === effectId)?.outcome ?? null;
      if (outcome === null) await sleep(300);
    }
    const balance = ((await suite.open.stripe.customers.retrieve(customer)) as Stripe.Customer).balance;
    expect({ outcome, balance, creditsSentByRecovery: await posts(customer, since) }).toEqual({ outcome: expected, balance: -1_000, creditsSentByRecovery: 0 });
    expect(landed).not.toBeNull();
  } finally {
    suite.open.world.core.clock.advance(behind);
  }
});

it('a send that is not a first one answers the credit carrying its id with its amount, replayed, and sends nothing', async () => {
  const credits = createCreditTarget(suite.open.client, { sendTimeoutMs: 2_000 });
  const customer = (await suite.open.stripe.customers.create({ name: 'resent' })).id;
  const effectId = effectIdFor('resent-finds-own');
  const effect = { kind: 'credit' as const, customer, amount: 1_000, incident: 'INC-resent' };
  const send = { timeLeftMs: () => 2_000, beforeWrite: async () => undefined, requestId: null };
  const first = await credits.apply(effectId, effect, { ...send, neverSent: true });
  await suite.open.control.ageIdempotencyKeys(3 * 24 * HOUR);
  const since = await logMark(suite.open);
  const again = await credits.apply(effectId, effect, send);
  expect({ id: again.id, amount: again.amount, replayed: again.replayed }).toEqual({ id: first.id, amount: -1_000, replayed: true });
  expect(await posts(customer, since), 'credits sent').toBe(0);
  expect(((await suite.open.stripe.customers.retrieve(customer)) as Stripe.Customer).balance).toBe(-1_000);
});
