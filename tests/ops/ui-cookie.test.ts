// The page's sign-in cookie holds its session. The service listens on plain HTTP; behind an HTTPS proxy the cookie
// must still be Secure (or a browser sends the session over any http:// request to that host), and only a proxy the
// operator names (INTERLOCK_TRUST_PROXY) may say a request came over HTTPS: the same header from anyone else changes
// nothing. Before this setting no request was ever taken as HTTPS, so the cookie was never Secure.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/interlock.js';
import { rigSuite, TOKENS, type Rig } from '../http/rig.js';

function signIn(rig: Rig) {
  return request(rig.app).post('/ui/sign-in').type('form').set('host', 'interlock.example.com').set('origin', 'https://interlock.example.com').set('sec-fetch-site', 'same-origin').set('x-forwarded-proto', 'https').send({ token: TOKENS.operator });
}

describe('the sign-in cookie behind an HTTPS proxy', () => {
  const trusting = rigSuite({ config: { trustProxy: 'loopback' } });
  const plain = rigSuite();

  it('is Secure when the proxy the operator trusts says the page was reached over HTTPS', async () => {
    const signed = await signIn(trusting);
    expect(signed.status).toBe(303);
    expect(String(signed.headers['set-cookie'])).toMatch(/^interlock_session=.*;\s*Secure/i);
  });

  it('ignores X-Forwarded-Proto from a hop nobody named (the cookie is not marked Secure on its word)', async () => {
    const signed = await signIn(plain);
    expect(signed.status).toBe(303);
    expect(String(signed.headers['set-cookie'])).not.toMatch(/;\s*Secure/i);
  });

  it('INTERLOCK_TRUST_PROXY takes hop counts, names and addresses, and refuses "true" (anyone could say anything)', () => {
    expect(loadConfig({ INTERLOCK_TRUST_PROXY: '1' }).trustProxy).toBe(1);
    expect(loadConfig({ INTERLOCK_TRUST_PROXY: 'loopback, 10.0.0.0/8' }).trustProxy).toBe('loopback, 10.0.0.0/8');
    expect(loadConfig({}).trustProxy).toBeNull();
    expect(() => loadConfig({ INTERLOCK_TRUST_PROXY: 'true' })).toThrow(/INTERLOCK_TRUST_PROXY/);
    expect(loadConfig({ INTERLOCK_TRUST_PROXY: '::1, fd00::/8, 192.168.1.5' }).trustProxy).toBe('::1, fd00::/8, 192.168.1.5');
    // Express would read these as addresses (0.0.0.10), or fail on them only once the app is built.
    for (const [value, why] of [['10', 'a number of hops must be from 1 to 9'], ['0', 'a number of hops must be from 1 to 9'], ['abc', 'part 1 (abc) is not loopback'], ['10.0.0.0/99', 'part 1 (10.0.0.0/99) is not'], ['loopback, 2', 'part 2 (2) is not'], ['1.2.3', 'part 1 (1.2.3) is not']]) {
      expect(() => loadConfig({ INTERLOCK_TRUST_PROXY: value }), value).toThrow(`INTERLOCK_TRUST_PROXY: ${why}`);
    }
  });
});
