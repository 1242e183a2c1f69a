// Rule (README "What the contract rests on", INTERLOCK_REDIS_MIN_REPLICAS; DESIGN §3/§8 facts): Stripe, answered 200,
// never delivers an event again, so with INTERLOCK_REDIS_MIN_REPLICAS=N the webhook route answers 200 (queued or
// duplicate) only once N replicas of the master hold what the answer rests on: the event's job, or, for a duplicate
// whose job is gone, its marker. While they do not, it answers 503 (redis_not_durable), so Stripe delivers the event
// again, and that delivery waits for the replicas again before its 200. With N = 0 nothing waits.
import { randomBytes } from 'node:crypto';
import express from 'express';
import type { Redis } from 'ioredis';
import { pino } from 'pino';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFactsQueue, type FactsQueue } from '../../queues/facts.js';
import { createWebhookVerifier, openStores, signWebhookBody, type Stores } from '../../src/interlock.js';
import { stripeWebhookRouter, type WebhookOutcome } from '../../webhooks/stripe-route.js';
import { startReplicatedPair, type ReplicatedPair } from '../redis/replicated-pair.js';
import { testConfig, testKey } from '../support/harness.js';
import { newSecret } from './facts-rig.js';

let pair: ReplicatedPair;

beforeAll(async () => {
  pair = await startReplicatedPair();
}, 60_000);

afterAll(async () => {
  await pair?.stop();
}, 60_000);

const waitsServed = async (redis: Redis) => Number(/cmdstat_wait:calls=(\d+)/.exec(String(await redis.info('commandstats')))?.[1] ?? 0);

/**
 * The route on a facts queue of its own, on the pair's master, waiting for `minReplicas` replicas up to 2 s: a healthy
 * replica acknowledges within milliseconds, but on a loaded machine a first WAIT (its connection made on the way) took
 * over the 500 ms this file once gave it, and a delivery the replica held was answered 503.
 */
async function intake(minReplicas: number) {
  const config = testConfig({ redisUrl: pair.primary.url, redisMinReplicas: minReplicas, redisWaitMs: 2_000, keyPrefix: `ri${randomBytes(5).toString('hex')}` });
  const stores: Stores = await openStores(config, { logger: pino({ level: 'silent' }), signingKey: testKey().key });
  const queue: FactsQueue = createFactsQueue(stores);
  await queue.queue.waitUntilReady();
  const secret = newSecret();
  const outcomes: WebhookOutcome[] = [];
  const app = express().use(stripeWebhookRouter({ verify: createWebhookVerifier([secret]), accept: (event) => queue.accept(event), onOutcome: (outcome) => outcomes.push(outcome) }));
  const deliver = async (id: string) => {
    const body = JSON.stringify({ id, object: 'event', type: 'refund.failed', created: Math.floor(Date.now() / 1000), livemode: false, data: { object: { id: 're_1', object: 'refund', status: 'failed' } } });
    const answer = await request(app).post('/webhooks/stripe').set('stripe-signature', signWebhookBody(body, secret)).set('content-type', 'application/json').send(body);
    return { status: answer.status, code: (answer.body as { error?: { code?: string } }).error?.code ?? null, outcome: outcomes.at(-1) };
  };
  return {
    stores,
    queue,
    deliver,
    async close() {
      await queue.close();
      await stores.close();
    },
  };
}

/** Runs `work` with the replica stopped (a stalled host): it takes nothing more and acknowledges nothing. */
async function replicaStopped<T>(work: () => Promise<T>): Promise<T> {
  pair.replica.process.kill('SIGSTOP');
  try {
    return await work();
  } finally {
    pair.replica.process.kill('SIGCONT');
  }
}

describe('the webhook route under INTERLOCK_REDIS_MIN_REPLICAS=1', () => {
  it('answers 200 once the replica holds the job, 503 (redis_not_durable) while it does not, and 200 to the redelivery once it does', async () => {
    const rig = await intake(1);
    try {
      const held = `evt_${randomBytes(8).toString('hex')}`;
      const first = await rig.deliver(held);
      const onReplicaFirst = await pair.onReplica.exists(rig.queue.queue.toKey(held));

      const behind = `evt_${randomBytes(8).toString('hex')}`;
      const [refused, redelivered] = await replicaStopped(async () => [await rig.deliver(behind), await rig.deliver(behind)]);
      // The replica back: Stripe's next delivery finds the job queued, and is answered once the replica holds it.
      const later = await rig.deliver(behind);
      expect({
        first,
        onReplicaFirst,
        refused,
        redelivered,
        queuedOnMaster: await pair.onPrimary.exists(rig.queue.queue.toKey(behind)),
        later,
        onReplicaLater: await pair.onReplica.exists(rig.queue.queue.toKey(behind)),
      }).toEqual({
        first: { status: 200, code: null, outcome: 'queued' },
        onReplicaFirst: 1,
        refused: { status: 503, code: 'redis_not_durable', outcome: 'unavailable' },
        redelivered: { status: 503, code: 'redis_not_durable', outcome: 'unavailable' },
        queuedOnMaster: 1,
        later: { status: 200, code: null, outcome: 'duplicate' },
        onReplicaLater: 1,
      });
    } finally {
      await rig.close();
    }
  }, 60_000);

  it('answers a duplicate whose job is gone once the replica holds its marker, and 503 while it does not', async () => {
    const rig = await intake(1);
    try {
      const id = `evt_${randomBytes(8).toString('hex')}`;
      expect((await rig.deliver(id)).status).toBe(200);
      // The job completed and was removed since (completed jobs are kept up to a count): only its marker is left.
      await rig.queue.queue.remove(id);
      const refused = await replicaStopped(() => rig.deliver(id));
      const later = await rig.deliver(id);
      expect({ refused, later, job: await pair.onPrimary.exists(rig.queue.queue.toKey(id)), markerOnReplica: await pair.onReplica.exists(rig.stores.keys.eventQueued(id)) }).toEqual({
        refused: { status: 503, code: 'redis_not_durable', outcome: 'unavailable' },
        later: { status: 200, code: null, outcome: 'duplicate' },
        job: 0,
        markerOnReplica: 1,
      });
    } finally {
      await rig.close();
    }
  }, 60_000);

  it('waits for no replica when INTERLOCK_REDIS_MIN_REPLICAS is 0, even with the replica stopped', async () => {
    const rig = await intake(0);
    try {
      const id = `evt_${randomBytes(8).toString('hex')}`;
      const waitsBefore = await waitsServed(pair.onPrimary);
      const answers = await replicaStopped(async () => [await rig.deliver(id), await rig.deliver(id)]);
      expect({ answers, waits: (await waitsServed(pair.onPrimary)) - waitsBefore }).toEqual({
        answers: [
          { status: 200, code: null, outcome: 'queued' },
          { status: 200, code: null, outcome: 'duplicate' },
        ],
        waits: 0,
      });
    } finally {
      await rig.close();
    }
  }, 60_000);
});
