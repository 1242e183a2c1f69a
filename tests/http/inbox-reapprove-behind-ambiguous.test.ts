// Rule: a re-approval the gate would refuse at once is refused before its item closes, naming what stands in the way
// (as for a credit whose incident another credit holds): a refund refused behind an AMBIGUOUS refund on its payment
// (REFUNDS_HOLD) is not re-approved until that one is resolved. It was: the item closed, and the new request was
// refused at once for the same reason. A refund that held the payment in flight and committed while the re-approval
// read it is no AMBIGUOUS one: that re-approval goes through.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDecisionsQueue } from '../../queues/decisions.js';
import { createEffectsQueue, type EffectsQueue } from '../../queues/effects.js';
import { createMemoryTarget, effectIdFor, latestProposal, openStores, settledOutcome, startSender, type Config, type MemoryTarget, type Sender, type Stores } from '../../src/interlock.js';
import { createApp } from '../../webhooks/app.js';
import { bearer, tokenRegistry, TOKENS } from './rig.js';
import { testConfig, testKey } from '../support/harness.js';

let config: Config;
let stores: Stores;
let target: MemoryTarget;
let sender: Sender;
let queue: EffectsQueue;
let app: ReturnType<typeof createApp>;
let closeDecisions: () => Promise<void>;
/** Runs once between the hold read and the state read of a re-approval, when set (an interleaving under test). */
let between: (() => Promise<void>) | null = null;

beforeAll(async () => {
  config = testConfig({ keyPrefix: `reapprove-ambiguous-${randomBytes(4).toString('hex')}`, sendTimeoutMs: 600, settleMarginMs: 150, claimTtlMs: 2_000, heartbeatMs: 100, heartbeatTtlMs: 500 });
  stores = await openStores(config, { logger: pino({ level: 'silent' }), signingKey: testKey().key });
  target = createMemoryTarget({ tier: 3, sendTimeoutMs: config.sendTimeoutMs, movedBySends: ['refunded_by_others'] });
  sender = await startSender(stores, target, { workerId: 'rv-t3' });
  queue = createEffectsQueue(stores, { backoffMs: 50 });
  const decisions = createDecisionsQueue(stores);
  closeDecisions = () => decisions.close();
  const journal = stores.journal as { onceHolder: (partition: string, hold: string) => Promise<string | null> };
  const read = journal.onceHolder.bind(journal);
  journal.onceHolder = async (partition, hold) => {
    const holder = await read(partition, hold);
    if (between !== null) await between();
    return holder;
  };
  app = createApp({ stores, effects: queue, decisions, readFacts: (effect, names, context) => target.readFacts(context.effectId, effect, names, { timeoutMs: context.timeoutMs }), tokens: tokenRegistry(), logger: pino({ level: 'silent' }) });
});
afterAll(async () => {
  await sender?.close();
  await queue?.close();
  await closeDecisions?.();
  await stores?.close();
  const redis = new Redis(config.redisUrl);
  for (const pattern of [`${config.keyPrefix}:*`, `{${config.keyPrefix}-queues}:*`]) {
    const stale = await redis.keys(pattern);
    if (stale.length > 0) await redis.del(...stale);
  }
  await redis.quit();
});

async function grant(pi: string): Promise<string> {
  const id = `ap_${randomBytes(5).toString('hex')}`;
  expect((await request(app).post('/v1/approvals').set(bearer(TOKENS.approver)).send({ id, approver: 'alex', cap_cents: 5_000, scope: `payment:${pi}`, max_uses: 5 })).status).toBe(201);
  return id;
}

async function propose(pi: string): Promise<string> {
  const body = { request_id: `case-${randomBytes(5).toString('hex')}`, payment_intent: pi, amount: 2_000, approval: await grant(pi), reason: 'requested_by_customer' };
  expect((await request(app).post('/v1/refunds').set(bearer(TOKENS.support)).send(body)).status).toBe(202);
  return effectIdFor({ requestId: body.request_id, effect: null });
}

