// The alerts store (issue 10 §4) on the machine's Redis under a key prefix of its own: what GET /v1/alerts,
// `interlock alerts`, the /ui page and the open-alerts gauge read.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { alertIdOf, createAlerts, type Alert, type AlertKind, type Alerts } from '../../src/redis/alerts.js';
import { serverTime } from '../../src/redis/client.js';
import { createKeys, type Keys } from '../../src/redis/keys.js';
import { writerBetweenReads } from '../support/between-reads.js';
import { REDIS_URL } from '../support/harness.js';

const prefix = `alerts-test-${randomBytes(5).toString('hex')}`;
const redis = new Redis(REDIS_URL);
const keys = createKeys(prefix);
let clock = 1_700_000_000_000;
const alerts = createAlerts({ redis, keys, now: async () => (clock += 1) });

afterAll(async () => {
  const stale = await redis.keys(`${prefix}:*`);
  if (stale.length > 0) await redis.del(...stale);
  await redis.quit();
});

const effectId = (n: number) => n.toString(16).padStart(64, '0');
const draft = (n: number, kind: AlertKind = 'not_judged') => ({ kind, effectId: effectId(n), subject: 'payment:pi_1', centsAtStake: 2_000, refund: null, disputes: [], sentence: 's', action: 'a' });
const raise = (n: number, kind: AlertKind = 'not_judged') => alerts.raise(draft(n, kind));

/** An alert as raised `n` ms after a fixed moment, resolved by a person when `resolved`. */
function alertAt(n: number, kind: AlertKind, resolved: boolean): Alert {
  const raisedAt = 1_690_000_000_000 + n;
  return { id: `${kind}:${effectId(40_000 + n)}`, kind, effectId: effectId(40_000 + n), subject: 'payment:pi_4', centsAtStake: 500, refund: null, disputes: [], sentence: 's', action: 'a', raisedAt, updatedAt: raisedAt, resolvedAt: resolved ? raisedAt + 1 : null, resolvedBy: resolved ? 'lee (support)' : null };
}

/** Writes alerts as set-alert-2 did, before the open-alerts index existed: the hash and the raised-at index only. */
async function writeWithoutOpenIndex(own: Keys, written: readonly Alert[]): Promise<void> {
  const pipeline = redis.pipeline();
  for (const alert of written) pipeline.hset(own.alerts, alert.id, JSON.stringify(alert)).zadd(own.alertsByTime, alert.raisedAt, alert.id);
  await pipeline.exec();
}

describe('listing alerts', () => {
  it('lists an open alert however many newer alerts were resolved since', async () => {
    const exposure = await raise(1, 'exposure');
    // An outage: many proposals not judged, each resolved once its request was sent again.
    for (let n = 2; n < 2 + 450; n += 1) {
      const { alert } = await raise(n);
      await alerts.resolve(alert.id, 'effects worker: the effect was judged');
    }
    expect((await alerts.list()).map((alert) => alert.id)).toEqual([exposure.alert.id]);
    expect((await alerts.list({ limit: 20 })).map((alert) => alert.id)).toEqual([exposure.alert.id]);
    expect(await alerts.openCount()).toBe(1);
  });
});

describe('resolving alerts', () => {
  it('of people resolving one alert at once, exactly one resolution is recorded and every other one is told who resolved it', async () => {
    const { alert } = await raise(9_001, 'exposure');
    const names = ['lee', 'kim', 'sam', 'ana', 'joe'];
    const answers = await Promise.all(names.map((name) => alerts.resolve(alert.id, name)));
    const winners = answers.filter((answer) => answer?.resolved === true);
    expect(winners).toHaveLength(1);
    const winner = winners[0]?.alert.resolvedBy;
    const stored = await alerts.get(alert.id);
    expect(stored?.resolvedBy).toBe(winner);
    for (const answer of answers) expect(answer?.alert).toEqual(stored);
    // A raise refreshing the alert at the same moment never reopens it.
    await Promise.all([raise(9_001, 'exposure'), alerts.resolve(alert.id, 'late')]);
    expect((await alerts.get(alert.id))?.resolvedBy).toBe(winner);
  });

  it('resolving an alert nobody raised answers null and writes nothing', async () => {
    expect(await alerts.resolve(`exposure:${effectId(9_002)}`, 'lee')).toBeNull();
    expect(await redis.hexists(keys.alerts, `exposure:${effectId(9_002)}`)).toBe(0);
  });
});

