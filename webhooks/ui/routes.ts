// The page's routes under /ui (issue 13 §3), on the support API's app, with its tokens, roles and read functions
// (the listing, the effect view, the receipt, the alerts): the page shows nothing the API would not answer the same
// caller.
//
// Signing in: the token is posted once and checked, and the HttpOnly, SameSite=Strict cookie (scripts cannot read it,
// and no other site's page can make the browser send it) holds a session of this process, never the token
// (session.ts: the browser sends the cookie to every port of the host). The session names its caller, checked again
// in the token registry on every request, so removing a token from the configuration signs its sessions out; it ends
// after 12 h on the server, and signing out ends it. A form that changes state carries a CSRF token derived from the
// session (HMAC), and the sign-in form is taken only from this origin (Sec-Fetch-Site / Origin).
//
// The cookie alone never records anything. Whoever holds a copy of it (another server on the host is sent it) can
// fetch the page and read its CSRF token, so a form that records something (the inbox's actions) also takes the
// person's own API token, typed in: it must be a configured token of the session's own name and role (signer), and the
// action is recorded as that caller. A wrong one counts toward the failed sign-ins of its address, so the forms are no
// easier a door to guess tokens through than the sign-in form. Signing out needs no token: it only ends
// sessions.
//
// The request may hold several cookies of the session's name: another server on the host can set one for a longer
// path (`Path=/ui/sign-out`), which the browser sends first. The page takes the first that is a session open here,
// and signing out ends every session the request holds once the form's CSRF token is one of theirs. Sessions of two
// callers in one request (that server signed in with a token of its own and planted its session) leave the person
// unknown: the page acts as neither and asks to sign out, which ends both; signing in ends the sessions the request
// held before, so the new one is the only one open.
//
// Signing in and out is held to the API's rate limit of the caller (a sign-in once its token is known), and sign-ins
// with an unknown token to a limit per client address (failed-sign-ins.ts), checked before the token is, except a
// token that authenticated from that address before: a page of another site rebound to this listener's address (DNS
// rebinding) signs in from the operator's browser, so from the operator's address, and may empty its bucket, but the
// operator's token, known there, is still taken. The limit is the API's too (the app passes one counter to both):
// unknown tokens sent to either count together, and a bearer header sent to a page is a token presented like any other.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import express, { type Request, type Response, type Router } from 'express';
import { entrySignatures, errorMessage, InterlockError, redactSecrets, verify, type Alert } from '../../src/interlock.js';
import { cookieValues, noteCaller, noteSession, PERMISSIONS, SESSION_COOKIE, type Permission } from '../api/auth.js';
import type { ApiContext } from '../api/context.js';
import { detailOf, effectChain, summaryOf } from '../api/effect-view.js';
import { asApiError, retryAfterSeconds } from '../api/errors.js';
import { createEffectListing } from '../api/listing.js';
import type { RateLimiter } from '../api/rate-limit.js';
import { EFFECT_OUTCOMES, EFFECT_STATES, listQuery } from '../api/schemas.js';
import type { Caller, TokenRegistry } from '../api/tokens.js';
import { toText, type Html } from './html.js';
import { addInboxPages, INBOX_SECTION } from './inbox-pages.js';
import { ALERTS_SHOWN, BAD_CURSOR, effectPage, effectsPage, messagePage, mixedSessionsPage, signInPage, STYLESHEET, type ListFilters, type StripeLinks, type UiSection, type Viewer } from './pages.js';
import { createFailedSignIns, FAILED_SIGN_INS, senderOf, type FailedSignIns } from './failed-sign-ins.js';
import { createPageSessions, csrfTokenFor, SESSION_MS } from './session.js';

export { csrfTokenFor } from './session.js';

export type UiDeps = {
  context: ApiContext;
  tokens: TokenRegistry;
  limiter: RateLimiter | null;
  links: StripeLinks;
  /** Sections other parts of the service add to the page's navigation (the escalation inbox). */
  sections?: readonly UiSection[];
  /** Effects per page. */
  pageSize?: number;
  /**
   * The counter of unknown tokens, shared with the API's authentication (app.ts) so that tokens guessed at either
   * count together; null for none. Unset: one of the page's own, when the rate limit is on.
   */
  failures?: FailedSignIns | null;
};

