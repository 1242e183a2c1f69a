// Rule: a page of effects filtered by state or outcome (GET /v1/effects?state=, ?outcome=, the page /ui?state=)
// reads at most 1,000 journals, however many effects Redis holds, and a read token's request cannot make it read
// more: the pages from its position go on where it stopped, and together they hold every match exactly once, newest
// first. A chain that does not parse still fails the page that looks at it, matching or not, as it always did.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inboxSuite } from './inbox-items.js';
import { signIn } from './page-sessions.js';
import { bearer, TOKENS } from './rig.js';

/** The most journals one filtered page may read (README: the listing's budget for a state or outcome filter). */
const JOURNALS_PER_PAGE = 1_000;
/** Effects of another state between the two matches: more than two pages' budget. */
const OTHERS = 2_500;

// Journal reads (GETs of a chain) under this file's rig, counted while a request runs. Patched before the rig's
// clients are made: they wrap the method they find then (redis/client.ts).
let counting: { prefix: string; journals: number } | null = null;
const send = Redis.prototype.sendCommand;
Redis.prototype.sendCommand = function (this: Redis, ...args: Parameters<Redis['sendCommand']>) {
  const command = args[0] as unknown as { name: string; args: unknown[] };
  const mine = counting;
  if (mine !== null && command.name === 'get' && command.args.some((arg) => String(arg).includes(mine.prefix) && String(arg).includes(':entries:'))) mine.journals += 1;
  return send.apply(this, args);
} as Redis['sendCommand'];
afterAll(() => {
  Redis.prototype.sendCommand = send;
});

const { rig, make } = inboxSuite();

type Page = { data: { id: string; state: string }[]; has_more: boolean; next_starting_after: string | null };

async function counted<T>(ask: () => Promise<T>): Promise<{ answer: T; journals: number }> {
  counting = { prefix: rig.stores.config.keyPrefix, journals: 0 };
  try {
    const answer = await ask();
    return { answer, journals: counting.journals };
  } finally {
    counting = null;
  }
}

/** Every page of `query` from the first: the ids each held, what it said, and the journals it read. */
async function everyPage(query: string) {
  const pages: { ids: string[]; hasMore: boolean; journals: number }[] = [];
  let after = '';
  for (let n = 0; n < 10; n += 1) {
    const { answer, journals } = await counted(() => request(rig.app).get(`/v1/effects?${query}${after}`).set(bearer(TOKENS.support)));
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    const page = answer.body as Page;
    pages.push({ ids: page.data.map((effect) => effect.id), hasMore: page.has_more, journals });
    if (!page.has_more) return pages;
    after = `&starting_after=${page.next_starting_after}`;
  }
  throw new Error(`/v1/effects?${query} did not end in 10 pages`);
}

/** `count` copies of `template`'s chain, each an effect of its own payment, bound at `at`. */
async function clone(template: { effectId: string; subject: string }, count: number, at: number, subject = (n: number) => `payment:pi_clone${n}`): Promise<string[]> {
  const chain = await rig.redis.get(rig.stores.keys.entries(template.subject, template.effectId));
  expect(chain).not.toBeNull();
  const ids: string[] = [];
  const pipeline = rig.redis.pipeline();
  for (let n = 0; n < count; n += 1) {
    const id = randomBytes(32).toString('hex');
    pipeline.set(rig.stores.keys.entries(subject(n), id), chain ?? '');
    pipeline.hset(rig.stores.keys.effectPartitions, id, subject(n));
    pipeline.zadd(rig.stores.keys.effectsByTime, at, id);
    ids.push(id);
  }
  await pipeline.exec();
  return ids;
}

let older = '';
let newer = '';
let committed = { effectId: '', subject: '' };

beforeAll(async () => {
  const refused = await make.stale();
  older = refused.effectId;
  const pi = `pi_${randomBytes(5).toString('hex')}`;
  committed = { effectId: await make.proposed(pi), subject: `payment:${pi}` };
  expect(await make.submitLatest(committed.effectId)).toBe('COMMITTED');
  // Committed effects bound after the older refusal and before the newer one.
  await clone(committed, OTHERS, Number(await rig.redis.zscore(rig.stores.keys.effectsByTime, older)) + 1);
  await new Promise((resolve) => setTimeout(resolve, 5));
  newer = (await make.stale()).effectId;
}, 120_000);

describe('a page filtered by state or outcome among thousands of effects of another', () => {
  it('GET /v1/effects?state= reads at most 1,000 journals a page, and its pages hold each match once, newest first', async () => {
    const pages = await everyPage('state=refused&limit=10');
    expect(pages.flatMap((page) => page.ids)).toEqual([newer, older]);
    expect(pages[0]?.journals).toBeGreaterThan(0);
    for (const page of pages) expect(page.journals).toBeLessThanOrEqual(JOURNALS_PER_PAGE);
    expect(pages[0]).toMatchObject({ ids: [newer], hasMore: true });
    expect(pages.at(-1)?.hasMore).toBe(false);
  });

  it('GET /v1/effects?outcome= alike, with a page of one that fills first and then looks for one more match', async () => {
    const pages = await everyPage('outcome=REFUSED:stale_premise&limit=1');
    expect(pages.flatMap((page) => page.ids)).toEqual([newer, older]);
    for (const page of pages) expect(page.journals).toBeLessThanOrEqual(JOURNALS_PER_PAGE);
    expect(pages.at(-1)?.hasMore).toBe(false);
  });

  it('a state most effects are in fills its page from the first journals read', async () => {
    const { answer, journals } = await counted(() => request(rig.app).get('/v1/effects?state=committed&limit=10').set(bearer(TOKENS.support)));
    expect((answer.body as Page).data.map((effect) => effect.state)).toEqual(new Array<string>(10).fill('committed'));
    expect((answer.body as Page).has_more).toBe(true);
    expect(journals).toBeGreaterThan(0);
    expect(journals).toBeLessThanOrEqual(25);
  });

  it('GET /ui?state= (the page) reads at most 1,000 journals', async () => {
    const { cookie } = await signIn(rig.app, TOKENS.support);
    const { answer, journals } = await counted(() => request(rig.app).get('/ui?state=refused').set('Cookie', cookie));
    expect(answer.status).toBe(200);
    expect(answer.text).toContain(`/ui/effects/${newer}`);
    expect(journals).toBeLessThanOrEqual(JOURNALS_PER_PAGE);
  });

  it('a chain that does not parse fails a filtered page that looks at it, whether or not its state would match', async () => {
    const subject = `payment:pi_${randomBytes(5).toString('hex')}`;
    const [broken] = await clone(committed, 1, Date.now(), () => subject);
    await rig.redis.append(rig.stores.keys.entries(subject, broken ?? ''), '\nnot an entry');
    for (const filter of ['state=committed', 'state=refused', 'outcome=AMBIGUOUS']) {
      const answer = await request(rig.app).get(`/v1/effects?subject=${subject}&${filter}`).set(bearer(TOKENS.support));
      expect(answer.status, filter).toBe(500);
    }
  });
});
