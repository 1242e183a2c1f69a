// The one place where Stripe's answers that are not a success become the project's errors (STYLE habit 3). What the
// gate does next depends only on the class it gets:
//
// | Stripe's answer                                     | a send (write)                        | a read                  |
// | --------------------------------------------------- | ------------------------------------- | ----------------------- |
// | 400 / 402 / 404 (card, invalid request), but not    | `Rejected` (definite no, never resent;| `Rejected` (definite)   |
// |   `idempotency_error`                               |   the Stripe targets' refusal proves  |                         |
// |                                                     |   nothing landed)                     |                         |
// | 401 / 403, a 404 for a URL Stripe does not serve    | `target_misconfigured`: fix the config| `target_misconfigured`  |
// | 400 / 404 `idempotency_error` (an earlier request   | `StripeUnavailable`, outcome unknown: | `StripeUnavailable`,    |
// |   under the key began executing and may have        |   the gate keeps the claim            |   retryable later       |
// |   landed), 409 `idempotency_key_in_use`, 429, 5xx,  |                                       |                         |
// |   a closed connection, a timeout                    |                                       |                         |
// | our fencing check refused the first attempt         | `SendFenced` (nothing left)           | —                       |
//
// A 429 on a write is treated as unknown although Stripe's rate limiter answers before anything runs: the gate
// cannot tell a rate limiter's 429 from anything else that says 429, and keeping the claim costs one recovery pass.
import type Stripe from 'stripe';
import { InterlockError } from '../core/errors.js';
import { stripeSdk } from './sdk.js';
import type { JsonObject } from '../core/json.js';
import { Rejected, SendFenced } from '../core/target.js';
import { RetryStopped, type StripeClient } from './client.js';
import { redactSecrets } from '../core/redact.js';

/** What was being done, for messages: `POST /v1/refunds`, and whether it was a send (a write) or a read. */
export type CallDescription = { what: string; write: boolean };

/**
 * Stripe could not give a definite answer. On a write the outcome is unknown (the request may have run); on a
 * read nothing changed and the same read may succeed later. `retryAfterMs` is set when Stripe said how long to
 * wait (a `Retry-After` header); a worker slows down by it.
 */
export class StripeUnavailable extends InterlockError {
  readonly stripeStatus: number | null;
  readonly stripeCode: string | null;
  readonly requestId: string | null;
  readonly retryAfterMs: number | null;
  readonly rateLimited: boolean;
  readonly outcomeUnknown: boolean;
  /**
   * Whether this is an outage that passes by itself: no answer (a dropped or refused connection, a timeout), a 429,
   * or a 5xx (a proxy's `502` too). Not so for any other status, such as another service at STRIPE_API_BASE answering
   * 404 or 200 with no Stripe object (notStripeAnswer): waiting does not mend those.
   */
  readonly passing: boolean;
  /** Whether the SDK took the answer for a success and it is not Stripe's (notStripeAnswer): no object naming its kind. */
  readonly notStripe: boolean;

  constructor(message: string, details: { stripeStatus: number | null; stripeCode: string | null; requestId: string | null; retryAfterMs: number | null; rateLimited: boolean; outcomeUnknown: boolean; notStripe?: boolean }, options: { cause?: unknown } = {}) {
    super('target_unavailable', message, options);
    this.name = 'StripeUnavailable';
    this.stripeStatus = details.stripeStatus;
    this.stripeCode = details.stripeCode;
    this.requestId = details.requestId;
    this.retryAfterMs = details.retryAfterMs;
    this.rateLimited = details.rateLimited;
    this.outcomeUnknown = details.outcomeUnknown;
    this.notStripe = details.notStripe === true;
    const status = details.stripeStatus;
    this.passing = details.rateLimited || status === 429 || (status !== null && status >= 500) || (status === null && details.notStripe !== true);
  }
}

/** Stripe refused the key (401) or its permissions (403): nothing ran, and nothing will until the key is fixed. */
export class StripeMisconfigured extends InterlockError {
  constructor(
    message: string,
    readonly stripeStatus: number,
    readonly requestId: string | null,
    options: { cause?: unknown } = {},
  ) {
    super('target_misconfigured', message, options);
    this.name = 'StripeMisconfigured';
  }
}

/**
 * A send that did not start because a read it makes first (the refund target's check that the refund still fits)
 * failed: nothing was sent. `cause` is the read's error, kept so the gate answers as that error says: a rate limit
 * slows the queue down for its Retry-After (slowDownOf reads causes), and a refused key is a configuration error.
 */
export class ReadBeforeSendFailed extends SendFenced {
  constructor(message: string, cause: unknown) {
    super(message);
    this.name = 'ReadBeforeSendFailed';
    this.cause = cause;
  }
}

/**
 * The longest `Retry-After` obeyed: Stripe's are seconds, and a longer one (a header of many digits reads as Infinity,
 * a far-future date) from a proxy or a fault would pause the effects queue and the reconciler for good.
 */
export const LONGEST_RETRY_AFTER_MS = 15 * 60_000;

