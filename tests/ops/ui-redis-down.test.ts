// Rule: the page answers a Redis outage as the API does, as an outage and not as a fault of the service: 503 with
// Retry-After and a page that says Redis is not answering and to try again (the API: 503 redis_unavailable), never
// 500 "Something went wrong", and no `page failed` error in the log. Both outages: a Redis that hangs with its
// connections open (its commands time out) and one that is gone (its connections refused).
import request from 'supertest';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { bearer, startRig, TOKENS, type Rig } from '../http/rig.js';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis.js';

const UNKNOWN_EFFECT = `/ui/effects/${'a'.repeat(64)}`;
const PAGES = ['/ui', UNKNOWN_EFFECT, '/ui/inbox'] as const;

let redis: PrivateRedis;
let rig: Rig;
beforeAll(async () => {
  redis = await startPrivateRedis(['--save', '', '--appendonly', 'no']);
  rig = await startRig({ config: { redisUrl: redis.url, redisCommandTimeoutMs: 300 } });
});
afterAll(async () => {
  redis.process.kill('SIGCONT');
  if (redis.process.exitCode !== null || redis.process.signalCode !== null) await redis.restart();
  await rig.close();
  await redis.stop();
});

const get = (path: string) => request(rig.app).get(path).set(bearer(TOKENS.operator)).timeout(10_000);

/** The pages, the API's listing and an inbox form at once, so each waits for the same outage. */
async function askDuringOutage() {
  const [api, form, ...pages] = await Promise.all([
    get('/v1/effects'),
    request(rig.app).post(`/ui/inbox/exposure:${'b'.repeat(64)}/dismiss`).set(bearer(TOKENS.approver)).type('form').send({ note: 'checked' }).timeout(10_000),
    ...PAGES.map(get),
  ]);
  return { api, form, pages };
}

function expectOutagePages(answers: Awaited<ReturnType<typeof askDuringOutage>>): void {
  expect(answers.api.status).toBe(503);
  expect(answers.api.body.error.code).toBe('redis_unavailable');
  expect(Object.fromEntries(answers.pages.map((page, n) => [PAGES[n], page.status]))).toEqual(Object.fromEntries(PAGES.map((path) => [path, 503])));
  for (const page of [...answers.pages, answers.form]) {
    expect(page.headers['retry-after']).toBe('1');
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.text).toContain('Redis is not answering');
    expect(page.text).toContain('Try again in a moment.');
  }
  expect(answers.form.status).toBe(503);
  expect(answers.form.text).toContain('may or may not have been recorded');
  expect(answers.pages[0]?.text).not.toContain('recorded');
  expect(rig.logs.filter((line) => line.msg === 'page failed')).toEqual([]);
}

it('answers 404 for an effect that does not exist while Redis answers', async () => {
  expect((await get('/ui')).status).toBe(200);
  const unknown = await get(UNKNOWN_EFFECT);
  expect(unknown.status).toBe(404);
  expect(unknown.text).toContain('No such effect');
});

it('answers 503 with Retry-After, not 500, while Redis hangs', async () => {
  redis.process.kill('SIGSTOP');
  try {
    const started = Date.now();
    expectOutagePages(await askDuringOutage());
    expect(Date.now() - started).toBeLessThan(5_000);
  } finally {
    redis.process.kill('SIGCONT');
  }
  expect((await get('/ui')).status).toBe(200);
});

it('answers 503 with Retry-After, not 500, while Redis is down', async () => {
  await redis.kill();
  expectOutagePages(await askDuringOutage());
});
