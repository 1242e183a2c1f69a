// The HTTP app: the support API (issue 11 §1-2) and, through `deps.mount`, the Stripe webhook route. A factory that
// never listens: the composition root (or supertest) gives it a server.
//
// Order of a request: request id and request log (every request, one line each, with the caller's name and role
// once known, never the token) -> public routes (probes, the OpenAPI document) -> mounted routes (the webhook: no
// token, raw body) -> a Stripe-signed request to any other path, told where the webhook route is -> another method on
// a public path, told the ones it takes (no token asked for) -> bearer token (an unknown one counted against its
// client address, with the page's sign-ins) and rate limit -> the route's role -> its body (JSON only, size-limited)
// -> its schemas -> its handler; a method a known path does not take is told the ones it does (Allow). Every failure
// on the way is an error from the registry (api/errors.ts).
import express, { type Express, type RequestHandler } from 'express';
import type { Logger } from 'pino';
import { firstByteNotUtf8, limitedErrorLog, membersNamedTwice, namesSomeMemberTwice, redactSecrets } from '../src/interlock.js';
import { allow, authenticate } from './api/auth.js';
import { requestLog, type SecretSegment } from './request-log.js';
import { TOKEN_VALUE, type TokenRegistry } from './api/tokens.js';
import { isSessionShaped } from './ui/session.js';
import { approvalsRoutes } from './api/approvals-routes.js';
import { createApprovalOptions, DEFAULT_PREMISES, type ApiContext, type AppDeps } from './api/context.js';
import { casesRoutes } from './api/cases-routes.js';
import { effectsRoutes } from './api/effects-routes.js';
import { inboxRoutes } from './api/inbox-routes.js';
import { apiError, errorHandler } from './api/errors.js';
import { buildOpenApi } from './api/openapi.js';
import { opsRoutes, storeChecks } from './api/ops-routes.js';
import { createRateLimiter } from './api/rate-limit.js';
import { route, type Method, type Route } from './api/route.js';
import { openApiDocument } from './api/schemas.js';
import { WEBHOOK_PATH } from './stripe-route.js';
import { DASHBOARD_PATH, queueDashboard } from './ops/dashboard.js';
import { createFailedSignIns, FAILED_SIGN_INS } from './ui/failed-sign-ins.js';
import { UI_PATH, uiRouter } from './ui/routes.js';

export type { AppDeps, IntakeGuard, CasesProducer, FactReader, PremiseNames, ReadinessCheck, AlertsReader, EffectsProducer, ApiLimits } from './api/context.js';
export { DEFAULT_PREMISES } from './api/context.js';
export { loadTokenRegistry, loadOrCreateLocalTokens, localToken, createTokenRegistry, parseTokenEntries, ROLES, type Role, type TokenRegistry, type Caller } from './api/tokens.js';
export { PERMISSIONS } from './api/auth.js';
export { queueCheck, storeChecks, stripeCheck, workerChecks } from './api/ops-routes.js';
export { caseView, waitForCase, type CaseView } from './api/cases-routes.js';
export { loadApiLimits } from './api/limits.js';

export type { StripeLinks, UiSection } from './ui/pages.js';
export { createMetrics, metricsApp, type Metrics } from './ops/metrics.js';
export { openOpsQueues, type OpsQueues } from './ops/queues.js';

export const METRICS_PATH = '/metrics';

export const DEFAULT_BODY_BYTES = 256 * 1024;
export const DEFAULT_RATE_PER_MINUTE = 600;
export const DEFAULT_FACT_TIMEOUT_MS = 10_000;

const JSON_TYPES = ['application/json', 'application/*+json'];
/** A Content-Type's charset parameter (quoted or not). */
const CHARSET = /;\s*charset\s*=\s*"?([^";\s]*)/i;

/** The body's text as the JSON parser read it, kept for the check that no member is named twice. */
const BODY_TEXT = Symbol('body text');
type WithBodyText = { [BODY_TEXT]?: string };

