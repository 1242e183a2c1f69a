// Who may call, and how often: the bearer token names a caller (tokens.ts), its role decides which routes it may
// use (PERMISSIONS), and each caller has its own rate limit. A token this service does not know counts against its
// client address, as a failed sign-in of the page does (the same counter, ui/failed-sign-ins.ts), and while that
// address has failed too often no token it sends is checked but one that authenticated from it before. The caller is
// kept per request for the handlers and the request log, which carries its name and role, never the token.
import type { Request, RequestHandler } from 'express';
import { senderOf, type FailedSignIns } from '../ui/failed-sign-ins.js';
import { apiError } from './errors.js';
import type { RateLimiter } from './rate-limit.js';
import type { Caller, Role, TokenRegistry } from './tokens.js';

/** What each role may do (issue 11 §2). Operators read everything and run recovery; nobody else does that. */
export const PERMISSIONS = {
  propose: ['support'],
  readEffects: ['support', 'auditor', 'operator'],
  readReceipts: ['auditor', 'operator'],
  readKeys: ['auditor', 'operator'],
  readAlerts: ['auditor', 'operator'],
  manageApprovals: ['approver'],
  readApprovals: ['approver', 'operator'],
  recover: ['operator'],
  readMetrics: ['auditor', 'operator'],
  readQueues: ['operator'],
  readInbox: ['approver', 'auditor', 'operator'],
  actOnInbox: ['approver'],
} as const satisfies Record<string, readonly Role[]>;

export type Permission = keyof typeof PERMISSIONS;

const callers = new WeakMap<Request, Caller>();

/** The authenticated caller of a request (only on routes behind `authenticate`). */
export function callerOf(req: Request): Caller {
  const caller = callers.get(req);
  if (!caller) throw new Error('callerOf on a route that does not authenticate');
  return caller;
}

export function maybeCallerOf(req: Request): Caller | undefined {
  return callers.get(req);
}

/** Notes the caller of a request authenticated elsewhere (the page signs its callers in itself), for the request log. */
export function noteCaller(req: Request, caller: Caller): void {
  callers.set(req, caller);
}

const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i;
/** Far longer than any token tokens.ts takes: a longer one is unknown without being hashed. */
const LONGEST_TOKEN = 1024;

/**
 * The cookie the page's sign-in sets (HttpOnly, SameSite=Strict). It holds a session of the page (webhooks/ui/session.ts),
 * never a token: the browser sends it to every port of the host, so anything else listening there gets it too.
 */
export const SESSION_COOKIE = 'interlock_session';

/**
 * Every value a request's Cookie header holds under `name`, in the order the browser sent them; a value that does not
 * decode is left out. A browser sends one value per cookie it holds for the path (RFC 6265 §5.4, longer paths first),
 * and another server on the host may have set one of the same name for a longer path (`Path=/ui/sign-out`), so the
 * first is not always the page's own: whoever reads a session here tries each.
 */
export function cookieValues(req: Request, name: string): string[] {
  const values: string[] = [];
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at <= 0 || part.slice(0, at).trim() !== name) continue;
    try {
      values.push(decodeURIComponent(part.slice(at + 1).trim()));
    } catch {
      // Not percent-encoding this service wrote: no session of it.
    }
  }
  return values;
}

const sessions = new WeakMap<Request, Caller | readonly Caller[]>();

const isCallerList = (noted: Caller | readonly Caller[] | undefined): noted is readonly Caller[] => Array.isArray(noted);

/**
 * Notes the caller of a request's page session, checked by the page's router (which holds the sessions' secret), for
 * the routes `authenticate` lets a session call (its `cookiePaths`); several callers when the request held open
 * sessions of more than one (the router's `mixed`), which those routes refuse.
 */
export function noteSession(req: Request, caller: Caller | readonly Caller[]): void {
  sessions.set(req, caller);
}

/**
 * `cookiePaths`: the paths (prefixes) where a browser may call with the page's session (the sign-in cookie, as the
 * page's router noted it: noteSession) instead of the header: the page, the dashboard and the metrics. The JSON API
 * takes the header only, so no cookie a browser holds can ever call it, and the cookie is never taken as a token.
 * `failures`: the counter of unknown tokens the page's sign-in spends too (null: none counted, as with the rate limit
 * turned off). A bearer token from an address that sent too many unknown ones is answered 429 `rate_limited` without
 * being checked, the right one too, as the sign-in form answers, unless it authenticated from that address before
 * (in a request the caller's rate limit let through).
 */
