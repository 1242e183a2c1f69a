// Test wiring for cases end to end: the Stripe sandbox (fast delays) behind the real Stripe targets, stores on the
// machine's Redis under a random key prefix, the effects queue and worker, the decisions queue and worker, and the
// support API over them. The decider is switchable per test (the rules decider, the Anthropic decider against the
// local Messages API server, or a scripted one), and the proposal sink can be wrapped to inject a crash. A rig
// deletes only its own keys.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import type Stripe from 'stripe';
import type { Express } from 'express';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { createDecisionsQueue, startDecisionsWorker, type DecisionsQueue, type DecisionsWorker, type ProposalSink } from '../../queues/decisions.js';
import { createEffectsQueue, startEffectsWorker, type EffectsQueue, type EffectsWorker } from '../../queues/effects.js';
import { createDecider, CREDIT_FACTS, openStores, REFUND_FACTS, startSender, stripeSide, type CaseRecord, type Decider, type Sender, type Stores } from '../../src/interlock.js';
import { createApp } from '../../webhooks/app.js';
import { tokenRegistry } from '../http/rig.js';
import { pay, startStripeWorld, TEST_KEY, type StripeWorld } from '../stripe/stripe-support.js';
import { startMessagesServer, type MessagesServer } from '../decider/messages-server.js';
import { testConfig, testKey } from './harness.js';
import { startedLater } from './started-later.js';

export type CasesRig = {
  /** The key prefix its stores use (INTERLOCK_KEY_PREFIX for a CLI run against it). */
  prefix: string;
  world: StripeWorld;
  stripe: Stripe;
  stores: Stores;
  sender: Sender;
  effects: EffectsQueue;
  decisions: DecisionsQueue;
  app: Express;
  /** Decides every case from now on (default: the rules decider). */
  useDecider(decider: Decider): void;
  /** Wraps the proposal sink the decisions worker proposes through (crash injection); null restores it. */
  wrapSink(wrap: ((sink: ProposalSink) => ProposalSink) | null): void;
  /** Cases the deviation hook was called with. */
  deviations: CaseRecord[];
  /** A confirmed $100 payment with an approval of `capCents` on it. */
  paymentWithApproval(capCents?: number): Promise<{ paymentIntent: string; approval: string }>;
  /** The refunds Stripe (the sandbox) holds for a payment. */
  refundsAt(paymentIntent: string): Promise<Stripe.Refund[]>;
  /** Stops the decisions worker and starts a new one (a restart): at once, or (`force: false`) as a service stops. */
  restartDecisionsWorker(options?: { force?: boolean }): Promise<void>;
  close(): Promise<void>;
};

const keyPair = testKey();

/** The offline rules decider, as a process without ANTHROPIC_API_KEY builds it. */
export function rulesDecider(): Decider {
  return createDecider({ apiKey: null, model: 'unused', baseURL: null, maxTokens: 1024, timeoutMs: 1_000, maxRetries: 0, maxTurns: 4 });
}

/** The Anthropic decider through the real SDK, pointed at a local Messages API server, with no SDK retries. */
export function modelDecider(server: MessagesServer): Decider {
  return createDecider({ apiKey: 'sk-ant-test-key', model: 'claude-haiku-4-5-20251001', baseURL: server.url, maxTokens: 1024, timeoutMs: 2_000, maxRetries: 0, maxTurns: 4 });
}

/**
 * A cases rig and a local Messages API server for one test file, started before its tests and closed after them:
 * `const { rig, server } = casesSuite();` at the file's top. After each test the rules decider and the plain proposal
 * sink are back, and the server must have had only requests the real API accepts and no reply unasked for.
 */