/** Refuses bytes that are not UTF-8 (a lenient decoder writes U+FFFD for them); drops a leading BOM, as the parser does. */
const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** Only JSON bodies: a body of another type is refused before it is read; an empty body reads as none. */
function jsonBody(limitBytes: number): RequestHandler[] {
  const parse = express.json({
    limit: limitBytes,
    strict: true,
    type: JSON_TYPES,
    verify: (req, _res, buffer, encoding) => {
      // The charset the parser decodes with, read its own way: onlyJson's reading of the header can be fooled (a
      // quoted parameter that holds ";charset=utf-8"), and the duplicate check below must read the text that is parsed.
      if (encoding !== 'utf-8' && encoding !== 'utf8') throw Object.assign(new Error(`charset ${encoding}`), { type: 'charset.unsupported' });
      // Decoded strictly: the parser would read a byte that is not UTF-8 (a Latin-1 "é") as U+FFFD and the text
      // recorded would not be the one sent, and two request_ids differing only in such bytes would read as one.
      let text: string;
      try {
        text = UTF8.decode(buffer);
      } catch {
        const offset = firstByteNotUtf8(buffer);
        const byte = buffer[offset];
        const where = byte === undefined ? 'it ends inside a character' : `byte ${offset} (0x${byte.toString(16).toUpperCase().padStart(2, '0')}) is not part of a UTF-8 character`;
        throw apiError('invalid_request', `The body is not UTF-8 (${where}), so nothing was recorded. JSON is sent in UTF-8 (RFC 8259 §8.1): encode the body as UTF-8 (a Latin-1 "é", E9, is C3 A9 in UTF-8), or write each character outside ASCII as a \\u escape (\\u00e9).`);
      }
      (req as WithBodyText)[BODY_TEXT] = text;
    },
  });
  // `{"amount": 100, "amount": 4900}`: JSON.parse keeps the last value and other readers the first, so a tool that
  // checked the body before sending it may have checked another amount than the one that would be recorded.
  const eachMemberOnce: RequestHandler = (req, _res, next) => {
    const text = (req as WithBodyText)[BODY_TEXT];
    if (text === undefined || !namesSomeMemberTwice(text, req.body)) {
      next();
      return;
    }
    const twice = membersNamedTwice(text);
    const fields = twice.map(({ name, path }) => ({ path: path === '(root)' ? name : `${path}.${name}`, message: 'is given twice' }));
    next(apiError('invalid_request', `The body names ${twice.map(({ name, path }) => `"${name.slice(0, 60)}"${path === '(root)' ? '' : ` (in ${path})`}`).join(', ')} twice; JSON readers differ on which value counts, so nothing was recorded. Send each member once.`, { fields }));
  };
  const onlyJson: RequestHandler = (req, _res, next) => {
    // null: no body at all; false: a body of another type. An empty body (Content-Length: 0) is no body.
    if (req.headers['content-length'] !== '0' && req.is(JSON_TYPES) === false) {
      next(apiError('unsupported_media_type', `This route reads JSON bodies; send Content-Type: application/json (not ${redactSecrets(String(req.headers['content-type'] ?? 'none')).slice(0, 100)}).`));
      return;
    }
    // JSON between systems is UTF-8 (RFC 8259 §8.1). The parser would also decode UTF-16 or UTF-32, but the check that
    // no member is named twice reads the body's bytes as UTF-8, so it would judge another text than the one recorded.
    const charset = CHARSET.exec(String(req.headers['content-type'] ?? ''))?.[1]?.toLowerCase();
    if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
      next(apiError('unsupported_media_type', `This route reads JSON in UTF-8; send Content-Type: application/json, with no charset or charset=utf-8 (not charset=${redactSecrets(charset).slice(0, 40)}).`));
      return;
    }
    next();
  };
  return [onlyJson, parse, eachMemberOnce];
}

/**
 * The answer to a method a path does not take, with the methods it does take in Allow (RFC 9110 §15.5.6), rather
 * than "No route": the path exists. A path that only reads answers 405 read_only, as the queue dashboard does. A path
 * that takes a write has no code in the registry for a method it does not take, so it answers 404 not_found, naming
 * the methods it takes.
 */
function wrongMethod(methods: readonly Method[]): RequestHandler {
  const allow = methods.flatMap((method) => (method === 'get' ? ['GET', 'HEAD'] : [method.toUpperCase()])).join(', ');
  const readOnly = methods.every((method) => method === 'get');
  return (req, res, next) => {
    res.setHeader('Allow', allow);
    const path = redactSecrets(req.path).slice(0, 200);
    const listed = 'GET /v1/openapi.json lists every route and its methods.';
    next(readOnly ? apiError('read_only', `${path} is read-only: it takes ${allow}, not ${req.method}. ${listed}`) : apiError('method_not_allowed', `${path} takes ${allow}, not ${req.method}. ${listed}`));
  };
}