describe('paging through alerts', () => {
  it('a cursor continues where the page ended: each alert once, newest first, however many alerts are raised meanwhile', async () => {
    const pagePrefix = `${prefix}:pages`;
    const pageKeys = createKeys(pagePrefix);
    let at = 1_700_100_000_000;
    const paged = createAlerts({ redis, keys: pageKeys, now: async () => at });
    const raiseAt = async (n: number, when: number) => {
      at = when;
      return (await paged.raise({ kind: 'late_landing', effectId: effectId(n), subject: 'payment:pi_2', centsAtStake: 100, refund: null, disputes: [], sentence: 's', action: 'a' })).alert;
    };
    // Eleven alerts, three of them raised in one millisecond; one resolved (listed with all, not without).
    const raised = [];
    for (let n = 0; n < 8; n += 1) raised.push(await raiseAt(20_000 + n, 1_700_100_000_000 + n));
    for (let n = 8; n < 11; n += 1) raised.push(await raiseAt(20_000 + n, 1_700_100_000_100));
    const resolvedOne = raised[3];
    if (resolvedOne === undefined) throw new Error('eleven alerts were raised');
    await paged.resolve(resolvedOne.id, 'lee');
    for (const all of [true, false]) {
      // What stood when the first page was asked for; the alerts raised during the pass come before its cursors.
      const newestFirst = [...raised].sort((a, b) => b.raisedAt - a.raisedAt || (a.id < b.id ? 1 : -1)).map((alert) => alert.id);
      const seen: string[] = [];
      let cursor: string | undefined;
      for (let pages = 0; pages < 20; pages += 1) {
        const page = await paged.page({ all, limit: 3, cursor });
        expect(page.data.length).toBeLessThanOrEqual(3);
        seen.push(...page.data.map((alert) => alert.id));
        // New alerts keep arriving between pages; they are newer than any cursor, so no page after shifts.
        raised.push(await raiseAt(30_000 + pages + (all ? 0 : 100), 1_700_200_000_000 + pages + (all ? 0 : 100)));
        if (page.next === null) break;
        cursor = page.next;
      }
      expect(seen.map((id) => id.slice(-6)), String(all)).toEqual((all ? newestFirst : newestFirst.filter((id) => id !== resolvedOne.id)).map((id) => id.slice(-6)));
    }
    await expect(paged.page({ all: true, limit: 3, cursor: 'not-a-cursor' })).rejects.toThrow('is not an alerts cursor');
    const stale = await redis.keys(`${pagePrefix}:*`);
    if (stale.length > 0) await redis.del(...stale);
  });
});

describe('settling alerts after facts', () => {
  it('resolves only the kinds the facts decide: a not_judged alert on the same effect stays open', async () => {
    const exposure = await raise(9_101, 'exposure');
    const notJudged = await raise(9_101, 'not_judged');
    const resolved = await alerts.settle(effectId(9_101), []);
    expect(resolved.map((alert) => alert.id)).toEqual([exposure.alert.id]);
    expect((await alerts.get(notJudged.alert.id))?.resolvedAt).toBeNull();
  });
});

describe('an alert a person resolved', () => {
  const twice = (compensations: string[] | null) => ({ ...draft(9_201, 'compensated_twice'), subject: 'customer:cus_1', refund: compensations?.[0] ?? 'cn_first', ...(compensations === null ? {} : { compensations }) });

  it('opens compensated_twice again when it names a compensation the person did not see, and only then', async () => {
    await alerts.raise(twice(['cn_first']));
    await alerts.resolve(alertIdOf(effectId(9_201), 'compensated_twice'), 'dana');
    expect((await alerts.raise(twice(['cn_first']))).alert).toMatchObject({ resolvedBy: 'dana' });
    expect((await alerts.raise(twice(['cn_first', 'cn_second']))).alert).toMatchObject({ compensations: ['cn_first', 'cn_second'], resolvedAt: null, resolvedBy: null });
  });

  it('reads a compensated_twice alert written before alerts named their compensations as naming its first note', async () => {
    const older = { ...twice(null), effectId: effectId(9_202) };
    await alerts.raise(older);
    await alerts.resolve(alertIdOf(effectId(9_202), 'compensated_twice'), 'dana');
    expect((await alerts.raise({ ...older, compensations: ['cn_first'] })).alert).toMatchObject({ resolvedBy: 'dana' });
    expect((await alerts.raise({ ...older, compensations: ['cn_first', 'cn_second'] })).alert).toMatchObject({ resolvedAt: null });
  });
});

