// Tokens this service does not know, counted per client address, wherever one is presented: the page's sign-in form, a
// bearer header on any route that checks one (the API, /metrics, /admin/queues: auth.ts; the page's own routes,
// routes.ts), and the token typed into a form that records something (the inbox's actions, routes.ts signer) when it is
// not the signed-in caller's own, so a copy of a page cookie cannot guess the token through the forms either. The API's
// rate limit counts callers, which a guesser is not. One counter serves every door (the app makes it, app.ts), so
// failures on any of them add up. Each address has a token bucket, as each caller has for the API, that only an unknown
// token spends. While a bucket is empty, a token is refused before it is checked (429), the right one too, so guessing
// goes no faster than the bucket refills, and a right token is no oracle: an answer of 429 says nothing about the token
// (but that it has not authenticated from that address before: below). A request that presents no token (a page
// session's cookie) is not held back. The address is the one Express gives (`req.ip`): behind a proxy nobody named in
// INTERLOCK_TRUST_PROXY it is the proxy's, and every client behind it shares the proxy's bucket (app.ts warns once when
// a request says it was forwarded).
//
// Keyed by the address alone, never by a header the sender writes: keyed by the Host header too, a guesser would get a
// fresh bucket for every name it made up, so no limit at all.
//
// Known tokens go on: a token that authenticated from an address before (the counter keeps, per address, the digests of
// the last `known` that did) is checked and taken even while that address's bucket is empty. An address is shared by
// whoever sits behind the same NAT or proxy, or holds the same IPv6 /64, and a page of another site rebound to the
// service's address (DNS rebinding) runs in the operator's browser, so its wrong tokens come from the operator's own
// address: without this, any of them could hold the operators' tokens, the API, Prometheus's scrapes and the page out
// with ten wrong tokens and one more every refill. A guesser's tokens never authenticated, so none of them is known,
// and while the bucket is empty only a client's first use of a token from that address is held back. What it opens: a
// guesser sharing an address with working clients is told, at any rate, whether a guess is one of the few tokens they
// used from it. A token's length is what keeps it from being guessed, as against a guesser holding many addresses: a
// generated one is 32 random bytes, and 16 random characters (the least a configured one may have) are out of reach at
// any rate the listener can answer.
//
// A guess is a token not tried yet: the same unknown token sent again (a script retrying with a token removed from the
// configuration, a test sending one wrong token to every route) tells a guesser nothing new, so it spends its bucket
// once, not once a request; a bucket remembers the digests of its last `burst` unknown tokens, and a known token that
// no longer authenticates (removed since) spends nothing. Counted each time, one stale script would hold every caller
// behind its address (a proxy's, a NAT's) out of the API.
//
// In memory, at most `addresses` buckets and as many addresses' known tokens, each held as digests, never the token. A
// bucket full again is the same as one never seen, so it is forgotten, least recently failed first; past the cap the
// bucket that failed longest ago is forgotten. Known tokens are added only by a token that authenticated, which a
// guesser has none of, and only by a request its caller's rate limit let through (auth.ts; routes.ts, withinLimit): a
// request that limit refused is no use of the token and refreshes nothing. The known tokens of every address are one
// map, so a token is known at its last `perToken` addresses at most, the one it authenticated from longest ago
// forgotten first. Without that bound, one holder of any token (the lowest role) authenticating once from each of
// `addresses` IPv6 /64s (a /48 is had for free) would push every other address's known tokens out, and a guesser
// beside the operator would hold the operator's token out again. With it, one token holds `perToken` addresses of the
// map, which fills only with more than `addresses` / `perToken` tokens configured (312 by default); past the cap, the
// address whose token authenticated longest ago is forgotten. A token used from more than `perToken` addresses (a fleet
// of runners sharing one) is known only at the last of them: at the others, while their bucket is empty, it waits for
// the refill as a token never used there does.
import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Request } from 'express';

/**
 * `addresses`: the most buckets kept, and the most addresses whose known tokens are kept; `known`: the most per address;
 * `perToken`: the most addresses one token is known at (PER_TOKEN when not given).
 */
export type FailedSignInLimit = { perMinute: number; burst: number; addresses: number; known: number; perToken?: number };

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
 * Where a token presented in a request came from, as the counter counts it: the client's address; and the Host header
 * as sent, for the log only (it does not choose the bucket), cut (it may be as long as Node takes one, 16 KB; no host
 * name is longer than this).
 */
export function senderOf(req: Request): { address: string; hostLogged: string } {
  return { address: req.ip ?? req.socket.remoteAddress ?? 'unknown', hostLogged: (req.headers.host ?? '').slice(0, 270) };
}

/** The addresses a token is known at, at most, unless the limit names another number. */
const PER_TOKEN = 32;

export const FAILED_SIGN_INS: FailedSignInLimit = { perMinute: 10, burst: 10, addresses: 10_000, known: 16, perToken: PER_TOKEN };

