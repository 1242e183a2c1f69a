// Rule: a metrics read that fails at every scrape while Redis is away is logged at once, then at most one line per 10 s
// with the count (src/log.ts REPEATED_ERROR_LOG_MS), as every failure that repeats through an outage is. The metrics
// listener (INTERLOCK_METRICS_ADDR) takes no token, so each scrape used to write one warning per Redis read (seven in
// a full serve process) for anyone who could reach it, for as long as the outage lasted.
import request from 'supertest';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createMetrics, metricsApp } from '../../webhooks/ops/metrics.js';
import { startRig, type Rig } from '../http/rig.js';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis.js';

let redis: PrivateRedis;
let rig: Rig;
beforeAll(async () => {
  redis = await startPrivateRedis(['--save', '', '--appendonly', 'no']);
  rig = await startRig({ metrics: true, config: { redisUrl: redis.url, redisCommandTimeoutMs: 200, keyPrefix: `scrapelog-${process.pid}` } });
});
afterAll(async () => {
  if (redis.process.exitCode !== null || redis.process.signalCode !== null) await redis.restart();
  await rig.close();
  await redis.stop();
});

it('30 tokenless scrapes through a Redis outage log each failing read once, not once a scrape', async () => {
  const lines: string[] = [];
  const logger = rig.stores.logger;
  const capture = (level: string) => (_fields: unknown, message?: string) => void lines.push(`${level} ${message ?? ''}`);
  Object.assign(logger, { warn: capture('warn'), error: capture('error') });
  const listener = metricsApp(createMetrics({ stores: rig.stores, defaultMetrics: false }), logger);
  await redis.kill();
  const started = Date.now();
  for (let scrape = 0; scrape < 30; scrape += 1) expect((await request(listener).get('/metrics')).status).toBe(200);
  const windows = 1 + Math.ceil((Date.now() - started) / 10_000);
  const scrapeLines = lines.filter((line) => line.includes('at scrape time'));
  const reads = new Set(scrapeLines.map((line) => /could not read (.*) at scrape time/.exec(line)?.[1]));
  expect(reads.size).toBeGreaterThan(0);
  for (const read of reads) expect(scrapeLines.filter((line) => line.includes(`could not read ${String(read)} at`)).length, String(read)).toBeLessThanOrEqual(windows);
}, 60_000);
