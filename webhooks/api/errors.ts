// Errors at the HTTP edge: every answer that is not a success is `{error: {code, message, fields?}}` with a code and
// status from the one registry (src/core/errors.ts). Bad input is a 4xx naming what is wrong; only the service's
// own faults are 5xx, and their message is a generic sentence with the request id (the detail goes to the log).
// No answer ever carries a stack trace or a secret.
import type { ErrorRequestHandler, Request, Response } from 'express';
import type { Logger } from 'pino';
import { wasRecorded } from '../../queues/recorded.js';
import { ERROR_REGISTRY, InterlockError, isRedisOutage, isRedisTimeout, LONGEST_RETRY_AFTER_MS, personName, recordedIdentifier, redactSecrets, redisTurnedAway, slowDownOf, type ErrorCode, type FieldProblem } from '../../src/interlock.js';

export type ErrorBody = { error: { code: string; message: string; fields?: FieldProblem[] } };

export function apiError(code: ErrorCode, message: string, options: { fields?: readonly FieldProblem[]; cause?: unknown } = {}): InterlockError {
  return new InterlockError(code, message, { ...(options.fields ? { fields: options.fields } : {}), ...(options.cause === undefined ? {} : { cause: options.cause }) });
}

/** Where a request that records something is read back, by its route: the body member naming it, and the lookup. */
const READ_BACK: Record<string, { member: string; at: (id: string) => string }> = {
  '/v1/refunds': { member: 'request_id', at: (id) => `GET /v1/effects?request=${encodeURIComponent(id)}` },
  '/v1/credits': { member: 'request_id', at: (id) => `GET /v1/effects?request=${encodeURIComponent(id)}` },
  '/v1/cases': { member: 'case_id', at: (id) => `GET /v1/cases/${encodeURIComponent(id)}` },
  '/v1/approvals': { member: 'id', at: (id) => `GET /v1/approvals/${encodeURIComponent(id)}` },
};
const recorded = recordedIdentifier(200);
const person = personName(200);

/**
 * What a request refused for its fields (400) says it recorded: nothing. But a person's name (`agent`, `approver`)
 * refused only by the rules a name came under after it could be recorded (no unseen character, letters of one script,
 * no symbol: mixedScriptProblem) may be the name an earlier version recorded this very request with, and a retry of it
 * must not be told the request went nowhere: the answer says this request recorded nothing and where the one recorded
 * before, if any, is read (a recorded name is read back as it was recorded).
 */
export function nothingRecorded(path: string, body: unknown, fields: readonly FieldProblem[]): string {
  const given = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {};
  const readBack = READ_BACK[path];
  const id = readBack === undefined ? undefined : given[readBack.member];
  const laterRule = fields.some((field) => (field.path === 'agent' || field.path === 'approver') && recorded.safeParse(given[field.path]).success && !person.safeParse(given[field.path]).success);
  if (readBack === undefined || !laterRule || typeof id !== 'string' || !recorded.safeParse(id).success) return ' Nothing was recorded.';
  return ` Nothing was recorded by this request; if this ${readBack.member} was recorded before (an earlier version took names that mix scripts or hold symbols), ${readBack.at(id)} answers it as it stands.`;
}

/** Errors body-parser raises, by their `type`, as registry codes. */
const BODY_ERRORS: Record<string, { code: ErrorCode; message: string }> = {
  'entity.too.large': { code: 'payload_too_large', message: 'The body is larger than this service accepts.' },
  'entity.parse.failed': { code: 'invalid_request', message: 'The body is not valid JSON (an object is expected).' },
  'entity.verify.failed': { code: 'invalid_request', message: 'The body could not be read.' },
  'encoding.unsupported': { code: 'unsupported_media_type', message: 'The body uses a content encoding this service does not read; send identity, gzip or deflate.' },
  'charset.unsupported': { code: 'unsupported_media_type', message: 'The body uses a character set this service does not read; send UTF-8 JSON.' },
  'request.aborted': { code: 'invalid_request', message: 'The request was aborted before its body arrived.' },
  'request.size.invalid': { code: 'invalid_request', message: 'The body is shorter or longer than its Content-Length says.' },
  'parameters.too.many': { code: 'invalid_request', message: 'The body has too many parameters.' },
};

/** A client error raised by Express or its libraries (http-errors), by status. */
const STATUS_CODES: Record<number, ErrorCode> = { 400: 'invalid_request', 404: 'not_found', 413: 'payload_too_large', 415: 'unsupported_media_type' };

/** A Redis that hung (connections open, no answer): unlike a refused connection, a write may have been made. */
export const REDIS_TIMED_OUT =
  'Redis did not answer in time (INTERLOCK_REDIS_COMMAND_TIMEOUT_MS), so what was asked may or may not have been recorded. Send the same request again once Redis answers: a proposal repeated with the same request_id is answered from the journal, and its money moves at most once.';

/** What each word Redis turns a command away with (redisTurnedAway) means, for the one who runs it. */
const REDIS_SAYS: Record<string, string> = {
  OOM: 'its memory is full under maxmemory',
  BUSY: 'a script is running past busy-reply-threshold',
  LOADING: 'it is loading its data after a restart',
  READONLY: 'REDIS_URL reaches a replica, not the master',
  NOREPLICAS: 'fewer replicas answer than min-replicas-to-write asks',
  MASTERDOWN: 'its master is down',
  MISCONF: 'its last save failed and it stops writes until one succeeds',
  TRYAGAIN: 'the cluster is moving the keys',
  CLUSTERDOWN: 'the cluster is down',
  MOVED: 'the cluster is moving the keys to another node',
  ASK: 'the cluster is moving the keys to another node',
  WRONGPASS: "it refuses this process's password: check the password in REDIS_URL against the server's",
  NOAUTH: "it asks for a password this process's connection did not give: check the password in REDIS_URL against the server's",
};

