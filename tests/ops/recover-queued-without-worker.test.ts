// Rule: POST /v1/recover answers in the deployment docker-compose.yml states, whose only API (roles api,webhooks) has
// no worker role: it queues a recovery pass (202, with its job id) that a worker process runs and logs under that id,
// even one started after the request. It answered 503 not_available, telling the operator to call a worker process,
// which under compose publishes no API.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startSplitDeployment, type SplitDeployment } from './split-support.js';

let split: SplitDeployment;
let apiPort: number;
beforeAll(async () => {
  split = await startSplitDeployment('recover-queued');
  apiPort = split.port();
  await split.start('api,webhooks', { INTERLOCK_PORT: String(apiPort) }).ready;
}, 90_000);
afterAll(async () => {
  await split?.stop();
}, 60_000);

it('an api without the worker role queues the pass, and a worker process runs it and logs it under its job id', { timeout: 120_000 }, async () => {
  const response = await fetch(`http://127.0.0.1:${apiPort}/v1/recover`, { method: 'POST', headers: { authorization: `Bearer ${split.token('operator')}`, 'content-type': 'application/json' }, body: '{}' });
  const body = (await response.json()) as { object?: string; job_id?: string; sentence?: string };
  expect(response.status, JSON.stringify(body)).toBe(202);
  expect(body.object).toBe('recovery_queued');
  const jobId = body.job_id ?? '';
  expect(jobId).not.toBe('');
  expect(body.sentence).toContain(jobId);
  const worker = split.start('worker,facts', { INTERLOCK_METRICS_ADDR: `127.0.0.1:${split.port()}` });
  await worker.ready;
  await expect.poll(() => worker.logs(), { timeout: 60_000, interval: 100 }).toContain(`job ${jobId}) ran:`);
});
