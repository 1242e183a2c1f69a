// The Stripe client, built once from configuration: which key (test mode unless live is allowed explicitly), which
// API (Stripe, or the sandbox at STRIPE_API_BASE), and an HTTP client that holds every request of the adapter to
// the call it belongs to. src/stripe/ is the only module of the project that imports `stripe`.
//
// Why the SDK's own HTTP client is wrapped: stripe-node retries a request whose connection closed (ECONNRESET,
// EPIPE) once even with `maxNetworkRetries: 0`, half a second to a second later, with a fresh full timeout and
// without asking anyone. For a send that second attempt could leave after the send deadline the settle margin
// counts from, or after the sender lost its claim. The wrapper sees every attempt, so each one first passes the
// send's `beforeWrite()` (the fencing check right before the network) and gets only the time left as its timeout;
// an attempt with no time left does not go out.
//
// Why the client has an agent of its own: a request handed to node's HTTP client lives until its own timeout (the
// send's deadline), and one still connecting writes its body once connected, however late. When the gate aborts a
// send (its worker's heartbeat could lapse: src/gate/send.ts) nothing of it may leave after, so the client keeps each
// guarded request as the agent is handed it, and closeRequestsOutOfTime closes those of sends with no time left.
//
// The API version is not pinned here: requests carry the version the SDK is generated for, which is what its
// types describe.
import { Agent as HttpAgent, type ClientRequest } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type Stripe from 'stripe';
import { InterlockError } from '../core/errors.js';
import { stripeSdk } from './sdk.js';
import { SendFenced } from '../core/target.js';
import { secretHint } from '../core/redact.js';
import { readApiBase, readStripeKey, stripeSettingOf, type Endpoint } from './settings.js';

export type StripeClientOptions = {
  /** STRIPE_SECRET_KEY: `sk_test_`/`rk_test_`; `sk_live_`/`rk_live_` only with `allowLive`. */
  secretKey: string;
  /** STRIPE_API_BASE, e.g. `http://127.0.0.1:12111` for the sandbox; unset means Stripe itself. */
  apiBase?: string | null;
  /** INTERLOCK_ALLOW_LIVE=1: accept a live-mode key (real money). */
  allowLive?: boolean;
};

export type StripeClient = {
  readonly mode: 'test' | 'live';
  /** The key as logs may show it (its prefix and last four characters), never the key. */
  readonly keyHint: string;
  /** Where requests go, e.g. `https://api.stripe.com:443`. */
  readonly apiBase: string;
};

/**
 * One call of the adapter as the HTTP client sees it: how much time it has left, and for a send the check to pass
 * right before each attempt leaves the process. `attempts` counts the attempts that went to the network.
 */
export type CallGuard = {
  timeLeftMs(): number;
  beforeWrite: (() => Promise<void>) | null;
  attempts: number;
};

/** An attempt the wrapper stopped after an earlier attempt of the same call may have reached Stripe. */
export class RetryStopped extends Error {
  constructor(readonly reason: string, options: { cause?: unknown } = {}) {
    super(reason, options);
    this.name = 'RetryStopped';
  }
}

/** A request made outside any call of the adapter: a bug, since only guarded calls may reach Stripe. */
class UnguardedRequest extends Error {
  constructor(method: string, path: string) {
    super(`${method} ${path} was made outside a guarded call of the Stripe adapter`);
    this.name = 'UnguardedRequest';
  }
}

type HttpClient = InstanceType<typeof Stripe.HttpClient>;
type RequestArgs = Parameters<HttpClient['makeRequest']>;
type Answer = ReturnType<HttpClient['makeRequest']>;

/**
 * The guards of the calls in progress, by tag. A guarded call's requests carry its tag in the GUARD_HEADER header
 * (a request option of stripe-node, which every call of the adapter passes through), and the HTTP wrapper takes the
 * header off before the request leaves. A tag, not an AsyncLocalStorage: one storage in use turns on promise hooks
 * for the whole process, which cost every promise of the gate, BullMQ and ioredis a little CPU (about 3% of a
 * refund's CPU through the effects worker).
 */
const guards = new Map<string, CallGuard>();
const GUARD_HEADER = 'X-Interlock-Guard';
let nextTag = 0;
const sdks = new WeakMap<StripeClient, Stripe>();

