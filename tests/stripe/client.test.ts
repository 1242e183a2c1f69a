// The client from configuration (issue 9 §2): which keys are accepted, which are refused and how the refusal reads
// (never echoing the key), where requests go, and the redaction of secrets in text others log.
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { errorCode, InterlockError } from '../../src/core/errors.js';
import { createStripeClient, guarded, sdkOf, stripeClientOptionsFromEnv } from '../../src/stripe/client.js';
import { redactSecrets, secretHint } from '../../src/core/redact.js';

const LIVE = 'sk_live_51Hsecretsecretsecret9876';

function refusal(options: Parameters<typeof createStripeClient>[0]): InterlockError {
  try {
    createStripeClient(options);
  } catch (error) {
    if (error instanceof InterlockError) return error;
    throw error;
  }
  throw new Error('expected the client to be refused');
}

describe('the Stripe client from configuration', () => {
  it('accepts test-mode secret and restricted keys, and says which mode it runs in without showing the key', () => {
    const secret = createStripeClient({ secretKey: 'sk_test_51Habcdefghijklmnop1234' });
    expect(secret).toMatchObject({ mode: 'test', keyHint: 'sk_test_…1234', apiBase: 'https://api.stripe.com:443' });
    expect(createStripeClient({ secretKey: 'rk_test_51Habcdefghijklmnop5678' })).toMatchObject({ mode: 'test', keyHint: 'rk_test_…5678' });
    expect(JSON.stringify(secret)).not.toContain('abcdefghijklmnop');
  });

  it('refuses a live key unless INTERLOCK_ALLOW_LIVE is set, naming the variable and not the key', () => {
    for (const key of [LIVE, 'rk_live_51Hsecretsecretsecret9876']) {
      const error = refusal({ secretKey: key });
      expect(errorCode(error)).toBe('invalid_config');
      expect(error.message).toContain('INTERLOCK_ALLOW_LIVE=1');
      expect(error.message).toContain('live-mode key');
      expect(error.message).not.toContain('secretsecret');
    }
    expect(createStripeClient({ secretKey: LIVE, allowLive: true })).toMatchObject({ mode: 'live', keyHint: 'sk_live_…9876' });
  });

  it('refuses anything that is not a secret or restricted key, saying what it is when it can tell', () => {
    expect(refusal({ secretKey: '' }).message).toMatch(/^STRIPE_SECRET_KEY is not set/);
    expect(refusal({ secretKey: 'pk_test_51Hpublishable' }).message).toContain('publishable key');
    expect(refusal({ secretKey: 'whsec_0123456789abcdef0123' }).message).toContain('webhook signing secret');
    for (const key of ['sk_prod_123', 'hunter2-password', 'sk_test_ä1', 'sk_test_has spaces', 'Bearer sk_test_abc']) {
      const error = refusal({ secretKey: key });
      expect(errorCode(error)).toBe('invalid_config');
      expect(error.message).not.toContain(key);
    }
  });

  it('points the SDK at the API base given (the sandbox), and refuses one it cannot use', () => {
    expect(createStripeClient({ secretKey: 'sk_test_abc', apiBase: 'http://127.0.0.1:12111' }).apiBase).toBe('http://127.0.0.1:12111');
    expect(createStripeClient({ secretKey: 'sk_test_abc', apiBase: 'https://stripe.example' }).apiBase).toBe('https://stripe.example:443');
    expect(createStripeClient({ secretKey: 'sk_test_abc', apiBase: 'http://[::1]:8080/' }).apiBase).toBe('http://[::1]:8080');
    expect(createStripeClient({ secretKey: 'sk_test_abc', apiBase: null }).apiBase).toBe('https://api.stripe.com:443');
    expect(refusal({ secretKey: 'sk_test_abc', apiBase: 'localhost:12111' }).message).toContain('http:// or https://');
    expect(refusal({ secretKey: 'sk_test_abc', apiBase: 'not a url' }).message).toContain('is not a URL');
    expect(refusal({ secretKey: 'sk_test_abc', apiBase: 'http://127.0.0.1:12111/v1' }).message).toContain('bare origin');
  });

  it('reads STRIPE_SECRET_KEY, STRIPE_API_BASE and INTERLOCK_ALLOW_LIVE from the environment', () => {
    expect(stripeClientOptionsFromEnv({ STRIPE_SECRET_KEY: 'sk_test_x', STRIPE_API_BASE: ' http://127.0.0.1:1 ', INTERLOCK_ALLOW_LIVE: '1' })).toEqual({ secretKey: 'sk_test_x', apiBase: 'http://127.0.0.1:1', allowLive: true });
    expect(stripeClientOptionsFromEnv({})).toEqual({ secretKey: '', apiBase: null, allowLive: false });
    expect(() => stripeClientOptionsFromEnv({ INTERLOCK_ALLOW_LIVE: 'sure' })).toThrow(/INTERLOCK_ALLOW_LIVE must be 1/);
    expect(refusal(stripeClientOptionsFromEnv({ STRIPE_SECRET_KEY: LIVE })).message).toContain('INTERLOCK_ALLOW_LIVE=1');
  });
});

