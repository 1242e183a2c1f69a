// Keys, alerts, recovery and the probes. /healthz says the process is up; /readyz runs the injected checks (Redis
// reachable and durable, queues reachable, Stripe or the sandbox answering), each bounded in time, and answers 503
// naming the ones that failed.
import { durabilityOf, errorMessage, publicKeyPem, type Stores } from '../../src/interlock.js';
import { apiError } from './errors.js';
import { route, type Route } from './route.js';
import { alertsList, alertsQuery, errorAnswer, healthAnswer, keysAnswer, recoverAnswer, recoverBody } from './schemas.js';
import type { ApiContext, ReadinessCheck } from './context.js';

const CHECK_TIMEOUT_MS = 2_000;

/** Redis answers, and is durable or the operator opted out (INTERLOCK_UNSAFE_DURABILITY). */
export function storeChecks(stores: Stores): ReadinessCheck[] {
  return [
    { name: 'redis', check: async () => ({ ok: await stores.ping() }) },
    {
      name: 'redis_durable',
      async check() {
        const durability = await durabilityOf(stores);
        if (durability.durable) return { ok: true };
        return durability.optedOut ? { ok: true, detail: `not durable, opted out: ${durability.problems.join('; ')}` } : { ok: false, detail: durability.problems.join('; ') };
      },
    },
  ];
}

/** The effects queue answers through its own connection (a count of its waiting jobs is one round trip). */
export function queueCheck(queue: { queue: { count(): Promise<number> } }): ReadinessCheck {
  return {
    name: 'queues',
    async check() {
      const waiting = await queue.queue.count();
      return { ok: true, detail: `${waiting} effect job(s) waiting` };
    },
  };
}

async function runCheck(check: ReadinessCheck): Promise<{ name: string; ok: boolean; detail: string | null }> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<{ ok: boolean; detail: string }>((resolve) => {
    timer = setTimeout(() => resolve({ ok: false, detail: `no answer within ${CHECK_TIMEOUT_MS} ms` }), CHECK_TIMEOUT_MS);
  });
  try {
    const answer = await Promise.race([check.check(), timeout]);
    const result = typeof answer === 'boolean' ? { ok: answer } : answer;
    // Secrets in a detail are masked with the rest of the answer (route.ts).
    return { name: check.name, ok: result.ok, detail: 'detail' in result && result.detail !== undefined ? result.detail : null };
  } catch (error) {
    return { name: check.name, ok: false, detail: errorMessage(error) };
  } finally {
    clearTimeout(timer);
  }
}

const common = {
  401: { description: 'No bearer token, or an unknown one.', schema: errorAnswer },
  403: { description: "The token's role may not use this route.", schema: errorAnswer },
  429: { description: "The token's rate limit was reached.", schema: errorAnswer },
};

export function opsRoutes(context: ApiContext): Route[] {
  const { stores } = context;
  return [
    route({
      method: 'get',
      path: '/v1/keys',
      operationId: 'listKeys',
      summary: 'The public keys receipts are signed with, for auditors: the current one, then those retired by a rotation',
      permission: 'readKeys',
      responses: { 200: { description: 'Public keys by key id, the current signing key first.', schema: keysAnswer }, ...common },
      async handle() {
        const keys = [...stores.publicKeys].map(([kid, publicKey]) => ({ kid, pem: publicKeyPem({ publicKey }), status: kid === stores.signingKey.kid ? ('current' as const) : ('retired' as const) }));
        return { status: 200, body: { keys } };
      },
    }),
    route({
      method: 'get',
      path: '/v1/alerts',
      operationId: 'listAlerts',
      summary: 'Money at stake after the send (exposure, a refund that failed after landing, a late landing)',
      permission: 'readAlerts',
      query: alertsQuery,
      responses: { 200: { description: 'Alerts, newest first (by when each was raised); open ones unless all=true. pass `next_starting_after` as `starting_after` for the next page (null on the last).', schema: alertsList }, 400: { description: 'The query is invalid (a starting_after that is not a `next_starting_after` of this list).', schema: errorAnswer }, ...common },
      async handle({ query }) {
        const page = await context.alerts({ all: query.all === 'true', limit: query.limit ?? 100, ...(query.starting_after === undefined ? {} : { cursor: query.starting_after }) });
        return { status: 200, body: { object: 'list', url: '/v1/alerts', data: page.data, has_more: page.next !== null, next_starting_after: page.next } };
      },
    }),
    route({
      method: 'post',
      path: '/v1/recover',
      operationId: 'recover',
      summary: 'Run one recovery pass now (operators)',
      permission: 'recover',
      body: recoverBody,
      optionalBody: true,
      responses: {
        200: { description: "The pass's report: what it settled, what waits and why.", schema: recoverAnswer },
        ...common,
        503: { description: 'This process runs no recovery (`not_available`).', schema: errorAnswer },
      },
      async handle() {
        if (!context.recover) throw apiError('not_available', 'This process runs no effects worker, so it cannot run recovery; call a process started with the worker role.');
        return { status: 200, body: { object: 'recovery', report: await context.recover() } };
      },
    }),
    route({
      method: 'get',
      path: '/healthz',
      operationId: 'health',
      summary: 'The process is up',
      permission: null,
      responses: { 200: { description: 'Up.', schema: healthAnswer } },
      async handle() {
        return { status: 200, body: { status: 'ok' } };
      },
    }),
    route({
      method: 'get',
      path: '/readyz',
      operationId: 'ready',
      summary: 'Ready to take proposals: Redis (durable or opted out), queues and Stripe or the sandbox answer',
      permission: null,
      responses: { 200: { description: 'Every check passed.', schema: healthAnswer }, 503: { description: 'A check failed; `checks` says which.', schema: healthAnswer } },
      async handle({ res }) {
        const checks = await Promise.all(context.readiness.map(runCheck));
        const ready = checks.every((check) => check.ok);
        if (!ready) res.setHeader('Retry-After', '5');
        return { status: ready ? 200 : 503, body: { status: ready ? 'ready' : 'unready', checks } };
      },
    }),
  ];
}
