// The one error registry (STYLE habit 3). Every error the project raises carries a stable string `code` from the
// table below, the HTTP status it maps to where it crosses HTTP, and whether retrying the same call can succeed.
// Queues, the HTTP API and the CLI branch on `code`, never on class names or message text.

export const ERROR_REGISTRY = {
  // Bad input: the caller must change the request. Nothing was written.
  invalid_proposal: { status: 400, retryable: false },
  invalid_effect: { status: 400, retryable: false },
  invalid_approval: { status: 400, retryable: false },
  invalid_receipt: { status: 400, retryable: false },
  invalid_request: { status: 400, retryable: false },
  non_canonical_value: { status: 400, retryable: false },
  // The request is well formed but collides with what is recorded.
  approval_conflict: { status: 409, retryable: false },
  /**
   * The approval a new support case names is revoked or expired (the message says by whom and when): nothing was
   * recorded or queued; grant a new approval and submit the case under it.
   */
  approval_not_live: { status: 409, retryable: false },
  unknown_approval: { status: 404, retryable: false },
  unknown_effect: { status: 404, retryable: false },
  unknown_case: { status: 404, retryable: false },
  // The escalation inbox (issue 13 §4).
  unknown_inbox_item: { status: 404, retryable: false },
  /** Someone already acted on the item (one action per item); the message says who and how. */
  inbox_item_closed: { status: 409, retryable: false },
  /** The item's kind does not allow this action (an AMBIGUOUS effect is never re-approved, for one). */
  action_not_allowed: { status: 409, retryable: false },
  /**
   * A re-approval whose facts, read at the click, are not the ones the item showed (a chargeback that arrived since):
   * nothing was recorded, and the item now shows the facts as they stand, to be read and decided on again.
   */
  facts_changed: { status: 409, retryable: false },
  /** The effect is being sent right now; act once it has settled. */
  effect_in_flight: { status: 409, retryable: true },
  // The HTTP edge (webhooks/api): who may call, how much, and in what form.
  unauthenticated: { status: 401, retryable: false },
  forbidden: { status: 403, retryable: false },
  /** The approval asks for four eyes and the proposer is its approver. */
  four_eyes: { status: 403, retryable: false },
  not_found: { status: 404, retryable: false },
  /** A method that would change something, on a read-only surface (the queue dashboard). */
  read_only: { status: 405, retryable: false },
  /** A method a route's path does not take (Allow lists the ones it does); a path that only reads answers read_only. */
  method_not_allowed: { status: 405, retryable: false },
  /** The request id was first decided with another payload (I5); the recorded one stands. */
  conflicting_payload: { status: 409, retryable: false },
  /**
   * The effect already holds as many decisions not judged yet as one unsettled effect takes (gate/record.ts
   * MAX_PROPOSALS); nothing was written. Retryable once the effect has settled; a new request id is a new effect.
   */
  too_many_proposals: { status: 409, retryable: true },
  /**
   * The effect holds as many decisions in all as one effect takes (gate/record.ts MAX_DECISIONS); nothing was written,
   * and no new decision under this request id will be (the recorded ones are still answered): use a new request id.
   */
  too_many_decisions: { status: 409, retryable: false },
  payload_too_large: { status: 413, retryable: false },
  unsupported_media_type: { status: 415, retryable: false },
  rate_limited: { status: 429, retryable: true },
  // The Stripe webhook route (webhooks/stripe-route.ts) answers Stripe, which retries a 5xx for days and drops a 4xx:
  // a body that is not a signed event of this service's mode is refused for good; an event not queued is asked again.
  /** A body parser ran before the route, so the raw bytes the signature covers are gone. */
  body_parsed_before_route: { status: 400, retryable: false },
  /** The body is empty, not JSON, or not a Stripe snapshot event. */
  not_an_event: { status: 400, retryable: false },
  missing_signature: { status: 400, retryable: false },
  bad_signature: { status: 400, retryable: false },
  /** The signature's timestamp is past the tolerance: a replay, or a clock that is off. */
  stale_timestamp: { status: 400, retryable: false },
  /** A test-mode event at a live-mode service, or the other way round. */
  livemode_mismatch: { status: 400, retryable: false },
  /** The event could not be put on the facts queue; Stripe delivers it again. */
  queue_unavailable: { status: 503, retryable: true },
  /** This process was started without the part the request needs (e.g. recovery in an API-only process). */
  not_available: { status: 503, retryable: false },
  // The environment: fix the configuration, then start again.
  invalid_config: { status: 500, retryable: false },
  target_misconfigured: { status: 500, retryable: false },
  // Transient: the same call may succeed later.
  premise_read_failed: { status: 503, retryable: true },
  lookup_failed: { status: 503, retryable: true },
  journal_contention: { status: 503, retryable: true },
  /** An alert kept being changed by other writers for the whole time one write may take; nothing was written. */
  alert_contention: { status: 503, retryable: true },
  redis_not_durable: { status: 503, retryable: true },
  /** Another process beats under this worker's id (INTERLOCK_WORKER_ID given twice): this one sends nothing. */
  worker_superseded: { status: 503, retryable: true },
  redis_unavailable: { status: 503, retryable: true },
  target_unavailable: { status: 503, retryable: true },
  // The model's API could not answer (rate limit, overload, 5xx, timeout) after the SDK's own retries.
  decider_unavailable: { status: 503, retryable: true },
  /**
   * Every attempt at a case's decision ended on an error from outside the project (Redis not answering while the
   * proposal was recorded, a library's fault): nothing was proposed, and the case submitted again is decided again.
   */
  decision_interrupted: { status: 503, retryable: true },
  /**
   * The target's lookup can no longer tell whether the effect landed, and never will (a Stripe customer deleted since
   * the send): the gate settles the effect AMBIGUOUS rather than ask again, or take "nothing found" for an answer.
   */
  lookup_blind: { status: 502, retryable: false },
  // A definite refusal by the target (for Stripe, a 4xx that is not a conflict or a rate limit). Never resent.
  target_rejected: { status: 402, retryable: false },
  // The model answered, but not with one well-formed decision (no tool call, an unknown tool, malformed input,
  // max_tokens, a refusal, money decided before the facts were read). Nothing is proposed. Retryable as a case: it may
  // be decided later, so the same case submitted again is asked again (mayReopenCase); the error itself is raised not
  // retryable (src/decider/anthropic.ts), since asking again is a new decision, not a retry the worker makes alone.
  decision_invalid: { status: 502, retryable: true },
  // A bug: an invariant the code relies on did not hold.
  journal_write_refused: { status: 500, retryable: false },
  /** An effect's chain in Redis disagrees with its own state (shorter, or another last entry): nothing is signed over it. */
  journal_inconsistent: { status: 500, retryable: false },
  /**
   * An effect's chain in Redis does not read (an entry that is not JSON, or holds a value with no canonical form, such
   * as a number past 1e308 or a lone surrogate): interlock never writes such an entry, so it was edited or damaged in
   * Redis. The service's fault, never the caller's: the message names the effect and says how to restore it.
   */
  journal_damaged: { status: 500, retryable: false },
  internal: { status: 500, retryable: false },
} as const satisfies Record<string, { status: number; retryable: boolean }>;

