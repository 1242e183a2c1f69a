// Rule: once an api process runs on a data dir, <dataDir>/service.json names it (api_url, tokens), even when a
// webhooks-only process started first and still writes it: the README's `….tokens.support` line then reads a token.
// The joining api adds its facts and leaves the writer's (its pid) as they are, and takes its address out once it stops.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { spawnWorker } from '../pipeline/pipeline-support.js';
import { startSplitDeployment, type SplitDeployment } from './split-support.js';

type Facts = { pid: number; api_url: string | null; page_url: string | null; roles: string[]; tokens: Record<string, string>; stopped_at?: string };

let split: SplitDeployment;
let webhooks: ReturnType<typeof spawnWorker>;
let api: ReturnType<typeof spawnWorker>;
let apiPort: number;
beforeAll(async () => {
  split = await startSplitDeployment('service-json-api-joins');
  webhooks = split.start('webhooks', { INTERLOCK_PORT: String(split.port()) });
  await webhooks.ready;
  apiPort = split.port();
  api = split.start('api', { INTERLOCK_PORT: String(apiPort) });
  await api.ready;
}, 90_000);
afterAll(async () => {
  await split?.stop();
}, 60_000);

const facts = () => JSON.parse(readFileSync(join(split.dataDir, 'service.json'), 'utf8')) as Facts;

it('service.json names the api that joined a webhooks-only writer, and its tokens', () => {
  const written = facts();
  expect(written.api_url).toBe(`http://127.0.0.1:${apiPort}`);
  expect(written.tokens.support).toBe(split.token('support'));
  expect(written.pid).toBe(webhooks.child.pid);
  expect(written.roles).toEqual(['webhooks']);
});

it('the api stopping takes its address out and leaves the running writer its file', { timeout: 60_000 }, async () => {
  await api.stop(15_000);
  const written = facts();
  expect(written.api_url).toBeNull();
  expect(written.page_url).toBeNull();
  expect(written.stopped_at).toBeUndefined();
  expect(written.pid).toBe(webhooks.child.pid);
});
