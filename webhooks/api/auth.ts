// Who may call, and how often: the bearer token names a caller (tokens.ts), its role decides which routes it may
// use (PERMISSIONS), and each caller has its own rate limit. The caller is kept per request for the handlers and
// the request log, which carries its name and role, never the token.
import type { Request, RequestHandler } from 'express';
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

/** The cookie the page's sign-in sets (HttpOnly, SameSite=Strict): it holds the token, so it is checked like one. */
export const SESSION_COOKIE = 'interlock_session';

/** The value of one cookie of a request, or undefined. */
export function cookieOf(req: Request, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === name) {
      try {
        return decodeURIComponent(part.slice(at + 1).trim());
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}

/**
 * `cookiePaths`: the paths (prefixes) where a browser may present the token as the sign-in cookie instead of the
 * header: the page, the dashboard and the metrics. The JSON API takes the header only, so no cookie a browser
 * holds can ever call it on its own.
 */
export function authenticate(tokens: TokenRegistry, limiter: RateLimiter | null, options: { cookiePaths?: readonly string[] } = {}): RequestHandler {
  const cookiePaths = options.cookiePaths ?? [];
  return (req, res, next) => {
    const header = req.headers.authorization;
    const cookie = header === undefined && cookiePaths.some((path) => req.path === path || req.path.startsWith(`${path}/`)) ? cookieOf(req, SESSION_COOKIE) : undefined;
    if (header === undefined && cookie === undefined) {
      next(apiError('unauthenticated', 'This route needs a bearer token: send `Authorization: Bearer <token>`.'));
      return;
    }
    // A header in another form (a bare token, Basic credentials, `Bearer` with nothing after it) is the wrong form,
    // not an unknown token: the caller may hold a right token and send it the wrong way.
    const presented = header === undefined ? cookie : BEARER.exec(header)?.[1];
    if (presented === undefined) {
      next(apiError('unauthenticated', 'The Authorization header is not of the form `Bearer <token>` (a bare token or Basic credentials are not taken): send `Authorization: Bearer <token>`.'));
      return;
    }
    const caller = presented.length > LONGEST_TOKEN ? null : tokens.authenticate(presented);
    if (!caller) {
      next(apiError('unauthenticated', 'The bearer token is not one this service knows. Check INTERLOCK_API_TOKENS or the tokens printed at start.'));
      return;
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
