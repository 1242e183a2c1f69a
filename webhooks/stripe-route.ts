// POST /webhooks/stripe (issue 10 §1): the raw body on this route only, the Stripe-Signature checked with the
// official SDK against one or more secrets (a rotation), answered fast once the event is durably queued. Bad input
// is a 400 with a JSON reason, never a 5xx; a queue that cannot take the event is a 503, so Stripe retries (as is one
// whose Redis replicas do not hold it yet, with INTERLOCK_REDIS_MIN_REPLICAS).
// Unknown event types are acknowledged and ignored; so is a Connect event (a connected account's), with a warning.
import { performance } from 'node:perf_hooks';
import express, { type Request, type Response, type Router } from 'express';
import { redisRefusalOf } from './api/errors.js';
import { createLogger, ERROR_REGISTRY, errorCode, errorMessage, FACT_EVENTS, HOST_CLOCK_WARN_MS, hostClockOffset, hostClockWords, logIntervalOver, REPEATED_ERROR_LOG_MS, type ErrorCode, type HostClockOffset, type Stores, type StripeEvent, type WebhookVerdict } from '../src/interlock.js';

/**
 * The verifier's answer as the route reads it (src/stripe's SignedVerdict): an event, with the connected account of
 * a Connect event, or why it is refused (WebhookVerdict's reasons, and `livemode_mismatch`).
 */
export type RouteVerdict = { ok: true; event: StripeEvent & { account?: string } } | { ok: false; reason: Extract<WebhookVerdict, { ok: false }>['reason'] | 'livemode_mismatch'; message: string };

export type StripeWebhookDeps = {
  /** Checks the signature (and timestamp tolerance) of a raw body; src/stripe's constructEvent with the secrets. */
  verify(rawBody: Buffer, signature: string | undefined): RouteVerdict;
  /** Durably queues a verified event (job id = event id: a redelivery is a no-op, answered `duplicate` when known). */
  accept(event: StripeEvent): Promise<{ duplicate?: boolean } | void>;
  /** Largest body accepted; Stripe's events are a few KB. */
  limitBytes?: number;
  /**
   * Counts for metrics and logs. `reason`: why a request was `rejected`, or the code an `unavailable` one was answered
   * with (`redis_not_durable` or `queue_unavailable`).
   */
  onOutcome?: (outcome: WebhookOutcome, detail: { type?: string; reason?: string }) => void;
  /**
   * Where the route warns of an event it answered 200 and did not apply (a Connect event), and of the deliveries it
   * refused; the process's own otherwise.
   */
  logger?: Pick<Stores['logger'], 'warn'>;
  /** Milliseconds now, for the refusal log's interval (tests); a monotonic clock (performance.now()) otherwise. */
  now?: () => number;
  /**
   * This host's wall clock against Redis's, for what a stale_timestamp refusal says (tests); the process's own
   * measurement (src/redis/clock.ts hostClockOffset) otherwise, null before any Redis time was read.
   */
  hostClock?: () => HostClockOffset | null;
  /** The refusal log's interval: at most one line per reason in this many ms (REPEATED_ERROR_LOG_MS's 10 s unless told). */
  refusalLogEveryMs?: number;
};

/**
 * What became of one POST to the route whose body was read: each ends in exactly one of these (another method's 405,
 * and a body that could not be read at all, are none). `connect`: a Connect event of a type the facts worker acts on,
 * answered 200 and not applied.
 */
export type WebhookOutcome = 'queued' | 'duplicate' | 'ignored' | 'connect' | 'rejected' | 'unavailable';

export const WEBHOOK_PATH = '/webhooks/stripe';

/** A refusal, its status the registry's for its code. The code is left for the request log's line (request-log.ts). */
function problem(res: Response, code: ErrorCode, message: string): void {
  res.locals['refusal'] = code;
  res.status(ERROR_REGISTRY[code].status).json({ error: { code, message } });
}

/**
 * What the operator does about a refused delivery, beyond what the answer says: `stripe listen` prints only
 * `<-- [400] POST …`, and the Dashboard shows the body only on the endpoint's page, so the log is where the
 * operator reads it. A bad signature is, nearly always, a secret that is not the sender's.
 */
