// Webhook delivery: every event goes to every enabled target that wants its type, at least once, signed.
// Each target has a queue sent from in order, up to `settings.webhookConcurrency` deliveries in flight at once (4
// by default), so a slow answer to one event does not hold the next back, and order is not promised, as with Stripe
// (stripe-facts §6.4, §6.5); a concurrency of 1 is strict FIFO per target. Retries after a non-2xx answer or a
// timeout are scheduled with exponential backoff and rejoin the queue. Rules installed through the control API make
// deliveries duplicate, wait, vanish (to be redelivered on demand) or be held and released in a chosen order: released
// deliveries go one at a time, each alone in flight to its target, which is how tests get out-of-order arrival
// deterministically.
import { newId } from '../core/ids.js';
import { shownUrl } from '../core/log.js';
import { signatureHeader } from './signature.js';
import type { Core } from '../core/core.js';
import type { StripeEvent } from '../core/event-bus.js';

/** A percent-encoded part of a URL, decoded; as given when it is not valid percent-encoding. */
function decoded(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

/**
 * Where a delivery is POSTed, and the basic auth it carries: an endpoint with a user and password in its URL
 * (`https://user:pass@host/x`) is delivered to without them, with `Authorization: Basic`, as Stripe delivers to one
 * (fetch refuses a URL that holds credentials).
 */
function postedTo(raw: string): { url: string; authorization: string | null } {
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    return { url: raw, authorization: null };
  }
  if (parsed.username === '' && parsed.password === '') return { url: raw, authorization: null };
  const credentials = `${decoded(parsed.username)}:${decoded(parsed.password)}`;
  parsed.username = '';
  parsed.password = '';
  return { url: parsed.href, authorization: `Basic ${Buffer.from(credentials, 'utf8').toString('base64')}` };
}

export interface WebhookTarget {
  id: string;
  url: string;
  secret: string;
  enabledEvents: readonly string[];
  /** Carries deliveries some other way than an HTTP POST to `url` (a `stripe listen` websocket). */
  transport?: DeliveryTransport;
}

/** The signed request a delivery attempt sends: the exact payload bytes and Stripe's webhook headers. */
export interface SignedDelivery {
  delivery: Delivery;
  event: StripeEvent;
  payload: string;
  headers: Record<string, string>;
  signal: AbortSignal;
}

/**
 * `acked`: the receiver took the event and answers later, if at all (`stripe listen` acks before it forwards);
 * `failed`: nothing took it, so the usual retry schedule applies.
 */
export type TransportOutcome = { kind: 'acked' } | { kind: 'failed'; error: string };

export interface DeliveryTransport {
  send(request: SignedDelivery): Promise<TransportOutcome>;
}

/** What a `stripe listen` client reported back about one forwarded POST (its `webhook_response` frame). */
export interface ForwardedResponse {
  at: number;
  /** Which copy the CLI forwarded: null for the default version, the version for the `--latest` copy. */
  endpoint_api_version: string | null;
  forward_url: string;
  status: number;
  body: string;
}

export const deliveryStates = ['queued', 'held', 'delayed', 'in_flight', 'retry_scheduled', 'delivered', 'failed', 'dropped'] as const;
export type DeliveryState = (typeof deliveryStates)[number];

export interface Attempt {
  at: number;
  status: number | null;
  error: string | null;
  duration_ms: number;
}

export interface Delivery {
  id: string;
  event: string;
  type: string;
  endpoint: string;
  /** The target's URL, its password masked (`http://user:…@host/x`). */
  url: string;
  /** 1 for the original delivery, 2+ for copies made by a `duplicate` rule. */
  copy: number;
  state: DeliveryState;
  attempts: Attempt[];
  /** Deliveries over a `stripe listen` session: when the CLI acked, and each answer its local endpoint gave. */
  cli?: { acked_at: number | null; responses: ForwardedResponse[] };
}

export const ruleActions = ['duplicate', 'delay', 'drop', 'hold'] as const;
export type RuleAction = (typeof ruleActions)[number];

export interface DeliveryRule {
  id: string;
  action: RuleAction;
  /** Event type to match; a trailing `*` matches a prefix (`charge.dispute.*`); null matches all. */
  type: string | null;
  event: string | null;
  endpoint: string | null;
  /** How many more events the rule applies to. */
  remaining: number;
  copies: number;
  delay_ms: number;
}

export interface DeliveryFilter {
  event?: string;
  endpoint?: string;
  type?: string;
  state?: DeliveryState;
}

export interface WebhookDelivery {
  list(filter: DeliveryFilter): Delivery[];
  addRule(rule: Omit<DeliveryRule, 'id'>): DeliveryRule;
  rules(): DeliveryRule[];
  clearRules(): void;
  /** Sends every held delivery (optionally one target's), in creation order or reversed. */
  release(order: 'fifo' | 'reverse', endpoint?: string): Delivery[];
  /** Sends dropped or failed deliveries again: one by id, or all of them. */
  redeliver(id?: string): Delivery[];
  /** Resolves true once nothing is queued, in flight, delayed or awaiting a retry. */
  idle(timeoutMs: number): Promise<boolean>;
  /** Records the answer a `stripe listen` client reported for a delivery it acked. */
  recordForwarded(deliveryId: string, response: ForwardedResponse): void;
  clear(): void;
  close(): void;
}