/**
 * Headers on every answer: never sniffed as another type than it says (an error quoting the path, a list of money),
 * and an answer of the support API (amounts, payments, names) never kept by a cache, as the page's are not.
 */
const answerHeaders: RequestHandler = (req, res, next) => {
  res.setHeader('X-Content-Type-Options', 'nosniff');
  if (req.path.startsWith('/v1/')) res.setHeader('Cache-Control', 'no-store');
  next();
};

/** A Host header as a URL may hold it (a name or IPv4 address, or a bracketed IPv6 one, and a port); anything else is not echoed. */
const SHOWN_HOST = /^(?:[A-Za-z0-9.-]{1,253}|\[[0-9A-Fa-f:.]{2,45}\])(?::\d{1,5})?$/;

/**
 * A Stripe event sent to another path than the webhook route (`stripe listen --forward-to …/webhook`, or a Dashboard
 * endpoint's URL), answered 404 naming the route, before any token is asked for: the 401 "needs a bearer token" it
 * got before sent users adding a token to `stripe listen`, and the route takes none. Only Stripe and `stripe listen`
 * send a Stripe-Signature (support tooling never does), so a request without one goes on as before, to the token
 * check: an unauthenticated caller is told no route. `webhookHere`: whether this process mounts the route
 * (AppDeps.mount; a process run without the webhooks role does not).
 * Logged as the webhook route logs its refusals: a Stripe-Signature is no secret (anyone can add one, with any value),
 * so the request's own line is at debug and this warn, which says the setting to fix, is written at most once every
 * 10 s with a count of those not logged; a line a request would let anyone write the log.
 */
function stripeEventElsewhere(webhookHere: boolean, logger: Logger): RequestHandler {
  const warn = limitedErrorLog(
    logger,
    webhookHere
      ? `a request carrying a Stripe-Signature came to a path other than POST ${WEBHOOK_PATH} and was answered 404: if it is Stripe's, point \`stripe listen --forward-to\` or the Dashboard endpoint's URL at ${WEBHOOK_PATH}`
      : `a request carrying a Stripe-Signature came to a process that takes no Stripe events (no webhooks role) and was answered 404: send Stripe's events to POST ${WEBHOOK_PATH} of a process that runs the webhooks role`,
    { level: 'warn' },
  );
  return (req, res, next) => {
    if (req.headers['stripe-signature'] === undefined) {
      next();
      return;
    }
    const asked = `${req.method} ${redactSecrets(req.path).slice(0, 200)}`;
    res.locals['refusal'] = 'stripe_event_elsewhere';
    warn(undefined, { asked });
    const host = req.headers.host !== undefined && SHOWN_HOST.test(req.headers.host) ? req.headers.host : '127.0.0.1:<port>';
    next(
      webhookHere
        ? apiError('not_found', `No route ${asked}: this request carries a Stripe-Signature, and Stripe's events are taken at POST ${WEBHOOK_PATH} only. Forward them there: \`stripe listen --forward-to ${req.protocol}://${host}${WEBHOOK_PATH}\` (a Dashboard endpoint: its URL's path must be ${WEBHOOK_PATH}). No token is needed; the signature is the check.`)
        : apiError('not_found', `No route ${asked}: this request carries a Stripe-Signature, but this process takes no Stripe events (it runs without the webhooks role). Send them to POST ${WEBHOOK_PATH} of a process that runs it (\`serve\` runs every role unless --roles leaves some out).`),
    );
  };
}

/**
 * Warns once (a process makes one app), at the first request carrying X-Forwarded-For, that no proxy is trusted to name the client
 * (INTERLOCK_TRUST_PROXY unset): if a proxy sent it, every client has the proxy's address, so they share one limit of
 * unknown tokens (ui/failed-sign-ins.ts). After the warning, a request costs one comparison.
 */
