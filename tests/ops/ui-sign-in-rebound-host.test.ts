// Rule: sign-ins with a token this service does not know spend the allowance of their client address under the host
// name they were sent to (the Host header, its port aside), never that of another name. A page of another site
// rebound to the listener's address (DNS rebinding) posts from the operator's own browser, so from the operator's
// address, under its own name: however many wrong tokens it sends, the operator's sign-in under the service's name
// with the right token is taken, while wrong tokens under that name are still refused past the allowance. Keyed so,
// the allowance keeps at most its number of buckets whatever names are sent, and a key is no longer for a long Host.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { bucketOf, createFailedSignIns } from '../../webhooks/ui/failed-sign-ins.js';
import { rigSuite, TOKENS } from '../http/rig.js';

const OPERATOR_ADDRESS = '198.51.100.73';
const SERVICE = 'interlock.internal:8080';
const REBOUND = 'rebound-51c2.attacker.example:8080';

describe('a rebound page signing in from the operator’s browser', () => {
  // The API's rate limit on (the failed-sign-in allowance exists only with it), and a proxy on loopback naming the client.
  const rig = rigSuite({ config: { trustProxy: 'loopback' } });

  // What a browser sends for a same-origin form post from a page at `host`.
  const signInUnder = (host: string, token: string) =>
    request(rig.app).post('/ui/sign-in').type('form').set('Host', host).set('Origin', `http://${host}`).set('Sec-Fetch-Site', 'same-origin').set('X-Forwarded-For', OPERATOR_ADDRESS).send({ token });

  it('spends its own allowance only: the operator signs in under the service’s name, and guesses there are still counted', async () => {
    const rebound: number[] = [];
    for (let i = 0; i < 12; i += 1) rebound.push((await signInUnder(REBOUND, `guess-${i}-0123456789abcdef`)).status);
    // The rebound name's own allowance is spent: its guesses stop being checked.
    expect(rebound.slice(0, 10)).toEqual(Array<number>(10).fill(401));
    expect(rebound.slice(10)).toEqual([429, 429]);

    const own = await signInUnder(SERVICE, TOKENS.operator);
    expect(own.status, `the operator was refused after a rebound page's guesses: ${own.text.slice(0, 300)}`).toBe(303);
    expect(([] as string[]).concat(own.headers['set-cookie'] ?? []).some((line) => /^interlock_session=v1\./.test(line))).toBe(true);

    // Under the service's name the allowance is as before: ten wrong tokens, then refused before the token is checked.
    const guessed: number[] = [];
    for (let i = 0; i < 11; i += 1) guessed.push((await signInUnder(SERVICE, `other-${i}-0123456789abcdef`)).status);
    expect(guessed).toEqual([...Array<number>(10).fill(401), 429]);
    const refused = await signInUnder(SERVICE, TOKENS.operator);
    expect(refused.status).toBe(429);
    expect(refused.text).toContain('Too many sign-ins from your address used a token this service does not know');

    // Host names carry no case, and the port is the listener's own: the same name in capitals, or on another port, is
    // the same bucket.
    expect((await signInUnder(SERVICE.toUpperCase(), TOKENS.operator)).status).toBe(429);
    expect((await signInUnder(SERVICE.replace(/:\d+$/, ':9090'), TOKENS.operator)).status).toBe(429);
    // The refusal names the host in the log, so the operator can see whose name the guesses came under.
    expect(rig.logs.some((line) => line.msg === 'page sign-in with an unknown token' && line.host === REBOUND)).toBe(true);
  });
});

describe('the allowance keyed by address and host name, in memory', () => {
  it('keeps at most its number of buckets however many host names one address sends, the oldest forgotten', () => {
    const failures = createFailedSignIns({ perMinute: 6, burst: 1, addresses: 3 }, () => 0);
    const names = Array.from({ length: 50 }, (_, i) => `n${i}.attacker.example`);
    for (const name of names) failures.failed('203.0.113.9', name);
    const held = names.filter((name) => failures.waitSeconds('203.0.113.9', name) > 0);
    expect(held).toEqual(names.slice(-3));
  });

  it('counts one client under one name as one bucket, whatever its address within its /64 or its port, and a long Host as a short key', () => {
    const failures = createFailedSignIns({ perMinute: 6, burst: 1, addresses: 3 }, () => 0);
    failures.failed('2001:db8:5:6::1', 'service.example');
    expect(failures.waitSeconds('2001:db8:5:6::99', 'SERVICE.example')).toBeGreaterThan(0);
    expect(failures.waitSeconds('2001:db8:5:6::99', 'other.example')).toBe(0);
    expect(failures.waitSeconds('2001:db8:5:7::1', 'service.example')).toBe(0);
    const long = 'a'.repeat(16_000);
    expect(bucketOf('192.0.2.1', long).length).toBeLessThan(64);
    expect(bucketOf('192.0.2.1', long)).not.toBe(bucketOf('192.0.2.1', `${long}b`));
    expect(bucketOf('192.0.2.1', undefined)).toBe(bucketOf('192.0.2.1', ''));
    expect(bucketOf('192.0.2.1', 'Service.Example:8080')).toBe(bucketOf('192.0.2.1', 'service.example'));
    expect(bucketOf('192.0.2.1', '[::1]:7000')).toBe(bucketOf('192.0.2.1', '[::1]'));
    expect(bucketOf('192.0.2.1', '[::1]')).not.toBe(bucketOf('192.0.2.1', '[::2]'));
  });
});