// Rule: an alert a person resolved opens again when a dispute it names was decided (won or lost) since they resolved
// it and what it tells them to do changed with it (src/redis/alerts.ts, raise): they acted on "reply to the dispute" or
// "wait for it", and its end puts money in front of them again. A refresh that only rewords the action (the dispute they
// answered moved to under_review) or a decision the action does not turn on leaves their resolution standing.
describe('an alert a person resolved before a dispute it names was decided', () => {
  const reply = 'Reply to dispute du_1 with refund re_1 as evidence (the customer was already refunded), or accept the loss.';
  const wait = 'Dispute du_1 is under review: wait for the issuer\'s decision.';
  const lost = 'Dispute du_1 was lost: the merchant paid both the refund and the chargeback. Ask the customer to return $20.00, or write it off.';
  const exposure = (n: number, status: string, action: string) => ({ ...draft(n, 'exposure'), refund: 're_1', disputes: ['du_1'], disputeStatuses: [status], action });
  const resolvedAfter = async (n: number, status: string, action: string) => {
    await alerts.raise(exposure(n, status, action));
    expect(await alerts.resolve(alertIdOf(effectId(n), 'exposure'), 'dana')).toMatchObject({ resolved: true });
  };

  it('stays resolved while the action is unchanged, and while it only follows the answered dispute to under_review', async () => {
    await resolvedAfter(9_301, 'needs_response', reply);
    expect((await alerts.raise(exposure(9_301, 'needs_response', reply))).alert).toMatchObject({ resolvedBy: 'dana', action: reply });
    expect((await alerts.raise(exposure(9_301, 'under_review', wait))).alert).toMatchObject({ resolvedBy: 'dana', action: wait, disputeStatuses: ['under_review'] });
  });

  it('opens again when the dispute was lost and the action changed with it, and says when', async () => {
    await resolvedAfter(9_302, 'needs_response', reply);
    await alerts.raise(exposure(9_302, 'under_review', wait));
    const { alert } = await alerts.raise(exposure(9_302, 'lost', lost));
    expect(alert).toMatchObject({ action: lost, resolvedAt: null, resolvedBy: null });
    expect(alert.reopenedAt).toBe(alert.updatedAt);
    expect(alert.resolvedOn).toBeUndefined();
  });

  it('stays resolved when a dispute was decided but the action did not change (nothing the person did is undone)', async () => {
    await resolvedAfter(9_303, 'needs_response', reply);
    expect((await alerts.raise(exposure(9_303, 'won', reply))).alert).toMatchObject({ resolvedBy: 'dana' });
  });

  it('judges on what the person resolved, not a later refresh: a refresh from an older read does not make the loss new again', async () => {
    await resolvedAfter(9_304, 'lost', lost);
    // A facts job's older read refreshes it (the dispute under review), then the newer read's redo (lost) follows.
    expect((await alerts.raise(exposure(9_304, 'under_review', wait))).alert).toMatchObject({ resolvedBy: 'dana', resolvedOn: { action: lost, disputes: { du_1: 'lost' } } });
    expect((await alerts.raise(exposure(9_304, 'lost', lost))).alert).toMatchObject({ resolvedBy: 'dana' });
  });

  it('reads an alert resolved before alerts carried statuses as naming its disputes undecided', async () => {
    const id = alertIdOf(effectId(9_305), 'exposure');
    const older = { ...exposure(9_305, 'needs_response', reply), id, raisedAt: 1_690_000_000_000, updatedAt: 1_690_000_000_000, resolvedAt: 1_690_000_000_001, resolvedBy: 'dana' } as Alert;
    delete older.disputeStatuses;
    await redis.hset(keys.alerts, id, JSON.stringify(older));
    expect((await alerts.raise(exposure(9_305, 'lost', lost))).alert).toMatchObject({ resolvedAt: null });
  });
});

