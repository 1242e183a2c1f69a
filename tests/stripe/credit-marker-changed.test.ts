// Rule: recovery never credits a customer twice for one effect, nor settles REFUSED (its cents given back) a credit that
// landed; when unsure it settles AMBIGUOUS (DESIGN §3; credit-target.ts header, unlabelledLookalike). Metadata is
// edited freely in the Dashboard, not only deleted: a credit of the effect's amount, currency and type made since its
// first dispatch (less the margin) may be its own when its interlock_effect_id is missing or names another id (a
// ticket number written over it), whatever keys were added (a note), unless it carries billing's `metadata.incident`
// or an interlock_incident naming another incident. One that keeps this effect's interlock_incident settles AMBIGUOUS,
// never REFUSED as others' compensation, although the premise read counts it.
import type Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import { ProcessCrash, type Target } from '../../src/core/target.js';
import { createCreditTarget, incidentCompensation, unlabelledLookalike } from '../../src/stripe/credit-target.js';
import { approvalTerms, kill, sleep } from '../support/harness.js';
import { creditSuite } from './credit-world.js';

const adjustment = (metadata: Record<string, string>) =>
  ({ id: 'cbtxn_1', object: 'customer_balance_transaction', amount: -1_000, created: 1_000, currency: 'usd', type: 'adjustment', metadata }) as unknown as Stripe.CustomerBalanceTransaction;

describe('unlabelledLookalike, over metadata changed rather than deleted', () => {
  const lookalike = (metadata: Record<string, string>) => unlabelledLookalike([adjustment(metadata)], 1_000, 'INC-1', 'usd', 0)?.id ?? null;

  it('takes a credit whose id was overwritten, or that had a key added, for possibly the effect\'s own', () => {
    expect(lookalike({ interlock_effect_id: 'see ticket SUP-4411', interlock_incident: 'INC-1' }), 'the id overwritten, the incident kept').toBe('cbtxn_1');
    expect(lookalike({ interlock_effect_id: 'f'.repeat(64), interlock_incident: 'INC-1' }), "another effect's id over it, the incident kept").toBe('cbtxn_1');
    expect(lookalike({ note: 'goodwill for the outage' }), 'the interlock keys cleared and a note added').toBe('cbtxn_1');
    expect(lookalike({ interlock_incident: 'INC-1', interlock_request: 'case-1', note: 'checked' }), 'the id cleared and a note added').toBe('cbtxn_1');
  });

  it("leaves billing's credit and one naming another incident alone, whatever else they carry", () => {
    expect(lookalike({ incident: 'INC-1', note: 'SLA' }), "billing's SLA credit").toBeNull();
    expect(lookalike({ interlock_effect_id: 'see ticket', interlock_incident: 'INC-2' }), 'another incident').toBeNull();
  });

  it('the premise read still counts a credit keeping the incident (it may be another effect\'s), so a first dispatch is refused on it', () => {
    const tagged = adjustment({ interlock_effect_id: 'see ticket SUP-4411', interlock_incident: 'INC-1' });
    expect(incidentCompensation([], [tagged], 'INC-1', 'e'.repeat(64), 1_000, 'usd', true).cents).toBe(1_000);
  });
});

const TIMING: Partial<Config> = { sendTimeoutMs: 1_000, settleMarginMs: 200, claimTtlMs: 2_500, heartbeatMs: 100, heartbeatTtlMs: 500, dedupMarginMs: 1_500 };
const suite = creditSuite('marker-changed', TIMING);

let count = 0;
/**
 * A credit of 1 000 cents landed by a worker that died before recording it, then `edit` of its metadata at Stripe, then
 * recovery passes by another worker until it settles. `window`: the target's dedup window (ms), to recover after
 * Stripe forgot the key.
 */
async function landedThenEdited(edit: Stripe.MetadataParam, window?: number): Promise<{ outcome: string | null; balance: number; reserved: number }> {
  count += 1;
  const credits = createCreditTarget(suite.open.client, { sendTimeoutMs: suite.config.sendTimeoutMs });
  const real: Target = window === undefined ? credits : { ...credits, dedupWindowMs: window };
  const dying: Target = {
    ...real,
    async apply(effectId, effect, context) {
      await credits.apply(effectId, effect, context);
      throw new ProcessCrash('after landing');
    },
  };
  const a = await suite.start(dying, `changed-a-${count}`);
  const b = await suite.start(real, `changed-b-${count}`);
  const customer = (await suite.open.stripe.customers.create({ name: `marker changed ${count}` })).id;
  const terms = approvalTerms({ id: `ap_credit_changed_${count}`, scope: `customer:${customer}`, capCents: 1_000, maxUses: 1 });
  await a.approvals.grant(terms);
  const proposal = { requestId: `case-credit-changed-${count}`, agent: 'support-bot', approval: terms.id, premises: { subscription_status: null, incident_compensation: 0 }, effect: { kind: 'credit', customer, amount: 1_000, incident: `INC-changed-${count}` } };
  const effectId = a.gate.effectIdOf(proposal);
  await expect(a.gate.submit(proposal)).rejects.toBeInstanceOf(ProcessCrash);
  await kill(a);
  const landed = (await suite.open.stripe.customers.listBalanceTransactions(customer)).data.find((t) => t.metadata?.['interlock_effect_id'] === effectId);
  if (landed === undefined) throw new Error('the credit did not land');
  await suite.open.stripe.customers.updateBalanceTransaction(customer, landed.id, { metadata: edit });
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

describe('the credit landed, then someone changed its metadata at Stripe', () => {
  it('interlock_effect_id overwritten with a ticket number, the incident kept: AMBIGUOUS with its cents held, not REFUSED', async () => {
    const result = await landedThenEdited({ interlock_effect_id: 'see ticket SUP-4411' });
    expect(result.balance, 'one credit at Stripe').toBe(-1_000);
    expect(result.outcome).toBe('AMBIGUOUS');
    expect(result.reserved, 'the approval holds the credit that landed').toBe(1_000);
  });

  it('the interlock keys cleared and a note added, recovered after Stripe forgot the key: AMBIGUOUS, no second credit', async () => {
    const result = await landedThenEdited({ interlock_effect_id: '', interlock_incident: '', interlock_request: '', note: 'goodwill for the outage' }, 3_000);
    expect(result.balance, 'the customer was credited once').toBe(-1_000);
    expect(result.outcome).toBe('AMBIGUOUS');
    expect(result.reserved).toBe(1_000);
  });
});
