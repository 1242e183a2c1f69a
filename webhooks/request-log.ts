// The request log: one line per request, written when the answer has gone out, with the request id (the caller's
// X-Request-Id when it is a plain token, else a new UUID, answered in X-Request-Id either way), the method, the path
// with secrets masked, the status, the time taken, and the caller's role and token name once known, never the
// token, a header or a body. Written directly, without a child logger per request: the webhook route answers
// thousands of requests a second and the log must not be what limits it.
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { RequestHandler } from 'express';
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

export function requestLog(logger: Logger): RequestHandler {
  return (req, res, next) => {
    const given = req.headers['x-request-id'];
    const id = typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    req.id = id;
    res.setHeader('X-Request-Id', id);
    const started = performance.now();
    const write = (aborted: boolean) => {
      const url = redactSecrets(req.originalUrl || req.url);
      const status = res.statusCode;
      const caller = maybeCallerOf(req);
      const line = { reqId: id, ...(caller ? { role: caller.role, token: caller.name } : {}), req: { id, method: req.method, url }, res: { statusCode: status }, responseTime: Math.round(performance.now() - started) };
      if (aborted) logger.warn(line, `${req.method} ${url} aborted by the client`);
      else if (status >= 500) logger.error(line, `${req.method} ${url} ${status}`);
      else if (status >= 400) logger.warn(line, `${req.method} ${url} ${status}`);
      else logger.info(line, `${req.method} ${url} ${status}`);
    };
    res.once('finish', () => write(false));
    res.once('close', () => {
      if (!res.writableFinished) write(true);
    });
    next();
  };
}