export type ErrorCode = keyof typeof ERROR_REGISTRY;

/** A field-level problem with a request, by path (`effect.amount`). */
export type FieldProblem = { path: string; message: string };

export class InterlockError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly retryable: boolean;
  readonly fields: readonly FieldProblem[];

  constructor(code: ErrorCode, message: string, options: { cause?: unknown; fields?: readonly FieldProblem[]; retryable?: boolean } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'InterlockError';
    this.code = code;
    this.status = ERROR_REGISTRY[code].status;
    this.retryable = options.retryable ?? ERROR_REGISTRY[code].retryable;
    this.fields = options.fields ?? [];
  }
}

/** The registry code of any thrown value; errors from outside the project are `internal`. */
export function errorCode(error: unknown): ErrorCode {
  return error instanceof InterlockError ? error.code : 'internal';
}

export function isRetryable(error: unknown): boolean {
  return error instanceof InterlockError ? error.retryable : false;
}

/** A target's request to slow down (a rate limiter's answer, Stripe's 429), with how long it asked to wait. */
export type SlowDown = { retryAfterMs: number | null };

/**
 * Whether an error, or one of its causes, is a rate limit: an error that says `rateLimited: true` (the Stripe
 * adapter's StripeUnavailable does), with its `retryAfterMs` when the target named one. Null otherwise, and for a
 * value that cannot be read; never throws.
 */
export function slowDownOf(error: unknown): SlowDown | null {
  let current: unknown = error;
  try {
    for (let depth = 0; depth < 8 && current instanceof Error; depth += 1) {
      const marked = current as Error & { rateLimited?: unknown; retryAfterMs?: unknown };
      if (marked.rateLimited === true) {
        const after: unknown = marked.retryAfterMs;
        return { retryAfterMs: typeof after === 'number' && Number.isFinite(after) && after >= 0 ? after : null };
      }
      current = current.cause;
    }
  } catch {
    // A value whose reading throws (a Proxy's trap, a getter) says nothing readable: no rate limit is read into it.
  }
  return null;
}

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** A field name without case, `_` or `-`: `capCents`, `cap-cents` and `cap_cents` spell one field. */
const spelling = (name: string) => name.toLowerCase().replace(/[_-]/g, '');

/**
 * Field problems from a zod error, with an unknown key named by its own path (so a typo is pointed at). When a field
 * of the same object is spelled the same but for case, `_` or `-` (a required `cap_cents` beside an unknown
 * `capCents`), the unknown key's message names it. `known` are the top-level fields the object takes (a route's
 * query parameters, say): a typo is matched against them, and when none matches they are listed.
 */
export function zodFieldProblems(issues: readonly { path: readonly PropertyKey[]; message: string; code?: string; keys?: readonly string[]; issues?: readonly { message: string }[] }[], prefix: readonly string[] = [], root = 'proposal', known?: readonly string[]): FieldProblem[] {
  return issues.flatMap((issue) => {
    const at = [...prefix, ...issue.path.map(String)];
    if (issue.code === 'unrecognized_keys' && issue.keys) {
      const siblings = issues.filter((other) => other !== issue && other.path.length === issue.path.length + 1 && issue.path.every((part, index) => other.path[index] === part)).map((other) => String(other.path.at(-1)));
      const fields = issue.path.length === 0 && known !== undefined ? [...known, ...siblings] : siblings;
      const listed = issue.path.length === 0 && known !== undefined ? `it takes ${known.length === 0 ? 'none' : known.join(', ')}` : 'a typo?';
      return issue.keys.map((key) => {
        const meant = fields.find((name) => name !== key && spelling(name) === spelling(key));
        return { path: [...at, key].join('.'), message: `is not a field of this object (${meant === undefined ? listed : `did you mean ${meant}?`})` };
      });
    }
    // A record key that breaks a rule: zod says only "Invalid key in record" and keeps the rule's own words inside.
    if (issue.code === 'invalid_key' && issue.issues !== undefined && issue.issues.length > 0) {
      return issue.issues.map((inner) => ({ path: at.join('.') || root, message: `the key ${inner.message}` }));
    }
    return [{ path: at.join('.') || root, message: issue.message }];
  });
}