/** `Retry-After` in milliseconds (seconds or an HTTP date, at most LONGEST_RETRY_AFTER_MS), or null when absent or unreadable. */
export function retryAfterMs(headers: Readonly<Record<string, string>> | undefined, now: number): number | null {
  const value = headers?.['retry-after']?.trim();
  if (value === undefined || value === '') return null;
  const ms = /^\d+(\.\d+)?$/.test(value) ? Math.round(Number(value) * 1000) : Date.parse(value) - now;
  return Number.isNaN(ms) ? null : Math.min(Math.max(0, ms), LONGEST_RETRY_AFTER_MS);
}

function reasonOf(error: Stripe.errors.StripeError): string {
  const status = error.statusCode === undefined ? '' : `${error.statusCode} `;
  const code = error.code ?? error.rawType ?? error.type;
  return `${status}${code}: ${redactSecrets(error.message)}`;
}

function rawOf(error: Stripe.errors.StripeError): JsonObject {
  return {
    type: error.rawType ?? null,
    code: error.code ?? null,
    param: error.param ?? null,
    decline_code: error.decline_code ?? null,
    request_id: error.requestId ?? null,
    message: redactSecrets(error.message),
  };
}

/** The project's error for anything a Stripe call threw. */
export function translateStripeError(error: unknown, call: CallDescription, client: StripeClient): Error {
  const errors = stripeSdk().errors;
  // Stops of our own HTTP client come back wrapped in the SDK's connection error.
  const inner = error instanceof errors.StripeConnectionError && error.detail instanceof Error ? error.detail : error;
  if (inner instanceof SendFenced) return inner;
  if (inner instanceof RetryStopped) return unavailable(call, `the first attempt may have reached Stripe and ${inner.reason}`, null, error);
  if (!(error instanceof errors.StripeError)) return unavailable(call, error instanceof Error ? redactSecrets(error.message) : String(error), null, error);

  const status = error.statusCode ?? null;
  if (status === 401) {
    return new StripeMisconfigured(
      `Stripe refused the API key ${client.keyHint} for ${call.what} (${reasonOf(error)}). Check STRIPE_SECRET_KEY: it must be a current ${client.mode}-mode key of the account you mean. Nothing was done.`,
      401,
      error.requestId ?? null,
      { cause: error },
    );
  }
  if (status === 403) {
    return new StripeMisconfigured(
      `The API key ${client.keyHint} may not ${call.what} (${reasonOf(error)}). A restricted key needs write access to refunds and customers and read access to payment intents, charges, disputes, credit notes and subscriptions; change STRIPE_SECRET_KEY or its permissions. Nothing was done.`,
      403,
      error.requestId ?? null,
      { cause: error },
    );
  }
  if (status === 404 && error.code === undefined && error.message.startsWith('Unrecognized request URL')) {
    // Not a refusal of this refund or credit: the server at the API base does not serve Stripe's API (or not this
    // endpoint). Treating it as a definite no would refuse every effect for good.
    return new StripeMisconfigured(`${client.apiBase} does not serve ${call.what} (${reasonOf(error)}). Check STRIPE_API_BASE. Nothing was done.`, 404, error.requestId ?? null, { cause: error });
  }
  if (error instanceof errors.StripeRateLimitError) return unavailable(call, `rate limited (${reasonOf(error)})`, error, error);
  // Not a refusal: Stripe compares a keyed request with the first one under its key (the effect id) only once that
  // first one began executing, so it ran and may have landed, with the parameters an earlier send (an earlier
  // version, another worker's configuration) gave it. The lookup by the effect id says whether it did.
  if (error instanceof errors.StripeIdempotencyError) {
    return unavailable(call, `Stripe holds an earlier request under this effect's idempotency key with other parameters, which began executing and may have landed: ${reasonOf(error)}`, error, error);
  }
  if (status === 400 || status === 402 || status === 404) {
    return new Rejected(`Stripe refused ${call.what} (${reasonOf(error)})`, { code: error.code ?? null, status, raw: rawOf(error) });
  }
  if (error instanceof errors.StripeConnectionError) return unavailable(call, connectionReason(error, client), error, error);
  return unavailable(call, reasonOf(error), error, error);
}

/**
 * An answer the SDK took for a success although it is not Stripe's: stripe-node treats any JSON body without an
 * `error` key as the object asked for, whatever the status, so a proxy's `502 {"message": "Bad Gateway"}` or another
 * service at STRIPE_API_BASE answering `{}` would read as a refund that landed. Null when the answer is Stripe's: a
 * 2xx status and an object that names its kind (`object`), as every object and list of Stripe's API does.
 */