export function authenticate(tokens: TokenRegistry, limiter: RateLimiter | null, options: { cookiePaths?: readonly string[]; failures?: FailedSignIns | null } = {}): RequestHandler {
  const cookiePaths = options.cookiePaths ?? [];
  const failures = options.failures ?? null;
  return (req, res, next) => {
    const header = req.headers.authorization;
    let caller: Caller;
    /** The bearer token that found the caller, known at its address once the caller's rate limit lets the request on. */
    let presentedFrom: { failures: FailedSignIns; address: string; token: string } | null = null;
    if (header === undefined) {
      const onCookiePath = cookiePaths.some((path) => req.path === path || req.path.startsWith(`${path}/`));
      const session = onCookiePath ? sessions.get(req) : undefined;
      if (isCallerList(session)) {
        const names = session.map((each) => `${each.name} (${each.role})`).join(', ');
        next(apiError('unauthenticated', `The request carries the page sessions of several tokens (${names}); another server on this host may have set one of them, so none is taken. Sign out at /ui (it ends them all) and sign in again, or send \`Authorization: Bearer <token>\`.`));
        return;
      }
      if (session === undefined) {
        const ended = onCookiePath && cookieValues(req, SESSION_COOKIE).length > 0;
        next(apiError('unauthenticated', ended ? 'The page session in the cookie is not one this process holds open (signed out, past its 12 hours, its token removed from the configuration, or opened by another process or before a restart): sign in again at /ui, or send `Authorization: Bearer <token>`.' : 'This route needs a bearer token: send `Authorization: Bearer <token>`.'));
        return;
      }
      caller = session;
    } else {
      // A header in another form (a bare token, Basic credentials, `Bearer` with nothing after it) is the wrong form,
      // not an unknown token: the caller may hold a right token and send it the wrong way.
      const presented = BEARER.exec(header)?.[1];
      if (presented === undefined) {
        next(apiError('unauthenticated', 'The Authorization header is not of the form `Bearer <token>` (a bare token or Basic credentials are not taken): send `Authorization: Bearer <token>`.'));
        return;
      }
      // Checked only while the sender may still try one, or when it authenticated from this address before: a token
      // checked past the limit would tell a right guess from a wrong one at any rate.
      const sender = failures === null ? null : { failures, address: senderOf(req).address };
      const wait = sender === null ? 0 : sender.failures.waitSeconds(sender.address, presented);
      if (wait > 0) {
        res.setHeader('Retry-After', String(wait));
        next(apiError('rate_limited', `Too many tokens this service does not know came from this address (the page's sign-ins count with them), so this request's token, not one that authenticated from this address before, was not checked. Retry after ${wait} s, with a token from INTERLOCK_API_TOKENS or the ones printed at start.`));
        return;
      }
      const found = presented.length > LONGEST_TOKEN ? null : tokens.authenticate(presented);
      if (!found) {
        sender?.failures.failed(sender.address, presented);
        next(apiError('unauthenticated', 'The bearer token is not one this service knows. Check INTERLOCK_API_TOKENS or the tokens printed at start.'));
        return;
      }
      if (sender !== null) presentedFrom = { ...sender, token: presented };
      caller = found;
    }
    callers.set(req, caller);
    if (limiter) {
      const decision = limiter.take(`${caller.name}:${caller.role}`);
      if (!decision.allowed) {
        res.setHeader('Retry-After', String(decision.retryAfterSeconds));
        next(apiError('rate_limited', `Token ${caller.name} sent more requests than its rate limit allows; retry after ${decision.retryAfterSeconds} s.`));
        return;
      }
    }
    // Only now: a request its rate limit refused is no use of the token, and would keep it known for nothing.
    presentedFrom?.failures.succeeded(presentedFrom.address, presentedFrom.token);
    next();
  };
}

export function allow(permission: Permission): RequestHandler {
  const roles: readonly Role[] = PERMISSIONS[permission];
  return (req, _res, next) => {
    const caller = callerOf(req);
    if (roles.includes(caller.role)) {
      next();
      return;
    }
    next(apiError('forbidden', `Token ${caller.name} has the ${caller.role} role; this route needs ${roles.length === 1 ? 'the' : 'one of the'} ${roles.join(', ')} role${roles.length === 1 ? '' : 's'}.`));
  };
}
