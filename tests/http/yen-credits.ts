// What the credit-currency tests share: a support API whose credits are given in jpy and decided with their `currency`
// premise, and a credit of 5000 decided in jpy and refused at the send on other facts (a stale premise), which opens
// its inbox item. The facts a test then changes (credits given in usd now, a rolled-back change) are its own.
import { pino } from 'pino';
import request from 'supertest';
import type { Express } from 'express';
import { afterAll, beforeAll, expect } from 'vitest';
import { effectIdFor } from '../../src/interlock.js';
import { createApp } from '../../webhooks/app.js';
import { createItemMaker, type ItemMaker } from './inbox-items.js';
import { bearer, creditBody, startRig, tokenRegistry, TOKENS, uid, type Rig, type RigOptions } from './rig.js';
import { startedLater } from '../support/started-later.js';

/** Credits given in jpy (the item's currency for a credit decided without the premise), every kind decided on its currency. */
export const YEN_CREDITS: RigOptions = { config: { creditCurrency: 'jpy' }, deps: { premises: { refund: ['chargebacks', 'refunded_by_others', 'currency'], credit: ['subscription_status', 'incident_compensation', 'currency'] } } };

/** A customer's facts as the credit target reads them: active, uncompensated, billed in jpy, but for `overrides`. */
export const yenFacts = (overrides: Record<string, string | number>) => ({ subscription_status: 'active', incident_compensation: 0, currency: 'jpy', ...overrides });

/** A new approval on the customer (alex's, 20,000, five uses). */
export async function grantOn(rig: Rig, customer: string): Promise<string> {
  const approval = `ap_${uid()}`;
  const granted = await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send({ id: approval, approver: 'alex', cap_cents: 20_000, scope: `customer:${customer}`, max_uses: 5 });
  expect(granted.status, JSON.stringify(granted.body)).toBe(201);
  return approval;
}

/**
 * A credit of 5000 decided in jpy through `through` (the rig's app unless given), refused at the send on the facts
 * `then` (a stale premise): its customer, body, effect, item and approval.
 */
export async function refusedYenCredit(rig: Rig, make: ItemMaker, then: Record<string, string | number>, through: Express = rig.app) {
  const customer = `cus_${uid()}`;
  rig.target.world.set(`customer:${customer}`, yenFacts({}));
  const approval = await grantOn(rig, customer);
  const body = creditBody({ customer, amount: 5_000, incident: `INC-${uid()}`, approval });
  const proposed = await request(through).post('/v1/credits').set(bearer(TOKENS.support)).send(body);
  expect(proposed.status, JSON.stringify(proposed.body)).toBe(202);
  const effectId = effectIdFor({ requestId: String(body.request_id), effect: null });
  rig.target.world.set(`customer:${customer}`, yenFacts(then));
  expect(await make.submitLatest(effectId)).toBe('REFUSED:stale_premise');
  return { customer, body, effectId, item: `stale_premise:${effectId}`, approval };
}

/** The rig's API as an earlier version that decided credits without their currency premise (still given in jpy). */
export function appWithoutCurrency(rig: Rig): Express {
  return createApp({ stores: rig.stores, effects: rig.queue, decisions: rig.decisions, readFacts: (effect, names, context) => rig.target.readFacts(context.effectId, effect, names, { timeoutMs: context.timeoutMs }), premises: { refund: ['chargebacks', 'refunded_by_others'], credit: ['subscription_status', 'incident_compensation'] }, tokens: tokenRegistry(), logger: pino({ level: 'silent' }) });
}

/** A suite's rig giving credits in jpy (YEN_CREDITS) and its inbox item maker: started before its tests, closed after. */
export function yenCreditSuite(): { rig: Rig; make: ItemMaker } {
  let started: { rig: Rig; make: ItemMaker } | undefined;
  beforeAll(async () => {
    const rig = await startRig(YEN_CREDITS);
    started = { rig, make: await createItemMaker(rig) };
  }, 60_000);
  afterAll(async () => {
    await started?.make.close();
    await started?.rig.close();
  });
  return { rig: startedLater('rig', () => started?.rig), make: startedLater('item maker', () => started?.make) };
}
