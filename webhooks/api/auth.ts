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

const BEARER = /^Bearer[ \t]+(\S{1,1024})[ \t]*$/i;

export function authenticate(tokens: TokenRegistry, limiter: RateLimiter | null): RequestHandler {
  return (req, res, next) => {
    const header = req.headers.authorization;
    if (header === undefined) {
      next(apiError('unauthenticated', 'This route needs a bearer token: send `Authorization: Bearer <token>`.'));
      return;
    }
    const match = BEARER.exec(header);
    const caller = match?.[1] === undefined ? null : tokens.authenticate(match[1]);
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
