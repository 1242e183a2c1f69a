// Rule: a host clock off by more than Stripe's webhook tolerance is detected and named, with what to do. Stripe signs
// each delivery with its own time and the route checks it against this host's wall clock within 300 s, so a host 400 s
// ahead refuses every delivery as stale_timestamp. The process compares its wall clock with Redis's at every Redis
// time it reads: /metrics answers interlock_host_clock_offset_seconds, the process warns past 60 s naming this host's
// clock, which way, by how much and to fix time sync, and a stale_timestamp refusal says the same (or, before any Redis
// time was read, that the offset is not known yet), never inventing one.
import express from 'express';
import { pino } from 'pino';
import request from 'supertest';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createWebhookVerifier, hostClockOffset, openStores, signWebhookBody } from '../../src/interlock.js';
import { createRedisClock } from '../../src/redis/clock.js';
import { createMetrics } from '../../webhooks/ops/metrics.js';
import { stripeWebhookRouter } from '../../webhooks/stripe-route.js';
import { testConfig, testKey } from '../support/harness.js';

const SECRET = `whsec_${'d'.repeat(32)}`;

afterEach(() => {
  vi.restoreAllMocks();
});

describe("this host's clock against Redis's", () => {
  it("is measured from Redis's replies, and a step of this host's clock since the last reply shows at once", () => {
    let hostAhead = 400_000;
    const clock = createRedisClock({ wallNow: () => Date.now() + hostAhead });
    const sentAt = clock.mark();
    clock.observe(Date.now(), sentAt);
    expect(Math.round((hostClockOffset()?.offsetMs ?? 0) / 1000)).toBe(400);
    hostAhead = -3_600_000;
    expect(Math.round((hostClockOffset()?.offsetMs ?? 0) / 1000)).toBe(-3600);
  });

  it('is warned of past 60 s, and answered at /metrics, as this host 400 s ahead of Redis', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(String((JSON.parse(line) as { msg?: unknown }).msg)) });
    const stores = await openStores(testConfig(), { logger, signingKey: testKey().key });
    try {
      const real = Date.now.bind(Date);
      vi.spyOn(Date, 'now').mockImplementation(() => real() + 400_000);
      await stores.journal.serverTime();
      const warning = lines.find((line) => line.startsWith("this host's clock"));
      expect(warning, lines.join('\n')).toMatch(/^this host's clock is (399|400|401) s ahead of Redis's; Stripe's webhook signatures are checked against this host's clock within 300 s.*fix time sync \(NTP\/chrony\)/);
      const text = (await createMetrics({ stores, defaultMetrics: false }).render()).text;
      const sample = text.split('\n').find((line) => line.startsWith('interlock_host_clock_offset_seconds '));
      expect(Math.round(Number(sample?.split(' ')[1]))).toBe(400);
    } finally {
      vi.restoreAllMocks();
      await stores.close();
    }
  });
});

describe('a stale_timestamp refusal', () => {
  const body = JSON.stringify({ id: 'evt_hostclock1', object: 'event', type: 'refund.updated', created: 1, data: { object: { id: 're_1', object: 'refund', status: 'succeeded', amount: 100, metadata: {} } } });

  it("says which way this host's clock is off: a signature from the past, ahead; from the future, behind", () => {
    const now = 1_800_000_000;
    const verify = createWebhookVerifier([SECRET], { nowSeconds: () => now });
    expect(verify(Buffer.from(body), signWebhookBody(body, SECRET, now - 400))).toMatchObject({ ok: false, reason: 'stale_timestamp', message: expect.stringContaining("400 s before this host's clock reads now (at most 300 s either way): a replay, or this host's clock is ahead") });
    expect(verify(Buffer.from(body), signWebhookBody(body, SECRET, now + 400))).toMatchObject({ ok: false, reason: 'stale_timestamp', message: expect.stringContaining("400 s after this host's clock reads now (at most 300 s either way): this host's clock is behind") });
  });

  async function refusalLine(offset: { offsetMs: number; measuredMsAgo: number } | null): Promise<string> {
    const warned: string[] = [];
    const app = express();
    const hostNow = Math.floor(Date.now() / 1000);
    app.use(stripeWebhookRouter({ verify: createWebhookVerifier([SECRET], { nowSeconds: () => hostNow }), logger: { warn: (_fields: unknown, message?: string) => void warned.push(String(message)) }, accept: async () => undefined, hostClock: () => offset }));
    const answer = await request(app).post('/webhooks/stripe').set('content-type', 'application/json').set('stripe-signature', signWebhookBody(body, SECRET, hostNow - 400)).send(body);
    expect(answer.status).toBe(400);
    return warned.join('\n');
  }

  it("is logged with this host's measured offset and to fix its time sync", async () => {
    expect(await refusalLine({ offsetMs: 400_400, measuredMsAgo: 2_000 })).toContain("As this process measured it, this host's clock is 400 s ahead of Redis's: fix time sync (NTP/chrony) on this host");
    expect(await refusalLine({ offsetMs: 1_000, measuredMsAgo: 2_000 })).toContain("As this process measured it, this host's clock is 1 s ahead of Redis's: likely a replay");
  });

  it('says the offset is not known yet when no Redis time was read, rather than invent one', async () => {
    const line = await refusalLine(null);
    expect(line).toContain("this host's clock is off by more than that: it has not been compared with Redis's in this process yet");
    expect(line).toContain('fix time sync (NTP/chrony) on this host');
  });
});
