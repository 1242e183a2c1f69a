// Tokens this service does not know, counted per client address and host name, wherever one is presented: the page's
// sign-in form, a bearer header on any route that checks one (the API, /metrics, /admin/queues: auth.ts; the page's
// own routes, routes.ts), and the token typed into a form that records something (the inbox's actions, routes.ts
// signer) when it is not the signed-in caller's own, so a copy of a page cookie cannot guess the token through the
// forms either. The API's rate limit counts callers, which a guesser is not. One counter serves every door (the app
// makes it, app.ts), so failures on any of them add up. Each address, under each name it addresses the service by (the
// Host header's, its port aside), has a token bucket, as each caller has for the API, that only an unknown token
// spends. While a bucket is empty, every token it counts is refused before it is checked (429), the right one too, so
// guessing goes no faster than the bucket refills, and a right token is no oracle: an answer of 429 says nothing about
// the token. A request that presents no token (a page session's cookie) is not held back. The address is the one
// Express gives (`req.ip`): behind a proxy nobody named in INTERLOCK_TRUST_PROXY it is the proxy's, and every client
// behind it shares the proxy's buckets (a single one when the proxy sends every request under the same name).
//
// Why the host name too: a page of another site whose name was rebound to the service's address (DNS rebinding) runs
// in the operator's browser, so its wrong-token sign-ins come from the operator's own address, but they carry the
// page's name in Host. Counted per address alone they would empty the operator's bucket, and the operator's sign-in
// with the right token would be refused. Counted per name as well, they spend the page's bucket only. The service
// keeps no list of its names (behind a proxy or reached by a compose service name, any may be right), so every name
// counts apart.
//
// That does not weaken the limit in a way that matters. A guesser sending names of its choosing gets a bucket for each,
// so one address is no longer held to `perMinute`; what keeps a token from being guessed is its length: a generated
// one is 32 random bytes, and 16 random characters (the least a configured one may have) are out of reach at any rate
// the listener can answer. The limit keeps a guesser at one address and name from trying tokens as fast as the listener
// answers, and no door is easier to guess through than another.
//
// A guess is a token not tried yet: the same unknown token sent again (a script retrying with a token removed from
// the configuration, a test sending one wrong token to every route) tells a guesser nothing new, so it spends its
// bucket once, not once a request; a bucket remembers the digests of its last `burst` unknown tokens. Counted each
// time, one stale script would hold every caller behind its address (a proxy's, a NAT's) out of the API.
//
// In memory, at most `addresses` buckets, whatever the names sent (a key holds the name's digest, not the header, so it
// is no longer for a long one). A bucket full again is the same as one never seen, so it is forgotten, least recently
// failed first; past the cap the bucket that failed longest ago is forgotten.
import { createHash } from 'node:crypto';
import type { Request } from 'express';

/** `addresses`: the most buckets kept, each an address under one host name. */
export type FailedSignInLimit = { perMinute: number; burst: number; addresses: number };

/**
 * The client a bucket counts: an IPv4 address (an IPv4-mapped IPv6 one written as IPv4), or an IPv6 address's /64, the
 * network one subscriber holds whole: keyed by the full address, each of its addresses would have a bucket of its own.
 */
export function clientOf(address: string): string {
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  if (mapped !== null) return mapped[1] ?? address;
  if (!address.includes(':')) return address;
  const [head = '', tail = ''] = address.split('%')[0]?.split('::') ?? [];
  const left = head === '' ? [] : head.split(':');
  const right = tail === '' ? [] : tail.split(':');
  const groups = address.includes('::') ? [...left, ...Array<string>(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right] : left;
  return `${groups.slice(0, 4).map((group) => (group === '' ? '0' : group).toLowerCase().replace(/^0+(?=.)/, '')).join(':')}::/64`;
}

/**
 * The bucket a sign-in spends: its client (clientOf) under the name it was sent to, its port and case aside (host
 * names have no case, and a rebound page is served on the listener's own port, so only its name tells it apart).
 * `host` is the Host header as sent ('' or undefined for none); only its digest is kept.
 */
export function bucketOf(address: string, host: string | undefined): string {
  const name = (host ?? '').replace(/:\d*$/, '').toLowerCase();
  return `${clientOf(address)} ${createHash('sha256').update(name, 'utf8').digest('base64url').slice(0, 22)}`;
}

/**
 * Where a token presented in a request came from, as the counter counts it: the client's address and the Host header
 * as sent, not req.hostname (X-Forwarded-Host under a trusted proxy), which a rebound page's script may set; and the
 * header cut for the log only (it may be as long as Node takes one, 16 KB; no host name is longer than this).
 */
export function senderOf(req: Request): { address: string; host: string; hostLogged: string } {
  const host = req.headers.host ?? '';
  return { address: req.ip ?? req.socket.remoteAddress ?? 'unknown', host, hostLogged: host.slice(0, 270) };
}

export const FAILED_SIGN_INS: FailedSignInLimit = { perMinute: 10, burst: 10, addresses: 10_000 };

export type FailedSignIns = {
  /** Seconds before `address` may present a token again under the name `host` (the Host header); 0 when it may now. */
  waitSeconds(address: string, host?: string): number;
  /**
   * Counts a token from `address`, sent under the name `host`, that is not one this service knows (or a form's token
   * not its caller's). `token`, when given, is counted only if it is none of the bucket's last unknown tokens.
   */
  failed(address: string, host?: string, token?: string): void;
};

type Bucket = { tokens: number; at: number; tried: readonly string[] };

/** A token as a bucket remembers it: a digest, never the token. */
const digestOf = (token: string) => createHash('sha256').update(token, 'utf8').digest('base64url').slice(0, 22);

/** `now`: ms. */
export function createFailedSignIns(limit: FailedSignInLimit, now: () => number): FailedSignIns {
  const perMs = limit.perMinute / 60_000;
  /**
   * bucketOf -> its bucket after its last failure, least recently failed first (each failure moves it to the end), with
   * the digests of its last `burst` unknown tokens (`tried`).
   */
  const buckets = new Map<string, Bucket>();
  const left = (bucket: Bucket, at: number) => Math.min(limit.burst, bucket.tokens + (at - bucket.at) * perMs);

  /** Forgets the buckets full again, from the least recently failed up to the first that is not yet. */
  function prune(at: number): void {
    for (const [key, bucket] of buckets) {
      if (left(bucket, at) < limit.burst) break;
      buckets.delete(key);
    }
  }

  return {
    waitSeconds(given, host) {
      const bucket = buckets.get(bucketOf(given, host));
      if (bucket === undefined) return 0;
      const tokens = left(bucket, now());
      return tokens >= 1 ? 0 : Math.max(1, Math.ceil((1 - tokens) / perMs / 1000));
    },
    failed(given, host, token) {
      const key = bucketOf(given, host);
      const at = now();
      prune(at);
      const bucket = buckets.get(key);
      const digest = token === undefined ? null : digestOf(token);
      // Tried already: no new guess.
      if (digest !== null && bucket?.tried.includes(digest) === true) return;
      const tokens = bucket === undefined ? limit.burst : left(bucket, at);
      buckets.delete(key);
      if (buckets.size >= limit.addresses) {
        const first = buckets.keys().next();
        if (first.done !== true) buckets.delete(first.value);
      }
      const tried = [...(bucket?.tried ?? []), ...(digest === null ? [] : [digest])].slice(-limit.burst);
      buckets.set(key, { tokens: Math.max(0, tokens - 1), at, tried });
    },
  };
}
