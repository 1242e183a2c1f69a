// Rule: sign-ins with a token this service does not know spend the allowance of their client address, whatever host
// name they are sent to (the Host header is the sender's to choose, so it chooses no allowance). A page of another
// site rebound to the listener's address (DNS rebinding) posts from the operator's own browser, so from the operator's
// address: its wrong tokens do empty that address's allowance, but a token that signed in (or called) from that
// address before is checked and taken as ever, so the operator who signed in there is not locked out; a token used
// there for the first time waits, under any name. In memory the counter keeps at most its number of addresses, and
// per address the digests of its last few tokens that authenticated.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { createFailedSignIns } from '../../webhooks/ui/failed-sign-ins.js';
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

  it('empties the address’s allowance, but the operator’s token, which signed in there before, is still taken; a first use waits', async () => {
    expect((await signInUnder(SERVICE, TOKENS.operator)).status).toBe(303);
    const rebound: number[] = [];
    for (let i = 0; i < 12; i += 1) rebound.push((await signInUnder(REBOUND, `guess-${i}-0123456789abcdef`)).status);
    expect(rebound).toEqual([...Array<number>(10).fill(401), 429, 429]);

    const own = await signInUnder(SERVICE, TOKENS.operator);
    expect(own.status, `the operator was refused after a rebound page's guesses: ${own.text.slice(0, 300)}`).toBe(303);
    expect(([] as string[]).concat(own.headers['set-cookie'] ?? []).some((line) => /^interlock_session=v1\./.test(line))).toBe(true);

    // Another name is no way round the allowance: a guess under the service's name, and a right token never used from
    // this address, are refused before they are checked.
    expect((await signInUnder(SERVICE, 'other-0-0123456789abcdef')).status).toBe(429);
    const first = await signInUnder(SERVICE, TOKENS.auditor);
    expect(first.status).toBe(429);
    expect(first.text).toContain('Too many sign-ins from your address used a token this service does not know');
    // The log names the host the guesses came under, so the operator can see whose name they used.
    expect(rig.logs.some((line) => line.msg === 'page sign-in with an unknown token' && line.host === REBOUND)).toBe(true);
  });
});

describe('the allowance keyed by address, in memory', () => {
  it('keeps one bucket per address, however many host names it sends', () => {
    const failures = createFailedSignIns({ perMinute: 6, burst: 2, addresses: 3, known: 2 }, () => 0);
    failures.failed('203.0.113.9', 'guess-a');
    expect(failures.waitSeconds('203.0.113.9')).toBe(0);
    failures.failed('203.0.113.9', 'guess-b');
    expect(failures.waitSeconds('203.0.113.9')).toBeGreaterThan(0);
    expect(failures.waitSeconds('203.0.113.10')).toBe(0);
  });

  it('lets a token that authenticated from an address through its empty bucket, only its last `known`, and only there', () => {
    const failures = createFailedSignIns({ perMinute: 6, burst: 1, addresses: 3, known: 2 }, () => 0);
    for (const token of ['one', 'two', 'three']) failures.succeeded('2001:db8:5:6::1', token);
    failures.failed('2001:db8:5:6::99', 'guess');
    // The same /64: one client.
    expect(['one', 'two', 'three', 'guess', undefined].map((token) => failures.waitSeconds('2001:db8:5:6::42', token) > 0)).toEqual([true, false, false, true, true]);
    expect(failures.waitSeconds('2001:db8:5:7::1', 'guess')).toBe(0);
    failures.failed('2001:db8:5:7::1', 'guess');
    expect(failures.waitSeconds('2001:db8:5:7::1', 'two')).toBeGreaterThan(0);
    // A known token that no longer authenticates (removed since) is no guess: it spends nothing.
    failures.failed('192.0.2.1', 'x');
    failures.succeeded('192.0.2.2', 'removed');
    failures.failed('192.0.2.2', 'removed');
    expect(failures.waitSeconds('192.0.2.2')).toBe(0);
  });

  it('keeps the known tokens of at most its number of addresses, the one whose token authenticated longest ago forgotten', () => {
    const failures = createFailedSignIns({ perMinute: 6, burst: 1, addresses: 3, known: 2 }, () => 0);
    for (const address of ['a', 'b', 'c']) failures.succeeded(address, 'right');
    failures.succeeded('a', 'right');
    failures.succeeded('d', 'right');
    for (const address of ['a', 'b']) failures.failed(address, 'guess');
    expect(['a', 'b'].map((address) => failures.waitSeconds(address, 'right') > 0)).toEqual([false, true]);
  });
});
