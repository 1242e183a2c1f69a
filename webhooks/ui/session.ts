// The page's sessions: what the sign-in cookie holds instead of the API token. Cookies are not kept apart by port
// (RFC 6265 §8.5) and SameSite counts every port of a host as one site, so the browser sends the cookie to every other
// server on the page's host (the sandbox the page links Stripe ids to, anything else listening there). A token there
// would call the JSON API for ever; a session opens only the page, the dashboard and the metrics, for 12 h at most,
// and ends when its person signs out. It records nothing on its own: whoever holds a copy can read the page and its
// forms' CSRF token, so a form that records something also takes the person's own token, typed in (routes.ts, signer).
//
// A session is `v1.<role>.<name>.<expires at, ms>.<nonce>.<mac>`: the caller by name and role (found again in the token
// registry on every request, so a token taken out of the configuration ends its sessions), its end, 16 random bytes,
// and an HMAC-SHA256 of the rest under the secret of this process. The secret is random, made when the page's router
// is built and kept in memory only: never written, never printed, derived from nothing a person holds. So a session
// is good only in the process that opened it, which is also the one that hears its sign-out. Several api processes
// behind one host need their load balancer to keep a browser on one process (or each asks it to sign in); a restart
// signs everyone out.
//
// The process keeps the sessions open, not the ones signed out: a session is good while its nonce is held here, and
// signing out forgets it, so a sign-out costs no memory and a copy of the cookie is refused from then on. Memory holds
// at most `perCaller` sessions of one token and `inProcess` in all: past either, sign-in is refused (it never ends or
// forgets a session to make room), until a session is signed out or reaches its end.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { ROLES, TOKEN_NAME, type Caller, type Role, type TokenRegistry } from '../api/tokens.js';

/** How long a session lasts from its sign-in, in ms: the cookie's Max-Age and the end the server holds it to. */
export const SESSION_MS = 12 * 3_600_000;

const VERSION = 'v1';
const NONCE = /^[A-Za-z0-9_-]{22}$/;
const EXPIRES = /^\d{1,15}$/;
/** Longer than any session: a longer cookie is not one, and is not hashed. */
const LONGEST_SESSION = 512;

/** The most sessions one token holds open in a process: more people than share a token, more browsers than they use. */
export const SESSIONS_PER_CALLER = 100;
/** The most sessions a process holds open, over all tokens (each kept as its nonce and its end). */
export const SESSIONS_IN_PROCESS = 20_000;

/** A sign-in's session, or why none was opened: `full` says whose sessions are at their most, `until` (ms) when the oldest of them ends. */
export type Opened = { opened: true; value: string; expiresAt: number } | { opened: false; full: 'caller' | 'process'; held: number; until: number };

export type PageSessions = {
  /** A new session of `caller` (the cookie's value and when it ends, ms), unless `caller` or the process holds as many open as it may. */
  open(caller: Caller): Opened;
  /** The caller of a cookie's value; null when it is not a session of this process, has ended or was signed out, or its token is gone. */
  callerOf(value: string): Caller | null;
  /** Signs the session out: its value is refused from now on, wherever a copy of it went. True when it was open. */
  close(value: string): boolean;
  /** The CSRF token of a caller who sends a bearer header instead of a cookie (scripts): stable for this process. */
  bearerCsrf(caller: Caller): string;
};

type Parsed = { role: Role; name: string; expiresAt: number; nonce: string };

/** A MAC as `mac` writes it: HMAC-SHA256, base64url. */
const MAC = /^[A-Za-z0-9_-]{43}$/;

/**
 * Whether `value` has a session's shape (`v1.<role>.<name>.<expires>.<nonce>.<mac>`), whichever process made it and
 * whether or not it is still open: for masking one pasted where it does not belong (a URL's path in the request log),
 * never for letting it in (callerOf checks the MAC and that it is open).
 */
export function isSessionShaped(value: string): boolean {
  if (value.length > LONGEST_SESSION) return false;
  const parts = value.split('.');
  if (parts.length < 6 || parts[0] !== VERSION) return false;
  const [role = '', expires = '', nonce = '', given = ''] = [parts[1], ...parts.slice(-3)];
  return (ROLES as readonly string[]).includes(role) && TOKEN_NAME.test(parts.slice(2, -3).join('.')) && EXPIRES.test(expires) && NONCE.test(nonce) && MAC.test(given);
}

