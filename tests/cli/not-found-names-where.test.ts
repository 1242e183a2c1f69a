// Rule: an error must say what the caller got wrong. README line 75-78: `npx interlock` commands find the running
// service through `.data/service.json` (or the one under INTERLOCK_DATA_DIR). A newcomer who runs
// `npx interlock effect show --request case-…` without the service's data dir (another directory, or forgetting the
// INTERLOCK_DATA_DIR= prefix the start-up lines carry) silently reads redis://127.0.0.1:6379 instead and is told
// "No effect … under this REDIS_URL and INTERLOCK_KEY_PREFIX" although REDIS_URL is not set at all: the message must
// name the Redis it read, or that no service.json was found, so the mistake can be seen.
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { REDIS_URL } from '../support/harness.js';
import { runCli, tempDir } from './run-cli.js';

const data = tempDir('rv-readme-nofile');
const served = tempDir('rv-readme-served');
afterAll(() => {
  data.remove();
  served.remove();
});

it('effect show with no service.json and REDIS_URL unset names where it looked', async () => {
  const run = await runCli(['effect', 'show', '--request', `case-pi_${randomBytes(6).toString('hex')}`], {
    REDIS_URL: undefined,
    STRIPE_SECRET_KEY: undefined,
    INTERLOCK_KEY_PREFIX: `rv-readme-${randomBytes(4).toString('hex')}`,
    INTERLOCK_DATA_DIR: data.dir,
  });
  expect(run.code).toBe(1);
  // As it stands: "No effect … under this REDIS_URL and INTERLOCK_KEY_PREFIX." (REDIS_URL unset; nothing says 6379
  // or that the data dir holds no service.json)
  expect(run.stderr).toMatch(/127\.0\.0\.1:6379|service\.json/);
});

it('effect show and case show, with no service.json and REDIS_URL unset, say the default Redis was read because the data dir has no service.json', async () => {
  const prefix = `rv-readme-${randomBytes(4).toString('hex')}`;
  const env = { REDIS_URL: undefined, STRIPE_SECRET_KEY: undefined, INTERLOCK_KEY_PREFIX: prefix, INTERLOCK_DATA_DIR: data.dir };
  const effect = await runCli(['effect', 'show', '--request', 'case-pi_nothere'], env);
  expect(effect.code).toBe(1);
  expect(effect.stderr).toMatch(new RegExp(`in the Redis at redis://127\\.0\\.0\\.1:6379 under key prefix ${prefix}: REDIS_URL is unset and no service\\.json was found in ${data.dir}, so this command fell back to the default Redis`));
  const kase = await runCli(['case', 'show', 'case-nothere'], env);
  expect(kase.code).toBe(1);
  expect(kase.stderr).toContain(`No case case-nothere in the Redis at redis://127.0.0.1:6379 under key prefix ${prefix}: REDIS_URL is unset and no service.json was found in ${data.dir}`);
});

it('with REDIS_URL unset, a command that took the Redis of the service.json in its data dir names that file and that Redis', async () => {
  const prefix = `rv-readme-${randomBytes(4).toString('hex')}`;
  writeFileSync(join(served.dir, 'service.json'), `${JSON.stringify({ pid: 999_999, redis_url: REDIS_URL, key_prefix: prefix, stopped_at: new Date().toISOString() })}\n`, { mode: 0o600 });
  const run = await runCli(['effect', 'show', '--request', 'case-pi_nothere'], { REDIS_URL: undefined, STRIPE_SECRET_KEY: undefined, INTERLOCK_KEY_PREFIX: undefined, INTERLOCK_DATA_DIR: served.dir });
  expect(run.code, run.stderr).toBe(1);
  expect(run.stderr).toContain(`under key prefix ${prefix} (from ${join(served.dir, 'service.json')}).`);
  expect(run.stderr).not.toContain('REDIS_URL and INTERLOCK_KEY_PREFIX');
});
