// The transport: node:http in, Stripe's wire format out. Order per request: Request-Id; the Host it was addressed to
// (421 before the body is read: hostAdmitted); control routes (no auth);
// the request log; injected failures and drops (faults.ts: in front of everything, as Stripe's rate limiter is);
// auth (401); route match (404); parse parameters; idempotency lookup (replay / 400 / 409, before any
// validation so a replay wins even when the world has changed); validation (never stored); hold (a POST's write
// latency and any injected slowness, its key in flight); run; store; respond (or drop the connection after storing).
import { isIP } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { errorBody, invalidRequest, SandboxError } from '../core/errors.js';
import { API_VERSION } from '../core/event-bus.js';
import { canonicalParams, MAX_PARAM_DEPTH, parseForm, tooDeep } from '../core/form.js';
import { newRequestId } from '../core/ids.js';
import { authenticate } from './auth.js';
import { answerOf, checkExpand, expand } from './expand.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { ParamMap, ParamValue } from '../core/form.js';
import type { Logger } from '../core/log.js';
import type { Store } from '../core/store.js';
import type { Faults } from './faults.js';
import type { Idempotency } from './idempotency.js';
import type { LoggedRequest, RequestLog } from './request-log.js';
import type { Router } from './router.js';
import type { VirtualExpansion } from './expand.js';

export interface TransportDeps {
  api: Router;
  control: Router;
  idempotency: Idempotency;
  store: Store;
  faults: Faults;
  requests: RequestLog;
  virtualExpansions: ReadonlyMap<string, VirtualExpansion>;
  log: Logger;
  /** How long every POST is held, its key in flight, before it runs and its answer is stored (delays.ts `writeLatency`). */
  writeLatencyMs: number;
  /** Host names, without a port, the sandbox answers besides those it always does (hostAdmitted): `--allowed-host`. */
  allowedHosts: readonly string[];
  /** Sees every Stripe API answer after it is made; tests use it to check each body against Stripe's schema. */
  onApiResponse?: (record: ApiResponseRecord) => void;
}

export interface ApiResponseRecord {
  method: string;
  /** The route's pattern (`/v1/refunds/:id`), or null when no route matched. */
  route: string | null;
  path: string;
  expand: readonly string[];
  status: number;
  body: string;
}

interface Reply {
  status: number;
  body: string;
  headers?: Record<string, string>;
  /** Close the connection instead of answering (an injected drop). */
  drop?: true;
}

const MAX_BODY_BYTES = 1024 * 1024;
const MAX_KEY_LENGTH = 255;

export function createRequestHandler(deps: TransportDeps): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const requestId = newRequestId();
    const host = header(req, 'host');
    // A refused Host is answered before its body is read, so nothing it sent is parsed, logged, run or read back.
    const answered = hostAdmitted(host, deps.allowedHosts)
      ? readBody(req)
          .then((body) => respond(deps, req, body, requestId))
          .catch((error: unknown) => failure(deps.log, error, requestId))
      : Promise.resolve(json(421, errorBody(misdirected(host), requestId)));
    answered
      .then((reply) => {
        if (reply.drop === true) {
          res.destroy();
          return;
        }
        const headers: Record<string, string> = {
          'Content-Type': 'application/json',
          'Content-Length': String(Buffer.byteLength(reply.body)),
          'Request-Id': requestId,
          'Stripe-Version': header(req, 'stripe-version') ?? API_VERSION,
          ...reply.headers,
        };
        const key = header(req, 'idempotency-key');
        if (key !== undefined) headers['Idempotency-Key'] = key;
        res.writeHead(reply.status, headers).end(reply.body);
      })
      .catch((error: unknown) => deps.log.error({ err: error }, 'response failed'));
  };
}

/**
 * Whether the sandbox answers a request addressed (its Host header) to `host`, whatever the port, letter case or a
 * final dot: an IP address (v4, or v6 in brackets); `localhost` and names under it, which a browser resolves to
 * loopback itself; a name under `dev.stripe.me`, the only names besides a loopback IP the official Stripe CLI takes
 * as `--api-base` (stripe-cli.md §2), held in Stripe's DNS; or one of `allowed` (`--allowed-host`, such as a compose
 * service name). Any other name may be a web page's own, rebound to this address (DNS rebinding): the page would be
 * same-origin with its requests, so Sec-Fetch-Site and Origin (foreignPage) cannot tell them from the operator's,
 * and nothing here takes a key the page would lack. No Host at all is refused too: every HTTP/1.1 client sends one.
 */