/**
 * Why Redis turned a command away, as the one who runs it reads it (`OOM: its memory is full under maxmemory`), or
 * null when the error is not Redis turning a command away.
 */
export function redisRefusalOf(error: unknown): string | null {
  const turnedAway = redisTurnedAway(error);
  return turnedAway === null ? null : `${turnedAway}: ${REDIS_SAYS[turnedAway] ?? 'see its log'}`;
}

/** The registry error an arbitrary thrown value stands for at the edge. */
export function asApiError(error: unknown): InterlockError {
  if (error instanceof InterlockError) return error;
  if (error instanceof Error) {
    const type = (error as { type?: unknown }).type;
    const known = typeof type === 'string' ? BODY_ERRORS[type] : undefined;
    if (known) return apiError(known.code, known.message, { cause: error });
    const status = (error as { status?: unknown; statusCode?: unknown }).status ?? (error as { statusCode?: unknown }).statusCode;
    // The body did not decode as its Content-Encoding said (zlib's own codes: Z_DATA_ERROR, Z_BUF_ERROR, …).
    const zlibCode = (error as { code?: unknown }).code;
    if (status === 400 && typeof zlibCode === 'string' && zlibCode.startsWith('Z_')) {
      return apiError('invalid_request', `The body does not decode as its Content-Encoding (${zlibCode}); send it encoded as that header names, or without the header.`, { cause: error });
    }
    if (typeof status === 'number' && status >= 400 && status < 500) {
      return apiError(STATUS_CODES[status] ?? 'invalid_request', status === 404 ? 'No such route.' : 'The request could not be read (a malformed path or header).', { cause: error });
    }
    if (isRedisTimeout(error)) return apiError('redis_unavailable', REDIS_TIMED_OUT, { cause: error });
    const turnedAway = redisRefusalOf(error);
    if (turnedAway !== null) return apiError('redis_unavailable', `Redis turned the request away for now (${turnedAway}); nothing was recorded. Retry shortly.`, { cause: error });
    if (isRedisOutage(error)) return apiError('redis_unavailable', 'Redis is not answering; nothing was recorded. Retry shortly.', { cause: error });
  }
  return apiError('internal', 'Something went wrong inside the service.', { cause: error });
}

/**
 * A failure after a request's proposal or case was written (its ?wait, reading it back): what it asked for is recorded
 * and will be carried out, so the answer never says "nothing was recorded" (asApiError's words for an outage), which
 * would have a caller decide again under a new id and the money move twice. `recorded` says what stands ("Request r1 is
 * recorded (effect …) and queued: it will be carried out"), `again` how to learn the outcome and why that is safe. A
 * Redis outage is answered 503 redis_unavailable, another fault with its own code, its detail in the log; an error
 * that says what stands already (queueRecorded's) is answered as it is.
 */
export function outcomeNotKnown(error: unknown, recorded: string, again: string): InterlockError {
  const known = asApiError(error);
  if (wasRecorded(error)) return known;
  const code = known.status >= 500 ? known.code : 'internal';
  return apiError(code, `${recorded}, but its outcome is not known yet (${whyNotKnown(error, code)}). ${again}`, { cause: error });
}

/** Why the outcome is not known, in words the caller may read (a fault's detail stays in the log). */
function whyNotKnown(error: unknown, code: ErrorCode): string {
  if (code === 'internal') return 'a fault inside the service';
  if (code !== 'redis_unavailable') return code;
  const turnedAway = redisRefusalOf(error);
  if (turnedAway !== null) return `Redis turned a command away for now: ${turnedAway}`;
  return isRedisTimeout(error) ? 'Redis did not answer in time' : 'Redis is not answering';
}

export function errorBody(error: InterlockError, requestId: string): ErrorBody {
  // A fault of the service: the caller can only quote the request id to whoever reads the log.
  const fault = ERROR_REGISTRY[error.code].status === 500;
  const message = fault ? `${error.message} The request id is ${requestId}; the service log has the detail.` : error.message;
  const body: ErrorBody = { error: { code: error.code, message: redactSecrets(message) } };
  if (error.fields.length > 0) body.error.fields = error.fields.map((field) => ({ path: redactSecrets(field.path), message: redactSecrets(field.message) }));
  return body;
}

/**
 * Seconds a caller should wait before retrying a retryable answer: what Stripe asked for when Stripe's rate limit is the
 * cause (a premise read answered 429 with `Retry-After`: a client retrying every second would only keep the limit
 * going), up to 15 minutes as the worker obeys it; 1 otherwise.
 */
export function retryAfterSeconds(error: InterlockError): number {
  const asked = slowDownOf(error)?.retryAfterMs ?? null;
  return asked === null ? 1 : Math.max(1, Math.ceil(Math.min(asked, LONGEST_RETRY_AFTER_MS) / 1000));
}

export function sendError(req: Request, res: Response, error: InterlockError, logger: Logger): void {
  const requestId = String(req.id ?? '');
  if (error.status >= 500) logger.error({ err: error.cause ?? error, reqId: requestId, code: error.code }, 'request failed');
  if (error.code === 'rate_limited' || (error.status === 503 && error.retryable)) {
    if (!res.hasHeader('Retry-After')) res.setHeader('Retry-After', String(retryAfterSeconds(error)));
  }
  if (error.status === 401) res.setHeader('WWW-Authenticate', 'Bearer realm="interlock"');
  res.status(error.status).json(errorBody(error, requestId));
}

export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (error: unknown, req, res, next) => {
    if (res.headersSent) {
      next(error);
      return;
    }
    sendError(req, res, asApiError(error), logger);
  };
}