export function notStripeAnswer(answer: unknown, call: CallDescription, client: StripeClient): StripeUnavailable | null {
  const response = typeof answer === 'object' && answer !== null ? (answer as { lastResponse?: { statusCode?: unknown; requestId?: unknown } }).lastResponse : undefined;
  const status = typeof response?.statusCode === 'number' ? response.statusCode : null;
  const kind = typeof answer === 'object' && answer !== null ? (answer as { object?: unknown }).object : undefined;
  if ((status === null || (status >= 200 && status < 300)) && typeof kind === 'string' && kind !== '') return null;
  const reason = `${client.apiBase} answered${status === null ? '' : ` HTTP ${status}`} with ${typeof kind === 'string' && kind !== '' ? 'no Stripe error' : 'no Stripe object'}: check that STRIPE_API_BASE points at Stripe or the sandbox, not at a proxy or another service`;
  const message = call.write
    ? `Stripe gave no definite answer to ${call.what} (${reason}); it may or may not have happened, so the claim stays for recovery.`
    : `Could not read ${call.what} from Stripe (${reason}); nothing changed, the same read may succeed later.`;
  return new StripeUnavailable(message, { stripeStatus: status, stripeCode: null, requestId: typeof response?.requestId === 'string' ? response.requestId : null, retryAfterMs: null, rateLimited: false, outcomeUnknown: call.write, notStripe: true });
}

/**
 * Whether the SDK failed on a body that is not JSON at all (an HTML page): stripe-node then throws a StripeAPIError
 * with no status, the parser's error (carrying the body as `rawBody`) as its `exception`.
 */
function bodyNotJson(error: unknown): boolean {
  if (!(error instanceof stripeSdk().errors.StripeAPIError) || error.statusCode !== undefined) return false;
  const raw: unknown = error.raw;
  const exception = typeof raw === 'object' && raw !== null ? (raw as { exception?: unknown }).exception : undefined;
  return typeof exception === 'object' && exception !== null && typeof (exception as { rawBody?: unknown }).rawBody === 'string';
}

/**
 * A read's failure as /readyz judges it (reachability.ts), given the HTTP status the answer came with when the SDK
 * kept none (`heardStatus`; null when no answer came): StripeMisconfigured when STRIPE_API_BASE answered, and its
 * answer is not Stripe's to a request Stripe answers (a 2xx, 3xx or 4xx other than 429 whose body is not JSON, such as
 * another server's HTML 404 page, or is JSON without Stripe's object or error shape): that server serves no Stripe
 * API, and waiting does not mend it. Null otherwise: a 5xx or a 429 (a proxy's HTML 502 in front of a Stripe that is
 * down is an outage), no answer (a refused connection, a timeout), or Stripe's own refusal (already translated).
 */
export function servesNoStripeApi(error: unknown, heardStatus: number | null, call: CallDescription, client: StripeClient): StripeMisconfigured | null {
  if (!(error instanceof StripeUnavailable) || error.rateLimited) return null;
  const notJson = bodyNotJson(error.cause);
  if (!error.notStripe && !notJson) return null;
  const status = error.stripeStatus ?? heardStatus;
  if (status === null || status === 429 || status >= 500) return null;
  const what = notJson ? 'a body that is not JSON' : "JSON without Stripe's object or error shape";
  return new StripeMisconfigured(
    `${client.apiBase} (STRIPE_API_BASE) answered ${call.what} with HTTP ${status} and ${what}: it serves no Stripe API, so this process can send nothing. Check STRIPE_API_BASE: it must point at Stripe or the sandbox, not at another service (a 5xx or no answer at all would be an outage, reported as advisory).`,
    status,
    error.requestId,
    { cause: error },
  );
}

const STRIPE_ITSELF = 'https://api.stripe.com:443';

/**
 * stripe-node's own message for a failed connection says only "An error occurred with our connection to Stripe.";
 * what failed (ECONNREFUSED: nothing listens there, ENOTFOUND: no such host, ECONNRESET) is in its `detail`, and
 * where it went is the client's. Both are what a person needs to fix a wrong STRIPE_API_BASE or a stopped sandbox.
 */
function connectionReason(error: Stripe.errors.StripeConnectionError, client: StripeClient): string {
  const detail: unknown = error.detail;
  let what = '';
  if (detail instanceof Error) {
    const code = (detail as { code?: unknown }).code;
    what = typeof code === 'string' && code !== '' && !detail.message.includes(code) ? `${detail.message} (${code})` : detail.message;
  }
  const where = client.apiBase === STRIPE_ITSELF ? client.apiBase : `${client.apiBase} (STRIPE_API_BASE)`;
  return redactSecrets(`${error.message}${what === '' ? '' : ` ${what}`} at ${where}`);
}

function unavailable(call: CallDescription, reason: string, stripe: Stripe.errors.StripeError | null, cause: unknown): StripeUnavailable {
  const message = call.write
    ? `Stripe gave no definite answer to ${call.what} (${reason}); it may or may not have happened, so the claim stays for recovery.`
    : `Could not read ${call.what} from Stripe (${reason}); nothing changed, the same read may succeed later.`;
  return new StripeUnavailable(
    message,
    {
      stripeStatus: stripe?.statusCode ?? null,
      stripeCode: stripe?.code ?? null,
      requestId: stripe?.requestId ?? null,
      retryAfterMs: stripe === null ? null : retryAfterMs(stripe.headers, Date.now()),
      rateLimited: stripe instanceof stripeSdk().errors.StripeRateLimitError,
      outcomeUnknown: call.write,
    },
    { cause },
  );
}