describe('a guarded call', () => {
  const guard = () => ({ timeLeftMs: () => 1_000, beforeWrite: null, attempts: 0 });

  it('starts with no stack frames captured (stripe-node formats a call-site stack on every request, through source maps), and restores the limit after, also when the call throws', async () => {
    const before = Error.stackTraceLimit;
    let during: string | undefined;
    await guarded(guard(), async () => {
      during = new Error('call site').stack;
    });
    expect(during).toBe('Error: call site');
    expect(Error.stackTraceLimit).toBe(before);
    expect(() =>
      guarded(guard(), () => {
        throw new Error('thrown at once');
      }),
    ).toThrow('thrown at once');
    expect(Error.stackTraceLimit).toBe(before);
    // What runs after the call started, its own awaits included, has the usual stacks.
    let later: string | undefined;
    await guarded(guard(), async () => {
      await Promise.resolve();
      later = new Error('later').stack;
    });
    expect(later?.split('\n').length).toBeGreaterThan(1);
  });

  /** A server that answers every request with a customer object and remembers the headers each request came with. */
  async function withServer(run: (apiBase: string, seen: IncomingHttpHeaders[]) => Promise<void>): Promise<void> {
    const seen: IncomingHttpHeaders[] = [];
    const server = createServer((req, res) => {
      seen.push(req.headers);
      req.resume();
      req.on('end', () => {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ id: 'cus_guarded', object: 'customer' }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      await run(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  }

  it('lets the requests of the call through, held to its guard, and the tag that names the guard never leaves the process', async () => {
    await withServer(async (apiBase, seen) => {
      const sdk = sdkOf(createStripeClient({ secretKey: 'sk_test_guarded', apiBase }));
      const held = guard();
      const customer = await guarded(held, (headers) => sdk.customers.retrieve('cus_guarded', {}, { headers, maxNetworkRetries: 0 }));
      expect(customer.id).toBe('cus_guarded');
      expect(held.attempts).toBe(1);
      expect(seen).toHaveLength(1);
      expect(Object.keys(seen[0] ?? {}).filter((name) => name.includes('interlock-guard'))).toEqual([]);
    });
  });

  it('refuses a request made without the call\'s headers, with a made-up tag, or with the tag of a call that has settled; none reaches Stripe', async () => {
    await withServer(async (apiBase, seen) => {
      const sdk = sdkOf(createStripeClient({ secretKey: 'sk_test_guarded', apiBase }));
      // The SDK reports the wrapper's refusal as a connection error whose detail is the refusal.
      const refusal = async (request: Promise<unknown>) => {
        const error: unknown = await request.then(() => null, (thrown: unknown) => thrown);
        return String((error as { detail?: { message?: string } } | null)?.detail?.message);
      };
      expect(await refusal(sdk.customers.retrieve('cus_guarded', {}, { maxNetworkRetries: 0 }))).toMatch(/outside a guarded call/);
      expect(await refusal(guarded(guard(), () => sdk.customers.retrieve('cus_guarded', {}, { maxNetworkRetries: 0 })))).toMatch(/outside a guarded call/);
      expect(await refusal(sdk.customers.retrieve('cus_guarded', {}, { headers: { 'X-Interlock-Guard': 'g0' }, maxNetworkRetries: 0 }))).toMatch(/outside a guarded call/);
      let kept: Record<string, string> = {};
      await guarded(guard(), async (headers) => {
        kept = headers;
      });
      expect(await refusal(sdk.customers.retrieve('cus_guarded', {}, { headers: kept, maxNetworkRetries: 0 }))).toMatch(/outside a guarded call/);
      expect(seen).toEqual([]);
    });
  });
});

describe('redactSecrets', () => {
  it('masks secret, restricted and live keys and webhook secrets wherever they appear, keeping a hint', () => {
    const text = `Authorization: Bearer sk_test_51Habcdefghijklmnop1234; key=rk_live_51Hzyxwvutsrqponm9999 secret "whsec_abcdefghijklmnopqrstuv" and sk_test_short`;
    const redacted = redactSecrets(text);
    expect(redacted).toBe('Authorization: Bearer sk_test_…1234; key=rk_live_…9999 secret "whsec_…stuv" and sk_test_…');
    expect(redacted).not.toMatch(/abcdefghijklmnop|zyxwvut/);
  });

  it('leaves text without secrets, publishable keys and Stripe\'s own masked keys as they are', () => {
    const text = 'Invalid API Key provided: sk_test_********************1234; pk_test_51Hpublic is public';
    expect(redactSecrets(text)).toBe(text);
    expect(secretHint('not-a-secret')).toBe('…');
  });
});
