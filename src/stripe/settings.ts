// STRIPE_SECRET_KEY and STRIPE_API_BASE as both the configuration (src/config.ts) and the client read them, so a
// value one accepts the other does not refuse later, and both refuse with the same sentence. Pure and free of the
// SDK, so the configuration can use it without importing Stripe. No sentence here contains a key, nor quotes
// STRIPE_API_BASE raw: a swapped line of an env file puts the secret key there (shownSetting masks it).
import { redactSecrets, secretHint, shownSetting } from '../core/redact.js';

export type KeyMode = 'test' | 'live';
export type Endpoint = { host: string; port: number; protocol: 'http' | 'https' };

const KEY = /^(sk|rk)_(test|live)_[A-Za-z0-9_]{1,250}$/;

/** A Stripe setting as given, without the whitespace around it (a value read from a secrets file ends in a newline); blank is unset. */
export function stripeSettingOf(value: string | null | undefined): string | null {
  const trimmed = (value ?? '').trim();
  return trimmed === '' ? null : trimmed;
}

/**
 * STRIPE_API_BASE as given, without the whitespace around it and without the one `/` a bare origin may end in, so
 * the paths written after it (`${base}/v1/...` in the lines serve prints) have one slash; blank is unset.
 */
export function apiBaseSettingOf(value: string | null | undefined): string | null {
  const base = stripeSettingOf(value);
  return base !== null && /^https?:\/\/[^/]+\/$/i.test(base) ? base.slice(0, -1) : base;
}

/** STRIPE_SECRET_KEY read: the key (trimmed) and its mode, or why it is refused. */
export function readStripeKey(value: string, allowLive: boolean): { key: string; mode: KeyMode } | { problem: string } {
  const key = stripeSettingOf(value) ?? '';
  if (key === '') return { problem: 'STRIPE_SECRET_KEY is not set: give a Stripe test-mode secret key (sk_test_...) or restricted key (rk_test_...).' };
  if (key.startsWith('pk_')) return { problem: 'STRIPE_SECRET_KEY holds a publishable key (pk_...); the adapter needs a secret key (sk_test_...) or a restricted key (rk_test_...).' };
  if (key.startsWith('whsec_')) return { problem: 'STRIPE_SECRET_KEY holds a webhook signing secret (whsec_...); that belongs in the webhook configuration. Give a secret key (sk_test_...) or a restricted key (rk_test_...).' };
  const match = KEY.exec(key);
  if (match === null) return { problem: 'STRIPE_SECRET_KEY does not look like a Stripe secret key: it must start with sk_test_ or rk_test_ followed by letters, digits and underscores.' };
  const mode = match[2] === 'live' ? 'live' : 'test';
  if (mode === 'live' && !allowLive) {
    return { problem: `STRIPE_SECRET_KEY is a live-mode key (${secretHint(key)}): it moves real money, so it is refused unless INTERLOCK_ALLOW_LIVE=1 is set. Use a test-mode key (sk_test_...) for tests and the sandbox.` };
  }
  return { key, mode };
}

/** STRIPE_API_BASE read: where the SDK sends requests, or why it cannot. */
export function readApiBase(apiBase: string): { endpoint: Endpoint } | { problem: string } {
  let url: URL;
  try {
    url = new URL(apiBase);
  } catch {
    return { problem: `STRIPE_API_BASE (${shownSetting(apiBase)}) is not a URL; give one like http://127.0.0.1:12111, or leave it unset to use Stripe.` };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { problem: `STRIPE_API_BASE (a ${url.protocol} URL) must be an http:// or https:// URL.` };
  // What to drop, named: the query and the fragment only by kind (either may hold a secret the value was given with).
  const extra = [
    ...(url.pathname !== '/' && url.pathname !== '' ? [`a path (${redactSecrets(url.pathname)})`] : []),
    ...(url.search !== '' ? ['a query'] : []),
    ...(url.hash !== '' ? ['a fragment'] : []),
    ...(url.username !== '' || url.password !== '' ? ['a user or password'] : []),
  ];
  if (extra.length > 0) {
    const listed = extra.length === 1 ? extra.join('') : `${extra.slice(0, -1).join(', ')} and ${extra.slice(-1).join('')}`;
    return { problem: `STRIPE_API_BASE (${shownSetting(apiBase)}) has ${listed}: use ${redactSecrets(url.origin)}. It must be a bare origin (scheme, host and port); the SDK adds the /v1 paths itself.` };
  }
  const protocol = url.protocol === 'http:' ? 'http' : 'https';
  // An IPv6 literal comes back bracketed from URL; node:http wants it bare.
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  return { endpoint: { host, port: url.port === '' ? (protocol === 'http' ? 80 : 443) : Number(url.port), protocol } };
}