function untrustedForwardWarning(logger: Logger): RequestHandler {
  let warned = false;
  return (req, _res, next) => {
    if (!warned && req.headers['x-forwarded-for'] !== undefined) {
      warned = true;
      logger.warn(
        { address: req.socket.remoteAddress },
        `a request carries X-Forwarded-For but INTERLOCK_TRUST_PROXY is not set: if a proxy sent it, every client behind it counts as the proxy's address and shares one limit of unknown tokens (${FAILED_SIGN_INS.burst}, then ${FAILED_SIGN_INS.perMinute} a minute, for all of them); name the proxy in INTERLOCK_TRUST_PROXY (see the README), or ignore this if no proxy is in front`,
      );
    }
    next();
  };
}

/** The methods each path of `routes` takes, in Express syntax, and whether any of them needs a token. */
function methodsByPath(routes: readonly Route[]): Map<string, { methods: Method[]; signedIn: boolean }> {
  const paths = new Map<string, { methods: Method[]; signedIn: boolean }>();
  for (const target of routes) {
    const known = paths.get(target.path) ?? { methods: [], signedIn: false };
    paths.set(target.path, { methods: [...known.methods, target.method], signedIn: known.signedIn || target.permission !== null });
  }
  return paths;
}

/** The routes of the support API, for the app and for its OpenAPI document. */
export function apiRoutes(context: ApiContext): Route[] {
  return [...effectsRoutes(context), ...casesRoutes(context), ...approvalsRoutes(context), ...inboxRoutes(context), ...opsRoutes(context)];
}

/**
 * The app of a process that takes Stripe's events and serves no support API (`serve --roles webhooks`, no api role):
 * the webhook route (`mount`, when this process verifies events), /healthz answering `health()`, and for any other
 * request the service's own 404 naming the route, in its error shape, each request logged as createApp logs them. A
 * wrong `--forward-to` path hears where the route is, as it does from createApp, not Express's bare HTML page.
 */
export function createWebhookOnlyApp(deps: { logger: Logger; mount: ((app: Express) => void) | undefined; health: () => unknown }): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(requestLog(deps.logger));
  app.use(answerHeaders);
  deps.mount?.(app);
  app.get('/healthz', (_req, res) => {
    res.json(deps.health());
  });
  app.use(stripeEventElsewhere(deps.mount !== undefined, deps.logger));
  const takes = deps.mount === undefined ? 'this process serves no support API and takes no Stripe events (its roles have no api or webhooks)' : `this process takes Stripe's events only, at POST ${WEBHOOK_PATH} (it runs without the api role, which serves the support API)`;
  app.use((req, res, next) => {
    // Logged at debug (request-log.ts): this listener faces Stripe, so anyone can send it junk, and a line at warn for
    // each would let them write the log. A Stripe-signed request to a wrong path (above) is a setting to fix: it is
    // warned of, at most once every 10 s.
    res.locals['refusal'] = 'not_found';
    next(apiError('not_found', `No route ${req.method} ${redactSecrets(req.path).slice(0, 200)}: ${takes}.`));
  });
  app.use(errorHandler(deps.logger));
  return app;
}

/**
 * A path segment that is one of `tokens` (found as the registry authenticates, in constant time; only a segment of a
 * token's alphabet and length is hashed) or has a page session's shape: the request log masks it.
 */
function secretOf(tokens: TokenRegistry): SecretSegment {
  return (segment) => (TOKEN_VALUE.test(segment) && tokens.authenticate(segment) !== null) || isSessionShaped(segment);
}

