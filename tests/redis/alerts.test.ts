// The alerts store (issue 10 §4) on the machine's Redis under a key prefix of its own: what GET /v1/alerts,
// `interlock alerts`, the /ui page and the open-alerts gauge read.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { createAlerts, type AlertKind } from '../../src/redis/alerts.js';
import { createKeys } from '../../src/redis/keys.js';
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
const raise = (n: number, kind: AlertKind = 'not_judged') =>
  alerts.raise({ kind, effectId: effectId(n), subject: 'payment:pi_1', centsAtStake: 2_000, refund: null, disputes: [], sentence: 's', action: 'a' });

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
