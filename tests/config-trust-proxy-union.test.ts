// Rule: INTERLOCK_TRUST_PROXY never trusts the internet at large ("never `true`"), however it is split: the ranges
// listed are counted together, each address once (overlaps merged), and more than one IPv4 /8 or one IPv6 /7 of them
// outside the loopback, link-local and private ranges the keywords name is refused at start, naming the total. An
// IPv4-mapped range counts as the IPv4 range it maps. 256 /8s, each narrow enough alone, were `true` by another name.
import { describe, expect, it } from 'vitest';
import { proxyAddr, trustProxyProblem } from './support/trust-proxy.js';

const problem = trustProxyProblem;

const everyIpv4 = Array.from({ length: 256 }, (_, i) => `${i}.0.0.0/8`).join(',');
const everyIpv6 = Array.from({ length: 128 }, (_, i) => `${(i * 2).toString(16)}00::/7`).join(',');

describe('narrow ranges that add up to more than a proxy needs', () => {
  it('256 IPv4 /8s, which proxy-addr takes as every client, are refused naming the total', () => {
    const trust = proxyAddr.compile(everyIpv4.split(','));
    expect(trust('8.8.8.8', 0)).toBe(true);
    // All of IPv4 less 127/8, 10/8, 172.16/12, 192.168/16 and 169.254/16.
    expect(problem(everyIpv4)).toContain(`INTERLOCK_TRUST_PROXY: the ranges listed hold ${2 ** 32 - 2 * 2 ** 24 - 2 ** 20 - 2 * 2 ** 16} IPv4 addresses together (253.93 /8s)`);
    expect(problem(everyIpv4)).toContain("list only the proxies' own addresses or ranges, or give a hop count");
  });

  it('128 IPv6 /7s, which proxy-addr takes as every IPv6 client, are refused naming the total', () => {
    expect(proxyAddr.compile(everyIpv6.split(','))('2001:4860:4860::8888', 0)).toBe(true);
    expect(problem(everyIpv6)).toMatch(/INTERLOCK_TRUST_PROXY: the ranges listed hold \d+ IPv6 addresses together \(126\.88 \/7s\)/);
  });

  it.each([
    ['8.0.0.0/8, 9.0.0.0/9', '25165824 IPv4 addresses together (1.5 /8s)'],
    ['8.0.0.0/8, 9.0.0.1', '16777217 IPv4 addresses together (1.01 /8s)'],
    ['8.0.0.0/8, ::ffff:9.0.0.0/104', '33554432 IPv4 addresses together (2 /8s)'],
    ['::ffff:8.0.0.0/104, ::ffff:9.0.0.0/104', '33554432 IPv4 addresses together (2 /8s)'],
    ['loopback, linklocal, uniquelocal, 8.0.0.0/8, 9.0.0.0/16', '16842752 IPv4 addresses together (1.01 /8s)'],
    ['2000::/7, 2200::/7', `${2n ** 122n} IPv6 addresses together (2 /7s)`],
    ['2000::/7, 2a00::/8', `${3n * 2n ** 120n} IPv6 addresses together (1.5 /7s)`],
  ])('%s is refused: %s', (value, total) => {
    expect(problem(value)).toContain(`INTERLOCK_TRUST_PROXY: the ranges listed hold ${total}, loopback, link-local and private ones not counted`);
  });
});

describe('ranges that together stay within one /8 (IPv4) or /7 (IPv6)', () => {
  it.each([
    '8.0.0.0/8, 8.0.0.0/8',
    '8.0.0.0/8, 8.1.0.0/16, 8.8.8.8',
    '8.1.2.3/8, 8.0.0.0/8',
    '10.0.0.0/8, 10.1.0.0/16',
    '10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, 127.0.0.1/8, 169.254.0.0/16, 8.0.0.0/8',
    'loopback, linklocal, uniquelocal',
    'loopback, linklocal, uniquelocal, 8.0.0.0/8, 2000::/7',
    '::ffff:8.0.0.0/104, 8.0.0.0/8',
    '2000::/7, 2000::/8, 2001:db8::/32',
    '2000::/7, fc00::/7, fe80::/10, ::1',
    '203.0.113.7, 198.51.100.0/24, 2001:db8::1',
    '2',
  ])('%s is taken', (value) => {
    expect(problem(value)).toBeNull();
  });
});
