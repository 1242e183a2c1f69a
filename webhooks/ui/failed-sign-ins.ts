// Sign-ins with a token this service does not know, counted per client address: the sign-in form is the page's one
// door that takes a token from anyone, and the API's rate limit counts callers, which a guesser is not. Each address
// has a token bucket, as each caller has for the API, that only a failed sign-in spends. While an address has none
// left, its sign-ins are refused before their token is checked, so guessing through the form goes no faster than the
// bucket refills. The address is the one Express gives (`req.ip`): behind a proxy nobody named in
// INTERLOCK_TRUST_PROXY it is the proxy's, and every client behind it shares one bucket.
//
// In memory, at most `addresses` of them. An address whose bucket is full again is the same as one never seen, so it
// is forgotten, least recently failed first; past the cap the address that failed longest ago is forgotten.

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

export const FAILED_SIGN_INS: FailedSignInLimit = { perMinute: 10, burst: 10, addresses: 10_000 };

export type FailedSignIns = {
  /** Seconds before `address` may try a token again; 0 when it may now. */
  waitSeconds(address: string): number;
  /** Counts a sign-in from `address` whose token is not one this service knows. */
  failed(address: string): void;
};

/** `now`: ms. */
export function createFailedSignIns(limit: FailedSignInLimit, now: () => number): FailedSignIns {
  const perMs = limit.perMinute / 60_000;
  /** Address -> its bucket after its last failure, least recently failed first (each failure moves it to the end). */
  const buckets = new Map<string, { tokens: number; at: number }>();
  const left = (bucket: { tokens: number; at: number }, at: number) => Math.min(limit.burst, bucket.tokens + (at - bucket.at) * perMs);

  /** Forgets the buckets full again, from the least recently failed up to the first that is not yet. */
  function prune(at: number): void {
    for (const [address, bucket] of buckets) {
      if (left(bucket, at) < limit.burst) break;
      buckets.delete(address);
    }
  }

  return {
    waitSeconds(given) {
      const bucket = buckets.get(clientOf(given));
      if (bucket === undefined) return 0;
      const tokens = left(bucket, now());
      return tokens >= 1 ? 0 : Math.max(1, Math.ceil((1 - tokens) / perMs / 1000));
    },
    failed(given) {
      const address = clientOf(given);
      const at = now();
      prune(at);
      const bucket = buckets.get(address);
      const tokens = bucket === undefined ? limit.burst : left(bucket, at);
      buckets.delete(address);
      if (buckets.size >= limit.addresses) {
        const first = buckets.keys().next();
        if (first.done !== true) buckets.delete(first.value);
      }
      buckets.set(address, { tokens: Math.max(0, tokens - 1), at });
    },
  };
}
