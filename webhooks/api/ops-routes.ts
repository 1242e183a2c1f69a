// Keys, alerts, recovery and the probes. /healthz says the process is up; /readyz runs the injected checks (Redis
// reachable, taking a write and durable, queues reachable, Stripe or the sandbox answering this process's key), each
// bounded in time, and answers 503 naming the ones that failed. Stripe not answering is advisory (200, status
// `degraded`): see stripeCheck. /readyz answers without a token, so it says which checks failed and why, and nothing
// about a check that passed (see readiness).
import { performance } from 'node:perf_hooks';
import { durabilityOf, errorCode, errorMessage, publicKeyPem, redisTurnedAway, type Stores } from '../../src/interlock.js';
import { apiError } from './errors.js';
import { route, type Route } from './route.js';
import { alertsList, alertsQuery, bodyErrors, DEFAULT_ALERTS_LIMIT, errorAnswer, healthAnswer, keysAnswer, recoverAnswer, recoverBody, recoverQueuedAnswer, redisErrors } from './schemas.js';
import type { ApiContext, ReadinessCheck } from './context.js';

const CHECK_TIMEOUT_MS = 2_000;

/** What a process without the worker role answers a pass with: the job it queued (queues/recovery.ts QueuedPass). */
function isQueuedPass(done: unknown): done is { object: 'recovery_queued'; job_id: string } {
  return typeof done === 'object' && done !== null && 'object' in done && done.object === 'recovery_queued' && 'job_id' in done && typeof done.job_id === 'string';
}

/**
 * Redis answers, takes a write (writeCheck), and is durable or the operator opted out (INTERLOCK_UNSAFE_DURABILITY).
 * Once this process found that Redis lost its data (durabilityOf), it is unready until restarted, opted out or not: it
 * refuses every write then.
 */