/**
 * The requests of one client on the network, each with the guard of its call, from the moment the agent is handed
 * it until it closes; `starting`: the guard of the attempt being handed to node's HTTP client right now (it makes
 * its request synchronously).
 */
type OpenRequests = { open: Map<ClientRequest, CallGuard>; starting: CallGuard | null };
const requestsOf = new WeakMap<StripeClient, OpenRequests>();

/** Node's agents are handed every request as it is made (ClientRequest's constructor calls it); absent from its typings. */
type RequestIntake = { addRequest(request: ClientRequest, options: object): void };

/**
 * A keep-alive agent, as the SDK's own, that records each request it is handed under the guard of the attempt making
 * it. A request closed by closeRequestsOutOfTime takes its socket with it; the next request gets a fresh one.
 */
function recordingAgent(protocol: 'http' | 'https', requests: OpenRequests): HttpAgent {
  const agent = protocol === 'http' ? new HttpAgent({ keepAlive: true }) : new HttpsAgent({ keepAlive: true });
  const intake = agent as unknown as RequestIntake;
  const addRequest = intake.addRequest.bind(agent);
  intake.addRequest = (request, options) => {
    const guard = requests.starting;
    if (guard !== null) {
      requests.open.set(request, guard);
      request.once('close', () => requests.open.delete(request));
    }
    addRequest(request, options);
  };
  return agent;
}

/** What a request closed by closeRequestsOutOfTime fails with; not a closed-connection code, so the SDK does not retry it. */
class SendAborted extends Error {
  readonly code = 'ERR_INTERLOCK_SEND_ABORTED';
  constructor() {
    super('the send was aborted (no time left): its connection was closed so nothing more of it leaves the process');
    this.name = 'SendAborted';
  }
}

/** The SDK's HTTP client, wrapped; the class is defined once the SDK is loaded, since its base class comes from the SDK. */
let GuardedHttpClient: ReturnType<typeof defineGuardedHttpClient> | null = null;

function defineGuardedHttpClient(Base: typeof Stripe.HttpClient) {
  return class extends Base {
    constructor(
      private readonly inner: HttpClient,
      private readonly requests: OpenRequests,
    ) {
      super();
    }

    override getClientName(): string {
      return this.inner.getClientName();
    }

    override makeRequest(...args: RequestArgs): Answer {
      const headers = args[4];
      const tag = headers[GUARD_HEADER];
      const guard = typeof tag === 'string' ? guards.get(tag) : undefined;
      if (guard === undefined) return Promise.reject(new UnguardedRequest(args[3], args[2]));
      const sent: RequestArgs[4] = {};
      for (const [name, value] of Object.entries(headers)) if (name !== GUARD_HEADER) sent[name] = value;
      args[4] = sent;
      return this.attempt(guard, args);
    }

    private async attempt(guard: CallGuard, args: RequestArgs): Answer {
      const [host, port, path, method, headers, body, protocol, timeout] = args;
      if (guard.beforeWrite !== null) {
        try {
          await guard.beforeWrite();
        } catch (error) {
          // The first attempt not leaving means nothing was sent; a retry not leaving leaves the first one's fate open.
          if (guard.attempts === 0) throw error;
          throw new RetryStopped(`a retry of ${method} ${path} was stopped before it left (${error instanceof Error ? error.message : String(error)})`, { cause: error });
        }
      }
      const left = Math.floor(guard.timeLeftMs());
      if (left <= 0) {
        if (guard.attempts === 0 && guard.beforeWrite !== null) throw new SendFenced('the send deadline passed before the request could leave');
        throw new RetryStopped(`no time was left for ${guard.attempts === 0 ? '' : 'a retry of '}${method} ${path}`);
      }
      guard.attempts += 1;
      this.requests.starting = guard;
      try {
        return this.inner.makeRequest(host, port, path, method, headers, body, protocol, Math.min(timeout, left));
      } finally {
        this.requests.starting = null;
      }
    }
  };
}

function refuse(message: string): never {
  throw new InterlockError('invalid_config', message);
}

