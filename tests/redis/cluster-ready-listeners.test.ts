// Rule: a durability check (run every INTERLOCK_DURABILITY_CHECK_MS by the monitor, and at scrape and readiness time)
// leaves nothing behind when it ends: checks made while a Redis Cluster is away must not pile up 'ready' listeners on
// the cluster client (one per check for as long as the outage lasts) nor print Node's MaxListenersExceededWarning, a
// line outside the JSON logs.
import { Cluster } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { writableNodesNow } from '../../src/redis/client.js';
import { freePort } from '../support/private-redis.js';

describe('writableNodesNow on a cluster that is not ready', () => {
  const warnings: string[] = [];
  const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`);
  process.on('warning', onWarning);
  let cluster: Cluster | undefined;
  afterAll(() => {
    process.off('warning', onWarning);
    cluster?.disconnect();
  });

  it('takes its ready listener off when the wait times out', async () => {
    // A free port nothing listens on: the cluster never becomes ready, as during an outage.
    cluster = new Cluster([{ host: '127.0.0.1', port: await freePort() }], { clusterRetryStrategy: () => 50 });
    cluster.on('error', () => undefined);
    const before = cluster.listenerCount('ready');
    // 15 checks, as the monitor makes in about 2.5 minutes of outage (5 s apart, each waiting up to 5 s).
    for (let i = 0; i < 15; i += 1) await expect(writableNodesNow(cluster, 20)).rejects.toThrow(/slot map could not be read/);
    expect(cluster.listenerCount('ready') - before).toBe(0);
    expect(warnings.filter((warning) => warning.includes('MaxListenersExceeded'))).toEqual([]);
  });
});