/** One target's deliveries waiting to be sent, and how many are in flight (`alone`: a released one, sent by itself). */
interface TargetQueue {
  pending: Array<{ delivery: Delivery; alone: boolean }>;
  inFlight: number;
  alone: boolean;
}

const busyStates: ReadonlySet<DeliveryState> = new Set(['queued', 'delayed', 'in_flight', 'retry_scheduled']);

export function typeMatches(pattern: string, type: string): boolean {
  if (pattern === '*') return true;
  return pattern.endsWith('*') ? type.startsWith(pattern.slice(0, -1)) : pattern === type;
}

export function createWebhookDelivery(core: Core, targets: () => readonly WebhookTarget[]): WebhookDelivery {
  const { clock, events, settings, log } = core;
  let deliveries: Delivery[] = [];
  /** Where each delivery goes, as its target's URL was when it was made: `url` shows it with the password masked. */
  const postUrls = new WeakMap<Delivery, string>();
  let rules: DeliveryRule[] = [];
  const queues = new Map<string, TargetQueue>();
  const delivered = new Set<string>();
  let shutdown = new AbortController();

  const eventOf = (d: Delivery): StripeEvent | undefined => events.events.get(d.event);

  /** `alone`: sent only when nothing else to its target is in flight, and nothing else is sent beside it (released deliveries). */
  const enqueue = (d: Delivery, alone = false): void => {
    d.state = 'queued';
    const queue = queues.get(d.endpoint) ?? { pending: [], inFlight: 0, alone: false };
    queues.set(d.endpoint, queue);
    queue.pending.push({ delivery: d, alone });
    pump(queue);
  };

  /** Starts the queue's head deliveries, in order, while the target has room for them. */
  const pump = (queue: TargetQueue): void => {
    for (let next = queue.pending[0]; next !== undefined; next = queue.pending[0]) {
      const room = next.alone ? 1 : Math.max(1, settings.webhookConcurrency);
      if (queue.alone || queue.inFlight >= room) return;
      queue.pending.shift();
      queue.inFlight += 1;
      queue.alone = next.alone;
      void attempt(next.delivery)
        .catch((err: unknown) => log.error({ err, delivery: next.delivery.id }, 'webhook attempt crashed'))
        .finally(() => {
          queue.inFlight -= 1;
          queue.alone = false;
          pump(queue);
        });
    }
  };

  const attempt = async (d: Delivery): Promise<void> => {
    const event = eventOf(d);
    const target = targets().find((t) => t.id === d.endpoint);
    if (event === undefined || target === undefined) {
      d.state = 'failed';
      d.attempts.push({ at: clock.wallMs(), status: null, error: 'endpoint or event no longer exists', duration_ms: 0 });
      return;
    }
    d.state = 'in_flight';
    const { signal } = shutdown;
    const payload = JSON.stringify(event, null, 2);
    const started = clock.wallMs();
    // Signed when sent, not when the event happened: stripe-node refuses signatures older than 300 s.
    const headers = {
      'Content-Type': 'application/json; charset=utf-8',
      'User-Agent': 'Stripe/1.0 (+https://stripe.com/docs/webhooks)',
      Accept: '*/*; q=0.5, application/xml',
      'Cache-Control': 'no-cache',
      'Stripe-Signature': signatureHeader(payload, target.secret, Math.floor(started / 1000), { v0: true }),
    };
    let status: number | null = null;
    let error: string | null = null;
    let acked = false;
    if (target.transport !== undefined) {
      const outcome = await target.transport.send({ delivery: d, event, payload, headers, signal });
      if (outcome.kind === 'acked') acked = true;
      else error = outcome.error;
    } else {
      try {
        const to = postedTo(postUrls.get(d) ?? target.url);
        const response = await fetch(to.url, {
          method: 'POST',
          redirect: 'manual',
          signal: AbortSignal.any([AbortSignal.timeout(settings.webhookTimeoutMs), signal]),
          headers: to.authorization === null ? headers : { ...headers, Authorization: to.authorization },
          body: payload,
        });
        status = response.status;
        await response.arrayBuffer();
      } catch (cause) {
        error = cause instanceof Error ? cause.message : String(cause);
      }
    }
    // A reset or close happened mid-flight: this delivery belongs to a world that no longer exists.
    if (signal.aborted) return;
    if (acked && d.cli !== undefined) {
      d.cli.acked_at = clock.wallMs();
      // The CLI acks each copy of the event separately and may report the forwarded POST in between.
      status = d.cli.responses[0]?.status ?? null;
    }
    d.attempts.push({ at: started, status, error, duration_ms: clock.wallMs() - started });
    if (acked || (status !== null && status >= 200 && status < 300)) {
      d.state = 'delivered';
      const pair = `${d.event} ${d.endpoint}`;
      if (!delivered.has(pair)) {
        delivered.add(pair);
        event.pending_webhooks = Math.max(0, event.pending_webhooks - 1);
      }
      return;
    }
    log.debug({ delivery: d.id, status, error }, 'webhook attempt failed');
    const retriesSoFar = d.attempts.length - 1;
    if (retriesSoFar >= settings.webhookMaxRetries) {
      d.state = 'failed';
      return;
    }
    d.state = 'retry_scheduled';
    clock.after('webhookRetryBase', () => enqueue(d), 2 ** retriesSoFar);
  };

  const ruleFor = (event: StripeEvent, target: WebhookTarget): DeliveryRule | undefined => {
    const rule = rules.find(
      (r) =>
        r.remaining > 0 &&
        (r.type === null || typeMatches(r.type, event.type)) &&
        (r.event === null || r.event === event.id) &&
        (r.endpoint === null || r.endpoint === target.id),
    );
    if (rule !== undefined) rule.remaining -= 1;
    return rule;
  };

  const newDelivery = (event: StripeEvent, target: WebhookTarget, copy: number): Delivery => {
    const d: Delivery = {
      id: newId('wd'),
      event: event.id,
      type: event.type,
      endpoint: target.id,
      url: shownUrl(target.url),
      copy,
      state: 'queued',
      attempts: [],
      ...(target.transport === undefined ? {} : { cli: { acked_at: null, responses: [] } }),
    };
    postUrls.set(d, target.url);
    deliveries.push(d);
    return d;
  };

  /** Queues now, or after Stripe's own delivery lag for this event. */
  const enqueueAfter = (d: Delivery, ms: number): void => {
    if (ms <= 0) {
      enqueue(d);
      return;
    }
    d.state = 'delayed';
    clock.afterMs(ms, () => {
      if (d.state === 'delayed') enqueue(d);
    });
  };

  events.subscribe((event, { afterMs }) => {
    for (const target of targets()) {
      if (!target.enabledEvents.some((pattern) => typeMatches(pattern, event.type))) continue;
      event.pending_webhooks += 1;
      const rule = ruleFor(event, target);
      const first = newDelivery(event, target, 1);
      if (rule === undefined) {
        enqueueAfter(first, afterMs);
        continue;
      }
      switch (rule.action) {
        case 'drop':
          first.state = 'dropped';
          break;
        case 'hold':
          first.state = 'held';
          break;
        case 'delay':
          enqueueAfter(first, afterMs + rule.delay_ms);
          break;
        case 'duplicate':
          enqueueAfter(first, afterMs);
          for (let copy = 2; copy <= Math.max(2, rule.copies); copy++) enqueueAfter(newDelivery(event, target, copy), afterMs);
          break;
        default: {
          const unreachable: never = rule.action;
          throw new Error(`unknown rule action ${String(unreachable)}`);
        }
      }
    }
  });

  return {
    list: (filter) =>
      deliveries.filter(
        (d) =>
          (filter.event === undefined || d.event === filter.event) &&
          (filter.endpoint === undefined || d.endpoint === filter.endpoint) &&
          (filter.type === undefined || typeMatches(filter.type, d.type)) &&
          (filter.state === undefined || d.state === filter.state),
      ),
    addRule(rule) {
      const stored = { ...rule, id: newId('wdr') };
      rules.push(stored);
      return stored;
    },
    rules: () => rules.filter((r) => r.remaining > 0),
    clearRules() {
      rules = [];
    },
    release(order, endpoint) {
      const held = deliveries.filter((d) => d.state === 'held' && (endpoint === undefined || d.endpoint === endpoint));
      const ordered = order === 'fifo' ? held : [...held].reverse();
      for (const d of ordered) enqueue(d, true);
      return ordered;
    },
    redeliver(id) {
      const chosen = deliveries.filter((d) => (id === undefined ? d.state === 'dropped' || d.state === 'failed' : d.id === id));
      for (const d of chosen) enqueue(d);
      return chosen;
    },
    async idle(timeoutMs) {
      const deadline = clock.wallMs() + timeoutMs;
      while (deliveries.some((d) => busyStates.has(d.state))) {
        if (clock.wallMs() > deadline) return false;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      return true;
    },
    recordForwarded(deliveryId, response) {
      const d = deliveries.find((candidate) => candidate.id === deliveryId);
      if (d?.cli === undefined) return;
      d.cli.responses.push(response);
      // The attempt that reached the CLI reads as the status the local endpoint answered, like an HTTP delivery.
      const last = d.attempts.at(-1);
      if (last !== undefined && last.status === null && last.error === null) last.status = response.status;
    },
    clear() {
      shutdown.abort();
      shutdown = new AbortController();
      deliveries = [];
      rules = [];
      for (const queue of queues.values()) queue.pending.length = 0;
      queues.clear();
      delivered.clear();
    },
    close() {
      shutdown.abort();
    },
  };
}
