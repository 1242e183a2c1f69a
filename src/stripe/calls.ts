// How the adapter calls Stripe: every call bounded by the time its caller has left, never retried by the SDK on its
// own (`maxNetworkRetries: 0`; the one retry stripe-node still makes after a closed connection is held to the same
// checks by the client's HTTP wrapper), every write keyed, every failure translated in errors.ts.
import { performance } from 'node:perf_hooks';
import type Stripe from 'stripe';
import type { SendContext } from '../core/target.js';
import { SendFenced } from '../core/target.js';
import { guarded, sdkOf, type CallGuard, type StripeClient } from './client.js';
import { notStripeAnswer, StripeUnavailable, translateStripeError } from './errors.js';

/** The default send timeout of the targets, the same as INTERLOCK_SEND_TIMEOUT_MS's. */
export const DEFAULT_SEND_TIMEOUT_MS = 30_000;

/** What a read may still spend: a read of several pages shares one budget. */
export type ReadBudget = { timeLeftMs(): number };

/** A budget of `timeoutMs` from now. */
export function readBudget(timeoutMs: number): ReadBudget {
  const end = performance.now() + timeoutMs;
  return { timeLeftMs: () => end - performance.now() };
}

type Call<T> = (sdk: Stripe, options: Stripe.RequestOptions) => Promise<T>;

/**
 * One write of a send: Idempotency-Key = `idempotencyKey` (the effect id), timeout = the send's time left, and
 * `context.beforeWrite()` right before each attempt leaves the process. Throws SendFenced when nothing left,
 * Rejected for a definite no, and anything else when the outcome is unknown.
 */
export async function sendCall<T>(client: StripeClient, context: SendContext, what: string, idempotencyKey: string, call: Call<T>): Promise<T> {
  const left = Math.floor(context.timeLeftMs());
  if (left <= 0) throw new SendFenced('the send deadline passed before the request could start');
  const guard: CallGuard = { timeLeftMs: () => context.timeLeftMs(), beforeWrite: () => context.beforeWrite(), attempts: 0 };
  let answer: T;
  try {
    answer = await guarded(guard, (headers) => call(sdkOf(client), { idempotencyKey, timeout: left, maxNetworkRetries: 0, headers }));
  } catch (error) {
    throw translateStripeError(error, { what, write: true }, client);
  }
  const foreign = notStripeAnswer(answer, { what, write: true }, client);
  if (foreign !== null) throw foreign;
  return answer;
}

function readOutOfTime(what: string, ms: number | null): StripeUnavailable {
  const why = ms === null ? "the read's time ran out" : `timeout: no complete answer came within the read's ${ms} ms`;
  return new StripeUnavailable(`Could not read ${what} from Stripe: ${why}; the same read may succeed later.`, { stripeStatus: null, stripeCode: null, requestId: null, retryAfterMs: null, rateLimited: false, outcomeUnknown: false });
}

/**
 * One read, within `budget`. Throws StripeUnavailable (retryable) when Stripe cannot answer in time. The SDK's
 * timeout is the socket's idle time, so an answer that trickles in (a byte now and then) would hold the read for
 * as long as it trickles: the read is given up at the budget whatever the socket does, and the request left behind
 * ends by itself (a read changes nothing).
 */
export async function readCall<T>(client: StripeClient, budget: ReadBudget, what: string, call: Call<T>): Promise<T> {
  const left = Math.floor(budget.timeLeftMs());
  if (left <= 0) throw readOutOfTime(what, null);
  const guard: CallGuard = { timeLeftMs: () => budget.timeLeftMs(), beforeWrite: null, attempts: 0 };
  let timer: NodeJS.Timeout | undefined;
  let answer: T;
  try {
    const reading = guarded(guard, (headers) => call(sdkOf(client), { timeout: left, maxNetworkRetries: 0, headers }));
    const overtime = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        // The request given up on may still fail later; nobody waits for it any more.
        reading.catch(() => undefined);
        reject(readOutOfTime(what, left));
      }, left);
    });
    answer = await Promise.race([reading, overtime]);
  } catch (error) {
    if (error instanceof StripeUnavailable) throw error;
    throw translateStripeError(error, { what, write: false }, client);
  } finally {
    clearTimeout(timer);
  }
  const foreign = notStripeAnswer(answer, { what, write: false }, client);
  if (foreign !== null) throw foreign;
  return answer;
}

/** Stripe's page size limit. */
export const MAX_PAGE_SIZE = 100;

/**
 * Every item of a list, newest first, page after page (`starting_after` the last id) within one budget. `first`
 * is a page already read (an expanded list), to continue from.
 */
export async function listAll<T extends { id: string }>(
  client: StripeClient,
  budget: ReadBudget,
  what: string,
  page: (sdk: Stripe, cursor: { limit: number; starting_after?: string }, options: Stripe.RequestOptions) => Promise<Stripe.ApiList<T>>,
  options: { pageSize?: number; first?: { data: readonly T[]; has_more: boolean } } = {},
): Promise<T[]> {
  const limit = options.pageSize ?? MAX_PAGE_SIZE;
  const items: T[] = [...(options.first?.data ?? [])];
  let more = options.first === undefined ? true : options.first.has_more;
  while (more) {
    const last = items.at(-1);
    const cursor = last === undefined ? { limit } : { limit, starting_after: last.id };
    const next = await readCall(client, budget, what, (sdk, requestOptions) => page(sdk, cursor, requestOptions));
    items.push(...next.data);
    // A page that says "more" but brings nothing would loop for ever; Stripe never does that, a broken proxy might.
    more = next.has_more && next.data.length > 0;
  }
  return items;
}
