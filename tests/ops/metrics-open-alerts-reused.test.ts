// Rule: a /metrics scrape (served without a token on INTERLOCK_METRICS_ADDR) cannot make the process count the open
// alerts more often than once every 5 s once there are more than one read's worth (500): the scrapes in between answer
// the last count, so scraping in a loop reads no open-alert id. With 500 or fewer open, each scrape counts them afresh
// (one command). Every scrape used to read every open alert's id, 500 a round trip, however often it came.
import { randomBytes } from 'node:crypto';
import { Redis, type Command } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStores, type Stores } from '../../src/interlock.js';
import { createMetrics } from '../../webhooks/ops/metrics.js';
import { removePrefixes, testConfig, testKey } from '../support/harness.js';

const config = testConfig();
const redis = new Redis(config.redisUrl);
let stores: Stores;

/** Open-alert ids read from the open-alerts index (ZREVRANGEBYSCORE replies on it). */
let idsRead = 0;
const send = redis.sendCommand.bind(redis);
redis.sendCommand = ((command: Command, ...rest: unknown[]) => {
  const { name, args } = command as unknown as { name: string; args: unknown[] };
  if (name === 'zrevrangebyscore' && stores !== undefined && args[0] === stores.keys.alertsOpen) {
    void (command as unknown as { promise: Promise<unknown> }).promise.then(
      (reply) => {
        if (Array.isArray(reply)) idsRead += args.includes('WITHSCORES') ? reply.length / 2 : reply.length;
      },
      () => undefined,
    );
  }
  return (send as (...all: unknown[]) => unknown)(command, ...rest);
}) as Redis['sendCommand'];

beforeAll(async () => {
  stores = await openStores(config, { logger: pino({ level: 'silent' }), signingKey: testKey().key, redis });
});

afterAll(async () => {
  await stores.close();
  await redis.quit();
  await removePrefixes([config.keyPrefix]);
});

const effectId = () => randomBytes(32).toString('hex');
const raise = (kind: 'exposure' | 'not_judged') => stores.alerts.raise({ kind, effectId: effectId(), subject: 'payment:pi_metrics', centsAtStake: 100, refund: null, disputes: [], sentence: 's', action: 'a' });

function gauge(text: string, kind: string): number | undefined {
  const line = text.split('\n').find((one) => one.startsWith(`interlock_alerts_open{kind="${kind}"} `));
  return line === undefined ? undefined : Number(line.split(' ')[1]);
}

/**
 * One scrape: the gauge's exposure and not_judged counts, and whether it read the open alerts' ids (`counted`: each of
 * the `open` alerts' at least; a batch's first id may be read twice) or none (false).
 */
async function scrape(metrics: ReturnType<typeof createMetrics>, open: number) {
  idsRead = 0;
  const { text } = await metrics.render();
  expect(idsRead === 0 || idsRead >= open, `${idsRead} ids read of ${open} open`).toBe(true);
  return { exposure: gauge(text, 'exposure'), notJudged: gauge(text, 'not_judged'), counted: idsRead > 0 };
}

describe('the open-alerts gauge', () => {
  it('counts a few open alerts afresh at every scrape', async () => {
    const now = 1_000;
    const metrics = createMetrics({ stores, defaultMetrics: false, clock: () => now });
    await raise('exposure');
    expect(await scrape(metrics, 1)).toEqual({ exposure: 1, notJudged: 0, counted: true });
    await raise('exposure');
    expect(await scrape(metrics, 2)).toEqual({ exposure: 2, notJudged: 0, counted: true });
  });

  it('counts more than 500 open alerts at most once every 5 s, however often it is scraped', async () => {
    let now = 1_000;
    const metrics = createMetrics({ stores, defaultMetrics: false, clock: () => now });
    // 1,200 more open (as the store writes them), on top of the 2 exposures above.
    const pipeline = redis.pipeline();
    for (let n = 0; n < 1_200; n += 1) {
      const id = `not_judged:${effectId()}`;
      const at = 1_700_000_000_000 + n;
      pipeline.hset(stores.keys.alerts, id, JSON.stringify({ id, kind: 'not_judged', effectId: id.slice(11), subject: 'payment:pi_metrics', centsAtStake: 100, refund: null, disputes: [], sentence: 's', action: 'a', raisedAt: at, updatedAt: at, resolvedAt: null, resolvedBy: null }));
      pipeline.zadd(stores.keys.alertsByTime, at, id);
      pipeline.zadd(stores.keys.alertsOpen, at, id);
    }
    await pipeline.exec();

    expect(await scrape(metrics, 1_202)).toEqual({ exposure: 2, notJudged: 1_200, counted: true });
    // Scraped in a loop within the 5 s: the count read above answers, no id is read again.
    for (let n = 0; n < 20; n += 1) {
      now += 200;
      expect(await scrape(metrics, 1_202)).toEqual({ exposure: 2, notJudged: 1_200, counted: false });
    }
    // An alert raised meanwhile is counted by the first scrape 5 s after the last count.
    await raise('exposure');
    now += 999;
    expect(await scrape(metrics, 1_202)).toEqual({ exposure: 2, notJudged: 1_200, counted: false });
    now += 1;
    expect(await scrape(metrics, 1_203)).toEqual({ exposure: 3, notJudged: 1_200, counted: true });
    expect(await scrape(metrics, 1_203)).toEqual({ exposure: 3, notJudged: 1_200, counted: false });
  });

  it('says how often it is counted in its help', async () => {
    const { text } = await createMetrics({ stores, defaultMetrics: false }).render();
    expect(text).toContain('# HELP interlock_alerts_open Open alerts (money at stake after a send, or a proposal not judged), by kind; read from Redis at scrape time, or, with more than 500 open, at most once every 5 s (the scrapes in between answer the last count).');
  });
});
