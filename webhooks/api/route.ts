// A route, defined once: its method and path, who may call it, the zod schemas of its path, query and body, what it
// answers, and its handler. The app registers routes from these definitions and the OpenAPI document is generated
// from the same ones, so the document can list no route, role or field the service does not have.
import type { Request, Response } from 'express';
import { z } from 'zod';
import { redactDeep, zodFieldProblems, type FieldProblem } from '../../src/interlock.js';
import { callerOf, type Permission } from './auth.js';
import { apiError, nothingRecorded } from './errors.js';
import type { Caller } from './tokens.js';

export type Method = 'get' | 'post' | 'put';

export type Answer = {
  status: number;
  body: unknown;
  /** Sent exactly as it is: a signed receipt is evidence, and masking a string in it would break its signature. */
  verbatim?: boolean;
};

export type ResponseDoc = { description: string; schema?: z.ZodType };

type Schema = z.ZodType | undefined;
type Out<S extends Schema> = S extends z.ZodType ? z.output<S> : undefined;

export type RouteSpec<P extends Schema, Q extends Schema, B extends Schema> = {
  method: Method;
  /** Express syntax (`/v1/effects/:id`). */
  path: string;
  operationId: string;
  summary: string;
  /** Who may call it; null for routes that need no token (probes, the OpenAPI document). */
  permission: Permission | null;
  params?: P;
  query?: Q;
  body?: B;
  /** A body is optional (an empty POST is `{}`). */
  optionalBody?: boolean;
  responses: Record<number, ResponseDoc>;
  handle(input: { params: Out<P>; query: Out<Q>; body: Out<B>; caller: Caller | null; req: Request; res: Response }): Promise<Answer>;
};

export type Route = {
  method: Method;
  path: string;
  operationId: string;
  summary: string;
  permission: Permission | null;
  params: z.ZodType | undefined;
  query: z.ZodType | undefined;
  body: z.ZodType | undefined;
  /** The body may be left out (the OpenAPI document then marks it not required). */
  optionalBody: boolean;
  responses: Record<number, ResponseDoc>;
  run(req: Request, res: Response): Promise<void>;
};

/** How many problems an invalid request's answer lists (in its message and in `fields`). */
export const MAX_FIELD_PROBLEMS = 20;

/** Parses one part of the request, adding its problems (by path) to `fields`. */
function part(schema: z.ZodType | undefined, value: unknown, place: 'path' | 'query' | 'body', fields: FieldProblem[]): unknown {
  if (!schema) return undefined;
  // A route's path and query take a few names, so an unknown one is answered with the list (or the one it spells).
  const known = place !== 'body' && schema instanceof z.ZodObject ? Object.keys(schema.shape) : undefined;
  // `?limit=1&limit=2` reads as an array, which no parameter takes: said as the name given more than once (as a body
  // member named twice is), since readers differ on which value counts, not as a type the caller never sent.
  const given = typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
  const repeated = (known ?? []).filter((name) => Array.isArray(given[name]));
  const problems = repeated.map((name) => {
    const times = (given[name] as unknown[]).length;
    return { path: `${place}.${name}`, message: `is given ${times === 2 ? 'twice' : `${times} times`}; send it once` };
  });
  const once = repeated.length === 0 ? value : Object.fromEntries(Object.entries(given).filter(([name]) => !repeated.includes(name)));
  const parsed = schema.safeParse(once, { reportInput: true });
  if (parsed.success && problems.length === 0) return parsed.data;
  // A missing field reads "is required", whatever its type's own message says; the input itself is not echoed.
  const issues = (parsed.success ? [] : parsed.error.issues)
    // A name given more than once was left out of what is parsed: its problem is said above, not as "is required".
    .filter((issue) => !repeated.includes(String(issue.path[0])))
    .map((issue) => (issue.code === 'invalid_type' && issue.input === undefined ? { ...issue, message: 'is required' } : issue));
  fields.push(...problems, ...zodFieldProblems(issues, place === 'body' ? [] : [place], place, known));
  return undefined;
}

/**
 * Aborts when the client hangs up before its answer is sent (the response closes unfinished): a long poll (`?wait`)
 * then stops waiting, rather than holding its listeners and timer for the rest of its wait with nobody to answer.
 */
export function hangUpOf(res: Response): AbortSignal {
  const left = new AbortController();
  // Closed already (the client left while the request was read or authenticated): its 'close' has been and gone.
  if (res.destroyed) left.abort();
  res.once('close', () => {
    if (!res.writableFinished) left.abort();
  });
  return left.signal;
}

/** The caller of a route that has a permission (the app authenticates every such route). */
export function signedIn(caller: Caller | null): Caller {
  if (caller === null) throw new Error('a route with a permission ran without a caller');
  return caller;
}

export function route<P extends Schema = undefined, Q extends Schema = undefined, B extends Schema = undefined>(spec: RouteSpec<P, Q, B>): Route {
  return {
    method: spec.method,
    path: spec.path,
    operationId: spec.operationId,
    summary: spec.summary,
    permission: spec.permission,
    params: spec.params,
    query: spec.query,
    body: spec.body,
    optionalBody: spec.optionalBody ?? false,
    responses: spec.responses,
    async run(req, res) {
      const fields: FieldProblem[] = [];
      const params = part(spec.params, { ...req.params }, 'path', fields);
      const query = part(spec.query, { ...(req.query as Record<string, unknown>) }, 'query', fields);
      const given: unknown = req.body === undefined && spec.optionalBody ? {} : req.body;
      const body = part(spec.body, given, 'body', fields);
      if (fields.length > 0) {
        // A body of thousands of bad members gets an answer of a few: the first ones, and how many more.
        const shown = fields.slice(0, MAX_FIELD_PROBLEMS);
        const more = fields.length > shown.length ? `; and ${fields.length - shown.length} more` : '';
        const detail = shown.map((field) => `${field.path}: ${field.message}`).join('; ');
        // A read records nothing whatever it is asked: only a request that would have recorded something says so.
        throw apiError('invalid_request', `The request is invalid (${detail}${more}).${spec.method === 'get' ? '' : nothingRecorded(spec.path, given, fields)}`, { fields: shown });
      }
      const answer = await spec.handle({ params: params as Out<P>, query: query as Out<Q>, body: body as Out<B>, caller: spec.permission === null ? null : callerOf(req), req, res });
      res.status(answer.status).json(answer.verbatim ? answer.body : redactDeep(answer.body));
    },
  };
}
