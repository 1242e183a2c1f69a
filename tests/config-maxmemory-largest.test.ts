// Rule: INTERLOCK_REDIS_MAXMEMORY is a limit Redis keeps. A size past what Redis can hold as written is refused, as 0
// is, naming the setting and the largest size taken: redis-server reads a size past 2^64 bytes as no limit at all
// (99999999999999999999 became 18446744073709551615; 17179869184gb, 2^64, became 0) or wraps it round to a small one
// (17179869185gb became 1gb), and the service started on it with a Redis that grows until it is killed.
import { expect, it } from 'vitest';
import { ConfigError, loadConfig, MAX_REDIS_MAXMEMORY_BYTES, redisSizeBytes } from '../src/config.js';

it.each([['99999999999999999999'], ['17179869184gb'], ['17179869185gb'], ['8388608gb'], ['9007199254740992'], ['9007199254741k']])('%s is refused, naming the setting and the largest size taken', (value) => {
  expect(() => loadConfig({ INTERLOCK_REDIS_MAXMEMORY: value })).toThrow(ConfigError);
  expect(() => loadConfig({ INTERLOCK_REDIS_MAXMEMORY: value })).toThrow(`is more than the largest size taken, 8388607gb (${Number.MAX_SAFE_INTEGER} bytes)`);
  expect(() => loadConfig({ INTERLOCK_REDIS_MAXMEMORY: value })).toThrow(/INTERLOCK_REDIS_MAXMEMORY: /);
});

it.each([['8388607gb'], ['9007199254740991'], ['64gb'], [' 2gb\n']])('%j, a size Redis holds, is taken as written (without the whitespace around it)', (value) => {
  expect(loadConfig({ INTERLOCK_REDIS_MAXMEMORY: value }).redisMaxmemory).toBe(value.trim());
});

it('the largest size taken is the one the message names', () => {
  expect(redisSizeBytes('8388607gb')).toBeLessThanOrEqual(MAX_REDIS_MAXMEMORY_BYTES);
  expect(redisSizeBytes('8388608gb')).toBeGreaterThan(MAX_REDIS_MAXMEMORY_BYTES);
});