function refusalAdvice(reason: string, hostClock: () => HostClockOffset | null): string {
  if (reason === 'stale_timestamp') return staleAdvice(hostClock());
  if (reason === 'bad_signature') return ' Check STRIPE_WEBHOOK_SECRET against the whsec_… `stripe listen` printed, or the signing secret of the Dashboard endpoint that sends here (several, comma-separated, while one is rotated); a sender other than Stripe is refused this way too.';
  return '';
}

/**
 * Stripe signs each delivery attempt (retries too) with its own time at that attempt, so a delivery refused as stale
 * is a replay, or this host's wall clock off by more than the tolerance; when every delivery is, it is the clock.
 * Which way and by how much, as far as this process measured it against Redis's clock.
 */
function staleAdvice(offset: HostClockOffset | null): string {
  const sync = 'fix time sync (NTP/chrony) on this host; Stripe retries refused deliveries (for up to 3 days in live mode).';
  if (offset === null) return ` If every delivery is refused so, this host's clock is off by more than that: it has not been compared with Redis's in this process yet (a process that runs only this route reads Redis's time when /metrics is scraped); check it (timedatectl, chronyc tracking) and ${sync}`;
  if (Math.abs(offset.offsetMs) <= HOST_CLOCK_WARN_MS) return ` As this process measured it, ${hostClockWords(offset)}: likely a replay, unless both are off alike (check this host's clock: timedatectl, chronyc tracking).`;
  return ` As this process measured it, ${hostClockWords(offset)}: ${sync}`;
}

/**
 * Logs refused deliveries at warn, at most one line per reason per `everyMs` (limitedErrorLog's pattern, with a counter
 * per reason so a flood of one kind hides no other): the first at once, then the next one `everyMs` after the last
 * logged (on a monotonic clock unless `now` is given), saying how many of that reason were not logged in between. A
 * sender retrying an old endpoint, or a flood of forged posts, would otherwise fill the log a line a request. Reasons
 * are the route's own codes, a closed set.
 */
function refusalLog(logger: () => Pick<Stores['logger'], 'warn'>, now: () => number, everyMs: number, hostClock: () => HostClockOffset | null): (reason: string, message: string) => void {
  const byReason = new Map<string, { lastLogged: number; since: number }>();
  return (reason, message) => {
    const state = byReason.get(reason) ?? { lastLogged: -Infinity, since: 0 };
    byReason.set(reason, state);
    const at = now();
    if (!logIntervalOver(at, state.lastLogged, everyMs)) {
      state.since += 1;
      return;
    }
    const since = state.since;
    state.lastLogged = at;
    state.since = 0;
    const more = since > 0 ? ` (${since} more refused as ${reason} since the last logged)` : '';
    logger().warn({ reason, ...(since > 0 ? { notLogged: since } : {}) }, `webhook: refused a delivery to ${WEBHOOK_PATH} (${reason}): ${message}${refusalAdvice(reason, hostClock)}${more}`);
  };
}