describe('a first page read while alerts are raised', () => {
  /**
   * 501 alerts, one more than a batch, so a page crosses from its first batch of 500 into the next. For the listing of
   * all alerts, the two oldest are open behind 499 resolved ones; for the open listing, all 501 are open.
   */
  async function pastOneBatch(name: string, all: boolean) {
    const own = createKeys(`${prefix}:${name}-${String(all)}`);
    let at = 1_700_100_000_000;
    const now = async () => (at += 1);
    const store = createAlerts({ redis, keys: own, now });
    const listed: string[] = [];
    for (let n = 1; n <= 501; n += 1) {
      const { alert } = await store.raise(draft(n, n <= 2 ? 'exposure' : 'not_judged'));
      if (!all || n <= 2) listed.unshift(alert.id);
      else {
        await store.resolve(alert.id, 'effects worker');
        listed.unshift(alert.id);
      }
    }
    return { own, store, now, listed };
  }

  for (const all of [true, false]) {
    it(`lists each alert once when an alert is raised between the batches of one page (${all ? 'all alerts' : 'open ones'})`, async () => {
      const { own, store, now, listed } = await pastOneBatch('scan', all);
      // Someone raises an alert while the page is between its batches: it is newer than the page, so not on it.
      const raising = writerBetweenReads(redis, () => store.raise(draft(10_000)));
      const page = await createAlerts({ redis: raising.redis, keys: own, now }).page({ all, limit: 1_000 });
      expect(raising.reads()).toBeGreaterThanOrEqual(2);
      expect(page.data.map((alert) => alert.id)).toEqual(listed);
      expect(page.next).toBeNull();
    });

    it(`lists each alert once when an alert raised in the millisecond of the newest one arrives between batches (${all ? 'all alerts' : 'open ones'})`, async () => {
      const { own, now, listed } = await pastOneBatch('same-ms', all);
      const newest = Number((await redis.zrevrange(own.alertsByTime, 0, 0, 'WITHSCORES'))[1]);
      // Between the batches, an alert raised in the newest one's millisecond that sorts before it (a greater id).
      const sameMs = createAlerts({ redis, keys: own, now: async () => newest });
      const raising = writerBetweenReads(redis, () => sameMs.raise(draft(2 ** 52)));
      const page = await createAlerts({ redis: raising.redis, keys: own, now }).page({ all, limit: 1_000 });
      expect(raising.reads()).toBeGreaterThanOrEqual(2);
      expect(page.data.map((alert) => alert.id)).toEqual(listed);
    });
  }
});

describe('the open listing', () => {
  it('reads no resolved alert, and its last page has no next, however many resolved alerts are newer or older', async () => {
    const own = createKeys(`${prefix}:open-only`);
    let at = 1_700_300_000_000;
    const store = createAlerts({ redis, keys: own, now: async () => (at += 1) });
    const resolveSome = async (from: number, count: number) => {
      for (let n = from; n < from + count; n += 1) await store.resolve((await store.raise(draft(n))).alert.id, 'effects worker');
    };
    await resolveSome(1, 600);
    const open = [];
    for (let n = 601; n < 604; n += 1) open.unshift((await store.raise(draft(n, 'exposure'))).alert.id);
    await resolveSome(604, 1_200);
    // Counted through a proxy: the alerts the listing reads (HMGET fields) and its index reads.
    let alertsRead = 0;
    let indexReads = 0;
    const counting = new Proxy(redis, {
      get(target, name, receiver) {
        if (name === 'hmget') return (key: string, ...fields: string[]) => ((alertsRead += fields.length), target.hmget(key, ...fields));
        if (name === 'zrevrangebyscore') return (...args: Parameters<Redis['zrevrangebyscore']>) => ((indexReads += 1), target.zrevrangebyscore(...args));
        return Reflect.get(target, name, receiver) as unknown;
      },
    });
    const listing = createAlerts({ redis: counting, keys: own, now: async () => at });
    const page = await listing.page({ all: false, limit: 3 });
    expect(page.data.map((alert) => alert.id)).toEqual(open);
    expect(page.next).toBeNull();
    expect(alertsRead).toBe(3);
    expect(indexReads).toBe(1);
    // Two pages of two: the second continues from the first's cursor and ends the listing.
    const first = await listing.page({ all: false, limit: 2 });
    const second = await listing.page({ all: false, limit: 2, cursor: first.next ?? undefined });
    expect([...first.data, ...second.data].map((alert) => alert.id)).toEqual(open);
    expect(second.next).toBeNull();
    const stale = await redis.keys(`${prefix}:open-only:*`);
    if (stale.length > 0) await redis.del(...stale);
  });
});

describe('writing one alert from many processes at once', () => {
  it('every raise of an alert that eight facts workers keep raising is written, and a resolution among them stays', async () => {
    const own = createKeys(`${prefix}:contention`);
    // One connection and one store per raiser, as separate processes would have; each reads Redis's clock, as they do.
    const connections = Array.from({ length: 8 }, () => new Redis(REDIS_URL));
    try {
      const stores = connections.map((connection) => createAlerts({ redis: connection, keys: own, now: () => serverTime(connection) }));
      const draft = (cents: number) => ({ kind: 'exposure' as const, effectId: effectId(30_000), subject: 'payment:pi_3', centsAtStake: cents, refund: null, disputes: [], sentence: 's', action: 'a' });
      const first = await stores[0]?.raise(draft(1));
      if (first === undefined) throw new Error('eight stores were made');
      const raisers = stores.map(async (store, n) => {
        const failures: string[] = [];
        for (let round = 0; round < 25; round += 1) {
          await store.raise(draft(100 * n + round)).catch((error: unknown) => failures.push(String(error)));
          if (n === 0 && round === 12) await store.resolve(first.alert.id, 'lee (support)');
        }
        return failures;
      });
      const failures = (await Promise.all(raisers)).flat();
      expect(failures.slice(0, 3), `${failures.length} of 200 raises failed`).toEqual([]);
      // A person resolved it while the raises went on: every raise after kept the resolution (and refreshed the rest).
      expect((await stores[0]?.get(first.alert.id))?.resolvedBy).toBe('lee (support)');
    } finally {
      await Promise.all(connections.map((connection) => connection.quit()));
      const stale = await redis.keys(`${prefix}:contention:*`);
      if (stale.length > 0) await redis.del(...stale);
    }
  });
});

