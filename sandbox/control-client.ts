// A typed client for the control API, usable against an in-process sandbox or one in another process.
import type { Delivery, DeliveryFilter, DeliveryRule, RuleAction } from './webhooks/delivery.js';
import type { CliSessionView } from './webhooks/stripe-cli.js';
import type { LoggedRequest } from './http/request-log.js';

export interface RuleInput {
  action: RuleAction;
  type?: string;
  event?: string;
  endpoint?: string;
  count?: number;
  copies?: number;
  delay_ms?: number;
}

export interface ConfigInput {
  idempotency_ttl_seconds?: number;
  pending_refund_dispute_window_seconds?: number;
  dispute_fee?: number;
  reinstate_dispute_fee_on_win?: boolean;
  dispute_due_days?: number;
  webhook_timeout_ms?: number;
  webhook_max_retries?: number;
  /** Deliveries in flight at once per endpoint (default 4); 1 delivers to each endpoint strictly in order. */
  webhook_concurrency?: number;
  stripecli_reconnect_delay_seconds?: number;
  stripecli_session_expires_after_ms?: number;
}

export interface FailInput {
  path?: string;
  method?: 'GET' | 'POST' | 'DELETE';
  status: number;
  type?: 'api_error' | 'card_error' | 'idempotency_error' | 'invalid_request_error' | 'rate_limit_error' | 'authentication_error';
  code?: string;
  message?: string;
  /** Seconds, sent as `Retry-After`. */
  retry_after?: number;
  count?: number;
  /** An error from inside the endpoint: stored under the request's idempotency key and replayed to it, as Stripe does. */
  stored?: boolean;
}

export interface DropInput {
  path?: string;
  method?: 'GET' | 'POST' | 'DELETE';
  /** `before`: nothing runs; `after`: the request runs and its answer is stored, then the connection closes. */
  when?: 'before' | 'after';
  count?: number;
}

export interface ControlClient {
  request(method: 'GET' | 'POST' | 'DELETE', path: string, body?: object): Promise<unknown>;
  reset(): Promise<void>;
  configure(config: ConfigInput): Promise<void>;
  advanceClock(seconds: number): Promise<void>;
  ageIdempotencyKeys(seconds: number): Promise<void>;
  slowDown(input: { path?: string; method?: 'GET' | 'POST' | 'DELETE'; ms: number; count?: number }): Promise<void>;
  /** Answers the next matching API requests with this error before they reach the endpoint. */
  failNext(input: FailInput): Promise<void>;
  /** Closes the connection of the next matching API requests without an answer. */
  dropNext(input: DropInput): Promise<void>;
  clearFaults(): Promise<void>;
  /** Stripe API requests received (oldest first), optionally only those after the `seq` given. */
  requests(after?: number): Promise<LoggedRequest[]>;
  clearRequests(): Promise<void>;
  openDispute(input: { charge: string; kind?: 'inquiry' | 'chargeback'; reason?: string }): Promise<{ id: string }>;
  deliveries(filter?: DeliveryFilter): Promise<Delivery[]>;
  addRule(rule: RuleInput): Promise<DeliveryRule>;
  clearRules(): Promise<void>;
  release(order?: 'fifo' | 'reverse', endpoint?: string): Promise<Delivery[]>;
  redeliver(delivery?: string): Promise<Delivery[]>;
  /** Waits until no delivery is queued, in flight, delayed or awaiting retry. */
  idle(timeoutMs?: number): Promise<boolean>;
  /** `stripe listen` sessions the sandbox knows, connected or waiting for the CLI's re-dial. */
  cliSessions(): Promise<CliSessionView[]>;
  /** Forgets a `stripe listen` session, so the CLI's next dial meets `Unknown WebSocket ID.` */
  expireCliSession(id: string): Promise<void>;
}

export function createControlClient(baseUrl: string): ControlClient {
  const request = async (method: 'GET' | 'POST' | 'DELETE', path: string, body?: object): Promise<unknown> => {
    const response = await fetch(`${baseUrl}/_sandbox${path}`, {
      method,
      headers: { 'Content-Type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const payload = (await response.json()) as unknown;
    if (!response.ok) throw new Error(`sandbox control ${method} ${path} failed with ${response.status}: ${JSON.stringify(payload)}`);
    return payload;
  };
  // The control API answers lists as `{data: [...]}` with the shapes declared in webhooks/delivery.ts.
  const data = async <T>(method: 'GET' | 'POST', path: string, body?: object): Promise<T[]> => ((await request(method, path, body)) as { data: T[] }).data;
  const query = (filter: object): string => {
    const params = new URLSearchParams(Object.entries(filter).map(([k, v]): [string, string] => [k, String(v)]));
    const text = params.toString();
    return text === '' ? '' : `?${text}`;
  };

  return {
    request,
    reset: async () => void (await request('POST', '/reset')),
    configure: async (config) => void (await request('POST', '/config', config)),
    advanceClock: async (seconds) => void (await request('POST', '/clock/advance', { seconds })),
    ageIdempotencyKeys: async (seconds) => void (await request('POST', '/idempotency/age', { seconds })),
    slowDown: async (input) => void (await request('POST', '/faults/slow', input)),
    failNext: async (input) => void (await request('POST', '/faults/fail', input)),
    dropNext: async (input) => void (await request('POST', '/faults/drop', input)),
    clearFaults: async () => void (await request('DELETE', '/faults')),
    requests: (after) => data<LoggedRequest>('GET', `/requests${after === undefined ? '' : `?after=${after}`}`),
    clearRequests: async () => void (await request('DELETE', '/requests')),
    openDispute: async (input) => (await request('POST', '/disputes', input)) as { id: string },
    deliveries: (filter = {}) => data<Delivery>('GET', `/webhooks/deliveries${query(filter)}`),
    addRule: async (rule) => (await request('POST', '/webhooks/rules', rule)) as DeliveryRule,
    clearRules: async () => void (await request('DELETE', '/webhooks/rules')),
    release: (order = 'fifo', endpoint) => data<Delivery>('POST', '/webhooks/release', endpoint === undefined ? { order } : { order, endpoint }),
    redeliver: (delivery) => data<Delivery>('POST', '/webhooks/redeliver', delivery === undefined ? {} : { delivery }),
    idle: async (timeoutMs = 5_000) => ((await request('POST', '/webhooks/idle', { timeout_ms: timeoutMs })) as { idle: boolean }).idle,
    cliSessions: () => data<CliSessionView>('GET', '/stripecli/sessions'),
    expireCliSession: async (id) => void (await request('POST', `/stripecli/sessions/${encodeURIComponent(id)}/expire`)),
  };
}
