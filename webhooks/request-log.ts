// The request log: one line per request, written when the answer has gone out (or the client went away), with the
// request id (the caller's X-Request-Id when it is a plain token, else a new UUID, answered in X-Request-Id either
// way), the method, the path with secrets masked (prefixed keys, and a segment that is an API token or a page session)
// and only the names of its query parameters, the status, the time taken in ms, the caller's role and token name once
// known, and the code of a refusal whose route leaves one in res.locals.refusal (the webhook route's: `bad_signature`
// is on the line, at debug: the route logs its refusals, limited), never the token, a header or a body.
// Written directly, without a child logger per request: the webhook route answers thousands of requests a second and
// the log must not be what limits it.
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Request, RequestHandler, Response } from 'express';
import type { Logger } from 'pino';
import { redactSecrets } from '../src/interlock.js';
import { maybeCallerOf } from './api/auth.js';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

declare module 'http' {
  interface IncomingMessage {
    /** The request id the log and the error answers name (set by requestLog). */
    id?: string;
  }
}

/** What one request's line says, flat (a nested object costs pino a JSON.stringify of its own). */
type Line = { reqId: string; method: string; url: string; status: number; ms: number; role?: string; token?: string; code?: string };

/**
 * Whether a path segment (percent-decoded) is a secret of this process: one of its API tokens, or a page session's
 * cookie value. A caller who pastes either into a path (/v1/effects/<token>) would otherwise have it written whole:
 * a generated token is random base64url, with no prefix redactSecrets could find.
 */
export type SecretSegment = (segment: string) => boolean;

/** The segment as the line shows it: decoded for the comparison only; an undecodable one is compared as sent. */
function maskedSegment(segment: string, secretSegment: SecretSegment): string {
  if (segment === '') return segment;
  let decoded = segment;
  try {
    decoded = decodeURIComponent(segment);
  } catch {
    // A malformed escape (%zz): compared as sent.
  }
  return secretSegment(decoded) ? '…' : segment;
}

/**
 * The URL as its line shows it: the path with secrets masked (a segment `secretSegment` knows as a token or a session
 * is `…`), and each query value masked (`name=…`). A careless caller puts its token in the query (?access_token=...),
 * and a token without a known prefix (a generated one is random base64url) is not found by redactSecrets, so no value
 * is kept; a part with no name is masked whole.
 */
function loggedUrl(raw: string, secretSegment: SecretSegment | undefined): string {
  const at = raw.indexOf('?');
  const rawPath = at === -1 ? raw : raw.slice(0, at);
  const path = secretSegment === undefined ? rawPath : rawPath.split('/').map((segment) => maskedSegment(segment, secretSegment)).join('/');
  if (at === -1) return redactSecrets(path);
  const names = raw.slice(at + 1).split('&').map((part) => {
    if (part === '') return '';
    const eq = part.indexOf('=');
    return eq === -1 ? '…' : `${part.slice(0, eq)}=…`;
  });
  return redactSecrets(`${path}?${names.join('&')}`);
}

function writeLine(logger: Logger, req: Request, res: Response, id: string, started: number, aborted: boolean, secretSegment: SecretSegment | undefined): void {
  const url = loggedUrl(req.originalUrl || req.url, secretSegment);
  const status = res.statusCode;
  const line: Line = { reqId: id, method: req.method, url, status, ms: Math.round(performance.now() - started) };
  const caller = maybeCallerOf(req);
  if (caller) {
    line.role = caller.role;
    line.token = caller.name;
  }
  const refusal: unknown = res.locals['refusal'];
  if (typeof refusal === 'string') line.code = refusal;
  const said = line.code === undefined ? `${status}` : `${status} ${line.code}`;
  if (aborted) logger.warn(line, `${req.method} ${url} aborted by the client`);
  // A delivery the webhook route refused as bad input is logged by the route, at most a line per reason every 10 s
  // (stripe-route.ts refusalLog); a line here for each would let anyone who can reach the route (no secret needed for
  // a forged post) write the log a line a request.
  else if (line.code !== undefined && status < 500) logger.debug(line, `${req.method} ${url} ${said}`);
  else if (status >= 500) logger.error(line, `${req.method} ${url} ${said}`);
  else if (status >= 400) logger.warn(line, `${req.method} ${url} ${said}`);
  else logger.info(line, `${req.method} ${url} ${said}`);
}

/** `secretSegment`: which path segments are secrets to mask (the app's API tokens and page sessions); none when not given. */
export function requestLog(logger: Logger, secretSegment?: SecretSegment): RequestHandler {
  return function logRequest(req, res, next) {
    const given = req.headers['x-request-id'];
    const id = typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    req.id = id;
    res.setHeader('X-Request-Id', id);
    const started = performance.now();
    res.once('close', function logged() {
      writeLine(logger, req, res, id, started, !res.writableFinished, secretSegment);
    });
    next();
  };
}
