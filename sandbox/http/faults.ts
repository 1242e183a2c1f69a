// Injected faults, for what Stripe does but a test cannot make it do on demand:
// - slowness: holds matching requests after they have begun executing, so tests can observe what Stripe does with
//   a second request while the first is still running (the 409 `idempotency_key_in_use`), or a client that gives
//   up before an answer that still lands;
// - failures: answers matching requests with an error before they reach the endpoint (a 429 from the rate
//   limiter, a 500, a refused key), so nothing executes and nothing is stored under an idempotency key; or, `stored`,
//   an error from inside the endpoint (a 500 Stripe's own code raised): nothing executes, and the error is stored
//   under the request's idempotency key and replayed to every request with that key while it lives, as Stripe
//   stores whatever an endpoint that began answered (stripe-facts §3);
// - drops: closes the connection without an answer, before the endpoint runs (nothing happened) or after it ran
//   and stored its answer (it happened, the client never heard).
import type { ErrorType } from '../core/errors.js';

/** A request matches when its path starts with `path` and its method equals `method` (null: any). */
interface Match {
  path: string | null;
  method: string | null;
  remaining: number;
}

export interface SlowRule extends Match {
  ms: number;
}

export interface FailRule extends Match {
  status: number;
  type: ErrorType;
  code: string | null;
  message: string;
  /** Sent as `Retry-After` (seconds) when set. */
  retryAfterSeconds: number | null;
  /** Answered from inside the endpoint, so stored under the request's idempotency key and replayed with it. */
  stored: boolean;
}

export const dropMoments = ['before', 'after'] as const;
export type DropMoment = (typeof dropMoments)[number];

export interface DropRule extends Match {
  when: DropMoment;
}

export interface Faults {
  addSlow(rule: SlowRule): void;
  /** How long to hold this request, consuming one use of the first matching rule. */
  holdMs(method: string, path: string): number;
  addFail(rule: FailRule): void;
  /** The failure to answer this request with, consuming one use of the first matching rule, or null. */
  failure(method: string, path: string): FailRule | null;
  addDrop(rule: DropRule): void;
  /** Whether to drop this request's connection at this moment, consuming one use of the first matching rule. */
  drops(method: string, path: string, when: DropMoment): boolean;
  clear(): void;
}

function take<R extends { remaining: number }>(rules: R[], matches: (rule: R) => boolean): { rule: R | null; rest: R[] } {
  const rule = rules.find((r) => r.remaining > 0 && matches(r)) ?? null;
  if (rule !== null) rule.remaining -= 1;
  return { rule, rest: rules.filter((r) => r.remaining > 0) };
}

const matching = (method: string, path: string) => (rule: Match) => (rule.path === null || path.startsWith(rule.path)) && (rule.method === null || rule.method === method);

export function createFaults(): Faults {
  let slow: SlowRule[] = [];
  let fails: FailRule[] = [];
  let drops: DropRule[] = [];
  return {
    addSlow(rule) {
      slow.push({ ...rule });
    },
    holdMs(method, path) {
      const { rule, rest } = take(slow, matching(method, path));
      slow = rest;
      return rule?.ms ?? 0;
    },
    addFail(rule) {
      fails.push({ ...rule });
    },
    failure(method, path) {
      const { rule, rest } = take(fails, matching(method, path));
      fails = rest;
      return rule;
    },
    addDrop(rule) {
      drops.push({ ...rule });
    },
    drops(method, path, when) {
      const { rule, rest } = take(drops, (r) => r.when === when && matching(method, path)(r));
      drops = rest;
      return rule !== null;
    },
    clear() {
      slow = [];
      fails = [];
      drops = [];
    },
  };
}
