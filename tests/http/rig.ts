// Test wiring for the support API: stores on the machine's Redis under a random key prefix (and so a random BullMQ
// prefix), the memory target as the fact reader, the real effects queue, and, when a test needs effects to settle,
// a sender and an effects worker. One token per role, and a few more names for four-eyes tests. Nothing is flushed:
// a rig deletes only its own keys.
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { Redis } from 'ioredis';
import { pino, type Logger } from 'pino';
import type { Express } from 'express';
import request from 'supertest';
import { afterAll, beforeAll, expect } from 'vitest';
import { createDecisionsQueue, type DecisionsQueue } from '../../queues/decisions.js';
import { createEffectsQueue, startEffectsWorker, type EffectsQueue, type EffectsWorker } from '../../queues/effects.js';
import { createFactsQueue, startFactsWorker, type FactsQueue } from '../../queues/facts.js';
import { createFacts, createMemoryTarget, createWebhookVerifier, openStores, startSender, type Config, type MemoryTarget, type Sender, type SigningKey, type Stores } from '../../src/interlock.js';
import { createApp, createMetrics, createTokenRegistry, openOpsQueues, type AppDeps, type Metrics, type Role } from '../../webhooks/app.js';
import { stripeWebhookRouter } from '../../webhooks/stripe-route.js';
import { testConfig, testKey } from '../support/harness.js';
import { startedLater } from '../support/started-later.js';

export const TOKENS = {
  support: 'itk_support_0123456789abcdef',
  approver: 'itk_approver_0123456789abcdef',
  auditor: 'itk_auditor_0123456789abcdef',
  operator: 'itk_operator_0123456789abcdef',
  /** dana holds two roles, one token each: the four-eyes case. */
  danaApprover: 'itk_dana_approver_0123456789',
  danaSupport: 'itk_dana_support_0123456789a',
} as const;

export const ROLE_TOKENS: Record<Role, string> = { support: TOKENS.support, approver: TOKENS.approver, auditor: TOKENS.auditor, operator: TOKENS.operator };

export const tokenRegistry = () =>
  createTokenRegistry([
    { name: 'sam', role: 'support', token: TOKENS.support },
    { name: 'alex', role: 'approver', token: TOKENS.approver },
    { name: 'aud', role: 'auditor', token: TOKENS.auditor },
    { name: 'ops', role: 'operator', token: TOKENS.operator },
    { name: 'dana', role: 'approver', token: TOKENS.danaApprover },
    { name: 'dana', role: 'support', token: TOKENS.danaSupport },
  ]);

export const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

export type Rig = {
  app: Express;
  stores: Stores;
  target: MemoryTarget;
  queue: EffectsQueue;
  /** The decisions queue POST /v1/cases submits to (no decisions worker runs in this rig). */
  decisions: DecisionsQueue;
  sender: Sender | null;
  worker: EffectsWorker | null;
  redis: Redis;
  /** The metrics registry wired into the worker, the gate, the webhook route and the facts worker (`metrics: true`). */
  metrics: Metrics | null;
  /** The facts queue the webhook route adds to (`webhookSecret`). */
  facts: FactsQueue | null;
  /** Every log line the app wrote, as parsed JSON. */
  logs: Record<string, unknown>[];
  logText(): string;
  /** Whether Redis holds any trace of this effect id (its binding to a subject). */
  hasEffect(effectId: string): Promise<boolean>;
  effectCount(): Promise<number>;
  close(): Promise<void>;
};

const keyPair = testKey();

export type RigOptions = {
  worker?: boolean;
  concurrency?: number;
  deps?: Partial<AppDeps>;
  /** Metrics (GET /metrics) and the queue dashboard, wired as the composition root wires them. */
  metrics?: boolean;
  /** Mounts POST /webhooks/stripe verified with this secret, with the facts queue and a facts worker (no re-reads). */
  webhookSecret?: string;
  /** Settings over the test defaults (a private Redis, a shorter Redis timeout). */
  config?: Partial<Config>;
  /** The key this rig signs with (default: one key shared by every rig of the process); another is a rotation. */
  signingKey?: SigningKey;
};