/** Builds the client, refusing a key or API base that is wrong before anything is sent (InterlockError `invalid_config`). */
export function createStripeClient(options: StripeClientOptions): StripeClient {
  const read = readStripeKey(options.secretKey, options.allowLive ?? false);
  if ('problem' in read) refuse(read.problem);
  const { key, mode } = read;
  let endpoint: Endpoint | null = null;
  const apiBase = stripeSettingOf(options.apiBase);
  if (apiBase !== null) {
    const base = readApiBase(apiBase);
    if ('problem' in base) refuse(base.problem);
    endpoint = base.endpoint;
  }
  const Sdk = stripeSdk();
  const requests: OpenRequests = { open: new Map(), starting: null };
  const agent = recordingAgent(endpoint?.protocol ?? 'https', requests);
  const sdk = new Sdk(key, {
    ...(endpoint === null ? {} : endpoint),
    // The gate decides what is retried and when; every call also passes 0 and its own timeout.
    maxNetworkRetries: 0,
    httpClient: new (GuardedHttpClient ??= defineGuardedHttpClient(Sdk.HttpClient))(Sdk.createNodeHttpClient(agent), requests),
    appInfo: { name: 'interlock-stripe' },
  });
  const client: StripeClient = Object.freeze({
    mode,
    keyHint: secretHint(key),
    apiBase: endpoint === null ? 'https://api.stripe.com:443' : `${endpoint.protocol}://${endpoint.host.includes(':') ? `[${endpoint.host}]` : endpoint.host}:${endpoint.port}`,
  });
  sdks.set(client, sdk);
  requestsOf.set(client, requests);
  return client;
}

/**
 * Closes at once every request of this client whose call has no time left: the sends the gate aborted (their
 * timeLeftMs() is 0 from then on), and any request outliving its call's budget. A request still connecting never
 * writes its body, and one waiting for its answer is ended, its send's outcome unknown (the SDK does not retry it; a
 * retry would not pass beforeWrite anyway). Returns how many it closed.
 */
export function closeRequestsOutOfTime(client: StripeClient): number {
  const requests = requestsOf.get(client);
  if (requests === undefined) throw new InterlockError('internal', 'not a client made by createStripeClient');
  let closed = 0;
  for (const [request, guard] of requests.open) {
    if (guard.timeLeftMs() > 0) continue;
    requests.open.delete(request);
    request.destroy(new SendAborted());
    closed += 1;
  }
  return closed;
}

/** The client options from the environment: STRIPE_SECRET_KEY, STRIPE_API_BASE, INTERLOCK_ALLOW_LIVE. */
export function stripeClientOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): StripeClientOptions {
  const allow = (env['INTERLOCK_ALLOW_LIVE'] ?? '').trim().toLowerCase();
  if (!['', '0', '1', 'true', 'false', 'yes', 'no'].includes(allow)) refuse('INTERLOCK_ALLOW_LIVE must be 1 (allow a live-mode key) or 0.');
  return { secretKey: env['STRIPE_SECRET_KEY'] ?? '', apiBase: stripeSettingOf(env['STRIPE_API_BASE']), allowLive: allow === '1' || allow === 'true' || allow === 'yes' };
}

/** The SDK behind a client; for the adapter's own modules. */
export function sdkOf(client: StripeClient): Stripe {
  const sdk = sdks.get(client);
  if (sdk === undefined) throw new InterlockError('internal', 'not a client made by createStripeClient');
  return sdk;
}

/**
 * Runs `call` with every request it makes held to `guard`: `call` passes the request options it is given `headers`
 * to the SDK (a request made without them is refused as unguarded). The guard holds until the call settles.
 *
 * stripe-node captures `new Error().stack` as each request starts, to append the caller's frames to an error it may
 * throw later. With source maps on (tsx turns them on), formatting that stack maps every frame and costs more CPU
 * than the rest of the request's client side. The adapter's errors (errors.ts) name the call they come from, so the
 * SDK's call site adds nothing: a call starts with no frames captured. The SDK starts its request synchronously
 * inside `call`, so the limit is back before anything else runs.
 */
export function guarded<T>(guard: CallGuard, call: (headers: Record<string, string>) => Promise<T>): Promise<T> {
  const tag = `g${nextTag.toString(36)}`;
  nextTag += 1;
  guards.set(tag, guard);
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  let started: Promise<T>;
  try {
    started = call({ [GUARD_HEADER]: tag });
  } catch (error) {
    guards.delete(tag);
    throw error;
  } finally {
    Error.stackTraceLimit = limit;
  }
  return started.finally(() => guards.delete(tag));
}
