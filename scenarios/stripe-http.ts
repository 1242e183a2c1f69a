// A small Stripe HTTP client for the scenario harness and the baselines, as the seeds' harness had one: form
// encoding with bracketed keys, Basic auth with the secret key, an optional Idempotency-Key, Stripe's
// `Idempotent-Replayed` header kept on the answer, and an error that carries Stripe's message. It is not the
// gate's Stripe adapter (src/stripe) on purpose: the baselines must not share the gate's code.

export type StripeObject = Record<string, unknown> & { id?: string };

/**
 * The API version every request names: the one the gate's Stripe SDK sends, so the harness reads objects in the shape
 * the gate does. Without it Stripe answers in the account's pinned version, and on an account pinned before
 * 2025-03-31 a subscription's `current_period_end` is not on its items, where the billing scenarios read it.
 */
export const STRIPE_API_VERSION = '2026-10-28.endive';

export class StripeHttpError extends Error {
  readonly status: number;
  readonly code: string | null;
  constructor(status: number, method: string, path: string, message: string, code: string | null) {
    super(`${status} ${method} ${path.replace(/^\/v1/, '')}: ${message}`);
    this.name = 'StripeHttpError';
    this.status = status;
    this.code = code;
  }
}

export type StripeHttp = {
  readonly apiBase: string;
  get(path: string, query?: Record<string, unknown>): Promise<StripeObject>;
  post(path: string, body?: Record<string, unknown>, options?: { idempotencyKey?: string }): Promise<StripeObject & { replayed: boolean }>;
  /** Every item of a list endpoint, following `has_more` (newest first, as Stripe lists). */
  list(path: string, query?: Record<string, unknown>): Promise<StripeObject[]>;
};

/** `a[b][0][c]=v` form encoding, as Stripe takes it; lists become `key[]=v`, booleans the strings true/false. */
export function formEncode(value: Record<string, unknown>): string {
  const pairs: string[] = [];
  const add = (key: string, item: unknown) => {
    if (item === undefined || item === null) return;
    if (Array.isArray(item)) {
      item.forEach((entry, index) => (typeof entry === 'object' && entry !== null ? add(`${key}[${index}]`, entry) : add(`${key}[]`, entry)));
      return;
    }
    if (typeof item === 'object') {
      for (const [inner, nested] of Object.entries(item as Record<string, unknown>)) add(`${key}[${inner}]`, nested);
      return;
    }
    pairs.push(`${encodeURIComponent(key)}=${encodeURIComponent(String(item))}`);
  };
  for (const [key, item] of Object.entries(value)) add(key, item);
  return pairs.join('&');
}

export function createStripeHttp(options: { secretKey: string; apiBase?: string | null; timeoutMs?: number }): StripeHttp {
  const apiBase = (options.apiBase ?? 'https://api.stripe.com').replace(/\/$/, '');
  const auth = `Basic ${Buffer.from(`${options.secretKey}:`).toString('base64')}`;
  const timeoutMs = options.timeoutMs ?? 30_000;

  async function request(method: 'GET' | 'POST', path: string, params: Record<string, unknown>, idempotencyKey?: string): Promise<StripeObject & { replayed: boolean }> {
    const encoded = formEncode(params);
    const url = method === 'GET' && encoded !== '' ? `${apiBase}${path}?${encoded}` : `${apiBase}${path}`;
    const headers: Record<string, string> = { authorization: auth, 'stripe-version': STRIPE_API_VERSION };
    if (method === 'POST') headers['content-type'] = 'application/x-www-form-urlencoded';
    if (idempotencyKey !== undefined) headers['idempotency-key'] = idempotencyKey;
    let response: Response;
    let text: string;
    try {
      response = await fetch(url, { method, headers, ...(method === 'POST' ? { body: encoded } : {}), signal: AbortSignal.timeout(timeoutMs) });
      text = await response.text();
    } catch (error) {
      throw unreachable(error, method, path);
    }
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(text) as Record<string, unknown>;
    } catch {
      throw new StripeHttpError(response.status, method, path, `answer is not JSON: ${text.slice(0, 200)}`, null);
    }
    if (!response.ok) {
      const error = (body.error ?? {}) as { message?: unknown; code?: unknown };
      throw new StripeHttpError(response.status, method, path, typeof error.message === 'string' ? error.message : 'no message', typeof error.code === 'string' ? error.code : null);
    }
    return { ...body, replayed: response.headers.get('idempotent-replayed') === 'true' };
  }

  /** fetch's own error says only 'fetch failed' (the cause is nested) or that it was aborted: say where, what and why. */
  function unreachable(error: unknown, method: string, path: string): Error {
    const timedOut = error instanceof Error && error.name === 'TimeoutError';
    const cause = error instanceof Error ? (error.cause as { code?: unknown; message?: unknown } | undefined) : undefined;
    const why = timedOut ? `no answer within ${timeoutMs / 1000} s` : typeof cause?.code === 'string' ? cause.code : typeof cause?.message === 'string' ? cause.message : error instanceof Error ? error.message : String(error);
    return new Error(`Could not reach Stripe at ${apiBase}: ${method} ${path.replace(/^\/v1/, '')} got ${timedOut ? why : `no answer (${why})`}. Check that this machine reaches it (for test mode: the network, a proxy), or unset STRIPE_SECRET_KEY to run the scenarios against the offline sandbox.`, { cause: error });
  }

  return {
    apiBase,
    get: (path, query = {}) => request('GET', path, query),
    post: (path, body = {}, postOptions = {}) => request('POST', path, body, postOptions.idempotencyKey),
    async list(path, query = {}) {
      const items: StripeObject[] = [];
      let after: string | undefined;
      for (;;) {
        const page = await request('GET', path, { ...query, limit: 100, ...(after === undefined ? {} : { starting_after: after }) });
        const data = Array.isArray(page.data) ? (page.data as StripeObject[]) : [];
        items.push(...data);
        const last = data.at(-1);
        if (page.has_more !== true || last?.id === undefined) return items;
        after = last.id;
      }
    },
  };
}

/** The key and API base a scenario process was given (the harness passes both in its environment). */
export function stripeHttpFromEnv(env: NodeJS.ProcessEnv = process.env): StripeHttp {
  const secretKey = env.STRIPE_SECRET_KEY ?? '';
  if (!/^(sk|rk)_test_/.test(secretKey)) throw new Error('STRIPE_SECRET_KEY must be a test key (sk_test_… or rk_test_…); the scenarios never run live.');
  return createStripeHttp({ secretKey, apiBase: env.STRIPE_API_BASE ?? null });
}
