// Rule: INTERLOCK_METRICS_ADDR may not be "the service's own HTTP address" (README configuration table), and that
// refusal must be clear and only where it is true: a process that listens on no HTTP port (the worker role alone) has
// no own address to clash with, and a port given with `serve --port` is the service's own address just as
// INTERLOCK_PORT is, so the same clear sentence (not "in use by another program") must name the clash.
import { randomBytes } from 'node:crypto';
import { afterAll, expect, it } from 'vitest';
import { freePort } from '../../src/redis/private-server.js';
import { tempDir } from '../cli/run-cli.js';
import { spawnWorker } from '../pipeline/pipeline-support.js';
import { removePrefixes } from '../support/harness.js';

const prefix = `ops-metrics-${randomBytes(4).toString('hex')}`;
const data = tempDir('ops-metrics-metrics');
afterAll(async () => {
  data.remove();
  await removePrefixes([prefix]);
});

const base = {
  REDIS_URL: 'redis://127.0.0.1:6379',
  INTERLOCK_KEY_PREFIX: prefix,
  INTERLOCK_UNSAFE_DURABILITY: '1',
  INTERLOCK_DATA_DIR: data.dir,
  STRIPE_SECRET_KEY: 'sk_test_rvOpsMetricsAddr',
};

it('a worker-only process (no HTTP listener) serves its tokenless metrics on the port INTERLOCK_PORT would name', async () => {
  const port = await freePort();
  const worker = spawnWorker({ ...base, INTERLOCK_HOST: '127.0.0.1', INTERLOCK_PORT: String(port), INTERLOCK_METRICS_ADDR: `127.0.0.1:${port}` }, ['serve', '--roles', 'worker']);
  try {
    const started = await worker.ready.then(
      () => 'served',
      () => `exited before serving: ${worker.logs().trim().split('\n').slice(-1)[0] ?? ''}`,
    );
    expect(started).toBe('served');
    const scraped = await fetch(`http://127.0.0.1:${port}/metrics`);
    expect(scraped.status).toBe(200);
  } finally {
    await worker.stop(5_000);
  }
}, 60_000);

it('serve --port naming the metrics port is refused with the sentence that names the clash, not "in use by another program"', async () => {
  const port = await freePort();
  const api = spawnWorker({ ...base, INTERLOCK_METRICS_ADDR: `127.0.0.1:${port}` }, ['serve', '--roles', 'api', '--port', String(port)]);
  try {
    const exit = await Promise.race([api.exited, api.ready.then(() => 'served' as const, () => 'failed' as const).then(async () => api.exited)]);
    expect(exit.code).toBe(2);
    const said = api.logs();
    expect(said).not.toContain('in use by another program');
    expect(said).toContain("is the service's own HTTP address");
  } finally {
    await api.stop(5_000);
  }
}, 60_000);