export function casesSuite(): { rig: CasesRig; server: MessagesServer } {
  let rig: CasesRig | undefined;
  let server: MessagesServer | undefined;
  beforeAll(async () => {
    [rig, server] = await Promise.all([startCasesRig(), startMessagesServer()]);
  });
  afterAll(async () => {
    await Promise.all([rig?.close(), server?.close()]);
  });
  afterEach(() => {
    rig?.useDecider(rulesDecider());
    rig?.wrapSink(null);
    const problems = [...(server?.problems ?? [])];
    const unused = server?.unused() ?? 0;
    server?.reset();
    expect(problems).toEqual([]);
    expect(unused).toBe(0);
  });
  return { rig: startedLater('cases rig', () => rig), server: startedLater('Messages API server', () => server) };
}

export async function startCasesRig(): Promise<CasesRig> {
  const world = await startStripeWorld();
  const config = testConfig({ keyPrefix: `tc${randomBytes(6).toString('hex')}`, stripeSecretKey: TEST_KEY, stripeApiBase: world.sandbox.url, sendTimeoutMs: 2_000, claimTtlMs: 5_000 });
  const side = stripeSide(config);
  const stores = await openStores(config, { logger: pino({ level: 'silent' }), signingKey: keyPair.key });
  const sender = await startSender(stores, side.target);
  const effects = createEffectsQueue(stores, { backoffMs: 50 });
  const effectsWorker: EffectsWorker = startEffectsWorker(stores, sender, { concurrency: 4 });
  const decisions = createDecisionsQueue(stores, { backoffMs: 50, attempts: 3 });
  let decider: Decider = rulesDecider();
  let wrap: ((sink: ProposalSink) => ProposalSink) | null = null;
  const deviations: CaseRecord[] = [];
  const readFacts = (effect: Parameters<typeof side.target.readFacts>[1], names: readonly string[], context: { effectId: string; timeoutMs: number }) => side.target.readFacts(context.effectId, effect, names, { timeoutMs: context.timeoutMs });
  const premises = { refund: REFUND_FACTS, credit: CREDIT_FACTS };
  const start = () =>
    startDecisionsWorker(stores, {
      decider: { name: 'rules', decide: (input, options) => decider.decide(input, options) },
      effects: { propose: (proposal, how) => (wrap === null ? effects : wrap(effects)).propose(proposal, how) },
      readFacts,
      premises,
      concurrency: 2,
      onDeviation: (record) => {
        deviations.push(record);
      },
    });
  let decisionsWorker: DecisionsWorker = start();
  const app = createApp({ stores, effects, decisions, readFacts: (effect, names, context) => readFacts(effect, names, context), premises, tokens: tokenRegistry(), logger: pino({ level: 'silent' }) });
  return {
    prefix: config.keyPrefix,
    world,
    stripe: world.stripe,
    stores,
    sender,
    effects,
    decisions,
    app,
    deviations,
    useDecider(next) {
      decider = next;
    },
    wrapSink(next) {
      wrap = next;
    },
    async paymentWithApproval(capCents = 2_000) {
      const { paymentIntent } = await pay(world.stripe);
      const approval = `ap_${randomBytes(5).toString('hex')}`;
      await stores.approvals.grant({ id: approval, approver: 'support-lead', capCents, scope: `payment:${paymentIntent}`, expiresAt: Date.now() + 3_600_000, maxUses: 1 });
      return { paymentIntent, approval };
    },
    async refundsAt(paymentIntent) {
      return (await world.stripe.refunds.list({ payment_intent: paymentIntent, limit: 100 })).data;
    },
    async restartDecisionsWorker(options = {}) {
      await decisionsWorker.close(options.force ?? true);
      decisionsWorker = start();
    },
    async close() {
      await decisionsWorker.close(true);
      await effectsWorker.close(true);
      await decisions.close();
      await effects.close();
      await sender.close();
      await stores.close();
      await world.close();
      const redis = new Redis(config.redisUrl);
      for (const pattern of [`${config.keyPrefix}:*`, `{${config.keyPrefix}-queues}:*`]) {
        const stale = await redis.keys(pattern);
        for (let i = 0; i < stale.length; i += 500) await redis.del(...stale.slice(i, i + 500));
      }
      await redis.quit();
    },
  };
}