export async function startRig(options: RigOptions = {}): Promise<Rig> {
  const config = testConfig({ keyPrefix: `th${randomBytes(6).toString('hex')}`, ...options.config });
  const target = createMemoryTarget({ tier: 1, sendTimeoutMs: config.sendTimeoutMs });
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString('utf8').split('\n').filter((line) => line !== ''));
      done();
    },
  });
  const logger: Logger = pino({ level: 'info' }, sink);
  const stores = await openStores(config, { logger: pino({ level: 'silent' }), signingKey: options.signingKey ?? keyPair.key });
  const queue = createEffectsQueue(stores, { backoffMs: 50 });
  const decisions = createDecisionsQueue(stores);
  const opsQueues = options.metrics ? openOpsQueues(stores) : null;
  const metrics = options.metrics ? createMetrics({ stores, queues: opsQueues }) : null;
  const sender = options.worker ? await startSender(stores, target, metrics ? { events: metrics.gateEvents } : {}) : null;
  const worker = sender ? startEffectsWorker(stores, sender, { concurrency: options.concurrency ?? 8, ...(metrics ? { onAnswer: (answer) => metrics.effectAnswered(answer) } : {}) }) : null;
  const webhookSecret = options.webhookSecret;
  const factsQueue = webhookSecret === undefined ? null : createFactsQueue(stores);
  const factsWorker = webhookSecret === undefined ? null : startFactsWorker(stores, createFacts(stores, null, { rereadBeforeAppend: false }), metrics ? { onApplied: (event, applied) => metrics.factsApplied(event, applied) } : {});
  const app = createApp({
    stores,
    effects: queue,
    decisions,
    readFacts: (effect, names, context) => target.readFacts(context.effectId, effect, names, { timeoutMs: context.timeoutMs }),
    tokens: tokenRegistry(),
    logger,
    ...(metrics && opsQueues ? { metrics, queues: opsQueues } : {}),
    ...(webhookSecret !== undefined && factsQueue !== null
      ? { mount: (mounted: Express) => mounted.use(stripeWebhookRouter({ verify: createWebhookVerifier([webhookSecret]), accept: (event) => factsQueue.accept(event), ...(metrics ? { onOutcome: (outcome, detail) => metrics.webhookOutcome(outcome, detail) } : {}) })) }
      : {}),
    ...options.deps,
  });
  const redis = new Redis(config.redisUrl);
  return {
    app,
    stores,
    target,
    queue,
    decisions,
    sender,
    worker,
    redis,
    metrics,
    facts: factsQueue,
    get logs() {
      return lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    },
    logText: () => lines.join('\n'),
    hasEffect: async (effectId) => (await redis.hexists(stores.keys.effectPartitions, effectId)) === 1,
    effectCount: async () => redis.hlen(stores.keys.effectPartitions),
    async close() {
      await worker?.close(true);
      await factsWorker?.close();
      await factsQueue?.close();
      await opsQueues?.close();
      await queue.close();
      await decisions.close();
      await sender?.close();
      await stores.close();
      for (const pattern of [`${config.keyPrefix}:*`, `{${config.keyPrefix}-queues}:*`]) {
        const stale = await redis.keys(pattern);
        for (let i = 0; i < stale.length; i += 500) await redis.del(...stale.slice(i, i + 500));
      }
      await redis.quit();
    },
  };
}

/**
 * A rig for one test file, or one describe block, started before its tests and closed after them:
 * `const rig = rigSuite({ worker: true });` where the hooks would go. Hooks registered after it see the rig started,
 * and their afterAll runs before it closes; the returned rig is a stand-in, so do not compare it or reassign it.
 */
export function rigSuite(options: RigOptions = {}): Rig {
  let rig: Rig | undefined;
  beforeAll(async () => {
    rig = await startRig(options);
  }, 60_000);
  afterAll(async () => {
    await rig?.close();
  });
  return startedLater('rig', () => rig);
}

export const uid = () => randomBytes(5).toString('hex');

/** A refund body for payment `pi`, under `approval`. */
export function refundBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { request_id: `case-${uid()}`, payment_intent: 'pi_1', amount: 2_000, approval: 'ap_none', reason: 'requested_by_customer', ...overrides };
}

export function creditBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { request_id: `case-${uid()}`, customer: 'cus_1', amount: 500, incident: 'inc_1', approval: 'ap_none', ...overrides };
}

/** A case body for payment `pi`, under `approval`. */
export function caseBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { case_id: `case-${uid()}`, payment_intent: 'pi_1', story: 'The jar arrived cracked; support approved a goodwill refund.', approval: 'ap_none', ...overrides };
}

export function approvalBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { id: `ap_${uid()}`, approver: 'alex', cap_cents: 5_000, scope: 'payment:pi_1', max_uses: 5, ...overrides };
}

/**
 * A refund proposed under a four-eyes approval `approver` was granted (by the approver token) on a payment of its own,
 * by the support token with `agent` as its proposer: the four-eyes tests' one question, whether the two names are one
 * person (403 four_eyes) or two (202).
 */
export async function proposeUnderFourEyes(rig: Rig, approver: string, agent: string): Promise<request.Response> {
  const pi = `pi_${uid()}`;
  rig.target.world.set(`payment:${pi}`, { chargebacks: [], refunded_by_others: 0 });
  const approval = approvalBody({ scope: `payment:${pi}`, approver, four_eyes: true });
  const granted = await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.danaApprover)).send(approval);
  expect(granted.status, JSON.stringify(granted.body)).toBe(201);
  return request(rig.app).post('/v1/refunds').set(bearer(TOKENS.support)).send(refundBody({ payment_intent: pi, approval: approval.id, agent }));
}
