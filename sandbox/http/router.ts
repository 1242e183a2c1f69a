// Routes of the Stripe API surface. A family module declares each endpoint with `route({...})`: its method, path
// pattern (`/v1/refunds/:id`), parameter schema, optional cross-field `check`, and handler. Validation (schema and
// check) happens in `prepare`, before the idempotency layer marks the key as executing.
import { validate } from '../core/params.js';
import type { EventOrigin } from '../core/event-bus.js';
import type { ParamMap } from '../core/form.js';
import type { Parsed, Schema } from '../core/params.js';

export const methods = ['GET', 'POST', 'DELETE'] as const;
export type Method = (typeof methods)[number];

export type PathParams = Readonly<Record<string, string>>;

export interface RequestContext {
  requestId: string;
  idempotencyKey: string | null;
  /** What events caused by this request carry in `event.request`. */
  origin: EventOrigin;
  /** The secret key the request authenticated with (empty on control routes). */
  apiKey: string;
  /** The `Host` header as the client sent it, for URLs the client must reach again. */
  host: string | null;
}

export interface RouteSpec<S extends Schema> {
  method: Method;
  path: string;
  params: S;
  /** Parameter rules that span fields; failures count as validation and are never stored. */
  check?(params: Parsed<S>, path: PathParams): void;
  handle(params: Parsed<S>, path: PathParams, ctx: RequestContext): unknown;
}

export interface PreparedCall {
  run(ctx: RequestContext): unknown;
}

export interface Route {
  readonly method: Method;
  readonly path: string;
  readonly segments: readonly string[];
  /** Validates the parameters, throwing Stripe's refusal, and returns the call ready to execute. */
  prepare(raw: ParamMap, path: PathParams): PreparedCall;
}

export function route<S extends Schema>(spec: RouteSpec<S>): Route {
  return {
    method: spec.method,
    path: spec.path,
    segments: spec.path.split('/').filter((s) => s !== ''),
    prepare(raw, path) {
      const params = validate(spec.params, raw);
      spec.check?.(params, path);
      return { run: (ctx) => spec.handle(params, path, ctx) };
    },
  };
}

export type Match = { route: Route; path: PathParams } | { route: null; methodAllowed: boolean };

export interface Router {
  add(routes: readonly Route[]): void;
  match(method: string, pathname: string): Match;
  /** Every route, in the order added. */
  list(): readonly Route[];
}

/**
 * Words Stripe serves as literal path segments where an id would otherwise go (`/v1/invoices/search`,
 * `/v1/invoices/create_preview`, `/v1/credit_notes/preview`, `/v1/invoices/upcoming`, as stripe-node's resources
 * name them). No object id is ever one of them, so a parameter never matches them: an endpoint the sandbox does not
 * model answers Stripe's 404 `Unrecognized request URL` instead of being read as an id.
 */
const literalSegments: ReadonlySet<string> = new Set(['search', 'create_preview', 'preview', 'upcoming']);

export function createRouter(): Router {
  // Bucketed by segment count: matching compares a handful of patterns at most.
  const bySize = new Map<number, Route[]>();
  const all: Route[] = [];
  return {
    list: () => all,
    add(routes) {
      for (const r of routes) {
        all.push(r);
        const bucket = bySize.get(r.segments.length) ?? [];
        // Literal segments win over parameters (`/v1/refunds/search` before `/v1/refunds/:id`).
        bucket.push(r);
        bucket.sort((a, b) => paramCount(a) - paramCount(b));
        bySize.set(r.segments.length, bucket);
      }
    },
    match(method, pathname) {
      const parts = pathname.split('/').filter((s) => s !== '');
      let methodAllowed = false;
      for (const candidate of bySize.get(parts.length) ?? []) {
        const params = matchSegments(candidate.segments, parts);
        if (params === null) continue;
        if (candidate.method === method) return { route: candidate, path: params };
        methodAllowed = true;
      }
      return { route: null, methodAllowed };
    },
  };
}

function paramCount(r: Route): number {
  return r.segments.filter((s) => s.startsWith(':')).length;
}

function matchSegments(pattern: readonly string[], parts: readonly string[]): Record<string, string> | null {
  const params: Record<string, string> = {};
  for (let i = 0; i < pattern.length; i++) {
    const expected = pattern[i] ?? '';
    const actual = parts[i] ?? '';
    if (expected.startsWith(':')) {
      if (literalSegments.has(actual)) return null;
      const decoded = decodePathSegment(actual);
      if (decoded === null) return null;
      params[expected.slice(1)] = decoded;
    }
    else if (expected !== actual) return null;
  }
  return params;
}

/**
 * A segment with a malformed percent escape (`%E0%A4%A`) names no resource, so the path matches no route and is
 * answered with the 404 `Unrecognized request URL` (invalid_request_error), not a 500 from the URIError.
 */
function decodePathSegment(segment: string): string | null {
  try {
    return decodeURIComponent(segment);
  } catch {
    return null;
  }
}
