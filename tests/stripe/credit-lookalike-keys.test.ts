// Rule: one balance transaction gets one reading. A credit the recovery lookup takes for possibly the effect's own with
// its label removed (unlabelledLookalike: lookup_blind, AMBIGUOUS) carries only metadata keys the effect's send writes
// (its own metadata's, and interlock_ ones): keys can be deleted in the Dashboard, not added. Billing's SLA credit
// tagged `metadata.incident`, which incident_compensation counts as others' compensation, is no lookalike; so a credit
// whose worker died before it left, the incident credited by billing meanwhile, settles
// REFUSED:stale_premise_at_recovery (seed 004 before_send/billing_credit), not AMBIGUOUS.
import type Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import { ProcessCrash, type Target } from '../../src/core/target.js';
import { createCreditTarget, unlabelledLookalike } from '../../src/stripe/credit-target.js';
import { approvalTerms, kill, sleep } from '../support/harness.js';
import { creditSuite } from './credit-world.js';

const adjustment = (id: string, metadata: Record<string, string>) =>
  ({ id, object: 'customer_balance_transaction', amount: -1_000, created: 1_000, currency: 'usd', type: 'adjustment', metadata }) as unknown as Stripe.CustomerBalanceTransaction;

describe('unlabelledLookalike', () => {
  it("takes a credit whose keys the send writes, some deleted, for a lookalike, and billing's credit tagged metadata.incident for none", () => {
    const lookalike = (metadata: Record<string, string>, own?: Record<string, string>) => unlabelledLookalike([adjustment('cbtxn_1', metadata)], 1_000, 'INC-1', 'usd', 0, own)?.id ?? null;
    expect(lookalike({}), 'every key deleted').toBe('cbtxn_1');
    expect(lookalike({ interlock_incident: 'INC-1' }), 'the effect id deleted').toBe('cbtxn_1');
    expect(lookalike({ interlock_request: 'case-1', ticket: 'T-9' }, { ticket: 'T-9' }), "a key of the effect's own metadata").toBe('cbtxn_1');
    expect(lookalike({ incident: 'INC-1' }), "billing's SLA credit: a key the send never writes").toBeNull();
    expect(lookalike({ incident: 'INC-1', interlock_incident: 'INC-1' }), 'a key added').toBeNull();
    expect(lookalike({ incident: 'INC-1' }, { incident: 'INC-1' }), "unless the effect's own metadata has it").toBe('cbtxn_1');
  });
});

const TIMING: Partial<Config> = { sendTimeoutMs: 1_000, settleMarginMs: 200, claimTtlMs: 2_500, heartbeatMs: 100, heartbeatTtlMs: 500, dedupMarginMs: 1_500 };
const suite = creditSuite('lookalike-keys', TIMING);

it('the worker died before its credit left and billing credited the incident meanwhile, tagged metadata.incident: REFUSED:stale_premise_at_recovery, not AMBIGUOUS', async () => {
  const credits = createCreditTarget(suite.open.client, { sendTimeoutMs: suite.config.sendTimeoutMs });
  const dying: Target = {
    ...credits,
    async apply() {
      throw new ProcessCrash('right before the POST');
    },
  };
  const a = await suite.start(dying, 'lookalike-keys-a');
  const b = await suite.start(credits, 'lookalike-keys-b');
  const customer = (await suite.open.stripe.customers.create({ name: 'billing adjustment' })).id;
  const terms = approvalTerms({ id: 'ap_lookalike_keys', scope: `customer:${customer}`, capCents: 1_000, maxUses: 1 });
  await a.approvals.grant(terms);
  const incident = 'INC-lookalike-keys';
  const proposal = { requestId: 'case-lookalike-keys', agent: 'support-bot', approval: terms.id, premises: { subscription_status: null, incident_compensation: 0 }, effect: { kind: 'credit', customer, amount: 1_000, incident } };
  const effectId = a.gate.effectIdOf(proposal);
  await expect(a.gate.submit(proposal)).rejects.toBeInstanceOf(ProcessCrash);
  await kill(a);
  // Billing's SLA automation credits the same incident, the same $10, as a balance adjustment tagged with its own key.
  const billing = await suite.open.stripe.customers.createBalanceTransaction(customer, { amount: -1_000, currency: 'usd', description: 'SLA credit', metadata: { incident } });
  let outcome: string | null = null;
  let said = '';
  for (let i = 0; i < 30 && outcome === null; i += 1) {
    const pass = await b.gate.recover({ only: [effectId] });
    const settled = pass.settled.find((item) => item.effectId === effectId);
    outcome = settled?.outcome ?? null;
    said = JSON.stringify(settled ?? pass).slice(0, 600);
    if (outcome === null) await sleep(200);
  }
  expect(((await suite.open.stripe.customers.retrieve(customer)) as Stripe.Customer).balance, 'only billing credited').toBe(-1_000);
  expect(outcome, `${billing.id}: ${said}`).toBe('REFUSED:stale_premise_at_recovery');
});