describe('a refund refused behind an AMBIGUOUS refund on its payment', () => {
  it('is not re-approved (closing its item) while the AMBIGUOUS one still holds the payment', async () => {
    const pi = `pi_${randomBytes(5).toString('hex')}`;
    target.world.set(`payment:${pi}`, { chargebacks: [], refunded_by_others: 0 });
    const holder = await propose(pi);
    target.inject({ kind: 'error-before-send' });
    expect((await sender.gate.submit(await latestProposal(stores, holder))).outcome).toBe('IN_FLIGHT');
    for (let pass = 0; pass < 40 && (await settledOutcome(stores, holder)) !== 'AMBIGUOUS'; pass += 1) {
      await sender.gate.recover();
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(await settledOutcome(stores, holder)).toBe('AMBIGUOUS');

    const refused = await propose(pi);
    const answer = await sender.gate.submit(await latestProposal(stores, refused));
    expect(answer.outcome).toBe('REFUSED:stale_premise');
    const item = `stale_premise:${refused}`;
    const shown = await request(app).get(`/v1/inbox/${item}`).set(bearer(TOKENS.approver));
    expect(shown.status).toBe(200);
    expect(shown.body.actions).toContain('reapprove');

    // The approver re-approves the refused refund while the AMBIGUOUS one is still unresolved.
    const reapproved = await request(app).post(`/v1/inbox/${item}/reapprove`).set(bearer(TOKENS.danaApprover)).send({ approval: await grant(pi), note: 'refund anyway' });
    const closedAs = (await stores.inbox.get(item))?.closure?.action ?? null;
    expect({ status: reapproved.status, closedAs }).toEqual({ status: 400, closedAs: null });
    expect(reapproved.body.error?.message).toContain(`refund ${holder} on payment:${pi} is AMBIGUOUS`);
  });

  it('is re-approved when the refund holding the payment was in flight and committed while the re-approval read it', async () => {
    const pi = `pi_${randomBytes(5).toString('hex')}`;
    target.world.set(`payment:${pi}`, { chargebacks: [], refunded_by_others: 0 });
    // A refund refused on a stale premise (a chargeback appeared after it was decided): its item offers reapprove. The
    // chargeback stays: the item shows it, and a re-approval stands on the facts the item showed (facts_changed).
    const refused = await propose(pi);
    target.world.set(`payment:${pi}`, { chargebacks: ['dp_1'], refunded_by_others: 0 });
    expect((await sender.gate.submit(await latestProposal(stores, refused))).outcome).toBe('REFUSED:stale_premise');
    const item = `stale_premise:${refused}`;
    expect((await stores.inbox.get(item))?.actions).toContain('reapprove');

    // Another refund on the payment goes out slowly: it holds REFUNDS_HOLD while in flight, then lands and lets go.
    const inFlight = await propose(pi);
    target.inject({ kind: 'slow-send', delayMs: 400 });
    const sending = sender.gate.submit(await latestProposal(stores, inFlight));
    for (let i = 0; i < 100 && (await stores.journal.onceHolder(`payment:${pi}`, 'refunds')) !== inFlight; i += 1) await new Promise((r) => setTimeout(r, 10));
    expect(await stores.journal.onceHolder(`payment:${pi}`, 'refunds')).toBe(inFlight);

    // The re-approval reads the hold while the holder is in flight; the holder commits before the state is read.
    between = async () => {
      between = null;
      expect((await sending).outcome).toBe('COMMITTED');
    };
    const reapproved = await request(app).post(`/v1/inbox/${item}/reapprove`).set(bearer(TOKENS.danaApprover)).send({ approval: await grant(pi), note: 'refund anyway' });
    expect(between).toBeNull(); // the re-approval read the hold while the holder was in flight
    expect(await settledOutcome(stores, inFlight)).toBe('COMMITTED');
    expect({ status: reapproved.status, message: reapproved.body.error?.message ?? null }).toEqual({ status: 202, message: null });
  });
});
