// Rule: an inbox form that Redis turns away (NOREPLICAS, OOM under maxmemory with noeviction, as compose runs it) is
// answered as the API answers the same action: 503 redis_unavailable with Retry-After, on the page's Redis page, which
// says what the form asked may or may not have been recorded; never a 500 carrying Redis's own words. A fault of the
// service is the page's 500 with the request id, never the fault's text; a form the schema refuses still names its
// fields (400), and nothing is recorded.
import { Redis } from 'ioredis';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createItemMaker, type ItemMaker } from '../http/inbox-items.js';
import { pageSession } from '../http/page-sessions.js';
import { bearer, startRig, TOKENS, type Rig } from '../http/rig.js';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis.js';

describe('an inbox form while Redis turns writes away', () => {
  let redis: PrivateRedis;
  let rig: Rig;
  let make: ItemMaker;
  let admin: Redis;

  beforeAll(async () => {
    redis = await startPrivateRedis(['--save', '', '--appendonly', 'no']);
    rig = await startRig({ config: { redisUrl: redis.url, redisCommandTimeoutMs: 300 } });
    make = await createItemMaker(rig);
    admin = new Redis(redis.url);
  }, 30_000);

  afterAll(async () => {
    await admin?.config('SET', 'min-replicas-to-write', '0').catch(() => undefined);
    await admin?.config('SET', 'maxmemory', '0').catch(() => undefined);
    await admin?.quit();
    await make?.close();
    await rig?.close();
    await redis?.stop();
  });

  async function dismissFromPage(item: string, note = 'Checked in the dashboard.') {
    const alex = await pageSession(rig.app, TOKENS.approver);
    return request(rig.app).post(`/ui/inbox/${item}/dismiss`).type('form').set('Cookie', alex.cookie).set('sec-fetch-site', 'same-origin').send({ csrf: alex.csrf, note, token: TOKENS.approver }).timeout(10_000);
  }

  async function expectAnsweredAsTheApi(item: string, redisWords: RegExp) {
    const api = await request(rig.app).post(`/v1/inbox/${item}/dismiss`).set(bearer(TOKENS.approver)).send({ note: 'Checked in the dashboard.' });
    expect({ status: api.status, code: api.body.error?.code }).toEqual({ status: 503, code: 'redis_unavailable' });
    const page = await dismissFromPage(item);
    expect({ status: page.status, retryAfter: page.headers['retry-after'], redisWords: redisWords.test(page.text) }).toEqual({ status: 503, retryAfter: '1', redisWords: false });
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.text).toContain('may or may not have been recorded');
    expect(page.text).not.toContain('Something went wrong');
  }

  it('NOREPLICAS (fewer replicas than min-replicas-to-write)', async () => {
    const { item } = await make.stale();
    await admin.config('SET', 'min-replicas-to-write', '1');
    try {
      await expectAnsweredAsTheApi(item, /NOREPLICAS|Not enough good replicas/i);
    } finally {
      await admin.config('SET', 'min-replicas-to-write', '0');
    }
    expect((await rig.stores.inbox.get(item))?.status).toBe('open');
  });

  it('OOM (maxmemory reached, noeviction)', async () => {
    const { item } = await make.stale();
    await admin.config('SET', 'maxmemory-policy', 'noeviction');
    await admin.config('SET', 'maxmemory', '1');
    try {
      // Redis's own words, matched as Redis writes them: a page's random tokens (its CSRF value) may hold the letters oom.
      await expectAnsweredAsTheApi(item, /\bOOM\b|command not allowed/);
    } finally {
      await admin.config('SET', 'maxmemory', '0');
    }
    expect((await rig.stores.inbox.get(item))?.status).toBe('open');
  });

  it('a fault of the service is the page\'s 500 with the request id, not the fault\'s own text; a form the schema refuses still names its field', async () => {
    const { item } = await make.stale();
    const empty = await dismissFromPage(item, '   ');
    expect(empty.status).toBe(400);
    expect(empty.text).toContain('write a note of what was checked or done');
    const act = rig.stores.inbox.act.bind(rig.stores.inbox);
    rig.stores.inbox.act = () => Promise.reject(new Error('internal detail: lua stack at close-inbox-3.lua:41'));
    try {
      const page = await dismissFromPage(item);
      expect(page.status).toBe(500);
      expect(page.text).toContain('Something went wrong');
      expect(page.text).not.toContain('internal detail');
    } finally {
      rig.stores.inbox.act = act;
    }
    expect((await rig.stores.inbox.get(item))?.status).toBe('open');
  });
});