export function createApp(deps: AppDeps): Express {
  const { stores, logger } = deps;
  const limits = deps.limits ?? {};
  const context: ApiContext = {
    stores,
    effects: deps.effects,
    readFacts: deps.readFacts,
    decisions: deps.decisions ?? null,
    premises: deps.premises ?? DEFAULT_PREMISES,
    alerts: deps.alerts ?? (async () => ({ data: [], next: null })),
    recover: deps.recover ?? null,
    readiness: deps.readiness ?? storeChecks(stores),
    logger,
    factTimeoutMs: limits.factTimeoutMs ?? DEFAULT_FACT_TIMEOUT_MS,
    approvalOptions: createApprovalOptions(stores),
    intake: deps.intake ?? null,
  };
  const routes = apiRoutes(context);
  const openapi = route({
    method: 'get',
    path: '/v1/openapi.json',
    operationId: 'openapi',
    summary: 'This document',
    permission: null,
    responses: { 200: { description: 'The OpenAPI 3.1 document of this API.', schema: openApiDocument } },
    async handle() {
      return { status: 200, body: document, verbatim: true };
    },
  });
  const document = buildOpenApi([...routes, openapi]);
  const ratePerMinute = limits.ratePerMinute === undefined ? DEFAULT_RATE_PER_MINUTE : limits.ratePerMinute;
  const limiter = ratePerMinute === null || ratePerMinute <= 0 ? null : createRateLimiter({ perMinute: ratePerMinute, burst: limits.rateBurst ?? ratePerMinute });
  // Unknown tokens per client address, one counter for every door that checks a token (the page's sign-in and forms, a
  // bearer header anywhere), so guesses sent to any of them count together; off with the rate limit.
  const failures = limiter === null ? null : createFailedSignIns(FAILED_SIGN_INS);
  const body = jsonBody(limits.bodyBytes ?? DEFAULT_BODY_BYTES);

  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  // Only the proxies the operator names may say a request came over HTTPS (then the page's cookie is Secure).
  if (stores.config.trustProxy !== null) app.set('trust proxy', stores.config.trustProxy);
  app.use(requestLog(logger, secretOf(deps.tokens)));
  app.use(answerHeaders);
  if (stores.config.trustProxy === null && failures !== null) app.use(untrustedForwardWarning(logger));
  const register = (target: Route, ...before: RequestHandler[]) => {
    app[target.method](target.path, ...before, (req, res) => target.run(req, res));
  };
  for (const target of [...routes, openapi]) if (target.permission === null) register(target);
  deps.mount?.(app);
  // After the mounted webhook route, which answers its own path; before a public path's wrong method and the token.
  app.use(stripeEventElsewhere(deps.mount !== undefined, logger));
  // Another method on a public path is told which it takes before any token is asked for: it needs none.
  const paths = methodsByPath([...routes, openapi]);
  for (const [path, { methods, signedIn }] of paths) if (!signedIn) app.all(path, wrongMethod(methods));
  // The page signs its callers in itself (a signed-out browser is shown the form, not a 401).
  app.use(uiRouter({ context, tokens: deps.tokens, limiter, failures, links: deps.ui?.links ?? { kind: 'dashboard', mode: 'test' }, sections: deps.ui?.sections ?? [] }));
  // The dashboard and the metrics take the page's sign-in cookie as well as the bearer header.
  app.use(authenticate(deps.tokens, limiter, { cookiePaths: [DASHBOARD_PATH, METRICS_PATH, UI_PATH], failures }));
  const { metrics, queues } = deps;
  if (metrics) {
    app.get(METRICS_PATH, allow('readMetrics'), (_req, res, next) => {
      metrics.render().then(({ contentType, text }) => {
        res.status(200).type(contentType).setHeader('Cache-Control', 'no-store');
        res.send(text);
      }, next);
    });
    app.all(METRICS_PATH, allow('readMetrics'), wrongMethod(['get']));
  }
  if (queues) {
    app.use(DASHBOARD_PATH, allow('readQueues'));
    app.use(queueDashboard(queues));
  }
  // A request that records something is refused while Redis could lose it (AppDeps.intake): it would be answered as
  // stored. Reads go on, and so do the brakes: revoking an approval, and a cap that lowers the one in force (the route
  // asks the guard itself, and refuses a raise). A brake only takes authority away, and one Redis lost would leave
  // things no worse than one refused.
  const stored: RequestHandler = (_req, _res, next) => {
    try {
      context.intake?.assertDurable();
    } catch (error) {
      next(error);
      return;
    }
    next();
  };
  for (const target of routes) {
    if (target.permission === null) continue;
    const brake = target.operationId === 'revokeApproval' || target.operationId === 'setCap';
    register(target, allow(target.permission), ...(target.method === 'get' || brake ? [] : [stored]), ...(target.body ? body : []));
  }
  for (const [path, { methods, signedIn }] of paths) if (signedIn) app.all(path, wrongMethod(methods));
  // The OpenAPI document lists the support API only: the webhook route is named beside it, where this process has one.
  const listed = deps.mount === undefined ? 'GET /v1/openapi.json lists every route.' : `GET /v1/openapi.json lists every route of the support API; Stripe's events go to POST ${WEBHOOK_PATH}.`;
  app.use((req, _res, next) => {
    next(apiError('not_found', `No route ${req.method} ${redactSecrets(req.path).slice(0, 200)}. ${listed}`));
  });
  app.use(errorHandler(logger));
  return app;
}