export function stripeWebhookRouter(deps: StripeWebhookDeps): Router {
  const router = express.Router();
  let logger = deps.logger ?? null;
  const processLogger = () => (logger ??= createLogger());
  const logRefusal = refusalLog(processLogger, deps.now ?? (() => performance.now()), deps.refusalLogEveryMs ?? REPEATED_ERROR_LOG_MS, deps.hostClock ?? hostClockOffset);
  /** A delivery refused as bad input (a 4xx): counted, logged (limited), and answered. */
  const refuse = (res: Response, reason: string, code: ErrorCode, message: string) => {
    deps.onOutcome?.('rejected', { reason });
    logRefusal(reason, message);
    problem(res, code, message);
  };
  router.post(
    WEBHOOK_PATH,
    express.raw({ type: () => true, limit: deps.limitBytes ?? 512 * 1024 }),
    async (req: Request, res: Response) => {
      const body: unknown = req.body;
      // A body another parser took first (express.json() mounted before this route) arrives as an object or a string:
      // its bytes, which the signature covers, are gone, and saying it is empty would send the operator looking for a
      // sender that posts nothing.
      if (body !== undefined && !Buffer.isBuffer(body) && !(typeof body === 'object' && body !== null && Object.keys(body).length === 0)) {
        refuse(res, 'body_parsed_before_route', 'body_parsed_before_route', `The body reached ${WEBHOOK_PATH} already parsed (${typeof body === 'string' ? 'as text' : 'as an object'}), not as the raw bytes Stripe signed, so its signature cannot be checked: a body parser (express.json(), express.text()) runs before this route. Mount the route before any body parser, or exclude ${WEBHOOK_PATH} from it.`);
        return;
      }
      if (!Buffer.isBuffer(body) || body.length === 0) {
        refuse(res, 'not_an_event', 'not_an_event', 'The body is empty: Stripe sends the event as the raw JSON body of the request.');
        return;
      }
      const signature = req.header('stripe-signature');
      const verdict = deps.verify(body, signature);
      if (!verdict.ok) {
        refuse(res, verdict.reason, verdict.reason, verdict.message);
        return;
      }
      const { event } = verdict;
      if (!FACT_EVENTS.includes(event.type)) {
        deps.onOutcome?.('ignored', { type: event.type });
        res.status(200).json({ received: true, ignored: true });
        return;
      }
      // Interlock moves money on the platform account only: a connected account's refund or dispute is none of its
      // effects, even when its metadata names one. Answered 200, since Stripe would retry anything else for days and
      // nothing here will ever apply it; warned of by id and account, since forwarding it here is a misrouting
      // (`stripe listen` forwards Connect events to --forward-to unless --forward-connect-to or --events-from @self
      // says otherwise; a Dashboard endpoint listening to connected accounts does the same).
      if (event.account !== undefined) {
        processLogger().warn({ event: event.id, type: event.type, account: event.account }, `webhook: event ${event.id} (${event.type}) is for connected account ${event.account}, not the platform account Interlock moves money on: answered 200, not applied. Forward only the platform's own events here (stripe listen --events-from @self, or an endpoint that does not listen to connected accounts).`);
        deps.onOutcome?.('connect', { type: event.type });
        res.status(200).json({ received: true, ignored: true, reason: 'connect_account' });
        return;
      }
      let accepted: { duplicate?: boolean } | void;
      try {
        accepted = await deps.accept(event);
      } catch (error) {
        // Redis does not keep what it would acknowledge now (the durability monitor's refusal), or the event is queued
        // on its master but too few replicas hold it (INTERLOCK_REDIS_MIN_REPLICAS): said so, as the API says it, since
        // the operator's fix is Redis's settings or its replicas, not the queue; and counted apart, since Stripe's
        // retries alone would show only a run of 503s.
        const notDurable = errorCode(error) === 'redis_not_durable';
        deps.onOutcome?.('unavailable', { type: event.type, reason: notDurable ? 'redis_not_durable' : 'queue_unavailable' });
        if (notDurable) problem(res, 'redis_not_durable', errorMessage(error));
        else {
          // Redis turning the add away (its memory full, a replica, a cluster moving keys) is the operator's to fix:
          // said as the API says it, so the endpoint's page in the Dashboard and the log name the cause.
          const cause = redisRefusalOf(error);
          problem(res, 'queue_unavailable', `The event could not be queued right now${cause === null ? '' : ` (Redis turned it away: ${cause})`}; Stripe will deliver it again.`);
        }
        return;
      }
      deps.onOutcome?.(accepted?.duplicate === true ? 'duplicate' : 'queued', { type: event.type });
      res.status(200).json({ received: true });
    },
  );
  // Stripe only ever posts here: another method (a browser, a health check pointed at the wrong path) is told so.
  router.all(WEBHOOK_PATH, (req: Request, res: Response) => {
    res.setHeader('Allow', 'POST');
    problem(res, 'method_not_allowed', `${WEBHOOK_PATH} takes POST (Stripe's event deliveries, or \`stripe listen --forward-to\`), not ${req.method}.`);
  });
  // A body over the limit, or one express.raw could not read, is bad input: 413 or 400, never a 5xx.
  router.use(WEBHOOK_PATH, (error: unknown, _req: Request, res: Response, next: (error?: unknown) => void) => {
    const status = typeof error === 'object' && error !== null ? (error as { status?: unknown; type?: unknown }) : {};
    if (status.type === 'entity.too.large' || status.status === 413) {
      refuse(res, 'too_large', 'payload_too_large', 'The body is larger than a Stripe event can be.');
      return;
    }
    if (typeof status.status === 'number' && status.status >= 400 && status.status < 500) {
      refuse(res, 'unreadable', 'not_an_event', 'The body could not be read.');
      return;
    }
    next(error);
  });
  return router;
}
