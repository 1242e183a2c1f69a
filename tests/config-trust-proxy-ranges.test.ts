// Rule: INTERLOCK_TRUST_PROXY is refused by the configuration check at start (exit 2, naming the setting, nothing
// started) whenever Express could not be built with it: every value loadConfig takes, proxy-addr (through Express's
// `trust proxy`) takes too, 0.0.0.0/0 and ::/0 included, which passed the check and then failed inside createApp
// after the workers and recovery had started. And "never `true`" holds for ranges: one too wide to be a proxy's (an
// IPv4 prefix shorter than /8, an IPv6 one shorter than /7; an IPv4-mapped range judged as its IPv4 part) is refused
// with a sentence saying why, so 0.0.0.0/1, 128.0.0.0/1, ::/1, 8000::/1 cannot let every client choose its req.ip.
import { join } from 'node:path';
import express from 'express';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { proxyAddr, trustProxyProblem } from './support/trust-proxy.js';
import { runCli, tempDir } from './cli/run-cli.js';

const problem = trustProxyProblem;

describe('a value Express cannot be built with', () => {
  it.each(['0.0.0.0/0', '::/0', '10.0.0.0/8, ::/0', '::ffff:0.0.0.0/0'])('%s is refused by the configuration check', (value) => {
    expect(problem(value)).toMatch(/^Configuration is invalid \(INTERLOCK_TRUST_PROXY: /);
  });

  it('no value loadConfig takes makes Express (proxy-addr) throw', () => {
    const prefix = (max: number) => fc.option(fc.integer({ min: 0, max }).map((bits) => `/${bits}`), { nil: '' });
    const part = fc.oneof(
      fc.tuple(fc.ipV4(), prefix(40)).map(([address, bits]) => address + bits),
      fc.tuple(fc.ipV6(), prefix(140)).map(([address, bits]) => address + bits),
      fc.tuple(fc.ipV4(), prefix(140)).map(([address, bits]) => `::ffff:${address}${bits}`),
      fc.constantFrom('loopback', 'linklocal', 'uniquelocal'),
    );
    fc.assert(
      fc.property(fc.array(part, { minLength: 1, maxLength: 3 }), (parts) => {
        const value = parts.join(', ');
        if (problem(value) !== null) return;
        expect(() => proxyAddr.compile(value.split(',').map((item) => item.trim())), value).not.toThrow();
        expect(() => express().set('trust proxy', loadConfig({ INTERLOCK_TRUST_PROXY: value }).trustProxy), value).not.toThrow();
      }),
      { numRuns: 2000, examples: [[['0.0.0.0/0']], [['::/0']], [['::ffff:1.2.3.4/0']]] },
    );
  });

  describe('serve', () => {
    const temp = tempDir('interlock-trust-proxy');
    const prefix = `trust-proxy-ranges-${process.pid}:`;
    afterAll(async () => {
      temp.remove();
      const redis = new Redis('redis://127.0.0.1:6379', { lazyConnect: true });
      await redis.connect();
      const keys = await redis.keys(`${prefix}*`);
      if (keys.length > 0) await redis.del(...keys);
      await redis.quit();
    });

    it('exits 2 naming INTERLOCK_TRUST_PROXY, before anything starts', { timeout: 60_000 }, async () => {
      const env = { INTERLOCK_DATA_DIR: join(temp.dir, 'data'), REDIS_URL: 'redis://127.0.0.1:6379', INTERLOCK_KEY_PREFIX: prefix, INTERLOCK_HOST: '127.0.0.1', INTERLOCK_PORT: '0', INTERLOCK_UNSAFE_DURABILITY: '1', INTERLOCK_TRUST_PROXY: '0.0.0.0/0', INTERLOCK_LOG_LEVEL: 'error' };
      const run = await runCli(['serve', '--roles', 'api'], env, { timeoutMs: 40_000 });
      expect(run.stderr).toContain('INTERLOCK_TRUST_PROXY');
      expect(run.code, run.stderr.slice(-1500)).toBe(2);
    });
  });
});

describe('a range too wide to be a proxy\'s', () => {
  it.each([
    ['0.0.0.0/1, 128.0.0.0/1, ::/1, 8000::/1', 'part 1 (0.0.0.0/1)'],
    ['10.0.0.0/8, 128.0.0.0/1', 'part 2 (128.0.0.0/1)'],
    ['10.0.0.0/7', 'part 1 (10.0.0.0/7)'],
    ['loopback, ::/1', 'part 2 (::/1)'],
    ['fc00::/6', 'part 1 (fc00::/6)'],
    ['::ffff:0.0.0.0/97', 'part 1 (::ffff:0.0.0.0/97, an IPv4-mapped range and so judged as the IPv4 range /1)'],
    ['::ffff:10.0.0.0/103', 'part 1 (::ffff:10.0.0.0/103, an IPv4-mapped range and so judged as the IPv4 range /7)'],
    ['::ffff:0:0/64', 'part 1 (::ffff:0:0/64, an IPv4-mapped range and so judged as the IPv4 range /0)'],
  ])('%s is refused, saying why', (value, part) => {
    expect(problem(value)).toContain(`INTERLOCK_TRUST_PROXY: ${part} is too wide to be a proxy's: a range shorter than /8 (IPv4) or /7 (IPv6) holds the internet at large`);
  });

  it.each(['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7', 'fd00::/8', '::ffff:10.0.0.0/104', '203.0.113.7', '2001:db8::1', 'loopback, linklocal, uniquelocal', '2'])('%s (a proxy\'s own range or address) is taken', (value) => {
    expect(problem(value)).toBeNull();
  });
});