export function hostAdmitted(host: string | undefined, allowed: readonly string[]): boolean {
  if (host === undefined) return false;
  const bracketed = /^\[([^\]]*)\](?::\d*)?$/.exec(host);
  if (bracketed !== null) return isIP(bracketed[1] ?? '') === 6;
  const name = hostName(host);
  if (isIP(name) === 4 || name === 'localhost' || name.endsWith('.localhost') || name.endsWith('.dev.stripe.me')) return true;
  return allowed.some((admitted) => admitted.replace(/\.$/, '').toLowerCase() === name);
}

/** A Host header's name: without its port and final dot, in lower case. */
function hostName(host: string): string {
  return host.replace(/:\d*$/, '').replace(/\.$/, '').toLowerCase();
}

/** The 421 a request gets whose Host the sandbox does not answer (hostAdmitted), in Stripe's error envelope. */
function misdirected(host: string | undefined): SandboxError {
  const always = 'an IP address, localhost or a name under it, a *.dev.stripe.me name, or a name given with --allowed-host NAME (startSandbox: allowedHosts)';
  const message =
    host === undefined || host === ''
      ? `Misdirected request: it has no Host header, and this sandbox answers only requests addressed to ${always}.`
      : `Misdirected request: this sandbox does not answer Host ${JSON.stringify(host.slice(0, 100))}. It answers requests addressed to ${always}; start it with --allowed-host ${hostName(host).slice(0, 100)} if that is a name you address it by. A name it was not given may be a web page's own name pointed at this address (DNS rebinding), which could otherwise reset it, make its calls fail and read every object.`;
  return new SandboxError(421, { type: 'invalid_request_error', message });
}

/**
 * Answers a websocket upgrade whose Host the sandbox does not answer (hostAdmitted) 421, with the same body as any
 * other request, and closes the connection; false (the socket untouched) when the Host is admitted.
 */
