// Rule (issue 13 §1): with INTERLOCK_OTEL on, every BullMQ queue and worker of the service reports OpenTelemetry
// spans (a job added, a job processed) to the tracer provider the process registered; off, the default, the queues
// get no telemetry at all and nothing is recorded.
import { randomBytes } from 'node:crypto';
import { trace } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEffectsQueue, startEffectsWorker } from '../../queues/effects.js';
import { createMemoryTarget, openStores, startSender } from '../../src/interlock.js';
import { approvalTerms, refundProposal, testConfig, testKey } from '../support/harness.js';

const exporter = new InMemorySpanExporter();
const prefixes: string[] = [];
beforeAll(() => {
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
});
afterAll(async () => {
  trace.disable();
  const redis = new Redis(testConfig().redisUrl);
  for (const prefix of prefixes) {
    for (const pattern of [`${prefix}:*`, `{${prefix}-queues}:*`]) {
      const stale = await redis.keys(pattern);
      if (stale.length > 0) await redis.del(...stale);
    }
  }
  await redis.quit();
});

/** Sends one refund through the effects queue and a worker, with INTERLOCK_OTEL as given. */
async function oneRefund(otel: boolean): Promise<{ telemetry: boolean }> {
  const prefix = `ot${randomBytes(5).toString('hex')}`;
  prefixes.push(prefix);
  const config = { ...testConfig({ keyPrefix: prefix }), otel };
  const stores = await openStores(config, { logger: pino({ level: 'silent' }), signingKey: testKey().key });
  const target = createMemoryTarget({ tier: 1, sendTimeoutMs: config.sendTimeoutMs });
  target.world.set('payment:pi_1', { chargebacks: [], refunded_by_others: 0 });
  const sender = await startSender(stores, target);
  const queue = createEffectsQueue(stores);
  const worker = startEffectsWorker(stores, sender, { concurrency: 1 });
  try {
    const terms = approvalTerms();
    await stores.approvals.grant(terms);
    const { effectId } = await queue.propose(refundProposal({ approval: terms.id }));
    expect(await queue.waitFor(effectId, 10_000)).toMatchObject({ outcome: 'COMMITTED' });
    return { telemetry: stores.bullmq.telemetry !== undefined };
  } finally {
    await worker.close(true);
    await queue.close();
    await sender.close();
    await stores.close();
  }
}

describe('OpenTelemetry for the queues (INTERLOCK_OTEL)', () => {
  it('off by default: the queues get no telemetry and no span is recorded', async () => {
    expect(testConfig().otel).toBe(false);
    exporter.reset();
    expect(await oneRefund(false)).toEqual({ telemetry: false });
    expect(exporter.getFinishedSpans()).toEqual([]);
  });

  it('on: the effect job\'s add and its processing are spans, named after the effects queue', { timeout: 30_000 }, async () => {
    exporter.reset();
    expect(await oneRefund(true)).toEqual({ telemetry: true });
    const giveUp = Date.now() + 5_000;
    while (exporter.getFinishedSpans().length < 2 && Date.now() < giveUp) await new Promise((resolve) => setTimeout(resolve, 20));
    const names = exporter.getFinishedSpans().map((span) => span.name);
    expect(names.some((name) => /add/.test(name) && /effects/.test(name)), names.join(', ')).toBe(true);
    expect(names.some((name) => /process/.test(name) && /effects/.test(name)), names.join(', ')).toBe(true);
  });
});