export const UI_PATH = '/ui';
/** A page's path as a sign-out may be posted under it: /ui and the paths below it, of plain path characters. */
const PAGE_PATH = /^\/ui(?:\/[A-Za-z0-9._~%-]+)*$/;
/** Where sign-out is taken: /ui/sign-out, and under any page's path (mixedPage). */
const SIGN_OUT_PATHS = /^\/ui(?:\/[A-Za-z0-9._~%-]+)*\/sign-out$/;
const EFFECT_ID = /^[0-9a-f]{64}$/;
/** Any path under the page's: what no route above answered is no page (answered with one, not the API's JSON). */
const UNDER_UI = /^\/ui(?:\/.*)?$/;
/** An inbox action's own URL (POST only): a GET, a bookmarked or reloaded form post, is sent to its item. */
const ACTION_URL = /^(\/ui\/inbox\/[^/]+)\/(?:dismiss|resolve|reapprove)\/?$/;
const EFFECTS_SECTION: UiSection = { path: UI_PATH, label: 'Effects' };

function sameText(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

const may = (caller: Caller, permission: Permission) => (PERMISSIONS[permission] as readonly string[]).includes(caller.role);

function send(res: Response, status: number, page: Html): void {
  res.status(status).type('html').setHeader('Cache-Control', 'no-store');
  // No script runs on these pages, and none may: the journal holds text written by agents.
  res.setHeader('Content-Security-Policy', "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'");
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Referrer-Policy', 'same-origin');
  res.send(toText(page));
}

/** A browser's form post from another site, or one that says nothing about where it came from (then Origin decides). */
function crossSite(req: Request): boolean {
  const site = req.headers['sec-fetch-site'];
  if (typeof site === 'string') return site !== 'same-origin' && site !== 'none';
  const origin = req.headers.origin;
  if (typeof origin !== 'string' || origin === 'null') return origin === 'null';
  try {
    return new URL(origin).host !== req.headers.host;
  } catch {
    return true;
  }
}

/** A local path to go back to after signing in: never another site (`//evil`, `/\evil`). */
function localPath(value: unknown): string {
  return typeof value === 'string' && /^\/ui(?:[/?][^\\\s]*)?$/.test(value) && !value.startsWith('//') ? value : UI_PATH;
}

/** A strict decoder: a byte that is not UTF-8 throws instead of reading as U+FFFD. */
const UTF8 = new TextDecoder('utf-8', { fatal: true });
/** The `type` of the parser's error for a form whose bytes are not UTF-8 (its verify hook's). */
const NOT_UTF8 = 'form.not.utf8';

/**
 * A request the page could not read before any handler ran, in the page's words: the status the API answers it with
 * (asApiError), except a form with more fields than the page takes, which is too large (413) as its parser says.
 * Null for the service's own faults (500).
 */
function unreadable(error: unknown): { status: number; title: string; message: string } | null {
  const type = (error as { type?: unknown } | null)?.type;
  if (type === 'entity.too.large') return { status: 413, title: 'The form is too large', message: 'The form is larger than this page takes (64 KB), so it was not read. Shorten the note and send it again.' };
  if (type === 'parameters.too.many') return { status: 413, title: 'The form is too large', message: 'The form has more fields than this page’s forms send, so it was not read. Send the form from the page itself.' };
  if (type === NOT_UTF8) return { status: 400, title: 'The form could not be read', message: 'The form is not UTF-8 (a byte, or a %-escape such as %E9, that is no part of a UTF-8 character, or a % that starts no escape), so it was not read. Send it from the page itself (a browser sends UTF-8); a script encodes each field as UTF-8, then %-escapes it (é is %C3%A9, % is %25).' };
  if (type === 'charset.unsupported' || type === 'encoding.unsupported') {
    return { status: 415, title: 'The form could not be read', message: `The form was sent in a ${type === 'charset.unsupported' ? 'character set' : 'content encoding'} this page does not read, so it was not read. Send it from the page itself (a browser sends UTF-8).` };
  }
  const failure = asApiError(error);
  if (failure.status >= 500) return null;
  if (error instanceof URIError) return { status: 400, title: 'No such page', message: 'This is not a valid address: its %-escapes do not decode as text (each % takes two hexadecimal digits, together a UTF-8 character), so it names no page. Use the links at the top of the page.' };
  return { status: failure.status, title: 'The request could not be read', message: 'The request could not be read (its body was cut short, or does not decode as it says), so it was not answered.' };
}

export function uiRouter(deps: UiDeps): Router {
  const { context, tokens } = deps;
  const { stores } = context;
  const list = createEffectListing(stores);
  const pageSize = deps.pageSize ?? 25;
  const extraSections = (deps.sections ?? []).filter((section) => section.path !== INBOX_SECTION.path && section.path !== UI_PATH);
  /** The sections a caller's role may open, in the navigation's order: a link it is shown never answers it 403. */
  const sectionsOf = (caller: Caller): UiSection[] => [...(may(caller, 'readEffects') ? [EFFECTS_SECTION] : []), ...(may(caller, 'readInbox') ? [INBOX_SECTION] : []), ...extraSections];
  const router = express.Router();
  // Room for the longest note the inbox forms take (2,000 characters, each up to 9 bytes once percent-encoded as UTF-8).
  // Read as UTF-8 only when it is UTF-8 (a form in ISO-8859-1, said so by its charset, is read as such): the parser
  // would read a byte that is not as U+FFFD, and keep a field whose %-escapes do not decode (caf%E9, or a bare % beside
  // a good escape: caf%C3%A9 100%) undecoded, so a note would be recorded as other text than the one sent.
  const form = express.urlencoded({
    extended: false,
    limit: '64kb',
    parameterLimit: 10,
    verify: (_req, _res, buffer, encoding) => {
      if (encoding !== 'utf-8') return;
      try {
        for (const field of UTF8.decode(buffer).split('&')) decodeURIComponent(field);
      } catch {
        throw Object.assign(new Error('form not UTF-8'), { type: NOT_UTF8 });
      }
    },
  });
  const sessions = createPageSessions({ tokens, secret: randomBytes(32), now: () => Date.now(), nonce: () => randomBytes(16).toString('base64url') });
  // With the API's rate limit turned off (INTERLOCK_API_RATE_LIMIT=0), so is this one.
  const failures = deps.failures !== undefined ? deps.failures : deps.limiter ? createFailedSignIns(FAILED_SIGN_INS) : null;

  type Signed = { caller: Caller; csrf: string };
  /** Open sessions of more than one caller in one request: who is at the browser cannot be told. */
  type Mixed = { mixed: Caller[]; csrf: string };
  const signedIn = new WeakMap<Request, Signed | Mixed | null>();

  /** The token of a request's bearer header (scripts), when it has one: then it is its caller, whatever cookies it holds. */
  const bearerOf = (req: Request): string | undefined => /^Bearer[ \t]+(\S{1,1024})[ \t]*$/i.exec(req.headers.authorization ?? '')?.[1];

  /** The caller of each page request's bearer header, as the check below found it (null: a token this service does not know). */
  const bearers = new WeakMap<Request, Caller | null>();

  /** The callers a request holds: its bearer header's (scripts), else each cookie value that is a session open here, in the order sent. */
  function held(req: Request): Signed[] {
    const header = bearerOf(req);
    if (header !== undefined) {
      const caller = bearers.has(req) ? (bearers.get(req) ?? null) : tokens.authenticate(header);
      return caller === null ? [] : [{ caller, csrf: sessions.bearerCsrf(caller) }];
    }
    return cookieValues(req, SESSION_COOKIE).flatMap((value) => {
      const caller = sessions.callerOf(value);
      return caller === null ? [] : [{ caller, csrf: csrfTokenFor(value) }];
    });
  }

  /**
   * The caller of a request: a bearer header (scripts), else the first cookie that is a session open here; null when
   * signed out. Open sessions of two callers or more are `mixed`: another server on the host planted one (it can set
   * a cookie for a longer path, sent first), and taking either would act under a name the person may not hold.
   */
  function session(req: Request): Signed | Mixed | null {
    if (signedIn.has(req)) return signedIn.get(req) ?? null;
    const holding = held(req);
    const callers = [...new Map(holding.map((each) => [`${each.caller.role}:${each.caller.name}`, each.caller])).values()];
    const first = holding[0];
    const signed = first === undefined ? null : callers.length > 1 ? { mixed: callers, csrf: first.csrf } : first;
    signedIn.set(req, signed);
    return signed;
  }

  /** The page for a request holding the sessions of several callers: it acts as none of them; signing out ends them all. */
  function mixedPage(req: Request, mixed: Mixed): Html {
    const names = mixed.mixed.map((caller) => `${caller.name} (${caller.role})`).join(', ');
    // Signed out from under this page's own path, so the sign-out is sent the same cookies (SIGN_OUT_PATHS).
    const here = req.path.replace(/\/+$/, '');
    return mixedSessionsPage(names, mixed.csrf, PAGE_PATH.test(here) ? `${here}/sign-out` : `${UI_PATH}/sign-out`);
  }

  /**
   * Takes one of `caller`'s rate limit; false when it has none left, and then `res` has its 429 page. A request within
   * it whose bearer header found `caller` makes that token known at its address (failed-sign-ins.ts); one refused
   * by the limit is no use of the token and refreshes nothing.
   */
  function withinLimit(req: Request, res: Response, caller: Caller, page: (sentence: string) => Html): boolean {
    const decision = deps.limiter?.take(`${caller.name}:${caller.role}`) ?? { allowed: true };
    if (decision.allowed) {
      const header = bearerOf(req);
      const bearing = bearers.get(req);
      if (header !== undefined && bearing?.name === caller.name && bearing.role === caller.role) failures?.succeeded(senderOf(req).address, header);
      return true;
    }
    res.setHeader('Retry-After', String(decision.retryAfterSeconds));
    send(res, 429, page(`Token ${caller.name} sent more requests than its rate limit allows; try again in ${decision.retryAfterSeconds} s.`));
    return false;
  }

  // A bearer header sent to a page (a script) is a token presented, as on the API: counted when this service does not
  // know it, and not checked while its address has sent too many such, unless it authenticated from there before (the
  // API's authenticate does the same for every path outside the page's).
  router.use((req, res, next) => {
    const header = UNDER_UI.test(req.path) ? bearerOf(req) : undefined;
    if (header === undefined) {
      next();
      return;
    }
    const { address, hostLogged } = senderOf(req);
    const reqId = (req as { id?: unknown }).id;
    const wait = failures?.waitSeconds(address, header) ?? 0;
    if (wait > 0) {
      context.logger.warn({ reqId, address, host: hostLogged }, 'page request refused: too many unknown tokens from this address');
      res.setHeader('Retry-After', String(wait));
      send(res, 429, messagePage(null, 'Slow down', `Too many tokens this service does not know came from your address, so this request's token, not one that authenticated from your address before, was not checked. Try again in ${wait} s, with a token from INTERLOCK_API_TOKENS or the ones printed at start.`));
      return;
    }
    // Known at this address only once its caller's rate limit lets the request on (withinLimit).
    const caller = tokens.authenticate(header);
    if (caller === null) {
      failures?.failed(address, header);
      context.logger.warn({ reqId, host: hostLogged }, 'page request with an unknown bearer token');
    }
    bearers.set(req, caller);
    next();
  });

  // The dashboard and the metrics take the page's session as well as a bearer header (authenticate's cookiePaths):
  // only this router holds the sessions' secret, so it notes the session's caller for the routes after it.
  router.use((req, _res, next) => {
    if (req.headers.authorization === undefined && cookieValues(req, SESSION_COOKIE).length > 0) {
      const signed = session(req);
      if (signed !== null) noteSession(req, 'mixed' in signed ? signed.mixed : signed.caller);
    }
    next();
  });

  /**
   * The page's viewer for a signed-in session, its caller noted for the logs and held to the API's rate limit; null
   * when the answer was sent already (a browser holding several callers' sessions, or over the limit).
   */
  function viewerOf(req: Request, res: Response, signed: Signed | Mixed): { viewer: Viewer; caller: Caller } | null {
    if ('mixed' in signed) {
      send(res, 409, mixedPage(req, signed));
      return null;
    }
    const { caller } = signed;
    noteCaller(req, caller);
    const viewer: Viewer = { name: caller.name, role: caller.role, csrf: signed.csrf, sections: sectionsOf(caller) };
    if (!withinLimit(req, res, caller, (sentence) => messagePage(viewer, 'Slow down', sentence))) return null;
    return { viewer, caller };
  }

  /** Runs a page for a signed-in caller: signed out goes to the sign-in form; the rate limit is the API's. */
  function page(handler: (req: Request, res: Response, viewer: Viewer, caller: Caller) => Promise<void>) {
    return async (req: Request, res: Response) => {
      const signed = session(req);
      if (signed === null) {
        // Back to the page after signing in: a form's own URL (an inbox action, POST only) has no page to show, so
        // a form sent after the session ended comes back to the page it was sent from, not to a route that is not one.
        const back = req.method === 'GET' || req.method === 'HEAD' ? req.originalUrl : req.originalUrl.replace(/\/(?:dismiss|resolve|reapprove)(?:\?.*)?$/, '');
        res.redirect(303, `${UI_PATH}/sign-in?next=${encodeURIComponent(localPath(back))}`);
        return;
      }
      const shown = viewerOf(req, res, signed);
      if (shown === null) return;
      const { viewer, caller } = shown;
      try {
        await handler(req, res, viewer, caller);
      } catch (error) {
        failed(req, res, viewer, error);
      }
    };
  }

  /**
   * A page's answer to what its handler threw: the status the API answers for the same error (asApiError). Redis not
   * answering is an outage, not a fault of the service: 503 with Retry-After, as the API answers redis_unavailable.
   * Only the service's own faults (500) are logged as errors, and their page gives the request id, not the detail.
   */
  function failed(req: Request, res: Response, viewer: Viewer, error: unknown): void {
    const failure = asApiError(error);
    const requestId = String((req as { id?: unknown }).id ?? '');
    if (failure.status === 500) {
      context.logger.error({ err: error, code: failure.code, reqId: requestId }, 'page failed');
      send(res, 500, messagePage(viewer, 'Something went wrong', `The page could not be read (${failure.code}); try again, and see the service's log for request ${requestId}.`));
      return;
    }
    if (failure.status > 500) context.logger.warn({ err: errorMessage(error), code: failure.code, reqId: requestId }, 'page not answered');
    // The same wait the API names (sendError): Stripe's, when its rate limit is why a premise read failed.
    if (failure.status === 503 && failure.retryable) res.setHeader('Retry-After', String(retryAfterSeconds(failure)));
    if (failure.code === 'redis_unavailable') {
      // A form's action may have been written before Redis stopped answering (a command that timed out may still run).
      const form = req.method === 'GET' || req.method === 'HEAD' ? '' : ' What the form asked may or may not have been recorded: open the item again to see before sending it again.';
      send(res, 503, messagePage(viewer, 'Redis is not answering', `Redis, where the service keeps its records, is not answering (${failure.code}), so this page could not be read. Try again in a moment.${form}`));
      return;
    }
    const title = failure.code === 'unknown_effect' ? 'No such effect' : failure.retryable ? 'Try again shortly' : 'The page could not be shown';
    send(res, failure.status, messagePage(viewer, title, redactSecrets(failure.message)));
  }

  router.get(`${UI_PATH}/style.css`, (_req, res) => {
    res.type('css').setHeader('Cache-Control', 'max-age=300');
    res.send(STYLESHEET);
  });

  router.get(`${UI_PATH}/sign-in`, (req, res) => {
    send(res, 200, signInPage({ next: localPath(req.query.next) }));
  });

  /**
   * Whether an action's form carries its caller's own API token (the field `token`), null when it does: a configured
   * token (the registry compares it in constant time) of the session's name and role. A request that authenticated
   * with a bearer header (a script) presented its token there. A token that is not the caller's counts as a failed
   * sign-in of its address, and while that is over its limit no token is checked but one that authenticated from
   * there before. The token is never logged nor said back.
   */
  function signer(req: Request, caller: Caller): { status: number; message: string; retryAfter?: number } | null {
    // The caller was found by that token (held), which the header sends, never a cookie; any other Authorization
    // header (Basic, a malformed Bearer) leaves the caller to the cookie, and the form must carry the token.
    if (bearerOf(req) !== undefined) return null;
    const given = (req.body as Record<string, unknown> | undefined)?.token;
    const token = typeof given === 'string' ? given.trim() : '';
    if (token === '') {
      return { status: 403, message: `This action needs your own API token, the one token ${caller.name} signed in with, typed into “Your token (to sign this action)”: the sign-in cookie alone does not act. Nothing was recorded.` };
    }
    const { address, hostLogged } = senderOf(req);
    const reqId = (req as { id?: unknown }).id;
    const wait = failures?.waitSeconds(address, token) ?? 0;
    if (wait > 0) {
      context.logger.warn({ reqId, address, host: hostLogged, token: caller.name, role: caller.role }, 'page form refused: too many unknown tokens from this address');
      return { status: 429, message: `Too many tokens sent from your address were not the right one, so this one, not one that worked from your address before, was not checked. Try again in ${wait} s. Nothing was recorded.`, retryAfter: wait };
    }
    const found = tokens.authenticate(token);
    if (found === null || found.name !== caller.name || found.role !== caller.role) {
      failures?.failed(address, token);
      context.logger.warn({ reqId, host: hostLogged, token: caller.name, role: caller.role }, 'page form with a token not its session’s');
      return { status: 403, message: `That is not your token: type the API token ${caller.name} (${caller.role}) signed in with. Nothing was recorded.` };
    }
    failures?.succeeded(address, token);
    return null;
  }

  router.post(`${UI_PATH}/sign-in`, form, (req, res) => {
    const body = (req.body ?? {}) as Record<string, unknown>;
    const next = localPath(body.next);
    if (crossSite(req)) {
      send(res, 403, signInPage({ error: 'This sign-in came from another site, so it was refused. Open this page directly and sign in here.', next }));
      return;
    }
    const { address, hostLogged } = senderOf(req);
    const token = typeof body.token === 'string' ? body.token.trim() : '';
    const wait = failures?.waitSeconds(address, token) ?? 0;
    if (wait > 0) {
      context.logger.warn({ reqId: (req as { id?: unknown }).id, address, host: hostLogged }, 'page sign-in refused: too many unknown tokens from this address');
      res.setHeader('Retry-After', String(wait));
      send(res, 429, signInPage({ error: `Too many sign-ins from your address used a token this service does not know, so this one, not one that signed in from your address before, was not checked. Try again in ${wait} s, with a token from INTERLOCK_API_TOKENS or the ones printed at start.`, next }));
      return;
    }
    const caller = token === '' ? null : tokens.authenticate(token);
    if (caller === null) {
      failures?.failed(address, token);
      context.logger.warn({ reqId: (req as { id?: unknown }).id, host: hostLogged }, 'page sign-in with an unknown token');
      send(res, 401, signInPage({ error: 'That token is not one this service knows. Use a token from INTERLOCK_API_TOKENS or the ones printed at start.', next }));
      return;
    }
    if (!withinLimit(req, res, caller, (sentence) => signInPage({ error: `Not signed in: ${sentence}`, next }))) return;
    // Known at this address only once the rate limit let the sign-in on: a refused one is no use of the token.
    failures?.succeeded(address, token);
    // The sessions this browser held end here: one another server on the host planted (for a longer path, sent first)
    // would otherwise stand beside the new one, and the page could not tell whose the browser is.
    for (const value of cookieValues(req, SESSION_COOKIE)) sessions.close(value);
    const opened = sessions.open(caller);
    if (!opened.opened) {
      // Refused, not made room for: ending another session would sign someone out, and forgetting a signed-out one
      // would let its copies in again.
      const minutes = Math.max(1, Math.ceil((opened.until - Date.now()) / 60_000));
      res.setHeader('Retry-After', String(minutes * 60));
      context.logger.warn({ token: caller.name, role: caller.role, full: opened.full, held: opened.held }, 'page sign-in refused: too many sessions open');
      const error =
        opened.full === 'caller'
          ? `Not signed in: token ${caller.name} already holds ${opened.held} open page sessions, the most one token may hold in this process. Sign out of one you no longer use, or try again in ${minutes} min, when the oldest ends.`
          : `Not signed in: this process holds ${opened.held} open page sessions, the most it keeps. Try again in ${minutes} min, when the oldest ends; restarting the api ends them all (everyone signs in again).`;
      send(res, opened.full === 'caller' ? 429 : 503, signInPage({ error, next }));
      return;
    }
    // The session, not the token: the browser hands this cookie to every port of the host (session.ts).
    res.cookie(SESSION_COOKIE, opened.value, { httpOnly: true, sameSite: 'strict', secure: req.secure, path: '/', maxAge: SESSION_MS });
    context.logger.info({ token: caller.name, role: caller.role }, 'signed in to the page');
    // The page's own default (/ui, the effects) is the first section the role may open: an approver's is the inbox.
    res.redirect(303, next === UI_PATH ? (sectionsOf(caller)[0]?.path ?? UI_PATH) : next);
  });

  // Also under any page's path (`<page>/sign-out`): the form of a page answered 409 for sessions of several callers
  // posts there, so the browser sends it every cookie that page was sent, one planted for that page's path included
  // (a cookie goes only to the paths under its own), and every one of them ends.
  router.post(SIGN_OUT_PATHS, form, (req, res) => {
    // Another site's form arrives without the SameSite=Strict cookie, so the CSRF check below cannot see it: it would
    // be taken as signed out already and clear the session the browser holds.
    if (crossSite(req)) {
      send(res, 403, messagePage(null, 'Not signed out', 'This sign-out came from another site, so it was refused. Sign out from the page itself.'));
      return;
    }
    const given = typeof (req.body as Record<string, unknown> | undefined)?.csrf === 'string' ? String((req.body as Record<string, unknown>).csrf) : '';
    // The form carries the CSRF token of the session its page was shown with, which a cookie set for this path by
    // another server on the host may precede: it must be one of the sessions the request holds (none: signed out already).
    const holding = held(req);
    const signed = holding.find((each) => sameText(given, each.csrf)) ?? null;
    if (holding.length > 0 && signed === null) {
      send(res, 403, messagePage(null, 'Not signed out', 'The form was not this session’s (its CSRF token is missing or wrong); sign out from the page itself.'));
      return;
    }
    if (signed !== null && !withinLimit(req, res, signed.caller, (sentence) => messagePage(null, 'Not signed out', sentence))) return;
    // Ended here, not only forgotten by this browser: a copy of the cookie (another server on this host got one) is
    // refused from now on. Every session the request holds ends, whichever cookie comes first.
    for (const value of cookieValues(req, SESSION_COOKIE)) sessions.close(value);
    if (signed !== null) context.logger.info({ token: signed.caller.name, role: signed.caller.role }, 'signed out of the page');
    // The page's own cookie (path /), and one set for this path by another server, which would come first next time.
    const under = req.path.slice(0, -'/sign-out'.length);
    for (const path of new Set(['/', `${UI_PATH}/sign-out`, ...(under === UI_PATH ? [] : [under])])) res.clearCookie(SESSION_COOKIE, { httpOnly: true, sameSite: 'strict', secure: req.secure, path });
    res.redirect(303, `${UI_PATH}/sign-in`);
  });

  router.get(
    UI_PATH,
    page(async (req, res, viewer, caller) => {
      if (!may(caller, 'readEffects')) {
        send(res, 403, messagePage(viewer, 'Effects', `Token ${caller.name} has the ${caller.role} role, which does not read effects.${viewer.sections.length > 0 ? ' The sections above are yours.' : ''}`));
        return;
      }
      // Empty fields of the filter form mean "any".
      const raw = Object.fromEntries(Object.entries(req.query).filter(([, value]) => typeof value === 'string' && value.trim() !== '').map(([key, value]) => [key, String(value).trim()]));
      // A page position sent twice is none this page gave out (its links carry one), not a blank field meaning "any".
      const twice = Array.isArray(req.query.starting_after);
      const parsed = listQuery.safeParse({ ...raw, limit: String(pageSize) });
      const filters: ListFilters = { state: raw.state, outcome: raw.outcome, subject: raw.subject, request: raw.request };
      // One more than the page shows, so it can say when more are open than it lists.
      const alerts: Alert[] | null = may(caller, 'readAlerts') ? ((await context.alerts({ all: false, limit: ALERTS_SHOWN + 1 })).data as Alert[]) : null;
      const base = { viewer, alerts, filters, states: EFFECT_STATES, outcomes: EFFECT_OUTCOMES };
      if (!parsed.success || twice) {
        // A bad page position is said in the page's words (BAD_CURSOR), and the first page it links keeps the filter
        // when the filter itself is valid; any other problem is the filter's.
        const all = parsed.success ? [] : parsed.error.issues;
        const issues = all.filter((issue) => issue.path[0] !== 'starting_after');
        const badCursor = twice || issues.length < all.length;
        const problems = issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; ');
        const keep = new URLSearchParams(Object.entries(filters).filter((pair): pair is [string, string] => pair[1] !== undefined));
        const firstHref = issues.length === 0 && keep.size > 0 ? `${UI_PATH}?${keep.toString()}` : UI_PATH;
        const error = [issues.length > 0 ? `The filter is not valid (${problems}).` : null, badCursor ? BAD_CURSOR : null].filter((text) => text !== null).join(' ');
        send(res, 400, effectsPage({ ...base, effects: [], nextHref: null, firstHref, error }));
        return;
      }
      const query = parsed.data;
      const found = await list({ request: query.request, subject: query.subject, state: query.state, outcome: query.outcome }, pageSize, query.starting_after);
      const effects = found.data;
      const keep = new URLSearchParams(Object.entries({ state: query.state, outcome: query.outcome, subject: query.subject, request: query.request }).filter((pair): pair is [string, string] => pair[1] !== undefined));
      const nextHref = found.next === null ? null : `${UI_PATH}?${new URLSearchParams([...keep, ['starting_after', found.next]]).toString()}`;
      const firstHref = query.starting_after === undefined ? null : `${UI_PATH}${keep.size > 0 ? `?${keep.toString()}` : ''}`;
      send(res, 200, effectsPage({ ...base, effects, nextHref, firstHref, error: null }));
    }),
  );

  async function effectOf(id: string) {
    if (!EFFECT_ID.test(id)) throw new InterlockError('unknown_effect', 'An effect id is 64 lowercase hex characters.');
    return effectChain(stores, id);
  }

  router.get(
    `${UI_PATH}/effects/:id`,
    page(async (req, res, viewer, caller) => {
      if (!may(caller, 'readEffects')) {
        send(res, 403, messagePage(viewer, 'Effect', `Token ${caller.name} has the ${caller.role} role, which does not read effects.`));
        return;
      }
      const id = String(req.params.id);
      const { partition, entries } = await effectOf(id);
      const receipt = await stores.journal.receipt(id);
      const keys = stores.publicKeys;
      const summary = summaryOf(id, partition, entries, context.stores.config.creditCurrency);
      const detail = detailOf(summary, entries, receipt, keys);
      send(
        res,
        200,
        effectPage({
          viewer,
          summary,
          detail,
          // The receipt's contents, for the roles GET /v1/effects/:id/receipt answers; the others see the detail only.
          receipt: may(caller, 'readReceipts') && receipt !== null ? { entries: receipt.entries, signatures: entrySignatures(receipt, keys), verification: verify(receipt, { publicKeys: keys }) } : null,
          links: deps.links,
          canDownload: may(caller, 'readReceipts') && receipt !== null,
        }),
      );
    }),
  );

  router.get(
    `${UI_PATH}/effects/:id/receipt`,
    page(async (req, res, viewer, caller) => {
      if (!may(caller, 'readReceipts')) {
        send(res, 403, messagePage(viewer, 'Receipt', `Token ${caller.name} has the ${caller.role} role; receipts are for auditors and operators.`));
        return;
      }
      const id = String(req.params.id);
      await effectOf(id);
      const receipt = await stores.journal.receipt(id);
      if (!receipt) throw new InterlockError('unknown_effect', `No effect ${id}.`);
      res.status(200).type('json').setHeader('Content-Disposition', `attachment; filename="receipt-${id}.json"`);
      res.setHeader('Cache-Control', 'no-store');
      // Exactly as signed: masking any string in it would break its signature.
      res.send(JSON.stringify(receipt, null, 2));
    }),
  );

  addInboxPages(router, context, {
    page,
    send,
    form,
    messagePage,
    signer,
    ownForm(req, viewer) {
      const given = (req.body as Record<string, unknown> | undefined)?.csrf;
      return !crossSite(req) && typeof given === 'string' && sameText(given, viewer.csrf);
    },
  });

  // Last: a path under /ui no route above took (a typo, an old bookmark, a form's URL opened in the address bar) is
  // answered with a page, not left to the API's authentication and its JSON 401 or 404, which a browser shows raw.
  router.all(UNDER_UI, (req, res) => {
    const signed = session(req);
    const item = req.method === 'GET' || req.method === 'HEAD' ? ACTION_URL.exec(req.path)?.[1] : undefined;
    if (signed === null) {
      send(res, 404, signInPage({ error: 'There is no page at this address. Sign in, then use the links at the top of the page.' }));
      return;
    }
    const shown = viewerOf(req, res, signed);
    if (shown === null) return;
    const { viewer } = shown;
    if (item !== undefined) {
      res.redirect(303, item);
      return;
    }
    const signOut = req.path.endsWith('/sign-out') ? ' To sign out, use the Sign out button at the top.' : '';
    send(res, 404, messagePage(viewer, 'No such page', `There is no page at this address; the pages you may open are linked at the top.${signOut}`));
  });

  // Last of all: what failed before a page's handler ran, under /ui (a path whose %-escapes do not decode, a form the
  // parser refused), is answered with a page in the status the API gives it, never left to the API's JSON error.
  router.use((error: unknown, req: Request, res: Response, next: (error: unknown) => void) => {
    if (res.headersSent || !UNDER_UI.test(req.path)) {
      next(error);
      return;
    }
    const signed = session(req);
    // The navigation of a signed-in caller, without taking its rate limit: the request did nothing.
    const viewer: Viewer | null = signed === null || 'mixed' in signed ? null : { name: signed.caller.name, role: signed.caller.role, csrf: signed.csrf, sections: sectionsOf(signed.caller) };
    const nothing = req.method === 'GET' || req.method === 'HEAD' ? '' : ' Nothing was recorded.';
    const unread = unreadable(error);
    if (unread === null) {
      // What a fault did before it was thrown is not known here, so nothing is said about what was recorded.
      const requestId = String((req as { id?: unknown }).id ?? '');
      context.logger.error({ err: error, reqId: requestId }, 'page failed');
      send(res, 500, messagePage(viewer, 'Something went wrong', `The request could not be answered; try again, and see the service's log for request ${requestId}.`));
      return;
    }
    send(res, unread.status, messagePage(viewer, unread.title, `${unread.message}${nothing}`));
  });

  return router;
}