export function refuseMisdirectedUpgrade(req: IncomingMessage, socket: Duplex, allowed: readonly string[]): boolean {
  const host = header(req, 'host');
  if (hostAdmitted(host, allowed)) return false;
  // Node takes its own 'error' listener off an upgrade's socket: a peer's reset must not end the process.
  socket.on('error', () => undefined);
  const requestId = newRequestId();
  const body = JSON.stringify(errorBody(misdirected(host), requestId));
  socket.end(
    `HTTP/1.1 421 Misdirected Request\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nRequest-Id: ${requestId}\r\nConnection: close\r\n\r\n${body}`,
    () => socket.destroy(),
  );
  return true;
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function readBody(req: IncomingMessage): Promise<string> {
  // Bodiless requests (most GETs) skip the stream machinery; Node discards anything unread.
  if (req.headers['content-length'] === undefined && req.headers['transfer-encoding'] === undefined) return Promise.resolve('');
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) reject(invalidRequest('Request body too large.', {}, 413));
      else chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function json(status: number, value: unknown, headers?: Record<string, string>): Reply {
  return { status, body: JSON.stringify(value), ...(headers === undefined ? {} : { headers }) };
}

function failure(log: Logger, error: unknown, requestId: string): Reply {
  if (error instanceof SandboxError) return json(error.status, errorBody(error, requestId));
  log.error({ err: error, requestId }, 'unhandled error');
  const unknown = new SandboxError(500, { type: 'api_error', message: 'An unknown error occurred' });
  return json(500, errorBody(unknown, requestId));
}

/** `depth` counts containers as form keys count brackets, so a JSON body nests no deeper than a form one may. */
function jsonToParams(value: unknown, name = 'body', depth = 0): ParamValue {
  if (value === null || value === undefined) return '';
  if (typeof value !== 'object') return String(value);
  if (depth >= MAX_PARAM_DEPTH) tooDeep(name);
  if (Array.isArray(value)) return value.map((item) => jsonToParams(item, name, depth + 1));
  const out = Object.create(null) as ParamMap;
  for (const [key, item] of Object.entries(value)) out[key] = jsonToParams(item, depth === 0 ? key : name, depth + 1);
  return out;
}

function parseJson(body: string): unknown {
  try {
    return JSON.parse(body) as unknown;
  } catch {
    // The client's mistake: a 5xx here would be retried by stripe-node and read as "outcome unknown" (stripe-facts §1.2).
    throw invalidRequest('Invalid JSON body: the request body could not be parsed as JSON.');
  }
}

function parseParams(req: IncomingMessage, query: string, body: string): ParamMap {
  if (body === '') return parseForm(query);
  if ((header(req, 'content-type') ?? '').includes('application/json')) {
    const parsed = jsonToParams(parseJson(body));
    if (typeof parsed === 'string' || Array.isArray(parsed)) throw invalidRequest('Invalid JSON body.');
    return parsed;
  }
  return parseForm(body);
}

function takeExpand(params: ParamMap): string[] {
  const value = params['expand'];
  delete params['expand'];
  if (value === undefined || value === '') return [];
  const list = Array.isArray(value) ? value : [value];
  return list.map((item, index) => {
    if (typeof item !== 'string') throw invalidRequest('Invalid array', { param: `expand[${index}]` });
    return item;
  });
}

/**
 * Whether a request was sent by a web page of another site than the sandbox's own address, as a browser says it: its
 * Sec-Fetch-Site (cross-site, same-site: another port or name), or an Origin whose host is not the Host it was sent to.
 * Null for a request no browser page sent (scripts, tests, the Stripe SDK, `stripe listen`: they send neither header).
 */
function foreignPage(req: IncomingMessage): string | null {
  const site = header(req, 'sec-fetch-site');
  if (site === 'cross-site' || site === 'same-site') return `Sec-Fetch-Site: ${site}`;
  const origin = header(req, 'origin');
  if (origin === undefined || origin === null) return null;
  let host: string | null;
  try {
    host = new URL(origin).host;
  } catch {
    host = null;
  }
  return host !== null && host === header(req, 'host') ? null : `Origin: ${origin.slice(0, 100)}`;
}

async function respond(deps: TransportDeps, req: IncomingMessage, body: string, requestId: string): Promise<Reply> {
  const method = req.method ?? 'GET';
  const rawUrl = req.url ?? '/';
  const queryStart = rawUrl.indexOf('?');
  const pathname = queryStart < 0 ? rawUrl : rawUrl.slice(0, queryStart);
  const query = queryStart < 0 ? '' : rawUrl.slice(queryStart + 1);

  if (pathname.startsWith('/_sandbox/')) {
    const foreign = foreignPage(req);
    if (foreign !== null && method !== 'GET') return json(403, { error: { message: `Control route ${method} ${pathname} refused: it was sent by a web page of another site (${foreign}). The control routes take no key, so a page the operator visits could otherwise reset this sandbox or make its calls fail; call them from a script, a test or the sandbox's CLI, which send neither header.` } });
    const match = deps.control.match(method, pathname);
    if (match.route === null) return json(404, { error: { message: `Unknown control route ${method} ${pathname}` } });
    const params = parseParams(req, query, body);
    const ctx = { requestId, idempotencyKey: null, origin: { id: requestId, idempotency_key: null }, apiKey: '', host: header(req, 'host') ?? null };
    const result: unknown = await match.route.prepare(params, match.path).run(ctx);
    return json(200, result ?? { ok: true });
  }

  const logged = deps.requests.begin({ method, path: pathname, idempotencyKey: method === 'POST' ? (header(req, 'idempotency-key') ?? null) : null });
  const injected = injectedFault(deps, method, pathname, requestId, logged);
  if (injected !== null && 'reply' in injected) return injected.reply;
  const seen: Seen = { route: null, expand: [] };
  const reply = await answerApi(deps, req, { method, pathname, query, body }, requestId, seen, injected?.inside ?? null).catch((error: unknown) => failure(deps.log, error, requestId));
  deps.onApiResponse?.({ method, route: seen.route, path: pathname, expand: seen.expand, status: reply.status, body: reply.body });
  if (deps.faults.drops(method, pathname, 'after')) {
    logged.fault = 'drop_after';
    return { ...reply, drop: true };
  }
  logged.status = reply.status;
  return reply;
}

/**
 * A failure or drop injected for this request (faults.ts): `reply` answers it before anything runs; `inside` is a
 * failure the endpoint itself answers, after the idempotency layer (stored under the key). Null: none.
 */
function injectedFault(deps: TransportDeps, method: string, pathname: string, requestId: string, logged: LoggedRequest): { reply: Reply } | { inside: Reply } | null {
  if (deps.faults.drops(method, pathname, 'before')) {
    logged.fault = 'drop_before';
    return { reply: { status: 0, body: '', drop: true } };
  }
  const fail = deps.faults.failure(method, pathname);
  if (fail === null) return null;
  logged.fault = fail.stored ? 'fail_stored' : 'fail';
  logged.status = fail.status;
  const error = new SandboxError(fail.status, { type: fail.type, message: fail.message, ...(fail.code === null ? {} : { code: fail.code }) });
  const headers: Record<string, string> = {};
  if (fail.retryAfterSeconds !== null) headers['Retry-After'] = String(fail.retryAfterSeconds);
  // A lock timeout is the one 429 Stripe asks to have retried; stripe-node retries a 429 only when told to.
  if (fail.status === 429 && fail.code === 'lock_timeout') headers['Stripe-Should-Retry'] = 'true';
  const reply = json(fail.status, errorBody(error, requestId), Object.keys(headers).length === 0 ? undefined : headers);
  return fail.stored ? { inside: reply } : { reply };
}

/** What the tap reports about a request: the route it reached and the expansions it asked for. */
interface Seen {
  route: string | null;
  expand: string[];
}

interface ApiRequest {
  method: string;
  pathname: string;
  query: string;
  body: string;
}

async function answerApi(deps: TransportDeps, req: IncomingMessage, { method, pathname, query, body }: ApiRequest, requestId: string, seen: Seen, inside: Reply | null): Promise<Reply> {
  const auth = authenticate(header(req, 'authorization'));
  if (auth instanceof SandboxError) return { ...json(auth.status, errorBody(auth, requestId)), headers: { 'WWW-Authenticate': 'Basic realm="Stripe"' } };

  const match = deps.api.match(method, pathname);
  if (match.route === null) {
    const message = `Unrecognized request URL (${method}: ${pathname}). Please see https://stripe.com/docs or we can help at https://support.stripe.com/.`;
    throw invalidRequest(message, {}, 404);
  }
  seen.route = match.route.path;
  const params = method === 'POST' ? parseParams(req, query, body) : parseForm(query);
  const idempotencyKey = method === 'POST' ? (header(req, 'idempotency-key') ?? null) : null;
  const identity = idempotencyKey === null ? null : { key: idempotencyKey, method, path: pathname, params: canonicalParams(params) };

  if (identity !== null) {
    if (identity.key.length > MAX_KEY_LENGTH) {
      throw invalidRequest(`Invalid Idempotency-Key: must be at most ${MAX_KEY_LENGTH} characters.`, { param: 'idempotency_key' });
    }
    const lookup = deps.idempotency.lookup(identity);
    if (lookup.kind === 'replay') {
      const stored = lookup.response;
      const headers: Record<string, string> = { 'Idempotent-Replayed': 'true', 'Original-Request': stored.requestId };
      // A retry under the key would only hear the same 5xx again, so Stripe tells the SDK not to (stripe-node retries
      // every 5xx unless told otherwise: RequestSender._shouldRetry).
      if (stored.status >= 500) headers['Stripe-Should-Retry'] = 'false';
      return { status: stored.status, body: stored.body, headers };
    }
  }

  const expandPaths = takeExpand(params);
  seen.expand = expandPaths;
  // A parameter like the others: refused before anything runs, never stored under the key.
  checkExpand(expandPaths, answerOf(method, match.route.path));
  const call = match.route.prepare(params, match.path);
  const pending = identity === null ? null : deps.idempotency.begin(identity);
  let reply: Reply;
  try {
    // Held with the key in flight, the write not yet run: an overlapping request under the key gets 409.
    const hold = deps.faults.holdMs(method, pathname) + (method === 'POST' ? deps.writeLatencyMs : 0);
    if (hold > 0) await sleep(hold);
    if (inside !== null) {
      // The endpoint began and failed: nothing ran, and the failure is what the key remembers.
      pending?.finish({ status: inside.status, body: inside.body, requestId });
      return inside;
    }
    const result: unknown = await call.run({ requestId, idempotencyKey, origin: { id: requestId, idempotency_key: idempotencyKey }, apiKey: auth.key, host: header(req, 'host') ?? null });
    reply = json(200, expand(result, expandPaths, deps.store.find, deps.virtualExpansions));
  } catch (error) {
    reply = failure(deps.log, error, requestId);
  }
  pending?.finish({ status: reply.status, body: reply.body, requestId });
  return reply;
}
