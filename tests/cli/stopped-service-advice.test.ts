// RULE: a command that finds the service of another INTERLOCK_DATA_DIR stopped says how to start that service again
// (`INTERLOCK_DATA_DIR=<dir> npm start`), not `npm start`, which starts the default data dir's service instead.
//
// README "Two commands on a fresh machine": under another INTERLOCK_DATA_DIR the lines to try carry
// `INTERLOCK_DATA_DIR=<dir> npx interlock …`, and "a command run while the service is stopped says so (exit 2), and the
// next `npm start` brings the journal back". Followed under another data dir, the command's advice is
// "start it again (`npm start`) to reach its journal" (src/cli/stores.ts unreachableAdvice): run as said, `npm start`
// starts a new, empty service under .data, never the stopped one's journal. The advice should name the data dir, as
// the printed lines do.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { freePort } from '../../src/redis/private-server.js';
import { runCli, tempDir } from './run-cli.js';

const temp = tempDir('rv-readme-stopped');
afterAll(() => temp.remove());

it('a command against a stopped service under another data dir says how to start that one (INTERLOCK_DATA_DIR=<dir> npm start), exit 2', async () => {
  const port = await freePort();
  // What a clean stop of `INTERLOCK_DATA_DIR=<dir> npm start` leaves (service.json marked stopped; its Redis gone).
  writeFileSync(
    join(temp.dir, 'service.json'),
    `${JSON.stringify({ pid: 999_999, roles: ['worker', 'webhooks', 'facts', 'api'], redis_url: `redis://127.0.0.1:${port}`, key_prefix: 'interlock', stripe_api_base: 'http://127.0.0.1:12111', stripe_secret_key: 'sk_test_sandbox', stopped_at: new Date().toISOString() }, null, 2)}\n`,
    { mode: 0o600 },
  );
  const run = await runCli(['effect', 'show', '--request', 'case-pi_x'], { INTERLOCK_DATA_DIR: temp.dir, REDIS_URL: undefined, INTERLOCK_KEY_PREFIX: undefined, STRIPE_SECRET_KEY: undefined, STRIPE_API_BASE: undefined });
  expect(run.code, run.stderr).toBe(2);
  expect(run.stderr).toContain('which is not running');
  // Today: "start it again (`npm start`) to reach its journal": that starts the default .data service instead.
  expect(run.stderr).toContain(`INTERLOCK_DATA_DIR=${temp.dir} npm start`);
});