export function storeChecks(stores: Stores): ReadinessCheck[] {
  return [
    { name: 'redis', check: async () => ({ ok: await stores.ping() }) },
    writeCheck(() => stores.probeWrite()),
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

/**
 * What to do when Redis turns every write away with one of these (redisTurnedAway): it still answers PING and reads,
 * while POST routes answer 503 redis_unavailable and nothing is recorded or sent. The other refusals (BUSY, LOADING,
 * MASTERDOWN, TRYAGAIN, CLUSTERDOWN) pass by themselves.
 */
const WRITE_REFUSALS: Readonly<Record<string, string>> = {
  OOM: 'its memory is full (used_memory reached maxmemory under maxmemory-policy noeviction): raise maxmemory or free memory (README "Retention" sizes it)',
  MISCONF: "its last save to disk failed (its log says why), and it takes no write until a save succeeds: free the disk, or fix the permissions of Redis's directory",
  READONLY: 'REDIS_URL reaches a read-only replica: point it at the master (after a failover, the new one)',
  NOREPLICAS: 'the master has fewer replicas connected than its min-replicas-to-write: bring the replicas back, or lower that setting',
};

/**
 * Redis takes a write: `probe` writes one small key of this process (Stores.probeWrite). One probe at a time: those
 * asked while one is in flight share its answer, so a Redis that holds writes is never sent a new one each probe.
 */
export function writeCheck(probe: () => Promise<void>): ReadinessCheck {
  let inFlight: Promise<CheckResult> | null = null;
  const ask = async (): Promise<CheckResult> => {
    try {
      await probe();
      return { ok: true };
    } catch (error) {
      const refusal = redisTurnedAway(error);
      if (refusal === null) return { ok: false, detail: `Redis did not take a write: ${errorMessage(error)}` };
      return { ok: false, detail: `Redis turns every write away (${errorMessage(error).replace(/\.$/, '')}), so nothing is recorded or sent: ${WRITE_REFUSALS[refusal] ?? 'this passes by itself'}` };
    }
  };
  return {
    name: 'redis_writable',
    check() {
      inFlight ??= ask().finally(() => {
        inFlight = null;
      });
      return inFlight;
    },
  };
}

/** What a paused queue holds back, by what its jobs are (queueCheck's `what`; the queue's workers' names). */
const PAUSED_MEANS: Readonly<Record<string, string>> = {
  effect: 'proposals are recorded but none is judged or sent',
  effects: 'proposals are recorded but none is judged or sent',
  event: "Stripe's events are taken but none is applied to its receipt",
  facts: "Stripe's events are taken but none is applied to its receipt",
  decisions: 'cases are stored but none is decided',
  recovery: 'only the timed recovery passes run, none of those scheduled between',
};

/**
 * A paused queue (BullMQ Queue.pause: the dashboard's Pause, or a script) as /readyz reports it: advisory, as Stripe
 * not answering is (stripeCheck), since every process shares the queue, and taking them all out of rotation would stop
 * what works without it (revoking an approval, receipts, alerts) while the jobs wait all the same; `degraded` is what
 * an operator alerts on. Someone paused it, and someone must resume it: nothing else tells that its jobs wait.
 */
function pausedAnswer(queue: string, means: string | undefined): CheckResult {
  return { ok: false, advisory: true, detail: `the ${queue} queue is paused (BullMQ Queue.pause: the dashboard's Pause, or a script), so ${means ?? 'its jobs wait and none is run'} until it is resumed (Queue.resume, or the dashboard's Resume) (advisory: it holds every process alike)` };
}

/**
 * A queue this process puts jobs on answers through its own connection (a count of its waiting jobs is one round
 * trip): the effects queue of the api (`queues`), the facts queue of the webhook route (`facts_queue`). The count
 * itself is the business's volume, never part of the answer: the token-guarded interlock_queue_jobs metric has it. A
 * paused queue is reported (pausedAnswer): what is put on it is accepted and then waits.
 */
export function queueCheck(queue: { queue: { count(): Promise<number>; isPaused?(): Promise<boolean> } }, name = 'queues', what = 'effect'): ReadinessCheck {
  return {
    name,
    async check() {
      try {
        await queue.queue.count();
        if ((await queue.queue.isPaused?.()) === true) return pausedAnswer(what, PAUSED_MEANS[what]);
        return { ok: true };
      } catch (error) {
        return { ok: false, detail: `the ${what} queue does not answer through this process's connection (${errorMessage(error)}), so nothing is put on it` };
      }
    },
  };
}

/** How long one answer of Stripe stands for /readyz: probes every few seconds (compose: 5 s) cost Stripe one read a window. */
const STRIPE_FRESH_MS = 15_000;
/** Below CHECK_TIMEOUT_MS, so a Stripe that does not answer is reported as such (advisory), not as a check that hung. */
const STRIPE_PROBE_TIMEOUT_MS = 1_500;

type CheckResult = { ok: boolean; detail?: string; advisory?: boolean };

/**
 * Stripe (or the sandbox) answering this process's key, asked at most once per `freshMs` (concurrent probes share
 * the one read in flight), each read bounded by `timeoutMs`. A key Stripe refuses, or an API base that serves no
 * Stripe API (its server answers, and not as Stripe: a 2xx, 3xx or 4xx but 429 without Stripe's shape, such as another
 * service's HTML 404 page; probeStripe), is this process's own misconfiguration: it makes the process unready, so a
 * rollout with a wrong key or API base stops there. Stripe not answering (down, slow, a 5xx, a proxy's 5xx page in
 * front of it included, rate limited, nothing listening at STRIPE_API_BASE) is reported but advisory: every process
 * of the deployment meets it alike, so taking them all out of rotation (or failing the compose healthcheck the
 * workers wait on) would add to the outage everything that works without Stripe (revoking an approval, the inbox,
 * receipts, alerts, Stripe's own webhooks), while proposals already answer 503 premise_read_failed with a
 * Retry-After.
 */
export function stripeCheck(probe: (timeoutMs: number) => Promise<void>, options: { freshMs?: number; timeoutMs?: number } = {}): ReadinessCheck {
  const freshMs = options.freshMs ?? STRIPE_FRESH_MS;
  const timeoutMs = options.timeoutMs ?? STRIPE_PROBE_TIMEOUT_MS;
  let last: { at: number; result: CheckResult } | null = null;
  let inFlight: Promise<CheckResult> | null = null;
  const ask = async (): Promise<CheckResult> => {
    try {
      await probe(timeoutMs);
      return { ok: true };
    } catch (error) {
      // Secrets in a detail are masked with the rest of the answer (route.ts).
      if (errorCode(error) === 'target_unavailable') return { ok: false, advisory: true, detail: `${errorMessage(error)} (advisory: a Stripe outage does not make this process unready; proposals answer 503 premise_read_failed meanwhile)` };
      return { ok: false, detail: errorMessage(error) };
    }
  };
  return {
    name: 'stripe',
    async check() {
      if (last !== null && performance.now() - last.at < freshMs) return last.result;
      inFlight ??= ask().then((result) => {
        last = { at: performance.now(), result };
        inFlight = null;
        return result;
      });
      return inFlight;
    },
  };
}

async function runCheck(check: ReadinessCheck): Promise<{ name: string; ok: boolean; detail: string | null; advisory?: true }> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<{ ok: boolean; detail: string }>((resolve) => {
    timer = setTimeout(() => resolve({ ok: false, detail: `no answer within ${CHECK_TIMEOUT_MS} ms` }), CHECK_TIMEOUT_MS);
  });
  try {
    const answer = await Promise.race([check.check(), timeout]);
    const result: CheckResult = typeof answer === 'boolean' ? { ok: answer } : answer;
    // A check that passed says only that: its detail (Redis's persistence settings when durability is opted out, a
    // worker id) is no reason for the answer and is not told to a caller without a token. Secrets in a failed check's
    // detail are masked with the rest of the answer (route.ts).
    return { name: check.name, ok: result.ok, detail: result.ok ? null : (result.detail ?? null), ...(!result.ok && result.advisory === true ? { advisory: true as const } : {}) };
  } catch (error) {
    return { name: check.name, ok: false, detail: errorMessage(error) };
  } finally {
    clearTimeout(timer);
  }
}

export type ReadinessAnswer = { status: 200 | 503; body: { status: 'ready' | 'degraded' | 'unready'; checks: Awaited<ReturnType<typeof runCheck>>[] } };

/**
 * The answer of a /readyz (the api's, and the metrics listener's of a worker), which anyone may ask: every check run
 * at once, each bounded in time; 200 `ready`, 200 `degraded` when only advisory checks failed, 503 `unready`
 * otherwise. A failed check says why (what the operator needs to act on); one that passed carries `detail: null`.
 * Not yet masked: the caller masks secrets in it as it sends it.
 */
export async function readiness(checks: readonly ReadinessCheck[]): Promise<ReadinessAnswer> {
  const results = await Promise.all(checks.map(runCheck));
  const ready = results.every((check) => check.ok || check.advisory === true);
  return { status: ready ? 200 : 503, body: { status: ready ? (results.every((check) => check.ok) ? 'ready' : 'degraded') : 'unready', checks: results } };
}

/**
 * A BullMQ worker as /readyz asks it: whether it runs, and its own Redis connection (not the stores'), an ioredis
 * client behind BullMQ's narrower interface, which has no PING.
 */
export type ProbedWorker = { isRunning(): boolean; readonly backend: { readonly client: Promise<unknown>; hasQueueMetaField?(field: string): Promise<boolean> } };

/**
 * What a worker process adds to /readyz: its sender's heartbeat is current (another worker takes over the effects of
 * one whose heartbeat lapsed, and a worker superseded under its id sends nothing), and each of its queue workers
 * (effects, facts, decisions, recovery) runs and answers through its own connection: jobs reach a worker only through
 * that one, which can be down while the stores' connection (the other checks') is up. `heartbeat` is null in a
 * process that sends nothing.
 */
export function workerChecks(parts: { heartbeat: { aliveFor(): number; supersededBy(): string | null; workerId: string; ttlMs: number } | null; workers: readonly { name: string; worker: ProbedWorker }[] }): ReadinessCheck[] {
  const { heartbeat } = parts;
  const checks: ReadinessCheck[] = [];
  if (heartbeat !== null) {
    checks.push({
      name: 'heartbeat',
      async check() {
        if (heartbeat.supersededBy() !== null) return { ok: false, detail: `another process beats under worker id ${heartbeat.workerId}, so this one sends nothing: give every worker its own INTERLOCK_WORKER_ID` };
        if (heartbeat.aliveFor() > 0) return { ok: true, detail: `worker ${heartbeat.workerId}` };
        return { ok: false, detail: `worker ${heartbeat.workerId} has not renewed its heartbeat within ${heartbeat.ttlMs} ms (Redis did not take it), so other workers may take over its effects` };
      },
    });
  }
  for (const { name, worker } of parts.workers) {
    checks.push({
      name: `${name}_worker`,
      async check() {
        if (!worker.isRunning()) return { ok: false, detail: `the ${name} worker is not taking jobs (it is starting, stopping, or stopped after an error the log names)` };
        try {
          await ((await worker.backend.client) as { ping(): Promise<unknown> }).ping();
          // A running worker of a paused queue takes none of its jobs (BullMQ keeps `paused` in the queue's meta hash).
          if ((await worker.backend.hasQueueMetaField?.('paused')) === true) return pausedAnswer(name, PAUSED_MEANS[name]);
          return { ok: true };
        } catch (error) {
          return { ok: false, detail: `the ${name} worker's own Redis connection does not answer (${errorMessage(error)}), so it takes no jobs` };
        }
      },
    });
  }
  return checks;
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
      responses: { 200: { description: 'Alerts, newest first (by when each was raised); open ones unless all=true. pass `next_starting_after` as `starting_after` for the next page (null on the last).', schema: alertsList }, 400: { description: 'The query is invalid (a starting_after that is not a `next_starting_after` of this list).', schema: errorAnswer }, ...common, ...redisErrors },
      async handle({ query }) {
        const page = await context.alerts({ all: query.all === 'true', limit: query.limit ?? DEFAULT_ALERTS_LIMIT, ...(query.starting_after === undefined ? {} : { cursor: query.starting_after }) });
        return { status: 200, body: { object: 'list', url: '/v1/alerts', data: page.data, has_more: page.next !== null, next_starting_after: page.next } };
      },
    }),
    route({
      method: 'post',
      path: '/v1/recover',
      operationId: 'recover',
      summary: 'Run one recovery pass now (operators): here when this process has the worker role, else on a worker process',
      permission: 'recover',
      body: recoverBody,
      optionalBody: true,
      responses: {
        200: { description: "This process has the worker role and ran the pass: its report, what it settled, what waits and why.", schema: recoverAnswer },
        202: { description: "This process has no worker role (docker compose's `api`): a pass job was added to the recovery queue, and the first worker process free runs it (none running: it waits for one). Its report is in that worker's log, under `job_id`, and in its interlock_recovery_* metrics.", schema: recoverQueuedAnswer },
        400: { description: 'The body is not valid JSON, or not an empty object (`invalid_request`); no pass was run.', schema: errorAnswer },
        ...common,
        ...bodyErrors,
        503: { description: 'This process neither runs recovery nor queues a pass (an app built without `recover`), or is stopping (`not_available`), Redis is not durable now (`redis_not_durable`), or Redis is down or did not answer in time (`redis_unavailable`); run it again once Redis answers.', schema: errorAnswer },
      },
      async handle() {
        if (!context.recover) throw apiError('not_available', 'This process runs no effects worker, so it cannot run recovery; call a process started with the worker role.');
        const done = await context.recover();
        if (isQueuedPass(done)) return { status: 202, body: { ...done, sentence: `A recovery pass was queued as job ${done.job_id}: this process has no worker role, so a worker process runs it (it waits while none runs). That worker logs what it settled under this job id, and counts it in interlock_recovery_passes_total.` } };
        return { status: 200, body: { object: 'recovery', report: done } };
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
      summary: 'Ready to serve: Redis answers and takes a write (durable or opted out), the queues answer, and Stripe takes this process\'s key; Stripe not answering is reported (`degraded`), not unready',
      permission: null,
      responses: {
        200: { description: 'Every check passed (`ready`), or only advisory ones failed (`degraded`: Stripe or the sandbox does not answer now, so proposals answer 503 premise_read_failed; `checks` says why).', schema: healthAnswer },
        503: { description: 'A check failed (`unready`): Redis, a write it turns away (full memory, a failed save, a replica), its durability (or the data this process found Redis lost, until it is restarted), the queues, or a key Stripe refuses or an API base that serves no Stripe API; `checks` says which.', schema: healthAnswer },
      },
      async handle({ res }) {
        const answer = await readiness(context.readiness);
        if (answer.status !== 200) res.setHeader('Retry-After', '5');
        return answer;
      },
    }),
  ];
}
