// The one idempotency layer (stripe-facts §3). A key remembers the method, path and canonical parameters of the
// first request that began executing, then its status and body. Replays return those bytes with
// `Idempotent-Replayed: true` whatever has happened since; a different request under the key is refused; a key
// whose first request is still running answers 409. Keys expire after a configurable TTL (24 h by default).
import { SandboxError } from '../core/errors.js';
import type { Clock } from '../core/clock.js';

export interface StoredResponse {
  status: number;
  body: string;
  requestId: string;
}

interface Entry {
  method: string;
  path: string;
  params: string;
  createdMs: number;
  response: StoredResponse | null;
}

export interface IdempotentRequest {
  key: string;
  method: string;
  path: string;
  params: string;
}

export type Lookup = { kind: 'replay'; response: StoredResponse } | { kind: 'none' };

export interface Idempotency {
  /** Throws the refusal when the key is in use or was used differently; `none` means the request may run. */
  lookup(request: IdempotentRequest): Lookup;
  /** Marks the key in flight; call `finish` with the response once the endpoint has run. */
  begin(request: IdempotentRequest): { finish(response: StoredResponse): void };
  age(seconds: number): void;
  ttlSeconds(): number;
  setTtlSeconds(seconds: number): void;
  size(): number;
  clear(): void;
}

export const DEFAULT_IDEMPOTENCY_TTL_SECONDS = 24 * 60 * 60;

function retryHint(key: string): string {
  return `Try using a key other than '${key}' if you meant to execute a different request.`;
}

export function createIdempotency(clock: Clock, initialTtlSeconds = DEFAULT_IDEMPOTENCY_TTL_SECONDS): Idempotency {
  const entries = new Map<string, Entry>();
  let ttlMs = initialTtlSeconds * 1000;

  const expired = (entry: Entry): boolean => clock.nowMs() - entry.createdMs >= ttlMs;

  // Entries sit in creation order, so pruning only ever looks at the oldest few.
  const prune = (): void => {
    for (const [key, entry] of entries) {
      if (!expired(entry) || entry.response === null) return;
      entries.delete(key);
    }
  };

  return {
    lookup(request) {
      const entry = entries.get(request.key);
      if (entry === undefined) return { kind: 'none' };
      if (entry.response !== null && expired(entry)) {
        entries.delete(request.key);
        return { kind: 'none' };
      }
      if (entry.method !== request.method || entry.path !== request.path) {
        throw new SandboxError(400, {
          type: 'idempotency_error',
          message: `Keys for idempotent requests can only be used for the same endpoint they were first used for ('${entry.path}' vs '${request.path}'). ${retryHint(request.key)}`,
        });
      }
      if (entry.params !== request.params) {
        throw new SandboxError(400, {
          type: 'idempotency_error',
          message: `Keys for idempotent requests can only be used with the same parameters they were first used with. ${retryHint(request.key)}`,
        });
      }
      if (entry.response === null) {
        throw new SandboxError(409, {
          type: 'idempotency_error',
          code: 'idempotency_key_in_use',
          message: `There is currently another in-progress request using this Idempotent Key (that probably means you submitted twice, and the other request is still going through): ${request.key}. Please try again later.`,
        });
      }
      return { kind: 'replay', response: entry.response };
    },
    begin(request) {
      prune();
      const entry: Entry = { method: request.method, path: request.path, params: request.params, createdMs: clock.nowMs(), response: null };
      entries.set(request.key, entry);
      return {
        finish(response) {
          entry.response = response;
        },
      };
    },
    age(seconds) {
      for (const entry of entries.values()) entry.createdMs -= seconds * 1000;
    },
    ttlSeconds: () => ttlMs / 1000,
    setTtlSeconds(seconds) {
      ttlMs = seconds * 1000;
    },
    size: () => entries.size,
    clear: () => entries.clear(),
  };
}
