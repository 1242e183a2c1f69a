// Every Stripe API request the sandbox received, in arrival order: what a test counts to prove how many calls a
// client made, and when. Control routes are not recorded. Bounded, so a long benchmark cannot grow it without end.
export interface LoggedRequest {
  /** 1, 2, 3, ... in arrival order; keeps counting across `clear()`. */
  seq: number;
  /** Wall-clock milliseconds at arrival (the sandbox's own clock can be moved by tests; this one cannot). */
  at: number;
  method: string;
  path: string;
  idempotency_key: string | null;
  /** The status answered; null while running, or when the connection was dropped without an answer. */
  status: number | null;
  /** The fault that answered or dropped it, if any. */
  fault: 'fail' | 'fail_stored' | 'drop_before' | 'drop_after' | null;
}

export interface RequestLog {
  begin(request: { method: string; path: string; idempotencyKey: string | null }): LoggedRequest;
  /** Requests with `seq` greater than `after` (all when absent), oldest first. */
  list(after?: number): LoggedRequest[];
  clear(): void;
}

export const REQUEST_LOG_LIMIT = 20_000;

export function createRequestLog(limit = REQUEST_LOG_LIMIT): RequestLog {
  // The last `limit` entries are the log; older ones are dropped `limit` at a time, when the array reaches twice the
  // limit. Dropping the oldest by copying the whole log on every request, as this once did, cost each request past
  // the first 20,000 a copy of 20,000 entries: such a sandbox answered about 450 GETs a second instead of some 12,000
  // (bench/sandbox-throughput.bench.ts, both measured side by side).
  let entries: LoggedRequest[] = [];
  let seq = 0;
  const kept = (): LoggedRequest[] => (entries.length > limit ? entries.slice(entries.length - limit) : entries);
  return {
    begin({ method, path, idempotencyKey }) {
      seq += 1;
      const entry: LoggedRequest = { seq, at: Date.now(), method, path, idempotency_key: idempotencyKey, status: null, fault: null };
      entries.push(entry);
      if (entries.length >= 2 * limit) entries = entries.slice(entries.length - limit);
      return entry;
    },
    list(after) {
      return kept().filter((entry) => after === undefined || entry.seq > after).map((entry) => ({ ...entry }));
    },
    clear() {
      entries = [];
    },
  };
}
