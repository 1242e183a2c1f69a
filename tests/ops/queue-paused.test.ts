// Rule: P progress, and a person hears when it stops: a paused effects queue (BullMQ Queue.pause: the dashboard's
// Pause, `queue.pause()` in a script) records proposals and judges or sends none, so it is never silent. The
// interlock_queue_paused{queue} gauge reads 1 for it (0 for a queue that runs), /readyz says it (advisory: 200
// `degraded`, on the api's `queues` check and on the worker's `effects_worker` check), and an effects worker starting
// on a paused queue logs a warning. Before, the job waited unjudged, counted as `waiting`, and nothing said why.
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEffectsQueue, startEffectsWorker, type EffectsQueue, type EffectsWorker } from '../../queues/effects.js';
import { createMemoryTarget, openStores, startSender, type Stores } from '../../src/interlock.js';
import { queueCheck, readiness, workerChecks } from '../../webhooks/api/ops-routes.js';
import { createMetrics } from '../../webhooks/ops/metrics.js';
import { openOpsQueues, type OpsQueues } from '../../webhooks/ops/queues.js';
import { removePrefixes, testConfig, testKey } from '../support/harness.js';

const config = testConfig({ keyPrefix: `qp${randomBytes(6).toString('hex')}` });
const lines: { level: number; msg: string }[] = [];
const closers: (() => Promise<unknown>)[] = [];
let stores: Stores;
let producer: EffectsQueue;
let opsQueues: OpsQueues;
let effects: Queue;

beforeAll(async () => {
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim() !== '') lines.push(JSON.parse(line) as { level: number; msg: string });
      done();
    },
  });
  stores = await openStores(config, { logger: pino({ level: 'info' }, sink), signingKey: testKey().key });
  closers.push(async () => {
    await stores.close();
    await removePrefixes([config.keyPrefix]);
  });
  producer = createEffectsQueue(stores);
  closers.push(() => producer.close());
  opsQueues = openOpsQueues(stores);
  closers.push(() => opsQueues.close());
  const connection = new Redis(config.redisUrl, { maxRetriesPerRequest: null });
  effects = new Queue(stores.queues.effects, { connection, ...stores.bullmq });
  closers.push(async () => {
    await effects.close();
    connection.disconnect();
  });
});
afterAll(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

/** The value of one sample in Prometheus text, or undefined when absent. */
function sample(text: string, name: string, queue: string): number | undefined {
  const line = text.split('\n').find((each) => each.startsWith(`${name}{queue="${queue}"} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('a paused effects queue', () => {
  it('reads 1 on interlock_queue_paused, 0 once resumed and on the queues that run', async () => {
    const metrics = createMetrics({ stores, queues: opsQueues, defaultMetrics: false });
    await effects.pause();
    let text = (await metrics.render()).text;
    expect(text).toMatch(/# HELP interlock_queue_paused Whether each queue is paused/);
    expect(sample(text, 'interlock_queue_paused', 'effects')).toBe(1);
    expect(sample(text, 'interlock_queue_paused', 'facts')).toBe(0);
    expect(sample(text, 'interlock_queue_paused', 'decisions')).toBe(0);
    await effects.resume();
    text = (await metrics.render()).text;
    expect(sample(text, 'interlock_queue_paused', 'effects')).toBe(0);
  });

  it("makes the api's /readyz degraded, saying proposals are recorded but not sent; ready again once resumed", async () => {
    expect(await readiness([queueCheck(producer)])).toEqual({ status: 200, body: { status: 'ready', checks: [{ name: 'queues', ok: true, detail: null }] } });
    await effects.pause();
    const answer = await readiness([queueCheck(producer)]);
    expect(answer.status).toBe(200);
    expect(answer.body.status).toBe('degraded');
    expect(answer.body.checks).toEqual([{ name: 'queues', ok: false, advisory: true, detail: expect.stringMatching(/the effect queue is paused .*proposals are recorded but none is judged or sent until it is resumed/) }]);
    await effects.resume();
  });

  it("is logged by an effects worker starting on it, and makes the worker's /readyz degraded", async () => {
    await effects.pause();
    const target = createMemoryTarget({ tier: 1, sendTimeoutMs: config.sendTimeoutMs });
    const sender = await startSender(stores, target);
    closers.push(() => sender.close());
    const worker: EffectsWorker = startEffectsWorker(stores, sender);
    closers.push(() => worker.close(true));
    await Promise.all([worker.lookedAtQueue, worker.adopting]);
    expect(lines.filter((line) => line.level === 40 && /the effects queue is paused/.test(line.msg))).toHaveLength(1);
    const answer = await readiness(workerChecks({ heartbeat: null, workers: [{ name: 'effects', worker: worker.worker }] }));
    expect(answer.status).toBe(200);
    expect(answer.body.checks).toEqual([{ name: 'effects_worker', ok: false, advisory: true, detail: expect.stringMatching(/the effects queue is paused .*proposals are recorded but none is judged or sent/) }]);
    await effects.resume();
    expect((await readiness(workerChecks({ heartbeat: null, workers: [{ name: 'effects', worker: worker.worker }] }))).body.status).toBe('ready');
  }, 30_000);
});
