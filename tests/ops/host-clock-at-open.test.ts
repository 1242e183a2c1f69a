// Rule: a process compares this host's clock with Redis's as soon as its stores open, so the offset is known (and
// warned of past 60 s) before anything else reads Redis's time. A webhooks-only process reads Redis's time nowhere else
// before a /metrics scrape: its stale_timestamp refusals said the offset was not measured yet, and a host clock far off
// went unwarned, until then.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, it } from 'vitest';
import { removePrefixes } from '../support/harness.js';

const prefix = `hcopen${randomBytes(4).toString('hex')}`;
afterAll(() => removePrefixes([prefix]));

it("knows this host's offset from Redis's clock once its stores are open, with nothing else asked of Redis", () => {
  const script = fileURLToPath(new URL('../support/host-clock-at-open.ts', import.meta.url));
  const run = spawnSync(process.execPath, ['--import', 'tsx', script], { env: { ...process.env, INTERLOCK_KEY_PREFIX: prefix, INTERLOCK_LOG_LEVEL: 'silent' }, encoding: 'utf8', timeout: 30_000 });
  expect(run.status, run.stderr).toBe(0);
  const offset = JSON.parse(run.stdout.trim()) as { offsetMs: number } | null;
  expect(offset).not.toBeNull();
  // The same machine's clocks: within a second of each other.
  expect(Math.abs(offset?.offsetMs ?? Infinity)).toBeLessThan(1_000);
});