export type FailedSignIns = {
  /**
   * Seconds before `address` may present `token` (the token as sent, none for any); 0 when it may now: its bucket has
   * one left, or `token` is one of the last that authenticated from it.
   */
  waitSeconds(address: string, token?: string): number;
  /**
   * Counts a token from `address` that is not one this service knows (or a form's token not its caller's). `token`,
   * when given, is counted only if it is none of the bucket's last unknown tokens and never authenticated from there.
   */
  failed(address: string, token?: string): void;
  /** Notes that `token` authenticated from `address`: it is checked from there even while the bucket is empty. */
  succeeded(address: string, token: string): void;
};

type Bucket = { tokens: number; at: number; tried: readonly string[] };

/** A token as the counter remembers it: a digest, never the token. */
const digestOf = (token: string) => createHash('sha256').update(token, 'utf8').digest('base64url').slice(0, 22);

/**
 * `now`: ms, monotonic (performance.now()) unless told. A clock given that went back (a wall clock stepped back by NTP,
 * or a VM restored from a snapshot) counts as no time passed, never as failures added.
 */
export function createFailedSignIns(limit: FailedSignInLimit, now: () => number = () => performance.now()): FailedSignIns {
  const perMs = limit.perMinute / 60_000;
  /**
   * clientOf -> its bucket after its last failure, least recently failed first (each failure moves it to the end), with
   * the digests of its last `burst` unknown tokens (`tried`).
   */
  const buckets = new Map<string, Bucket>();
  /** clientOf -> the digests of its last `known` tokens that authenticated, the address whose last did longest ago first. */
  const known = new Map<string, readonly string[]>();
  /** A known token's digest -> the addresses (clientOf) it is known at, at most `perToken`, the longest ago first. */
  const places = new Map<string, Set<string>>();
  const perToken = limit.perToken ?? PER_TOKEN;
  /** What `bucket` holds at `at`; a clock that went back since is taken as the bucket's time from now on. */
  const left = (bucket: Bucket, at: number) => {
    if (at < bucket.at) bucket.at = at;
    return Math.min(limit.burst, bucket.tokens + (at - bucket.at) * perMs);
  };
  const isKnown = (client: string, digest: string) => known.get(client)?.includes(digest) === true;

  /** Forgets the buckets full again, from the least recently failed up to the first that is not yet. */
  function prune(at: number): void {
    for (const [key, bucket] of buckets) {
      if (left(bucket, at) < limit.burst) break;
      buckets.delete(key);
    }
  }

  /** Makes room for one more key in `map`, forgetting its first (the oldest). */
  function roomIn(map: Map<string, unknown>): void {
    if (map.size < limit.addresses) return;
    const first = map.keys().next();
    if (first.done !== true) map.delete(first.value);
  }

  /** Notes that `digest` is no longer known at `client`. */
  function unplace(digest: string, client: string): void {
    const at = places.get(digest);
    at?.delete(client);
    if (at?.size === 0) places.delete(digest);
  }

  /** Forgets the known tokens of `client` (`digests`), wherever each is noted as known there. */
  function forget(client: string, digests: readonly string[]): void {
    known.delete(client);
    for (const digest of digests) unplace(digest, client);
  }

  return {
    waitSeconds(given, token) {
      const client = clientOf(given);
      const bucket = buckets.get(client);
      if (bucket === undefined) return 0;
      const tokens = left(bucket, now());
      if (tokens >= 1) return 0;
      if (token !== undefined && isKnown(client, digestOf(token))) return 0;
      return Math.max(1, Math.ceil((1 - tokens) / perMs / 1000));
    },
    failed(given, token) {
      const client = clientOf(given);
      const at = now();
      prune(at);
      const bucket = buckets.get(client);
      const digest = token === undefined ? null : digestOf(token);
      // Tried already, or one that authenticated from here (removed from the configuration since): no new guess.
      if (digest !== null && (bucket?.tried.includes(digest) === true || isKnown(client, digest))) return;
      const tokens = bucket === undefined ? limit.burst : left(bucket, at);
      buckets.delete(client);
      roomIn(buckets);
      const tried = [...(bucket?.tried ?? []), ...(digest === null ? [] : [digest])].slice(-limit.burst);
      buckets.set(client, { tokens: Math.max(0, tokens - 1), at, tried });
    },
    succeeded(given, token) {
      const client = clientOf(given);
      const digest = digestOf(token);
      const held = known.get(client);
      if (held === undefined) {
        // A new address: past the cap, the one whose token authenticated longest ago is forgotten, with its places.
        if (known.size >= limit.addresses) {
          const first = known.entries().next();
          if (first.done !== true) forget(first.value[0], first.value[1]);
        }
      } else {
        known.delete(client);
      }
      const list = [...(held ?? []).filter((each) => each !== digest), digest];
      known.set(client, list.slice(-limit.known));
      for (const dropped of list.slice(0, -limit.known)) unplace(dropped, client);
      const at = places.get(digest) ?? new Set<string>();
      at.delete(client);
      at.add(client);
      places.set(digest, at);
      if (at.size > perToken) {
        // Known at too many addresses: no longer at the one it authenticated from longest ago.
        const oldest = at.values().next();
        if (oldest.done !== true) {
          unplace(digest, oldest.value);
          const rest = (known.get(oldest.value) ?? []).filter((each) => each !== digest);
          if (rest.length === 0) known.delete(oldest.value);
          else known.set(oldest.value, rest);
        }
      }
    },
  };
}
