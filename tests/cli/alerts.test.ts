// `interlock alerts` through the real binary: the open alerts, and a person resolving one once it is handled (a
// late landing's alert asks for exactly that: "Resolve this alert once the customer has been told").
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { createAlerts } from '../../src/redis/alerts.js';
import { createKeys } from '../../src/redis/keys.js';
import { REDIS_URL } from '../support/harness.js';
import { runCli, tempDir } from './run-cli.js';

const prefix = `tcli${randomBytes(5).toString('hex')}`;
const temp = tempDir('alerts');
const env = { REDIS_URL, INTERLOCK_KEY_PREFIX: prefix, INTERLOCK_DATA_DIR: temp.dir };
const redis = new Redis(REDIS_URL);
const alerts = createAlerts({ redis, keys: createKeys(prefix), now: async () => Date.now() });

afterAll(async () => {
  const keys = await redis.keys(`${prefix}:*`);
  if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
  temp.remove();
});

describe('interlock alerts', { timeout: 90_000 }, () => {
  it('resolves an alert a person has handled, once, naming who; it leaves the open list; a bad or unknown id records nothing', async () => {
    const effectId = randomBytes(32).toString('hex');
    const { alert } = await alerts.raise({ kind: 'late_landing', effectId, subject: 'payment:pi_late', centsAtStake: 2_000, refund: 're_late', disputes: [], sentence: 'A send landed after the gate had settled the effect as REFUSED:stale_premise.', action: 'Check the effect at Stripe. Resolve this alert once the customer has been told.' });
    const resolved = await runCli(['alerts', 'resolve', alert.id, '--by', 'lee@support'], env);
    expect(resolved.code, resolved.stderr).toBe(0);
    expect(JSON.parse(resolved.stdout)).toMatchObject({ id: alert.id, resolvedBy: 'lee@support (cli)' });
    expect((await alerts.get(alert.id))?.resolvedAt).not.toBeNull();
    const open = await runCli(['alerts', '--json'], env);
    expect(open.code, open.stderr).toBe(0);
    expect(JSON.parse(open.stdout)).toEqual({ alerts: [] });

    const again = await runCli(['alerts', 'resolve', alert.id, '--by', 'sam'], env);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('lee@support (cli)');
    expect((await alerts.get(alert.id))?.resolvedBy).toBe('lee@support (cli)');
    const unknown = await runCli(['alerts', 'resolve', `late_landing:${'0'.repeat(64)}`, '--by', 'lee'], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('No alert');
    const bad = await runCli(['alerts', 'resolve', 'not-an-alert', '--by', 'lee'], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('is not an alert id');
  });
});
