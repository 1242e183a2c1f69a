// Rule (webhooks/ops/metrics.ts replicaChecks): the redis_replicas readiness check counts one time at a time: probes
// asked while a count is in flight share its answer, so a Redis that does not answer is not sent a new INFO on the
// durability monitor's connection each probe (as redis_writable shares its write); once a count ends, the next probe
// counts again.
import { describe, expect, it } from 'vitest';
import { replicaChecks } from '../../webhooks/ops/metrics.js';

type Masters = Awaited<ReturnType<Parameters<typeof replicaChecks>[0]['replicas']>>;

describe('the redis_replicas check while a count is in flight', () => {
  it('shares the count in flight, and counts again once it ended', async () => {
    const pending: ((masters: Masters) => void)[] = [];
    const replicas = () => new Promise<Masters>((resolve) => pending.push(resolve));
    const [check] = replicaChecks({ required: 1, waitMs: 1_000, replicas });
    if (check === undefined) throw new Error('no redis_replicas check with INTERLOCK_REDIS_MIN_REPLICAS=1');
    const probes = [check.check(), check.check(), check.check()];
    expect(pending).toHaveLength(1);
    pending[0]?.([{ master: '127.0.0.1:6379', replicas: [{ address: '127.0.0.1:6380', state: 'online', lagSeconds: 0 }] }]);
    expect(await Promise.all(probes)).toEqual([{ ok: true }, { ok: true }, { ok: true }]);
    const next = check.check();
    expect(pending).toHaveLength(2);
    pending[1]?.([{ master: '127.0.0.1:6379', replicas: [] }]);
    expect(await next).toMatchObject({ ok: false, detail: expect.stringContaining('no replica connected') });
  });
});