/** `secret`: 32 random bytes or more; `nonce`: 16 random bytes, base64url; `now`: ms; `limits`: SESSIONS_PER_CALLER and SESSIONS_IN_PROCESS unless given. */
export function createPageSessions(deps: { tokens: TokenRegistry; secret: Buffer; now: () => number; nonce: () => string; limits?: { perCaller: number; inProcess: number } }): PageSessions {
  const { tokens, secret } = deps;
  const perCaller = deps.limits?.perCaller ?? SESSIONS_PER_CALLER;
  const inProcess = deps.limits?.inProcess ?? SESSIONS_IN_PROCESS;
  /**
   * The sessions open, by caller (`role:name`): nonce -> when the session ends (ms), in the order they were opened.
   * Every session lasts SESSION_MS, so that is the order they end in: pruning stops at the first not yet ended.
   */
  const open = new Map<string, Map<string, number>>();
  let held = 0;
  const mac = (text: string) => createHmac('sha256', secret).update(`interlock ui session\n${text}`).digest('base64url');
  const keyOf = (caller: { role: Role; name: string }) => `${caller.role}:${caller.name}`;

  /** The session a value is, when this process made it (its MAC holds); whether it is still open is for the caller. */
  function parse(value: string): Parsed | null {
    if (value.length > LONGEST_SESSION) return null;
    const parts = value.split('.');
    // The name may hold dots: it is everything between the role and the last three parts.
    if (parts.length < 6 || parts[0] !== VERSION) return null;
    const [role = '', expires = '', nonce = '', given = ''] = [parts[1], ...parts.slice(-3)];
    const name = parts.slice(2, -3).join('.');
    if (!(ROLES as readonly string[]).includes(role) || !TOKEN_NAME.test(name) || !EXPIRES.test(expires) || !NONCE.test(nonce)) return null;
    const wanted = Buffer.from(mac(value.slice(0, value.length - given.length - 1)));
    const presented = Buffer.from(given);
    if (presented.length !== wanted.length || !timingSafeEqual(presented, wanted)) return null;
    return { role: role as Role, name, expiresAt: Number(expires), nonce };
  }

  /**
   * Forgets the sessions that have ended, oldest first, each caller's up to its first still open: the work is the
   * sessions forgotten plus one step per caller, never a walk over every session held. (A clock set back leaves a
   * later session behind an earlier one; it is forgotten with that one, a while after its end, and refused meanwhile.)
   */
  function prune(now: number): void {
    for (const [key, nonces] of open) {
      for (const [nonce, expiresAt] of nonces) {
        if (expiresAt > now) break;
        nonces.delete(nonce);
        held -= 1;
      }
      if (nonces.size === 0) open.delete(key);
    }
  }

  /** When the first-opened of these sessions ends (ms). */
  const oldest = (nonces: Iterable<Map<string, number>>) => Math.min(...[...nonces].map((each) => each.values().next().value ?? Number.POSITIVE_INFINITY));

  return {
    open(caller) {
      const now = deps.now();
      prune(now);
      const key = keyOf(caller);
      const mine = open.get(key) ?? new Map<string, number>();
      if (mine.size >= perCaller) return { opened: false, full: 'caller', held: mine.size, until: oldest([mine]) };
      if (held >= inProcess) return { opened: false, full: 'process', held, until: oldest(open.values()) };
      const expiresAt = now + SESSION_MS;
      const nonce = deps.nonce();
      const body = `${VERSION}.${caller.role}.${caller.name}.${expiresAt}.${nonce}`;
      mine.set(nonce, expiresAt);
      open.set(key, mine);
      held += 1;
      return { opened: true, value: `${body}.${mac(body)}`, expiresAt };
    },
    callerOf(value) {
      const session = parse(value);
      if (session === null || deps.now() >= session.expiresAt || open.get(keyOf(session))?.has(session.nonce) !== true) return null;
      return tokens.callers().find((caller) => caller.name === session.name && caller.role === session.role) ?? null;
    },
    close(value) {
      const session = parse(value);
      if (session === null) return false;
      const key = keyOf(session);
      const nonces = open.get(key);
      if (nonces?.delete(session.nonce) !== true) return false;
      held -= 1;
      if (nonces.size === 0) open.delete(key);
      return true;
    },
    bearerCsrf(caller) {
      return createHmac('sha256', secret).update(`interlock ui csrf bearer\n${caller.role}\n${caller.name}`).digest('base64url');
    },
  };
}

/**
 * The CSRF token of a session: an HMAC of a fixed purpose keyed by the session's cookie value, which only its browser
 * holds (HttpOnly); never by the API token.
 */
export function csrfTokenFor(session: string): string {
  return createHmac('sha256', session).update('interlock ui csrf v1').digest('base64url');
}