describe('counting open alerts', () => {
  it('counts every open alert, beyond the 10,000 a listing reads, those written before the open-alerts index too', async () => {
    const own = createKeys(`${prefix}:count`);
    const store = createAlerts({ redis, keys: own, now: async () => 1_700_500_000_000 });
    // 10,050 open alerts and 30 resolved ones as set-alert-2 wrote them, then one raised since.
    await writeWithoutOpenIndex(own, Array.from({ length: 10_080 }, (_, n) => alertAt(n, 'not_judged', n < 30)));
    await store.raise({ kind: 'exposure', effectId: effectId(70_000), subject: 'payment:pi_5', centsAtStake: 500, refund: null, disputes: [], sentence: 's', action: 'a' });
    expect(await store.openCount()).toBe(10_051);
    // By kind, as the open-alerts gauge reports them: the 30 resolved ones are not counted, nor read.
    expect(await store.openCountByKind()).toEqual({ exposure: 1, failed_after_landed: 0, late_landing: 0, not_judged: 10_050, compensated_twice: 0, send_unanswered: 0 });
  });
});

describe('alerts written before the open-alerts index', () => {
  it('are found through the index after the one-time backfill, which several processes may run at once and which a second run leaves alone', async () => {
    const own = createKeys(`${prefix}:backfill`);
    // 1,200 alerts as set-alert-2 wrote them (the hash and the raised-at index, no open index): every third resolved.
    const old = Array.from({ length: 1_200 }, (_, n) => alertAt(n, n % 2 === 0 ? 'exposure' : 'not_judged', n % 3 === 0));
    await writeWithoutOpenIndex(own, old);
    const openOld = old.filter((alert) => alert.resolvedAt === null);
    // One alert raised since, by set-alert-3: already in the index.
    const now = async () => 1_700_400_000_000;
    const fresh = (await createAlerts({ redis, keys: own, now }).raise({ kind: 'exposure', effectId: effectId(50_000), subject: 'payment:pi_4', centsAtStake: 500, refund: null, disputes: [], sentence: 's', action: 'a' })).alert;
    expect(await redis.zcard(own.alertsOpen)).toBe(1);

    // Three processes start at once; the first read of the index in each runs the backfill.
    const connections = Array.from({ length: 3 }, () => new Redis(REDIS_URL));
    try {
      const starting = connections.map((connection) => createAlerts({ redis: connection, keys: own, now }));
      const exposuresOf = async (store: Alerts) => {
        const found: string[] = [];
        for await (const alert of store.openOf('exposure')) found.push(alert.id);
        return found.sort();
      };
      const [exposures] = await Promise.all(starting.map((store, n) => (n === 0 ? exposuresOf(store) : store.completeOpenIndex())));
      expect(exposures).toEqual([fresh, ...openOld].filter((alert) => alert.kind === 'exposure').map((alert) => alert.id).sort());
      // The index holds exactly the open alerts, each at when it was raised.
      const indexed = await redis.zrangebyscore(own.alertsOpen, '-inf', '+inf', 'WITHSCORES');
      expect(indexed).toEqual([...openOld, fresh].flatMap((alert) => [alert.id, String(alert.raisedAt)]));
    } finally {
      await Promise.all(connections.map((connection) => connection.quit()));
    }

    // A later start reads only the mark: an alert taken out of the index by hand stays out, and nothing is added.
    const probe = openOld[0];
    if (probe === undefined) throw new Error('some old alerts are open');
    await redis.zrem(own.alertsOpen, probe.id);
    expect(await createAlerts({ redis, keys: own, now }).completeOpenIndex()).toBe(0);
    expect(await redis.zscore(own.alertsOpen, probe.id)).toBeNull();
  });
});
