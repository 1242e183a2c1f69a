// The composition root: the `interlock` program with every command. src/cli has the commands that need only src/;
// this file adds the ones that run the outer layers (queues/, webhooks/, the sandbox) and wires them together:
// `serve` (the one long-running command, by roles), `refund` and `credit` (propose through the queue), `recover`
// and `reconcile` (one pass each). `npm start` runs `serve` with every role.
import type { Command } from 'commander';
import { accessSync, closeSync, constants as fsConstants, existsSync, fstatSync, readFileSync, statSync, type Stats } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { join, resolve } from 'node:path';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { constants as osConstants } from 'node:os';
import type { Express } from 'express';
import {
  caseScope,
  isFinalCase,
  checkFourEyes,
  unusableApproval,
  tokensFileExposure,
  createDecider,
  createFacts,
  createWebhookVerifier,
  stripeKeyMode,
  effectIdFor,
  errorMessage,
  exitOnCrash,
  isLocalApiBase,
  registerLocalWebhook,
  removeLeftWebhooks,
  type LeftWebhooks,
  assertMetricsAddrFree,
  loadConfig,
  dataDirOf,
  STOP_MARGIN_MS,
  loadDeciderConfig,
  caseSubmissionOf,
  CASE_ID,
  openStores,
  checkKeySettings,
  closeConnection,
  parseProposal,
  redactSecrets,
  reservedRequestProblem,
  shownSetting,
  shownUrl,
  ProposalError,
  StripeUnavailable,
  requireDurableIntake,
  enterWithKey,
  startSender,
  defaultWorkerId,
  stripeSide,
  CREDIT_FACTS,
  FACT_EVENTS,
  REFUND_FACTS,
  type Config,
  type Effect,
  type LocalWebhook,
  type Sender,
  type Stores,
  type StripeSide,
  unknownSettings,
  unknownSettingSentence,
  withinRedisTimeout,
  LONGEST_RECONCILE_SINCE_MS,
  warnIfUnboundedMemory,
} from './interlock.js';
import { createProgram, runProgram, StoppedBySignal } from './cli/program.js';
import { conflictAnswer, describeEffect, EXIT_REFUSED, EXIT_UNSETTLED, exitFor, exitForMoney, exitForRecovery, exitForShown, warnIfJournalDoesNotVerify } from './cli/effect-command.js';
import { CliFailure, EXIT_BAD_INPUT, EXIT_FAILED, duration, wholeNumber } from './cli/failure.js';
import { REDIS_URL_ADVICE, SERVICE_FILE, fellBackNote, redisUrlFromService, signerOfService, whereLooked, withStores } from './cli/stores.js';
import { interlockCommand, shellWord, startLine } from './cli/command-lines.js';
import { tokenLines } from './cli/token-lines.js';
import { secretHint } from './core/redact.js';
import { mixedScriptProblem } from './core/text.js';
import { printJson, printProblem, whenOutputLost } from './cli/output.js';
import { addInboxCommands } from './cli/inbox-command.js';
import { pathMeaning } from './cli/path-problems.js';
import { keyFilePath } from './keys/key-store.js';
import { makeDirectory, openRegularFile, readAtMost, writableByOthers, writeFileWhole } from './files.js';
import type { CaseView, StripeLinks } from '../webhooks/app.js';
import type { ReadinessCheck } from '../webhooks/api/context.js';
import type { ProbedWorker } from '../webhooks/api/ops-routes.js';
import { loadOrCreateLocalTokens, loadTokenRegistry, localToken, tokensFileOf, type TokenRegistry } from '../webhooks/api/tokens.js';
import { addSandboxCommand } from '../sandbox/cli.js';
import { probeStripe } from './stripe/index.js';
import type { Sandbox } from '../sandbox/index.js';
import { freePort, processRuns, processStartTicks, startPrivateRedis, type PrivateRedis } from './redis/private-server.js';
import { clusterModeProblem, notRedisProtocol } from './redis/client.js';

/** The process that started this one, read before anything else runs (a scenario run watches that it stays). */
const STARTED_BY = process.ppid;

/**
 * The outer layers (queues/, webhooks/, express), loaded by the commands that run them: express, bull-board,
 * prom-client and the BullMQ workers are about a third of the program's start-up, and most commands need none.
 */
async function outerLayers() {
  const [decisions, effects, recovery, facts, route, app, ops] = await Promise.all([
    import('../queues/decisions.js'),
    import('../queues/effects.js'),
    import('../queues/recovery.js'),
    import('../queues/facts.js'),
    import('../webhooks/stripe-route.js'),
    import('../webhooks/app.js'),
    import('../webhooks/ops/metrics.js'),
  ]);
  return { ...decisions, ...effects, ...recovery, ...facts, ...route, ...app, replicaChecks: ops.replicaChecks };
}

export const ROLES = ['worker', 'webhooks', 'facts', 'api'] as const;

/** The signals that stop `serve`: a stop, Ctrl-C, a closed terminal. */
const STOP_SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP'] as const;
export type Role = (typeof ROLES)[number];

function parseRoles(text: string): Role[] {
  const given = text.split(',').map((role) => role.trim()).filter((role) => role !== '');
  const unknown = given.filter((role) => !(ROLES as readonly string[]).includes(role));
  if (given.length === 0 || unknown.length > 0) throw new CliFailure(`--roles takes a comma-separated list of ${ROLES.join(', ')}${unknown.length > 0 ? `; "${unknown.join('", "')}" is not one` : ''}.`, EXIT_BAD_INPUT);
  return [...new Set(given)] as Role[];
}

type Closer = { name: string; close: () => Promise<void> };

export type Service = {
  roles: Role[];
  /** The HTTP address when the webhooks or api role runs. */
  url: string | null;
  /** The tokenless metrics listener's URL (INTERLOCK_METRICS_ADDR), or null. */
  metricsUrl: string | null;
  stores: Stores;
  sender: Sender | null;
  /** The generated API tokens (when INTERLOCK_API_TOKENS is unset and the api role runs). */
  tokensFile: string | null;
  /** Stops taking work, lets sends in progress finish within their deadline, settles and closes, in that order. */
  close(): Promise<void>;
  /** The part close() is waiting on (a worker, a queue, the stores), or null when it is not running. */
  closing(): string | null;
};

/** Starts the roles in one process. Throws (having closed what it opened) when a role cannot start. */
/** Whether a process with these roles takes the HTTP port (INTERLOCK_HOST and INTERLOCK_PORT). */
function listensForHttp(roles: readonly Role[]): boolean {
  return roles.includes('api') || roles.includes('webhooks');
}

export async function startService(config: Config, roles: readonly Role[]): Promise<Service> {
  assertMetricsAddrFree(config, listensForHttp(roles));
  // Before the service's client connects: a cluster client on a server that is no cluster would find no slot map, and a
  // server that took the connection and answered nothing (rediss:// at a plain Redis) would be waited on again.
  const clusterMismatch = await clusterModeProblem(config, shownUrl(config.redisUrl));
  if (clusterMismatch !== null) throw new CliFailure(clusterMismatch, EXIT_BAD_INPUT);
  const { createApp, createWebhookOnlyApp, createDecisionsQueue, createEffectsQueue, createFactsQueue, createMetrics, loadApiLimits, metricsApp, openOpsQueues, queueCheck, replicaChecks, startDecisionsWorker, startEffectsWorker, startFactsWorker, startReconciler, startRecovery, createRecoveryRequests, storeChecks, stripeCheck, stripeWebhookRouter, workerChecks } = await outerLayers();
  const stores = await openStores(config);
  const { logger } = stores;
  await warnIfUnboundedMemory(stores);
  // The queue connections the start opens. One whose queue or worker was never made (its BullMQ constructor threw)
  // has no closer, and would hold the process of a failed start open for as long as Redis answers.
  const opened: ReturnType<Stores['queueConnection']>[] = [];
  const openQueueConnection = stores.queueConnection.bind(stores);
  stores.queueConnection = () => {
    const connection = openQueueConnection();
    opened.push(connection);
    return connection;
  };
  for (const unknown of unknownSettings(process.env)) logger.warn({ variable: unknown.variable, nearest: unknown.nearest }, unknownSettingSentence(unknown));
  // Closed in reverse order of starting (the workers, the sender, the stores), after the HTTP listeners: their
  // ports are taken before anything else starts (a start refused on one sends nothing), yet what they take in (a
  // proposal, a case, a recovery pass) goes through the queues and stores, so they stop taking requests, and finish
  // the ones in progress, before any of those closes.
  const closers: Closer[] = [{ name: 'stores', close: () => stores.close() }];
  const listeners: Closer[] = [];
  let closing: string | null = null;
  const closeAll = async () => {
    for (const closer of [...listeners.splice(0), ...closers.reverse()]) {
      closing = closer.name;
      const started = performance.now();
      await closer.close().catch((error: unknown) => logger.error({ err: error, part: closer.name }, 'could not close cleanly'));
      logger.debug({ part: closer.name, ms: Math.round(performance.now() - started) }, 'closed');
    }
    closing = null;
  };
  try {
    const why = await stores.unreachable();
    if (why !== null) {
      // A server that answers but is no Redis (an HTTP server on that port) is said so, not in the client's words.
      const foreign = notRedisProtocol(why);
      throw new CliFailure(foreign === null ? `Cannot reach Redis at ${shownUrl(config.redisUrl)} (${redactSecrets(why)}). ${REDIS_URL_ADVICE}` : `Cannot reach Redis at ${shownUrl(config.redisUrl)}: ${foreign}. Check the host and port of REDIS_URL: they should name the port Redis listens on (6379 unless it was set otherwise).`, EXIT_BAD_INPUT);
    }
    const needsStripe = roles.includes('worker') || roles.includes('facts');
    const stripe: StripeSide | null = needsStripe ? stripeSide(config) : null;
    // Every setting that can still be refused is read, and the HTTP port taken, before any worker or recovery starts:
    // a start that fails on its configuration must not have settled or sent anything first.
    const deciderConfig = roles.includes('worker') ? loadDeciderConfig(process.env) : null;
    const verifyEvent = roles.includes('webhooks') ? createWebhookVerifier(config.stripeWebhookSecrets, { mode: stripeKeyMode(config) }) : null;
    // A process that takes webhooks or requests answers that they are stored: without a worker here to check
    // Redis at its start, it checks before it listens.
    // What it answers as stored is refused again whenever Redis stops keeping it (the monitor of the worker here, or this one).
    // A facts-only process checks the same way, since it records facts: it holds the deployment marker too, so once
    // Redis lost its data its probes say so and its facts worker and reconciler record nothing more.
    let intake: Awaited<ReturnType<typeof requireDurableIntake>> | null = null;
    // Every role signs entries (a proposal, a commit, a fact): none of them with another deployment's key.
    await enterWithKey(stores);
    if (!roles.includes('worker')) {
      const monitor = await requireDurableIntake(stores);
      closers.push({ name: 'durability monitor', close: () => monitor.stop() });
      intake = monitor;
    }
    const http = roles.includes('webhooks') || roles.includes('api') ? await listen(httpServer(startingUp), config.host, config.port, '--port or INTERLOCK_PORT') : null;
    if (http !== null) listeners.push({ name: 'http', close: () => closeServer(http) });
    let tokens: TokenRegistry | null = null;
    let tokensFile: string | null = null;
    const limits = roles.includes('api') ? loadApiLimits(process.env) : null;
    if (roles.includes('api')) {
      if (config.apiTokens !== null) {
        tokens = loadTokenRegistry(config.apiTokens);
        const file = tokensFileOf(config.apiTokens);
        const exposure = file === null ? null : tokensFileExposure(file);
        if (exposure !== null) logger.warn({ file, mode: exposure.mode }, exposure.message);
      } else {
        const local = loadOrCreateLocalTokens(config.dataDir);
        tokens = local.registry;
        tokensFile = local.file;
        logger.info({ file: local.file, created: local.created, callers: tokens.callers() }, 'INTERLOCK_API_TOKENS is not set: using the local tokens in the data directory');
        if (local.exposure !== null) logger.warn({ file: local.file, mode: local.exposure.mode }, local.exposure.message);
      }
    }
    // One facts applier for the facts role and for the sender, which re-reads the facts of an effect that settles
    // after a dispute came for its payment while it was in flight (src/facts/apply.ts says why).
    const facts = stripe === null ? null : createFacts(stores, stripe.reader);
    // One metrics registry for the process, fed by every role it runs, served by its api role (GET /metrics, with a
    // token) and on INTERLOCK_METRICS_ADDR (no token; a worker process has no other way to be scraped).
    const serving = roles.includes('api') || config.metricsAddr !== null;
    const opsQueues = serving ? openOpsQueues(stores) : null;
    if (opsQueues !== null) closers.push({ name: 'ops queues', close: () => opsQueues.close() });
    const metrics = serving ? createMetrics({ stores, queues: opsQueues }) : null;
    let metricsUrl: string | null = null;
    // What the metrics listener's /readyz runs once every role has started (before that it answers `starting`).
    let readinessHere: ReadinessCheck[] | null = null;
    if (metrics !== null && config.metricsAddr !== null) {
      const metricsServer = await listen(httpServer(metricsApp(metrics, logger, { checks: () => readinessHere, hosts: config.metricsHosts })), config.metricsAddr.host, config.metricsAddr.port, 'INTERLOCK_METRICS_ADDR');
      listeners.push({ name: 'metrics listener', close: () => closeServer(metricsServer) });
      metricsUrl = `${urlOf(metricsServer)}/metrics`;
    }
    // Stripe taking this process's key, asked at most every 15 s, for both probes of the process.
    const stripeReadiness = stripe === null ? null : stripeCheck((timeoutMs) => probeStripe(stripe.client, timeoutMs));
    // The queue workers of this process, and the queues it puts jobs on, for the metrics listener's /readyz.
    const workersHere: { name: string; worker: ProbedWorker }[] = [];
    const queuesHere: ReadinessCheck[] = [];
    let sender: Sender | null = null;
    // An operator's pass (POST /v1/recover) runs through recovery, which waits for it when it closes.
    let recoverNow: (() => Promise<unknown>) | null = null;
    if (roles.includes('worker') && stripe !== null && deciderConfig !== null) {
      const started = await startSender(stores, stripe.target, { ...(facts ? { facts } : {}), ...(metrics ? { events: metrics.gateEvents } : {}) });
      sender = started;
      intake = started.durabilityMonitor;
      closers.push({ name: 'sender', close: () => started.close() });
      // Proposals made here: cases decided by this worker, and re-approvals a stopped process closed and never proposed.
      const proposals = createEffectsQueue(stores);
      closers.push({ name: 'effects queue (decisions)', close: () => proposals.close() });
      // Cases a submission stored and stopped before queuing, queued by the recovery passes.
      const unqueuedCases = createDecisionsQueue(stores);
      closers.push({ name: 'decisions queue (recovery)', close: () => unqueuedCases.close() });
      const recovery = startRecovery(stores, started, { safetyIntervalMs: config.recoveryIntervalMs, reapprovals: { propose: (proposal, how) => proposals.propose(proposal, how) }, requeue: (effectId) => proposals.requeue(effectId), requeueCases: () => unqueuedCases.requeueUnqueued(), ...(metrics ? { onReport: (report) => void metrics.recoveryReported(report) } : {}) });
      closers.push({ name: 'recovery', close: () => recovery.close() });
      recoverNow = () => recovery.pass();
      const worker = startEffectsWorker(stores, started, { concurrency: config.concurrency, ratePerSecond: config.stripeRatePerSecond, rateLimitBackoffMs: config.rateLimitBackoffMs, transientRetry: { maxDelayMs: config.retryMaxDelayMs, forMs: config.retryForMs }, ...(metrics ? { onAnswer: (answer) => metrics.effectAnswered(answer) } : {}) });
      closers.push({ name: 'effects worker', close: () => worker.close() });
      workersHere.push({ name: 'effects', worker: worker.worker }, { name: 'recovery', worker: recovery.worker });
      // Cases are decided here too: the decider reads the facts through the same target the sends use.
      const decider = deciderConfig;
      const target = stripe.target;
      const decisions = startDecisionsWorker(stores, {
        decider: createDecider(decider),
        effects: proposals,
        readFacts: (effect, names, context) => target.readFacts(context.effectId, effect, names, { timeoutMs: context.timeoutMs }),
        premises: { refund: REFUND_FACTS, credit: CREDIT_FACTS },
        // The seam for telling a person: a deviated case is recorded (GET /v1/cases/:id) and logged here.
        onDeviation: (record) => {
          logger.warn({ caseId: record.submission.caseId, approval: record.submission.approval, problems: record.status.problems }, 'a case needs a person: MODEL_DEVIATED');
          metrics?.caseDeviated();
        },
        ...(metrics ? { onFailed: (_caseId: string, code: string) => metrics.caseFailed(code) } : {}),
      });
      closers.push({ name: 'decisions worker', close: () => decisions.close() });
      workersHere.push({ name: 'decisions', worker: decisions.worker });
      logger.info({ decider: decider.apiKey === null ? 'rules' : 'anthropic', model: decider.apiKey === null ? 'rules' : decider.model }, 'deciding cases');
    }
    if (roles.includes('facts') && facts !== null) {
      const factsWorker = startFactsWorker(stores, facts, { lockMs: config.factsLockMs, ...(intake ? { durability: intake } : {}), ...(metrics ? { onApplied: (event, applied) => metrics.factsApplied(event, applied), onNotDurable: () => metrics.redisNotDurable('facts') } : {}) });
      closers.push({ name: 'facts worker', close: () => factsWorker.close() });
      workersHere.push({ name: 'facts', worker: factsWorker.worker });
      metrics?.reconcilerStarted();
      const reconciler = startReconciler(stores, facts, { intervalMs: config.reconcileIntervalMs, horizonMs: config.reconcileHorizonMs, ...(intake ? { durability: intake } : {}), ...(metrics ? { onPass: (report, finishedAt) => metrics.reconciled(report, finishedAt) } : {}) });
      closers.push({ name: 'reconciler', close: () => reconciler.close() });
    }
    // With INTERLOCK_REDIS_MIN_REPLICAS, both probes count the replicas of every Redis master (replicaChecks).
    const monitor = intake;
    const replicasReady = monitor === null ? [] : replicaChecks({ required: config.redisMinReplicas, waitMs: config.redisWaitMs, replicas: () => monitor.replicas() });
    // The queues the HTTP roles put jobs on, opened before the process's checks are listed, since those ask them too.
    let mount: ((app: Express) => void) | undefined;
    if (verifyEvent !== null) {
      const factsQueue = createFactsQueue(stores);
      closers.push({ name: 'facts queue', close: () => factsQueue.close() });
      queuesHere.push(queueCheck(factsQueue, 'facts_queue', 'event'));
      mount = (app) => app.use(stripeWebhookRouter({ verify: verifyEvent, logger, accept: (event) => {
            // Answered 200, Stripe never sends the event again: it is taken only while Redis keeps what it is given.
            intake?.assertDurable();
            return factsQueue.accept(event);
          }, ...(metrics ? { onOutcome: (outcome, detail) => metrics.webhookOutcome(outcome, detail) } : {}) }));
    }
    let api: { tokens: TokenRegistry; limits: NonNullable<typeof limits>; stripe: StripeSide; effects: ReturnType<typeof createEffectsQueue>; decisions: ReturnType<typeof createDecisionsQueue>; checks: ReadinessCheck[] } | null = null;
    if (tokens !== null && limits !== null) {
      const apiStripe = stripe ?? stripeSide(config);
      const effects = createEffectsQueue(stores);
      closers.push({ name: 'effects queue', close: () => effects.close() });
      queuesHere.push(queueCheck(effects));
      const decisions = createDecisionsQueue(stores);
      closers.push({ name: 'decisions queue', close: () => decisions.close() });
      // Stripe as this process reads it for proposals; asked at most every 15 s, however often /readyz is probed.
      const checks = [...storeChecks(stores), ...replicasReady, queueCheck(effects), stripeReadiness ?? stripeCheck((timeoutMs) => probeStripe(apiStripe.client, timeoutMs))];
      api = { tokens, limits, stripe: apiStripe, effects, decisions, checks };
      // An API without the worker role (compose's `api`) has no recovery of its own: an operator's pass is queued for
      // the worker processes' recovery, which runs it and logs its report (POST /v1/recover answers 202).
      if (recoverNow === null) {
        const requests = createRecoveryRequests(stores);
        closers.push({ name: 'recovery queue (operator passes)', close: () => requests.close() });
        recoverNow = () => requests.request();
      }
    }
    // What the metrics listener's /readyz runs once every role has started, and the API port's too in a process that
    // runs the worker or facts role: one list, so the two probes of such a process agree. A `serve` with its default
    // roles (npm start, the image's CMD) has only its API port to probe, and one whose worker another process superseded
    // under its INTERLOCK_WORKER_ID, or whose heartbeat lapsed, sends nothing: it must leave rotation there too.
    const checksHere = [...storeChecks(stores), ...replicasReady, ...workerChecks({ heartbeat: sender?.heartbeat ?? null, workers: workersHere }), ...queuesHere, ...(stripeReadiness === null ? [] : [stripeReadiness])];
    let url: string | null = null;
    if (http !== null) {
      let app: Express;
      if (api !== null) {
        const apiStripe = api.stripe;
        app = createApp({
          stores,
          effects: api.effects,
          decisions: api.decisions,
          readFacts: (effect, names, context) => apiStripe.target.readFacts(context.effectId, effect, names, { timeoutMs: context.timeoutMs }),
          premises: { refund: REFUND_FACTS, credit: CREDIT_FACTS },
          tokens: api.tokens,
          logger,
          alerts: (query) => stores.alerts.page(query),
          ...(recoverNow === null ? {} : { recover: recoverNow }),
          readiness: roles.includes('worker') || roles.includes('facts') ? checksHere : api.checks,
          limits: api.limits,
          ...(mount === undefined ? {} : { mount }),
          ...(metrics ? { metrics } : {}),
          ...(opsQueues ? { queues: opsQueues } : {}),
          ui: { links: stripeLinks(config) },
          ...(intake === null ? {} : { intake }),
        });
      } else {
        // The webhook route alone (a process that only takes Stripe's events): no tokens, no support API.
        app = createWebhookOnlyApp({ logger, mount, health: () => ({ ok: true, roles }) });
      }
      http.off('request', startingUp);
      http.on('request', app);
      url = urlOf(http);
    }
    readinessHere = checksHere;
    // The key ids, so the processes of one deployment can be compared: each should sign with the same key.
    const retiredKids = [...stores.publicKeys.keys()].filter((kid) => kid !== stores.signingKey.kid);
    logger.info({ roles, url, metrics: metricsUrl ?? undefined, concurrency: roles.includes('worker') ? config.concurrency : undefined, kid: stores.signingKey.kid, retiredKids }, 'interlock serving');
    stores.queueConnection = openQueueConnection;
    return { roles: [...roles], url, metricsUrl, tokensFile, stores, sender, close: closeAll, closing: () => closing };
  } catch (error) {
    await closeAll();
    // Those their closers closed are ended already; the rest are dropped, since the start is given up.
    await Promise.all(opened.map((connection) => closeConnection(connection, { drop: true })));
    throw error;
  }
}

/** Where the page links Stripe ids: the sandbox's API when the service talks to one, else the dashboard of the key's mode. */
function stripeLinks(config: Config): StripeLinks {
  if (config.stripeApiBase !== null) return { kind: 'sandbox', baseUrl: config.stripeApiBase };
  return { kind: 'dashboard', mode: /^(?:sk|rk)_live_/.test(config.stripeSecretKey ?? '') ? 'live' : 'test' };
}

/** What the HTTP port answers while the service starts (it is taken before the workers, and served once they run). */
function startingUp(_request: IncomingMessage, response: ServerResponse): void {
  response.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1', connection: 'close' });
  response.end(`${JSON.stringify({ error: { code: 'starting', message: 'The service is starting; try again in a moment.' } })}\n`);
}

/**
 * How long a client may take to send a whole request (headers and body). Stripe posts an event in one write and `stripe
 * listen` gives up on a forward after 30 s; an API request is a few KB. A body still trickling in after that comes from
 * no real sender, and Node's default (300 s) let anyone hold connections open on the tokenless webhook route.
 */
export const REQUEST_READ_TIMEOUT_MS = 30_000;

/** An HTTP server for the service's listeners: a request not received whole within `readTimeoutMs` is answered 408 and closed. */
export function httpServer(listener: (req: IncomingMessage, res: ServerResponse) => void, readTimeoutMs = REQUEST_READ_TIMEOUT_MS): Server {
  // Node looks for requests past their time every connectionsCheckingInterval (30 s by default, which would double it).
  return createServer({ requestTimeout: readTimeoutMs, headersTimeout: readTimeoutMs, connectionsCheckingInterval: Math.min(1_000, readTimeoutMs) }, listener);
}

function listen(server: Server, host: string, port: number, setting: string): Promise<Server> {
  return new Promise((resolve, reject) => {
    // The host as given only when it looks like one: a swapped line of an env file can put a secret in INTERLOCK_HOST.
    const shown = shownSetting(host);
    const failed = (error: NodeJS.ErrnoException) => {
      const refused = (sentence: string) => reject(new CliFailure(`${sentence}, so the service did not start. ${error.code === 'EACCES' || error.code === 'EADDRINUSE' ? `Choose another port with ${setting} (0 picks a free one)` : `Correct the address (${setting === 'INTERLOCK_METRICS_ADDR' ? setting : 'INTERLOCK_HOST'})`}.`, EXIT_BAD_INPUT, { cause: error }));
      switch (error.code) {
        case 'EADDRINUSE':
          return refused(`${shown}:${port} is in use by another program`);
        case 'EACCES':
          return refused(`${shown}:${port} needs privileges this process does not have (ports below 1024 do)`);
        case 'EADDRNOTAVAIL':
          return refused(`${shown} is not an address of this machine`);
        case 'ENOTFOUND':
        case 'EAI_AGAIN':
          return refused(`${shown} does not resolve to an address (${error.code})`);
        default:
          return reject(error);
      }
    };
    server.once('error', failed);
    server.listen(port, host, () => {
      server.off('error', failed);
      resolve(server);
    });
  });
}

function urlOf(server: Server): string {
  const address = server.address() as AddressInfo;
  return `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
}

/** How long after a stopping signal the same signal is taken as that stop again (npm forwarding Ctrl-C), in ms. */
const SAME_STOP_MS = 1_000;

/** How long requests in progress may run once the service stops; then the connections still open are cut. */
const HTTP_DRAIN_MS = 5_000;

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    // A client that keeps its connection busy (the sandbox or `stripe listen` delivering events, a load balancer's
    // pool) never leaves it idle, so close() alone would wait for ever: from now on every answer closes its
    // connection, idle ones close at once, and whatever is still open after the drain is cut. A webhook cut this way
    // was not answered, so Stripe delivers it again.
    server.prependListener('request', (_request, response) => {
      response.setHeader('connection', 'close');
    });
    const cut = setTimeout(() => server.closeAllConnections(), HTTP_DRAIN_MS);
    cut.unref();
    server.close(() => {
      clearTimeout(cut);
      resolve();
    });
    server.closeIdleConnections();
  });
}

/**
 * A STRIPE_API_BASE set without STRIPE_SECRET_KEY: the embedded sandbox would start at an address of its own and the
 * one given would go unused, so a start whose roles call Stripe is refused instead (the webhooks role alone does not).
 */
function assertKeyForApiBase(config: Config, roles: readonly Role[]): void {
  if (config.stripeApiBase === null || config.stripeSecretKey !== null || !roles.some((role) => role !== 'webhooks')) return;
  throw new CliFailure(`STRIPE_API_BASE is set but STRIPE_SECRET_KEY is not: set the key too (${SANDBOX_KEY} for a sandbox), or unset STRIPE_API_BASE to have serve start a sandbox of its own.`, EXIT_BAD_INPUT);
}

/**
 * The data directory (the signing key, the generated tokens, service.json and the private Redis live there), made
 * before anything starts: a path that cannot be one is refused naming INTERLOCK_DATA_DIR, not as a file under it.
 */
function prepareDataDir(dataDir: string): void {
  let stats: Stats;
  try {
    makeDirectory(dataDir, 0o700);
    accessSync(dataDir, fsConstants.W_OK | fsConstants.X_OK);
    stats = statSync(dataDir);
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    throw new CliFailure(`The data directory ${dataDir} (INTERLOCK_DATA_DIR) cannot be used: ${pathMeaning(error) ?? errorMessage(error)}${typeof code === 'string' ? ` (${code})` : ''}. Set INTERLOCK_DATA_DIR to a directory this user can write.`, EXIT_BAD_INPUT, { cause: error });
  }
  // An existing directory is taken as it is found: one that others may write could hold their API tokens, a signing
  // key of theirs for the next start, or a service.json sending commands to their Redis.
  const others = writableByOthers(stats);
  if (others !== null) {
    throw new CliFailure(`The data directory ${dataDir} (INTERLOCK_DATA_DIR) cannot be used: ${others}, and it holds the API tokens, the signing key and service.json. Nothing was started. Use a directory only this user may write (\`chmod 700 ${dataDir}\` when it is yours), or set INTERLOCK_DATA_DIR to another.`, EXIT_BAD_INPUT);
  }
}

/** What `serve` started on its own because the setting was absent (issue 11 §3): closed after the service. */
/** `moved`: the default ports this start found taken and left, in words (the start-up lines say so). */
type Embedded = { redis: PrivateRedis | null; sandbox: Sandbox | null; moved: string[]; close(): Promise<void> };

/** The interface other processes on this machine reach the service on. */
function reachableHost(host: string): string {
  return host === '0.0.0.0' || host === '::' || host === '' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
}

/**
 * Embedded defaults: no REDIS_URL starts a private, durable redis-server under the data directory; no
 * STRIPE_SECRET_KEY starts the Stripe sandbox in this process, with the service's webhook registered as its
 * forwarding target (signed with its own secret, as `stripe listen` does).
 */
async function embeddedDefaults(config: Config, env: NodeJS.ProcessEnv, roles: readonly Role[], portChosen: boolean): Promise<{ config: Config; embedded: Embedded }> {
  let resolved = config;
  let redis: PrivateRedis | null = null;
  let sandbox: Sandbox | null = null;
  const moved: string[] = [];
  const close = async () => {
    await sandbox?.close().catch(() => undefined);
    await redis?.stop();
  };
  try {
    if ((env.REDIS_URL ?? '').trim() === '') {
      // A serve killed before it could stop its redis-server left it running: its service.json names it, and its
      // writer no longer runs (a running writer is joined before this point).
      const left = usableServiceFile(join(config.dataDir, SERVICE_FILE));
      const orphanOf = left !== null && runningWriter(left) === null && typeof left.facts.redis_url === 'string' ? left.facts.redis_url : null;
      redis = await startPrivateRedis(config.dataDir, { orphanOf, maxmemory: config.redisMaxmemory });
      resolved = { ...resolved, redisUrl: redis.url };
    }
    // The default port taken by another program: a free one instead (the lines printed at start name it). A port the
    // operator chose (INTERLOCK_PORT, --port) is kept, and a taken one fails the start.
    if (!portChosen && roles.some((role) => role === 'api' || role === 'webhooks') && !(await portIsFree(resolved.host, resolved.port))) {
      const free = await freePort();
      moved.push(`port ${resolved.port} was taken, so the API listens on ${free}`);
      resolved = { ...resolved, port: free };
    }
    const needsStripe = roles.some((role) => role !== 'webhooks');
    if (resolved.stripeSecretKey === null && needsStripe) {
      const port = resolved.port === 0 ? await freePort() : resolved.port;
      const [{ startSandbox }, sandboxLog, { newWebhookSecret }] = await Promise.all([import('../sandbox/index.js'), import('../sandbox/core/log.js'), import('../sandbox/core/ids.js')]);
      const forwardTo = `http://${reachableHost(resolved.host)}:${port}/webhooks/stripe`;
      // It logs at the service's level, as loadConfig read it (the sandbox alone would read the variable raw).
      const logger = sandboxLog.createLogger(resolved.logLevel);
      // One secret for the sandbox's own deliveries and for every `stripe listen` session dialing it: the README's
      // sandbox line, run against this sandbox, forwards events the route takes (else each session signs with a
      // random secret of its own, which no setting can name).
      const webhookSecret = newWebhookSecret();
      const options = { host: '127.0.0.1', delays: 'stripe', forwardTo, webhookSecret, listenSecret: webhookSecret, logger } as const;
      // The sandbox's usual port when it is free, so the printed commands stay the same from one start to the next.
      sandbox = await startSandbox({ port: SANDBOX_PORT, ...options }).catch(() => startSandbox({ port: 0, ...options }));
      if (new URL(sandbox.url).port !== String(SANDBOX_PORT)) moved.push(`the sandbox's port ${SANDBOX_PORT} was taken, so it is at ${sandbox.url}`);
      // The sandbox's secret first (printed, and in service.json), then every STRIPE_WEBHOOK_SECRET given, which
      // still holds: an endpoint or a `stripe listen` signing with one of those is taken too.
      const given = resolved.stripeWebhookSecrets.filter((secret) => secret !== webhookSecret);
      resolved = { ...resolved, port, stripeSecretKey: SANDBOX_KEY, stripeApiBase: sandbox.url, stripeWebhookSecrets: [webhookSecret, ...given] };
    }
  } catch (error) {
    await close();
    throw error;
  }
  return { config: resolved, embedded: { redis, sandbox, moved, close } };
}

type ServiceFacts = { pid?: unknown; pid_start_ticks?: unknown; roles?: unknown; api_pid?: unknown; api_pid_start_ticks?: unknown; redis_url?: unknown; redis_cluster?: unknown; key_prefix?: unknown; stripe_api_base?: unknown; stripe_secret_key?: unknown; sandbox_embedded?: unknown; signing_kid?: unknown; signing_key_file?: unknown; retired_public_keys_file?: unknown; stopped_at?: unknown; tokens?: unknown };

/** A service.json as its writer left it, and when it was written (its mtime, ms since the epoch). */
type ServiceFile = { facts: ServiceFacts; writtenMs: number };

/** More than any service.json `serve` writes (a few KiB): a larger file, or a FIFO, is not read, so never hangs a command. */
const SERVICE_FILE_MAX_BYTES = 1024 * 1024;

/**
 * The type each field commands follow must have, as `serve` writes it (null where it writes null). `redis_url` and
 * `key_prefix` are always written: a file without them names no service.
 */
const SERVICE_FIELDS: ReadonlyArray<readonly [keyof ServiceFacts, 'string' | 'number' | 'boolean', 'required' | 'optional' | 'nullable']> = [
  ['redis_url', 'string', 'required'],
  ['key_prefix', 'string', 'required'],
  ['pid', 'number', 'optional'],
  ['pid_start_ticks', 'string', 'nullable'],
  ['redis_cluster', 'boolean', 'optional'],
  ['stripe_api_base', 'string', 'nullable'],
  ['stripe_secret_key', 'string', 'nullable'],
  ['sandbox_embedded', 'boolean', 'optional'],
  ['signing_kid', 'string', 'optional'],
  ['signing_key_file', 'string', 'nullable'],
  ['retired_public_keys_file', 'string', 'nullable'],
  ['stopped_at', 'string', 'optional'],
];

/** What a JSON value is, in words ("null", "an array", "a number"). */
function jsonKind(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/**
 * A service.json as its writer left it: null when there is none; `unusable` saying why when one is there but cannot be
 * followed (empty or cut short, as a crash or a full disk left a file written in place, not JSON, not an object, a
 * field of the wrong type, or not readable at all), so a command never takes it for no file and uses another Redis.
 */
function readServiceFile(file: string): ServiceFile | { unusable: string } | null {
  let text: string;
  let writtenMs: number;
  try {
    // The time and the text of one file: a serve may put a new one in place between two reads by name.
    const { fd, size } = openRegularFile(file, SERVICE_FILE_MAX_BYTES, 'a service.json');
    try {
      writtenMs = fstatSync(fd).mtimeMs;
      text = readAtMost(fd, size, SERVICE_FILE_MAX_BYTES, 'a service.json');
    } finally {
      closeSync(fd);
    }
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    return { unusable: `it cannot be read: ${pathMeaning(error) ?? errorMessage(error)}${typeof code === 'string' ? ` (${code})` : ''}` };
  }
  if (text.trim() === '') return { unusable: `it is empty (${Buffer.byteLength(text)} bytes)` };
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    return { unusable: `it is not JSON, or is cut short (${errorMessage(error)})` };
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return { unusable: `it holds ${jsonKind(parsed)}, not an object` };
  const facts = parsed as ServiceFacts;
  for (const [field, type, presence] of SERVICE_FIELDS) {
    const value = facts[field];
    if (value === undefined && presence !== 'required') continue;
    if (value === null && presence === 'nullable') continue;
    if (value === undefined) return { unusable: `it names no ${field}` };
    if (typeof value !== type) return { unusable: `its ${field} is ${jsonKind(value)}, not a ${type}` };
  }
  return { facts, writtenMs };
}

/** The service.json to follow, or null when there is none or it cannot be used (the callers that start a service, which writes it anew). */
/** Whether a service.json's `tokens` (role -> token) are exactly `tokens`. */
function sameTokens(recorded: unknown, tokens: Readonly<Record<string, string>>): boolean {
  if (typeof recorded !== 'object' || recorded === null) return false;
  const entries = Object.entries(tokens);
  return entries.length > 0 && entries.length === Object.keys(recorded).length && entries.every(([role, token]) => (recorded as Record<string, unknown>)[role] === token);
}

function usableServiceFile(file: string): ServiceFile | null {
  const read = readServiceFile(file);
  return read === null || 'unusable' in read ? null : read;
}

/** Clock ticks per second in /proc's counts (USER_HZ): 100 on every Linux architecture Node runs on. */
const PROC_TICKS_PER_SECOND = 100;

/**
 * How far the wall clock may have been stepped forward since a service.json was written, in ms, before a live writer
 * of a file that records no start (written before it did) would look as if it started after writing it.
 */
const CLOCK_STEP_MARGIN_MS = 60_000;

/** When this machine booted, ms since the epoch, as /proc/stat says (Linux); null where it cannot be read. */
function bootTimeMs(): number | null {
  try {
    const btime = /^btime (\d+)$/m.exec(readFileSync('/proc/stat', 'utf8'))?.[1];
    return btime === undefined ? null : Number(btime) * 1000;
  } catch {
    return null;
  }
}

/**
 * Whether the process now running under the pid a service.json names may be the one that wrote it. A pid given since to
 * another process (the service killed, then the machine or a container started again) is not: one whose start is not
 * the one the file records (`pid_start_ticks`, clock ticks since boot as /proc counts them), or, in a file that records
 * none, one that started after the file was written. Where /proc cannot tell (macOS), the pid running is all there is.
 */
function mayBeWriter(pid: number, { facts, writtenMs }: ServiceFile): boolean {
  const started = processStartTicks(pid);
  if (started === null) return true;
  if (typeof facts.pid_start_ticks === 'string') return started === facts.pid_start_ticks;
  const bootMs = bootTimeMs();
  if (bootMs === null) return true;
  return bootMs + (Number(started) * 1000) / PROC_TICKS_PER_SECOND <= writtenMs + CLOCK_STEP_MARGIN_MS;
}

/**
 * The pid of the process that wrote a service.json, when that process may still be it: one that stopped cleanly
 * marked the file (`stopped_at`), and a file naming this very process was left by an earlier one that had the same
 * pid (a container's first process is always pid 1), so neither is a running service, whatever now runs under it;
 * nor is a process that started otherwise than the file's writer did (mayBeWriter).
 */
function runningWriter(service: ServiceFile | null): number | null {
  const pid = service?.facts.pid;
  if (service === null || typeof pid !== 'number' || pid === process.pid || service.facts.stopped_at !== undefined || !processRuns(pid)) return null;
  return mayBeWriter(pid, service) ? pid : null;
}

/**
 * Writes <dataDir>/service.json whole or not at all (a crash or a full disk mid-write leaves the file as it was, and a
 * command reading it meanwhile reads one or the other), 0600: it holds the API tokens.
 */
function writeServiceFile(file: string, facts: Record<string, unknown>): void {
  writeFileWhole(file, `${JSON.stringify(facts, null, 2)}\n`, { replace: true, mode: 0o600 });
}

/**
 * Marks this process's service.json stopped, once it stopped cleanly: commands and the next start no longer take it for
 * a running service. An API that added itself to another writer's file (announce) takes its address out again, since
 * that writer still runs.
 */
function markStopped(file: string): void {
  const facts = usableServiceFile(file)?.facts;
  if (facts?.pid === process.pid) writeServiceFile(file, { ...facts, stopped_at: new Date().toISOString() });
  else if (facts?.api_pid === process.pid) writeServiceFile(file, { ...facts, api_pid: null, api_url: null, page_url: null });
}

/** The roles the writer of a service.json named (none in a file written before it named them). */
function rolesOf(facts: ServiceFacts): readonly unknown[] {
  return Array.isArray(facts.roles) ? facts.roles : [];
}

/** Whether the API that added itself to a service.json (announce) still runs: another API leaves the file to it. */
function apiRuns(facts: ServiceFacts): boolean {
  const pid = facts.api_pid;
  if (typeof pid !== 'number' || pid === process.pid || !processRuns(pid)) return false;
  const started = processStartTicks(pid);
  return started === null || typeof facts.api_pid_start_ticks !== 'string' || started === facts.api_pid_start_ticks;
}

function portIsFree(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createNetServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, host, () => probe.close(() => resolve(true)));
  });
}

/** The key the CLI uses against the embedded sandbox (it takes any test key). */
const SANDBOX_KEY = 'sk_test_sandbox';
const SANDBOX_PORT = 12111;

/**
 * The `stripe listen` line that forwards the events the facts worker acts on to the route: against Stripe test mode,
 * or against a sandbox (`--api-base`, which the CLI takes only as a loopback IP, never `localhost`): one on this host,
 * or one reached under another name with the sandbox's key (compose's `http://sandbox:12111`, whose port is published
 * on the host's loopback). Run through `npx`: `npm ci` installs the official CLI (@stripe/cli) into node_modules, not
 * onto the PATH.
 */
function listenLine(webhookUrl: string, stripeApiBase: string | null, stripeSecretKey: string | null): string {
  const events = `--events ${FACT_EVENTS.join(',')}`;
  const sandboxKey = stripeSecretKey === SANDBOX_KEY;
  if (stripeApiBase === null || !(isLocalApiBase(stripeApiBase) || sandboxKey)) return `npx stripe listen --forward-to ${webhookUrl} ${events}`;
  const base = new URL(stripeApiBase);
  // The sandbox takes any test key: its own (printed, it is no secret), or the one this process was given (never printed).
  const key = sandboxKey ? SANDBOX_KEY : '"$STRIPE_SECRET_KEY"';
  return `npx stripe listen --api-base http://127.0.0.1:${base.port === '' ? '80' : base.port} --api-key ${key} --skip-update --forward-to ${webhookUrl} ${events}`;
}

/**
 * The three commands a newcomer pastes: a test payment, an approval for $20 of it, the gated refund with its receipt.
 * The commands find the service through <dataDir>/service.json, so a data directory other than the default is set
 * on them: run from the same directory, they reach this service. `sandboxKey`: the key is a sandbox's (no secret),
 * printed and written into service.json; any other key is neither, so the payment line takes it from the other
 * terminal's environment and says so there when it is not exported (rather than paying with none: PI=undefined).
 */
function tryCommands(stripeApiBase: string | null, sandboxKey: boolean, dataDir: string): string[] {
  const base = stripeApiBase ?? 'https://api.stripe.com';
  const key = sandboxKey ? SANDBOX_KEY : '"${STRIPE_SECRET_KEY:?export STRIPE_SECRET_KEY, the key this service was started with, in this terminal first}"';
  const interlock = interlockCommand(dataDir);
  return [
    `PI=$(curl -s -u ${key}: ${base}/v1/payment_intents -d amount=5000 -d currency=usd -d payment_method=pm_card_visa -d confirm=true | node -pe 'const a = require("fs").readFileSync(0, "utf8"); let p = {}; try { p = JSON.parse(a) } catch {} p.id || (console.error(a ? \`No payment: \${a}\` : "No payment made."), process.exit(1))')`,
    `${interlock} approvals grant --id "ap_$PI" --approver you@example.com --cap-cents 2000 --scope "payment:$PI"`,
    `${interlock} refund --request "case-$PI" --payment-intent "$PI" --amount 2000 --approval "ap_$PI" --reason "arrived damaged" --wait 15`,
  ];
}

/**
 * Whether the operator chose the HTTP port (`serve --port`, or INTERLOCK_PORT set): a chosen port that is taken fails
 * the start, while the default moves to a free one. A blank INTERLOCK_PORT is unset, as loadConfig reads it.
 */
export function portChosen(flag: number | undefined, env: NodeJS.ProcessEnv): boolean {
  return flag !== undefined || (env.INTERLOCK_PORT ?? '').trim() !== '';
}

/**
 * Runs until SIGTERM, SIGINT or SIGHUP. The first signal stops taking work and waits for sends in progress (each ends
 * within its send deadline) before closing; a second signal exits at once, and recovery settles what was left (one
 * within SAME_STOP_MS of the first is the same stop, delivered twice).
 * A stop still running past the send deadline plus STOP_MARGIN_MS is waiting on something that will not answer (a
 * Redis that hangs holds every close that needs it): the process says what it was closing and exits with 1, as a
 * second signal would.
 */
async function serveUntilSignalled(given: Config, roles: Role[], portChosen: boolean): Promise<void> {
  // What can fail comes first: a key setting that stops the start stops it before a redis-server or a sandbox runs.
  assertKeyForApiBase(given, roles);
  checkKeySettings(given);
  assertMetricsAddrFree(given, listensForHttp(roles));
  prepareDataDir(given.dataDir);
  // A signal before the stop below is in place ends the start at once. Exiting, rather than being ended by the
  // signal, runs the exit handlers, which stop a private redis-server already started: it runs in a process group of
  // its own, so Ctrl-C never reaches it, and a process a signal ends runs none (the next start found it still serving
  // and refused to start). Anything already taken is settled by recovery, as after a crash.
  const duringStart = (signal: NodeJS.Signals) => {
    process.stderr.write(`${signal} while starting: stopped before the service was up.\n`);
    process.exit(128 + (osConstants.signals[signal] ?? 0));
  };
  for (const signal of STOP_SIGNALS) process.on(signal, duringStart);
  const defaults = await embeddedDefaults(given, process.env, roles, portChosen);
  const { embedded } = defaults;
  let config = defaults.config;
  let registered: LocalWebhook | null = null;
  let leftBehind: LeftWebhooks = { removed: [], kept: [] };
  if (roles.includes('webhooks') && config.stripeWebhookSecrets.length === 0) {
    if (config.port === 0) config = { ...config, port: await freePort() };
    // A port this start chose (the configured one was taken, or 0 was asked for) is not the next start's: the advice
    // fixes it, or the listener it gives would forward to a port nothing listens on.
    const portMoved = config.port !== given.port;
    const portAdvice = portMoved ? ` and INTERLOCK_PORT to ${config.port} (${given.port === 0 ? 'port 0 picks another at every start' : `port ${given.port} was taken`}: this start chose ${config.port}, and the next would choose another)` : '';
    const webhookUrl = `http://${reachableHost(config.host)}:${config.port}/webhooks/stripe`;
    // As refusals print it: a secret put in INTERLOCK_HOST by mistake (a swapped env-file line) is not shown.
    const shownWebhookUrl = `http://${shownSetting(reachableHost(config.host))}:${config.port}/webhooks/stripe`;
    if (config.stripeSecretKey === null || !isLocalApiBase(config.stripeApiBase)) {
      await embedded.close();
      throw new CliFailure(`The webhooks role needs STRIPE_WEBHOOK_SECRET against Stripe. Run \`${listenLine(shownWebhookUrl, config.stripeApiBase, config.stripeSecretKey)}\` and set STRIPE_WEBHOOK_SECRET to the whsec_… it prints (or to the endpoint's secret from the dashboard)${portAdvice}, or leave webhooks out of --roles.`, EXIT_BAD_INPUT);
    }
    // A sandbox of our own (STRIPE_API_BASE on this machine): register the route as its endpoint, with its secret,
    // after deleting the endpoints an earlier start left there for the same URL (see removeLeftWebhooks).
    try {
      const client = stripeSide({ ...config, crashAt: null }).client;
      if (await portIsFree(config.host, config.port)) leftBehind = await removeLeftWebhooks(client, webhookUrl);
      registered = await registerLocalWebhook(client, webhookUrl, FACT_EVENTS);
    } catch (error) {
      await embedded.close();
      throw new CliFailure(`STRIPE_WEBHOOK_SECRET is unset and the webhook endpoint could not be registered at the sandbox ${config.stripeApiBase ?? ''} (${errorMessage(error)}). Start the sandbox, or set STRIPE_WEBHOOK_SECRET to the secret \`${listenLine(shownWebhookUrl, config.stripeApiBase, config.stripeSecretKey)} --print-secret\` prints.`, EXIT_BAD_INPUT);
    }
    config = { ...config, stripeWebhookSecrets: [registered.secret] };
  }
  const unregister = async () => {
    await registered?.remove().catch(() => undefined);
  };
  let service: Service;
  try {
    service = await startService(config, roles);
  } catch (error) {
    await unregister();
    await embedded.close();
    throw error;
  }
  const { logger } = service.stores;
  exitOnCrash(logger);
  if (leftBehind.removed.length > 0) logger.info({ removed: leftBehind.removed }, `deleted ${leftBehind.removed.length} webhook endpoint(s) at the sandbox for this route's URL that an earlier start registered and never deleted (it was killed before it could); their secrets died with it, and every event they delivered was answered 400 bad_signature`);
  if (leftBehind.kept.length > 0) logger.warn({ kept: leftBehind.kept }, `could not delete the webhook endpoint(s) ${leftBehind.kept.join(', ')} at the sandbox, which an earlier start registered for this route's URL: the route answers their deliveries 400 bad_signature until they are deleted (DELETE ${config.stripeApiBase ?? ''}/v1/webhook_endpoints/<id>, with the sandbox's key)`);
  embedded.redis?.onExit((sentence) => logger.error(sentence));
  const serviceFile = announce(config, service, embedded, registered);
  await new Promise<void>((resolve) => {
    let stopping = false;
    let echoes = false;
    const onSignal = (signal: NodeJS.Signals) => {
      // Ctrl-C reaches every process of the terminal's group, and `npm start` forwards the one it got to this
      // process too: a signal that soon after the first is that same stop, not a second one.
      if (echoes) return;
      if (stopping) {
        logger.warn({ signal }, 'second signal: exiting now; recovery settles what was in flight');
        process.exit(130);
      }
      stopping = true;
      echoes = true;
      setTimeout(() => {
        echoes = false;
      }, SAME_STOP_MS).unref();
      const boundMs = config.sendTimeoutMs + STOP_MARGIN_MS;
      logger.info({ signal, boundMs }, 'stopping: no new jobs; sends in progress finish within their deadline');
      // Unref'd: a stop that ends, and leaves nothing open, ends the process before it fires.
      let closed = false;
      // What the part named waits on: Redis, and for the facts worker also the Stripe reads of the facts jobs it runs.
      const waitingFor = (part: string): string => {
        if (part === 'facts worker') return "a facts job's reads at Stripe, each within its read timeout, or Redis: are both answering?";
        // A stop does not wait for a reconciliation pass's Stripe reads (queues/facts.ts): what is left is Redis.
        if (part === 'reconciler') return 'recording in Redis where its reconciliation pass got to, its Stripe reads not waited for: is Redis answering?';
        return 'is Redis answering?';
      };
      const overdue = setTimeout(() => {
        const part = closed ? 'connections Redis never let close' : (service.closing() ?? 'the embedded services');
        logger.error({ part, boundMs }, `stopping took longer than ${boundMs} ms, waiting on ${part} (${waitingFor(part)}): exiting now; recovery settles what was in flight`);
        process.exit(1);
      }, boundMs);
      overdue.unref();
      service
        .close()
        .then(unregister)
        .then(() => embedded.close())
        .then(() => {
          if (serviceFile !== null) markStopped(serviceFile);
        })
        .then(resolve, (error: unknown) => {
          logger.error({ err: error }, 'shutdown failed');
          resolve();
        })
        .finally(() => {
          closed = true;
        });
    };
    // SIGHUP, a closed terminal: Node's default would end the process at once, leaving an embedded redis-server running.
    for (const signal of STOP_SIGNALS) {
      process.off(signal, duringStart);
      process.on(signal, onSignal);
    }
  });
  logger.info('stopped');
}

/** The start-up lines on stdout, and the same facts in <dataDir>/service.json (0600) for scripts: the file, when this process wrote it. */
function announce(config: Config, service: Service, embedded: Embedded, registered: LocalWebhook | null): string | null {
  const webhookUrl = service.url === null || !service.roles.includes('webhooks') ? null : `${service.url}/webhooks/stripe`;
  const tokens: Record<string, string> = {};
  if (service.tokensFile !== null) {
    for (const role of ['support', 'approver', 'auditor', 'operator'] as const) {
      const token = localToken(service.tokensFile, role);
      if (token !== null) tokens[role] = token;
    }
  }
  const sandbox = embedded.sandbox !== null;
  // A sandbox this process did not start: a running `npm start`'s (given through service.json), `npx interlock
  // sandbox`'s, or compose's. Its key is no secret either: printed, and in service.json, as the embedded one's.
  const otherSandbox = !sandbox && config.stripeSecretKey === SANDBOX_KEY && config.stripeApiBase !== null;
  const tryable = config.stripeApiBase === null || isLocalApiBase(config.stripeApiBase);
  const commands = tryable ? tryCommands(config.stripeApiBase, sandbox || otherSandbox, config.dataDir) : [];
  const facts = {
    pid: process.pid,
    // When this process started (clock ticks since boot, where /proc tells): the pid, once given to another process, is not this service.
    pid_start_ticks: processStartTicks(process.pid),
    roles: service.roles,
    api_url: service.roles.includes('api') ? service.url : null,
    page_url: service.roles.includes('api') && service.url !== null ? `${service.url}/ui` : null,
    metrics_url: service.metricsUrl,
    webhook_url: webhookUrl,
    webhook_secret: sandbox || registered !== null ? (config.stripeWebhookSecrets[0] ?? null) : null,
    stripe_api_base: config.stripeApiBase,
    stripe_secret_key: sandbox || otherSandbox ? SANDBOX_KEY : null,
    // Whether that sandbox ran inside this process (it stops with it) or on its own.
    sandbox_embedded: sandbox,
    // The key this service signs with, and its file: a command writing into its journal signs with that key, never
    // with one of its own (its entries would read as signed by an unknown key on the service's receipts).
    signing_kid: service.stores.signingKey.kid,
    signing_key_file: resolve(keyFilePath(config)),
    // The public halves of the keys it signed with before a rotation: a command beside it checks receipts as it does.
    retired_public_keys_file: config.retiredPublicKeysFile === null ? null : resolve(config.retiredPublicKeysFile),
    // The Redis and key prefix every command must use to reach this service, its private Redis or the one it was
    // given (the file is 0600, beside the tokens and the signing key).
    redis_url: config.redisUrl,
    // Whether that Redis is a node of a Redis Cluster: a command that takes the URL takes this with it (every command
    // checks INTERLOCK_REDIS_CLUSTER against the server before it reads or writes).
    redis_cluster: config.redisCluster,
    key_prefix: config.keyPrefix,
    tokens,
    try: commands,
  };
  makeDirectory(config.dataDir, 0o700);
  const file = join(config.dataDir, SERVICE_FILE);
  // A process that joined a running service (one more worker, or one more API) leaves that service's file alone: it
  // names the private Redis and the sandbox every command finds the service through. An API of its own takes the
  // file when no service that wrote it still runs.
  const current = usableServiceFile(file);
  const writer = runningWriter(current);
  const owns = embedded.redis !== null || embedded.sandbox !== null || !existsSync(file) || (service.roles.includes('api') && writer === null);
  // An API that joined a running writer without the api role (a webhooks-only process started first) adds what
  // scripts need to reach it (the README's `….tokens.support`), leaving the writer's facts, its pid first, as they
  // are: that writer still marks the file stopped, and its private Redis is still found through it. One API only: a
  // second one joining leaves the first's while it runs.
  const joinsAsApi = !owns && current !== null && writer !== null && service.roles.includes('api') && !rolesOf(current.facts).includes('api') && !apiRuns(current.facts);
  if (owns) writeServiceFile(file, facts);
  else if (joinsAsApi) writeServiceFile(file, { ...current.facts, api_pid: process.pid, api_pid_start_ticks: facts.pid_start_ticks, api_url: facts.api_url, page_url: facts.page_url, tokens: facts.tokens, try: facts.try });
  const names = owns || joinsAsApi;
  const lines = [`Interlock for Stripe is running (${service.roles.join(', ')}; pid ${process.pid}).`];
  if (facts.api_url !== null) lines.push(`  API       ${facts.api_url}   (routes: ${facts.api_url}/v1/openapi.json)`);
  if (facts.api_url !== null) lines.push(`  Page      ${facts.api_url}/ui   (sign in with a token; operators: ${facts.api_url}/admin/queues, ${facts.api_url}/metrics)`);
  // The README's commands use the default ports: a start that could not have them says which to use instead.
  if (embedded.moved.length > 0) lines.push(`  Ports     ${embedded.moved.join('; ')}: use these addresses where the README shows 127.0.0.1:3000 or :12111`);
  if (service.metricsUrl !== null) lines.push(`  Metrics   ${service.metricsUrl}   (no token: INTERLOCK_METRICS_ADDR)`);
  if (webhookUrl !== null) {
    // Who delivers here: the embedded sandbox or an endpoint registered at one, or `stripe listen` (whose secret must be set).
    const delivered = sandbox ? 'the sandbox delivers here' : registered !== null ? `registered at the sandbox as ${registered.id}` : null;
    const listen = listenLine(webhookUrl, config.stripeApiBase, config.stripeSecretKey);
    // The embedded sandbox signs the CLI's sessions with the route's own secret; another sandbox gives each its own.
    const cliSecret = sandbox ? 'it signs with the same secret' : 'with STRIPE_WEBHOOK_SECRET set to the whsec_… it prints';
    service.stores.logger.info({ webhookUrl, delivered, listen }, delivered === null ? `webhook route ready: forward Stripe's events with \`${listen}\`` : `webhook route ready (${delivered}); to forward with the real CLI instead: \`${listen}\`, ${cliSecret}`);
    // Its secret signs events the route takes as Stripe's: printed whole only to a terminal, as the tokens are
    // (tokenLines); a pipe, a file or a container's log gets its hint and where the whole one is kept.
    const secret = config.stripeWebhookSecrets[0] ?? '';
    const whole = owns ? `the whole secret is webhook_secret in ${file}` : 'the whole secret is printed only to a terminal';
    const signed = (by: string) => (process.stdout.isTTY === true ? `signed with ${secret} (${by})` : `signed with ${secretHint(secret)} (${by}; ${whole})`);
    lines.push(`  Webhook   ${webhookUrl}   ${delivered === null ? `forward Stripe's events to it: ${listen}` : signed(delivered)}`);
    if (delivered !== null) lines.push(`            or with the Stripe CLI (${cliSecret}): ${listen}`);
  }
  const links = stripeLinks(config);
  const live = links.kind === 'dashboard' && links.mode === 'live';
  const stripe = sandbox ? `the offline sandbox at ${config.stripeApiBase} (STRIPE_SECRET_KEY is unset)` : otherSandbox ? `the offline sandbox at ${config.stripeApiBase}` : config.stripeApiBase !== null ? `Stripe at ${config.stripeApiBase}` : live ? 'Stripe LIVE mode: refunds and credits move real money (INTERLOCK_ALLOW_LIVE=1)' : 'Stripe test mode';
  lines.push(`  Stripe    ${stripe}`);
  lines.push(`  Redis     ${embedded.redis === null ? shownUrl(config.redisUrl) : `a private redis-server (append-only, fsync always) in ${embedded.redis.dir}, at ${shownUrl(config.redisUrl)}`}`);
  // A process that joined a running one names that one's service.json too when it holds the same tokens (it reads them
  // from the same tokens file), so its lines off a terminal say where they are as the first process's do.
  const tokensIn = names || sameTokens(usableServiceFile(file)?.facts.tokens, tokens) ? file : null;
  if (service.tokensFile !== null) lines.push(...tokenLines(tokens, service.tokensFile, tokensIn, config.dataDir, process.stdout.isTTY === true));
  if (names) lines.push(`  For scripts: ${file}`);
  // The first steps pay with a test card: nothing to try with real money. They reach Stripe as this process does, so
  // they are printed only where that address is one another terminal reaches too (not compose's `sandbox:12111`).
  // A key that is not the sandbox's is never printed nor kept in service.json: the other terminal needs it exported,
  // with the API base it goes to (commands take the service's only with its key).
  const exported = config.stripeApiBase === null ? 'STRIPE_SECRET_KEY' : `STRIPE_SECRET_KEY and STRIPE_API_BASE=${config.stripeApiBase}`;
  const keyNeeded = sandbox || otherSandbox ? '' : ` (with ${exported} exported there: the payment and the refund are made with it)`;
  if (facts.api_url !== null && !live && tryable) lines.push('', `Try it, from this directory in another terminal${keyNeeded}:`, ...commands.map((command) => `  ${command}`));
  if (facts.api_url !== null && !live && !tryable) {
    const where = config.stripeSecretKey === SANDBOX_KEY ? `the sandbox is at ${config.stripeApiBase ?? ''}` : `Stripe is reached at ${config.stripeApiBase ?? ''}`;
    lines.push('', `Try it: ${where} from here, a name other hosts may not know; under docker compose, the README's Compose section has the steps (its port is published on 127.0.0.1).`);
  }
  process.stdout.write(`${lines.join('\n')}\n`);
  return names ? file : null;
}

/**
 * Commands find a running `npm start` through <dataDir>/service.json when REDIS_URL or STRIPE_SECRET_KEY are
 * unset: its Redis (private or given) with its key prefix and cluster setting, and its sandbox. A second `serve` joins it only while it runs (e.g. one more worker).
 */
function useRunningService(env: NodeJS.ProcessEnv, options: { onlyWhileRunning: boolean }): void {
  // As loadConfig reads them: a value empty or only whitespace is unset, so the command finds the service `serve`
  // started with it.
  const unset = (name: string) => (env[name] ?? '').trim() === '';
  const dataDir = dataDirOf(env);
  const file = join(dataDir, SERVICE_FILE);
  const start = startLine(dataDir);
  const read = readServiceFile(file);
  if (read === null) return;
  if ('unusable' in read) {
    // A REDIS_URL given names the Redis itself, and a serve writes the file anew: neither follows it.
    if (!unset('REDIS_URL') || options.onlyWhileRunning) return;
    throw new CliFailure(`${file} cannot be used: ${read.unusable}. Commands take the service's Redis, key prefix and signing key from it, so this one did nothing rather than use another Redis. Start the service again (\`${start}\`), which writes it anew, or set REDIS_URL (and INTERLOCK_KEY_PREFIX) to use a Redis deliberately.`, EXIT_BAD_INPUT);
  }
  const { facts } = read;
  // Followed to a Redis, a key prefix and a signing key file: one another user may have written (a shared checkout's
  // ./.data, a directory under /tmp) would send this command's writes to their Redis, signed with the key it names.
  const others = [file, dataDir].map((path) => ({ path, why: existsSync(path) ? writableByOthers(statSync(path)) : null })).find((each) => each.why !== null);
  if (others !== undefined) {
    throw new CliFailure(`${file} is not followed: ${others.path === file ? 'the file' : `its directory ${dataDir}`} is not only this user's (${others.why}). Commands take the service's Redis, key prefix and signing key from it, so one another user could write is refused. Set INTERLOCK_DATA_DIR to the service's own data directory (or to one of yours, with REDIS_URL and INTERLOCK_KEY_PREFIX), or make the file and its directory only yours (\`chmod 700 ${dataDir}\`, \`chmod 600 ${file}\`) if they are.`, EXIT_BAD_INPUT);
  }
  const running = runningWriter(read) !== null;
  if (options.onlyWhileRunning && !running) return;
  if (unset('REDIS_URL') && typeof facts.redis_url === 'string') {
    env.REDIS_URL = facts.redis_url;
    if (unset('INTERLOCK_KEY_PREFIX') && typeof facts.key_prefix === 'string') env.INTERLOCK_KEY_PREFIX = facts.key_prefix;
    // The cluster setting goes with the URL, unless this command was given one (as the key prefix: its check against
    // the server then says so, naming this file). A file written before it said so names a single Redis, the default.
    if (unset('INTERLOCK_REDIS_CLUSTER') && facts.redis_cluster === true) env.INTERLOCK_REDIS_CLUSTER = '1';
    // The retired keys go with the journal: after a rotation, receipts of effects sealed before it are checked with
    // them, as the service checks them (unless this command was given a file of its own). Here for a `serve` joining
    // the service; a command reaching its Redis and key prefix some other way (REDIS_URL exported with the same
    // value) takes them with its signing key (signerOfService, stores.ts withServiceRetiredKeys).
    if (unset('INTERLOCK_RETIRED_PUBLIC_KEYS_FILE') && typeof facts.retired_public_keys_file === 'string') env.INTERLOCK_RETIRED_PUBLIC_KEYS_FILE = facts.retired_public_keys_file;
    redisUrlFromService({ file, pid: typeof facts.pid === 'number' ? facts.pid : null, running, start });
  }
  const pid = typeof facts.pid === 'number' ? facts.pid : null;
  // Its signing key is the key of a command writing into its journal (withStores: when the command reaches its Redis
  // and key prefix), running or stopped: a stopped service's Redis (given, or its private one left up) still takes the
  // entry, and the service started again sends what it records, so an entry signed with a key of the command's own
  // would move money on a receipt the service calls invalid. Its retired public keys go with it: receipts it sealed
  // before a rotation are checked with them, whether REDIS_URL was taken from this file or not.
  if (typeof facts.signing_kid === 'string' && typeof facts.redis_url === 'string' && typeof facts.key_prefix === 'string') {
    signerOfService({ file, pid, running, kid: facts.signing_kid, keyFile: typeof facts.signing_key_file === 'string' ? facts.signing_key_file : null, retiredKeysFile: typeof facts.retired_public_keys_file === 'string' ? facts.retired_public_keys_file : null, redisUrl: facts.redis_url, keyPrefix: facts.key_prefix });
  }
  if (running) runningService = { file, pid, stripeApiBase: typeof facts.stripe_api_base === 'string' ? facts.stripe_api_base : null };
  // A STRIPE_API_BASE given is kept, never replaced by the service's sandbox: without a key, whatever needs Stripe
  // refuses naming STRIPE_SECRET_KEY.
  if (unset('STRIPE_SECRET_KEY') && unset('STRIPE_API_BASE') && typeof facts.stripe_secret_key === 'string' && typeof facts.stripe_api_base === 'string') {
    env.STRIPE_SECRET_KEY = facts.stripe_secret_key;
    env.STRIPE_API_BASE = facts.stripe_api_base;
    // A file written before it said so had only the embedded sandbox's key there.
    if (!running) stripeOfStoppedService = { file, pid: typeof facts.pid === 'number' ? facts.pid : null, apiBase: facts.stripe_api_base, start, embedded: facts.sandbox_embedded !== false };
  }
}

/**
 * The running service a command found through service.json: a command missing STRIPE_SECRET_KEY is told to export
 * the service's, not to start the service that runs.
 */
let runningService: { file: string; pid: number | null; stripeApiBase: string | null } | null = null;

/**
 * The Stripe a command took from a service that is not running (a killed `npm start` leaves its private Redis up, so
 * commands still read the journal, but its sandbox ran inside it and is gone): a read that cannot reach it says so.
 */
let stripeOfStoppedService: { file: string; pid: number | null; apiBase: string; start: string; embedded: boolean } | null = null;

/**
 * The Stripe side of a command that reads or writes at Stripe. A running service whose key service.json does not hold
 * (a real test key is never written there) is named: stripeSide's "or run `npm start`" would send the operator to
 * start what runs.
 */
function commandStripe(config: Config): StripeSide {
  if (config.stripeSecretKey === null && runningService !== null) {
    const { file, pid, stripeApiBase } = runningService;
    throw new CliFailure(`STRIPE_SECRET_KEY is not set: the service that wrote ${file}${pid === null ? '' : ` (pid ${pid})`} runs with a key it does not write there. Export that STRIPE_SECRET_KEY in this terminal${stripeApiBase === null ? '' : ` (with STRIPE_API_BASE=${stripeApiBase})`} and run it again; nothing was recorded.`, EXIT_BAD_INPUT);
  }
  return stripeSide({ ...config, crashAt: null });
}

async function readAtStripe<T>(read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (error) {
    if (stripeOfStoppedService === null || !(error instanceof StripeUnavailable) || error.stripeStatus !== null) throw error;
    const { file, pid, apiBase, start, embedded } = stripeOfStoppedService;
    const service = `the service that wrote ${file}${pid === null ? '' : ` (pid ${pid})`}`;
    const why = embedded ? `it ran inside ${service}, which is not running. Start it again (\`${start}\`)` : `${service} used it and is not running, and the sandbox, started on its own, does not answer either. Start the sandbox again (\`npx interlock sandbox --port ${URL.canParse(apiBase) ? new URL(apiBase).port || '80' : '12111'}\`, or as it was started) and the service (\`${start}\`)`;
    throw new CliFailure(`Could not reach the Stripe sandbox at ${shownSetting(apiBase)}: ${why}, or set STRIPE_SECRET_KEY (and STRIPE_API_BASE) for another Stripe. Nothing was recorded.`, EXIT_BAD_INPUT, { cause: error });
  }
}

/**
 * A `--wait` of `ms`, given at most `ms` plus the Redis command timeout: the wait listens on a queue connection, which
 * waits out Redis outages (BullMQ needs that), so a Redis that stopped answering would otherwise hold it for ever.
 */
async function waitAtMost(wait: (ms: number) => Promise<unknown>, ms: number, config: Config): Promise<void> {
  const boundMs = ms + config.redisCommandTimeoutMs;
  await withinRedisTimeout(wait(ms), boundMs, `Redis did not answer the wait within --wait plus INTERLOCK_REDIS_COMMAND_TIMEOUT_MS (${boundMs} ms)`);
}

/**
 * A failure after a proposal or case was written (the wait, reading it back): it is recorded, and queued, so the money
 * may still move once Redis is back. Saying "nothing was changed" would have a hurried operator propose it again under
 * a new request id, and two refunds go out; it exits 4, as a wait that ran out does.
 */
function outcomeNotKnown(recorded: string, check: string, again: string, error: unknown): CliFailure {
  return new CliFailure(`${recorded}; its outcome is not known yet (${errorMessage(error)}): check \`${check}\` once Redis answers (${again}).`, EXIT_UNSETTLED, { cause: error });
}

/**
 * The stop signals heard while a proposal or case may be recorded (from the moment it is sent): Node's default would
 * end the command silently, and a hurried operator would read that as "nothing was changed" and propose again under a
 * new request id (outcomeNotKnown). The first one says `said(signal)` on stderr at once and rejects `stopped`, so the
 * command closes its connections and exits 4 (runProgram does not say it again); a second one, while those closes
 * wait on a Redis that does not answer, exits 4 at once, the line already said. `off` gives the signals back to Node
 * once the command's answer is printed; after a signal it keeps them until the process exits.
 */
function hearStopSignals(said: (signal: NodeJS.Signals) => string): { stopped: Promise<never>; isStop(error: unknown): boolean; off(): void } {
  let stop: (failure: StoppedBySignal) => void = () => undefined;
  const stopped = new Promise<never>((_resolve, reject) => {
    stop = reject;
  });
  // Heard by whoever races it; one heard by nobody (the answer came first) is no unhandled rejection.
  stopped.catch(() => undefined);
  let heard = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (heard) process.exit(EXIT_UNSETTLED);
    heard = true;
    const failure = new StoppedBySignal(said(signal), EXIT_UNSETTLED);
    printProblem(failure.message);
    stop(failure);
  };
  for (const signal of STOP_SIGNALS) process.on(signal, onSignal);
  return {
    stopped,
    isStop: (error) => error instanceof StoppedBySignal,
    off: () => {
      if (heard) return;
      for (const signal of STOP_SIGNALS) process.off(signal, onSignal);
    },
  };
}

type ProposeOptions = { request: string; approval: string; agent: string; reason?: string; wait?: number; model?: string; decision?: string };

// The proposal's fields a command fills from its options: a problem with one is named by the option it came from.
// A field is looked up by its whole path (an effect's, which `refund` and `credit` fill one option each; a decision's
// model and text), then by its first part (`request.reason` is --reason).
const FLAG_OF_FIELD: Readonly<Record<string, string>> = {
  requestId: '--request', request: '--reason', agent: '--agent', approval: '--approval', 'decision.model': '--model', 'decision.text': '--decision',
  'effect.paymentIntent': '--payment-intent', 'effect.customer': '--customer', 'effect.incident': '--incident', 'effect.description': '--description', 'effect.amount': '--amount',
};

/** The option a proposal's field `path` came from, or undefined when no option fills it. */
function flagOfField(path: string): string | undefined {
  const flag = (field: string) => (Object.hasOwn(FLAG_OF_FIELD, field) ? FLAG_OF_FIELD[field] : undefined);
  return flag(path) ?? flag(path.split('.')[0] ?? '');
}

/** A refused proposal, its problems named by the options they came from (`--reason`, not the request it is kept in). */
function inFlagWords(error: unknown, draft: { requestId: string; agent: string }): unknown {
  if (!(error instanceof ProposalError) || !error.fields.some((field) => flagOfField(field.path) !== undefined)) return error;
  const detail = error.fields.map((field) => `${flagOfField(field.path) ?? field.path}: ${field.message}`).join('; ');
  // A name refused by a rule an earlier version did not have (one script, no symbols): the same command may have been
  // recorded then, and "nothing was recorded" would read as "nothing was sent".
  const laterRule = error.fields.some((field) => field.path === 'agent') && mixedScriptProblem(draft.agent) !== null;
  const recorded = laterRule
    ? ` Nothing was recorded by this command; if --request ${draft.requestId} was recorded before (an earlier version took names that mix scripts or hold symbols), \`interlock effect show --request ${shellWord(draft.requestId)}\` shows it as it stands.`
    : ' Nothing was recorded.';
  return new CliFailure(`The proposal is invalid (${detail}).${recorded}`, EXIT_BAD_INPUT, { cause: error });
}

/**
 * Proposes one effect through the queue: validates the whole proposal first (bad input exits 2 and records
 * nothing), reads the effect's facts at Stripe as the decision stands on them, records PROPOSED and queues the job.
 * With --wait it waits for the worker's answer (queue events, no polling) and prints the settled effect.
 */
async function propose(effect: Effect & Record<string, unknown>, facts: readonly string[], options: ProposeOptions): Promise<void> {
  if ((options.model === undefined) !== (options.decision === undefined)) throw new CliFailure('--model and --decision go together: the model that decided and its decision text, recorded in PROPOSED.', EXIT_BAD_INPUT);
  const decision = options.model === undefined || options.decision === undefined ? {} : { decision: { model: options.model, text: options.decision } };
  const draft = { requestId: options.request, agent: options.agent, approval: options.approval, premises: {}, effect, ...(options.reason === undefined ? {} : { request: { reason: options.reason } }), ...decision };
  try {
    parseProposal(draft);
  } catch (error) {
    throw inFlagWords(error, draft);
  }
  const reserved = reservedRequestProblem(options.request);
  if (reserved !== null) throw new CliFailure(`The proposal is invalid (--request: ${reserved}). Nothing was recorded.`, EXIT_BAD_INPUT);
  const config = loadConfig();
  const stripe = commandStripe(config);
  const { createEffectsQueue, wasRecorded } = await outerLayers();
  await withStores(async (cli) => {
    // The approval's rules hold here as on the support API: it must exist (its four-eyes rule is written with it:
    // exit 2), and the agent named may not be the one who approved or granted it when it asked for a second person
    // (exit 1). Nothing is recorded otherwise.
    if ((await cli.stores.approvals.describe(options.approval)).snapshot === null) throw new CliFailure(noApproval(options.approval, 'nothing was recorded', cli.config, 'Grant it first (interlock approvals grant), then propose under it.'), EXIT_BAD_INPUT);
    await checkFourEyes(cli.stores, options.approval, [options.agent]);
    const effectId = effectIdFor({ requestId: options.request, effect });
    const premises = await readAtStripe(() => stripe.target.readFacts(effectId, effect, facts, { timeoutMs: 10_000 }));
    // An approval the gate could only refuse, under a request not recorded yet: refused before anything is recorded,
    // as the support API refuses it (unusableApproval).
    const unusable = await unusableApproval(cli.stores, effect, effectId, options.approval, premises);
    if (unusable !== null) throw new CliFailure(`Approval ${options.approval} cannot carry this ${effect.kind}: ${unusable.join('; ')}. Nothing was recorded, and request ${options.request} is still free. Grant a new approval that covers it (interlock approvals grant), then propose under it.`, EXIT_BAD_INPUT);
    const queue = createEffectsQueue(cli.stores);
    const check = `interlock effect show --request ${options.request}`;
    let queued: boolean | null = null;
    const stop = hearStopSignals((signal) => {
      const stands = queued === null ? `effect ${effectId} may be recorded and queued` : `effect ${effectId} is recorded${queued ? ' and queued' : ''}`;
      return `Stopped by ${signal} before its outcome was known: ${stands}, and its money may still move. Check \`${check}\` before doing anything else (sending the same request again is safe: it is answered from the journal, and its money moves at most once).`;
    });
    let failed = false;
    try {
      const recorded = await Promise.race([
        stop.stopped,
        queue.propose({ ...draft, premises }).catch((error: unknown) => {
          // Recorded, and Redis failed while it was queued: that is no "nothing was changed" (withStores).
          if (wasRecorded(error)) throw outcomeNotKnown(`Effect ${effectId} is recorded`, check, 'sending the same request again is safe: it is answered from the journal, queued if it is not, and its money moves at most once', error);
          throw error;
        }),
      ]);
      queued = recorded.queued;
      if (recorded.status === 'conflict') {
        // This request's refusal, and under `recorded` the effect as recorded (its payload, journal, verification and
        // money): the recorded payload stands, and this one was not sent. Nothing of it was recorded, so a signal is
        // Node's again.
        stop.off();
        const answer = await conflictAnswer(cli, { requestId: options.request, effectId: recorded.effectId, reason: recorded.reason });
        whenOutputLost(`Request ${options.request} was refused (REFUSED:conflicting_payload): it was recorded before with another payload (effect ${recorded.effectId}), and this one was not sent; \`${check}\` shows the recorded one.`, true);
        printJson(answer);
        process.exitCode = exitFor('REFUSED:conflicting_payload');
        return;
      }
      try {
        // The wait races the signal inside waitAtMost, so its timer is cleared when a signal ends it.
        if (options.wait !== undefined && options.wait > 0 && recorded.queued) await waitAtMost((ms) => Promise.race([stop.stopped, queue.waitFor(effectId, ms)]), options.wait * 1000, cli.config);
        const shown = (await Promise.race([stop.stopped, describeEffect(cli, effectId)])) ?? { effectId, outcome: null, sentence: 'Queued; not recorded yet.', journal: [] };
        stop.off();
        const outcome = typeof shown.outcome === 'string' ? shown.outcome : null;
        whenOutputLost(`Effect ${effectId} is recorded${outcome === null ? `${recorded.queued ? ' and queued' : ''}; its outcome is not known yet` : ` with outcome ${outcome}`}: \`${check}\` shows it (sending the same request again is safe: it is answered from the journal).`, outcome !== null);
        printJson({ ...shown, premises });
        warnIfJournalDoesNotVerify(shown);
        process.exitCode = exitForShown(shown);
      } catch (error) {
        if (stop.isStop(error)) throw error;
        throw outcomeNotKnown(`Effect ${effectId} is recorded${recorded.queued ? ' and queued' : ''}`, `interlock effect show --request ${options.request}`, 'sending the same request again is safe: it is answered from the journal, and its money moves at most once', error);
      }
    } catch (error) {
      failed = true;
      throw error;
    } finally {
      // The answer (or the failure) above is the command's; a close that fails changes nothing it said.
      await queue.close({ withinMs: cli.config.redisCommandTimeoutMs, drop: failed }).catch(() => undefined);
      stop.off();
    }
  });
}

type CaseOptions = { case?: string; paymentIntent?: string; customer?: string; incident?: string; story?: string; approval?: string; agent: string; wait?: number };

/**
 * The exit code of a case: its effect's once proposed (0 committed, 3 refused, 4 not settled; 5 committed but the
 * money did not go back: Stripe failed the refund after accepting it), 3 when declined or MODEL_DEVIATED (nothing
 * was sent: the answer is no), 4 while queued or deciding, 1 when it failed. A case a person re-approved from the
 * inbox exits as the re-approved effect does.
 */
function caseExit(view: Pick<CaseView, 'state' | 'outcome' | 'final_money' | 'reapprovals'>): number {
  if (view.state === 'proposed' || view.reapprovals.length > 0) return exitForMoney(view.outcome, view.final_money);
  switch (view.state) {
    case 'declined':
    case 'deviated':
      return EXIT_REFUSED;
    case 'queued':
    case 'deciding':
      return EXIT_UNSETTLED;
    default:
      return EXIT_FAILED;
  }
}

/**
 * No approval `id` for a refund or a case. Read from the default Redis the command fell back to, it says where it
 * looked instead of advising a grant: one made there would be on a Redis no service reads.
 */
function noApproval(id: string, nothing: string, config: Parameters<typeof fellBackNote>[0], grant: string): string {
  const note = fellBackNote(config);
  return note === null ? `No approval ${id}; ${nothing}. ${grant}` : `No approval ${id}; ${nothing}. ${note}`;
}

/** Validates a case (bad input exits 2 and stores nothing), stores and queues it, and with --wait waits for it. */
async function submitCase(options: CaseOptions): Promise<void> {
  const missing = (['case', 'story', 'approval'] as const).filter((name) => options[name] === undefined).map((name) => `--${name}`);
  if (missing.length > 0) throw new CliFailure(`interlock case needs ${missing.join(', ')}.`, EXIT_BAD_INPUT);
  const submission = caseSubmissionOf({ caseId: options.case, paymentIntent: options.paymentIntent, customer: options.customer, incident: options.incident, story: options.story, approval: options.approval, agent: options.agent });
  const { caseView, createDecisionsQueue, createEffectsQueue, waitForCase, wasRecorded } = await outerLayers();
  // The case is queued, not recorded: the service's decisions worker records its proposal, with the service's key.
  await withStores(async (cli) => {
    const { snapshot, now, revokedBy } = await cli.stores.approvals.describe(submission.approval);
    if (snapshot === null) throw new CliFailure(noApproval(submission.approval, 'nothing was queued', cli.config, 'Grant it first (interlock approvals grant).'), EXIT_BAD_INPUT);
    if (snapshot.scope !== caseScope(submission)) throw new CliFailure(`Approval ${submission.approval} covers ${snapshot.scope}, not ${caseScope(submission)}; nothing was queued.`, EXIT_BAD_INPUT);
    // A new case under an approval that ended could only be decided into money the gate refuses, its case id spent (as
    // the support API refuses it, approval_not_live); a case stored already is answered as it stands.
    if ((snapshot.revoked || snapshot.expiresAt <= now) && (await cli.stores.cases.get(submission.caseId)) === null) {
      const ended = snapshot.revoked ? `was revoked${revokedBy === null ? '' : ` by ${revokedBy}`}${snapshot.revokedAt === null ? '' : ` at ${new Date(snapshot.revokedAt).toISOString()}`}` : `expired at ${new Date(snapshot.expiresAt).toISOString()}`;
      throw new CliFailure(`Approval ${submission.approval} ${ended}; nothing was queued, and case id ${submission.caseId} is still free. Grant a new approval that covers ${snapshot.scope} (interlock approvals grant), then submit the case under it.`, EXIT_BAD_INPUT);
    }
    await checkFourEyes(cli.stores, submission.approval, [submission.agent]);
    const decisions = createDecisionsQueue(cli.stores);
    const effects = createEffectsQueue(cli.stores);
    const check = `interlock case show ${submission.caseId}`;
    let queued: boolean | null = null;
    // A case stored and queued is decided, and its refund sent, by the service: stopped silently, it would be submitted
    // again under a new case id and refunded twice (as a proposal would: propose).
    const stop = hearStopSignals((signal) => {
      const stands = queued === null ? `case ${submission.caseId} may be stored and queued` : `case ${submission.caseId} is stored${queued ? ' and queued' : ''}`;
      return `Stopped by ${signal} before its outcome was known: ${stands}, and it may still be decided and its money moved. Check \`${check}\` before doing anything else (submitting the same case again is safe: it is answered as it stands, and it is decided at most once).`;
    });
    let failed = false;
    try {
      const created = await Promise.race([
        stop.stopped,
        decisions.submit(submission, 'cli').catch((error: unknown) => {
          if (wasRecorded(error)) throw outcomeNotKnown(`Case ${submission.caseId} is stored`, check, 'submitting the same case again is safe: it is answered as it stands, queued if it is not, and it is decided at most once', error);
          throw error;
        }),
      ]);
      queued = !isFinalCase(created.record.status);
      if (created.status === 'conflict') {
        // Nothing of this submission was stored: a signal is Node's again.
        stop.off();
        whenOutputLost(`Case ${submission.caseId} was refused (conflicting_payload): it was first submitted with another payload, the stored case stands and this one was not queued; \`${check}\` shows the stored one.`, true);
        printJson({ case: submission.caseId, outcome: 'conflicting_payload', sentence: `Case ${submission.caseId} was first submitted with another payload; the stored case stands and this one was not queued.` });
        process.exitCode = EXIT_REFUSED;
        return;
      }
      try {
        // The wait races the signal inside waitAtMost, so its timer is cleared when a signal ends it.
        if (options.wait !== undefined && options.wait > 0) await waitAtMost((ms) => Promise.race([stop.stopped, waitForCase({ effects, decisions }, submission.caseId, ms)]), options.wait * 1000, cli.config);
        const view = await Promise.race([stop.stopped, (async () => caseView(cli.stores, (await cli.stores.cases.get(submission.caseId)) ?? created.record))()]);
        stop.off();
        whenOutputLost(`Case ${submission.caseId} is stored (state ${view.state}${view.outcome === null ? '' : `, outcome ${view.outcome}`}): \`${check}\` shows it (submitting the same case again is safe: it is answered as it stands).`, true);
        printJson(view);
        process.exitCode = caseExit(view);
      } catch (error) {
        if (stop.isStop(error)) throw error;
        throw outcomeNotKnown(`Case ${submission.caseId} is stored${isFinalCase(created.record.status) ? '' : ' and queued'}`, check, 'submitting the same case again is safe: it is answered as it stands, and it is decided at most once', error);
      }
    } catch (error) {
      failed = true;
      throw error;
    } finally {
      // The answer (or the failure) above is the command's; a close that fails changes nothing it said.
      await decisions.close({ withinMs: cli.config.redisCommandTimeoutMs, drop: failed }).catch(() => undefined);
      await effects.close({ withinMs: cli.config.redisCommandTimeoutMs, drop: failed }).catch(() => undefined);
      stop.off();
    }
  }, { signs: false });
}

function addServiceCommands(program: Command): void {
  program
    .command('serve')
    .description('run the service: the effects worker, the Stripe webhook route, the facts worker and the support API, by role')
    .option('--roles <list>', `comma-separated roles: ${ROLES.join(', ')}`, ROLES.join(','))
    .option('--concurrency <n>', 'effects sent at once by this worker (INTERLOCK_CONCURRENCY)', wholeNumber('--concurrency', 'jobs', { min: 1, max: 1_000 }))
    .option('--port <n>', 'HTTP port for the webhooks and api roles (INTERLOCK_PORT; 0 picks a free one)', wholeNumber('--port', 'a port', { min: 0, max: 65_535 }))
    .action(async (options: { roles: string; concurrency?: number; port?: number }) => {
      const roles = parseRoles(options.roles);
      const config = loadConfig();
      await serveUntilSignalled({ ...config, ...(options.concurrency === undefined ? {} : { concurrency: options.concurrency }), ...(options.port === undefined ? {} : { port: options.port }) }, roles, portChosen(options.port, process.env));
    });

  const cents = wholeNumber('--amount', 'cents', { min: 1, max: 99_999_999 });
  const seconds = wholeNumber('--wait', 'seconds', { min: 0, max: 3_600 });
  /** The options every proposing command shares (ProposeOptions), after its own. */
  const proposing = (command: Command) =>
    command
      .option('--agent <name>', 'who decided it', 'cli')
      .option('--reason <text>', 'why, for the receipt')
      .option('--model <id>', 'the model (or rules) that decided it, recorded with --decision in PROPOSED')
      .option('--decision <text>', "the decider's text, recorded in PROPOSED")
      .option('--wait <seconds>', 'wait this long for the outcome', seconds);
  proposing(
    program
      .command('refund')
      .description('propose a gated refund: facts read now, PROPOSED recorded, the job queued; --wait for the outcome')
      .requiredOption('--request <id>', 'the approved request (support case) this refund answers; the same id is the same refund')
      .requiredOption('--payment-intent <pi>', 'the PaymentIntent to refund')
      .requiredOption('--amount <cents>', 'amount to refund, in the smallest unit of the payment\'s currency, as Stripe counts amounts: 2000 is $20.00 in usd, ¥2000 in jpy (a zero-decimal currency: not ¥20)', cents)
      .requiredOption('--approval <id>', 'the approval it is sent under'),
  )
    .action(async (options: ProposeOptions & { paymentIntent: string; amount: number }) => {
      await propose({ kind: 'refund', paymentIntent: options.paymentIntent, amount: options.amount }, REFUND_FACTS, options);
    });
  proposing(
    program
      .command('credit')
      .description('propose a gated customer balance credit for an incident; --wait for the outcome')
      .requiredOption('--request <id>', 'the approved request this credit answers')
      .requiredOption('--customer <cus>', 'the customer to credit')
      .requiredOption('--amount <cents>', 'amount to credit, in the smallest unit of the currency credits are given in (INTERLOCK_CREDIT_CURRENCY), as Stripe counts amounts: 2000 is $20.00 in usd, ¥2000 in jpy (a zero-decimal currency: not ¥20)', cents)
      .requiredOption('--incident <id>', 'the incident it compensates (no two credits for one incident)')
      .option('--description <text>', "the balance transaction's description (the customer sees it on the invoice)")
      .requiredOption('--approval <id>', 'the approval it is sent under'),
  )
    .action(async (options: ProposeOptions & { customer: string; amount: number; incident: string; description?: string }) => {
      await propose({ kind: 'credit', customer: options.customer, amount: options.amount, incident: options.incident, ...(options.description === undefined ? {} : { description: options.description }) }, CREDIT_FACTS, options);
    });

  const kase = program
    .command('case')
    .description('submit a support case: the decider reads the facts, decides within the approval, and the decision is proposed through the gate; --wait for the outcome')
    .option('--case <id>', 'the support case; one case id is one decision (its effect\'s request id is case:<id>)')
    .option('--payment-intent <pi>', 'a refund of this PaymentIntent')
    .option('--customer <cus>', 'a balance credit for this customer')
    .option('--incident <id>', 'with --customer: the incident the credit compensates')
    .option('--story <text>', 'what happened, as the customer and support tell it')
    .option('--approval <id>', 'the approval the decision must stay inside')
    .option('--agent <name>', 'who proposes the decided effect', 'cli')
    .option('--wait <seconds>', 'wait this long for the decision and, once proposed, the outcome', seconds)
    .action(async (options: CaseOptions) => {
      await submitCase(options);
    });
  kase
    .command('show')
    .description('a case as it stands: state, decision, problems, its effect')
    .argument('<caseId>', 'the case id')
    .action(async (caseId: string) => {
      const { caseView } = await outerLayers();
      await withStores(async (cli) => {
        if (!CASE_ID.test(caseId)) throw new CliFailure(`"${redactSecrets(caseId).slice(0, 80)}" is not a case id (1-200 letters, digits or _ . : # -).`, EXIT_BAD_INPUT);
        const record = await cli.stores.cases.get(caseId);
        if (record === null) throw new CliFailure(`No case ${caseId} ${whereLooked(cli.config)}.`, EXIT_FAILED);
        const view = await caseView(cli.stores, record);
        printJson(view);
        process.exitCode = caseExit(view);
      }, { readOnly: true });
    });

  program
    .command('recover')
    .description('one recovery pass now: settle every effect whose sender died (resend, look up or refuse); prints the report')
    .action(async () => {
      const config = loadConfig();
      const stripe = commandStripe(config);
      await withStores(async ({ stores }) => {
        // An id of its own: a one-pass recoverer under the service's INTERLOCK_WORKER_ID would supersede the running
        // worker (it takes the id at its first beat), and the claims it takes are its own until it clears its heartbeat.
        // Facts too, as the service's sender has them: an effect this pass settles on a payment a fact marked while it
        // was in flight has its facts re-read before the command exits (no reconciler may run to read them later).
        const sender = await startSender(stores, stripe.target, { workerId: `recover:${defaultWorkerId()}`, facts: createFacts(stores, stripe.reader) });
        try {
          const report = await sender.gate.recover();
          const settled = report.settled.map((each) => each.effectId);
          whenOutputLost(`The recovery pass ran: ${settled.length} effect(s) settled${settled.length === 0 ? '' : ` (${settled.slice(0, 3).join(', ')}${settled.length > 3 ? ', …' : ''})`}, ${report.waiting.length} waiting, ${report.unresolved.length} unresolved, ${report.skipped.length} passed over; \`interlock effect show EFFECT_ID\` shows each.`, true);
          printJson(report);
          // Anything left open (a sender whose heartbeat has not lapsed, a quiet period, Stripe not answering): exit 4.
          process.exitCode = exitForRecovery(report);
        } finally {
          await sender.close();
        }
      });
    });

  program
    .command('reconcile')
    .description('re-read from Stripe every effect settled after a send (committed, refused by Stripe, AMBIGUOUS) within --since (default 72h) and append what changed (missed webhooks); prints the report')
    .option('--since <duration>', 'how far back: 30m, 72h, 7d', duration('--since', LONGEST_RECONCILE_SINCE_MS))
    .option('--hours <n>', 'how far back in hours (the same as --since <n>h)', wholeNumber('--hours', 'hours', { min: 1, max: LONGEST_RECONCILE_SINCE_MS / 3_600_000 }))
    .action(async (options: { since?: number; hours?: number }) => {
      if (options.since !== undefined && options.hours !== undefined) throw new CliFailure('Give --since or --hours, not both.', EXIT_BAD_INPUT);
      const windowMs = options.since ?? (options.hours ?? 72) * 3_600_000;
      const config = loadConfig();
      const stripe = commandStripe(config);
      const { reconcileAll } = await outerLayers();
      await withStores(async ({ stores }) => {
        const facts = createFacts(stores, stripe.reader);
        const now = await stores.journal.serverTime();
        const report = await reconcileAll(stores, facts, now - windowMs);
        whenOutputLost(`The reconciliation ran: ${report.effects} effect(s) re-read from Stripe, ${report.appended} fact(s) appended, ${report.alerts.length} alert(s) raised; \`interlock alerts\` shows what is at stake.`, true);
        printJson({ since: new Date(now - windowMs).toISOString(), ...report });
        if (report.stopped !== null) {
          const advice = /rate-limited/.test(report.stopped) ? 'Run it again later, or with a shorter --since.' : 'Check STRIPE_SECRET_KEY and that Stripe answers, then run it again.';
          throw new CliFailure(`Reconciliation stopped before the end: ${report.stopped}. ${advice}`, EXIT_FAILED);
        }
        if (report.unread > 0) throw new CliFailure(`${report.unread} effect(s) could not be re-read (listed under "failures"); the others were. Run it again once the cause is fixed.`, EXIT_FAILED);
      });
    });
}

function addScenarioCommand(program: Command): void {
  const reps = wholeNumber('--reps', 'repetitions', { min: 1, max: 1_000 });
  const durationMs = wholeNumber('--duration-ms', 'milliseconds', { min: 1_000, max: 3_600_000 });
  program
    .command('scenario')
    .description("run the seeds' crash scenarios (no_check, hand_check, hand_lock and the gate) against the sandbox, or Stripe test mode with STRIPE_SECRET_KEY=sk_test_…")
    .argument('<name>', "stripe-dispute, billing-credit, shared-cap or all; chaos sends refunds and credits through several serves while they, their Redis and Stripe fail, and judges the contract (scenarios/chaos.ts); render re-renders the pages in --out from their JSON; readme copies --out's tables into ./README.md")
    .option('--reps <n>', 'repetitions of every cell (default 1; shared-cap 20)', reps)
    .option('--delays <profile>', "the sandbox's timing: stripe (as test mode was seen to do) or fast", 'stripe')
    .option('--out <dir>', 'where the pages and JSON files go: a new or empty folder, or one a run wrote (default: scenarios/results for a full run; <data dir>/scenario-runs/<time> for any other: --delays fast, --reps, --rows or --columns)')
    .option('--rows <list>', "only these rows, comma-separated (the seeds' row names, e.g. crash_before_send_chargeback_during_outage,after_commit)")
    .option('--columns <list>', 'only these columns, comma-separated (no_check, hand_check, hand_lock, interlock)')
    .option('--keep-journals', "with REDIS_URL, leave each scenario's Redis keys (journals, queues) when the run ends instead of removing them")
    .option('--seed <n>', 'chaos only: the seed of its requests, their order and its faults (default: the time)')
    .option('--scale <x>', 'chaos only: multiplies its payments and customers (default 1: about 330 requests)')
    .option('--duration-ms <n>', 'chaos only: how long its faults go on (default 90000)', durationMs)
    .action(async (name: string, given: { reps?: number; delays: string; out?: string; rows?: string; columns?: string; keepJournals?: boolean; seed?: string; scale?: string; durationMs?: number }) => {
      if (name === 'chaos') {
        await runChaosCommand(given);
        return;
      }
      if (given.seed !== undefined || given.scale !== undefined || given.durationMs !== undefined) throw new CliFailure('--seed, --scale and --duration-ms are options of `interlock scenario chaos` only.', EXIT_BAD_INPUT);
      const { defaultOut, partialRun, RESULTS_DIR, runScenarios, SCENARIOS, ScenarioUsageError } = await import('../scenarios/run.js');
      const list = (text: string | undefined) => (text === undefined ? null : text.split(',').map((item) => item.trim()).filter((item) => item !== ''));
      const selection = { rows: list(given.rows), columns: list(given.columns) };
      const names = name === 'all' ? [...SCENARIOS] : SCENARIOS.filter((known) => known === name);
      const running = name !== 'render' && name !== 'readme';
      if (running && names.length === 0) throw new CliFailure(`Unknown scenario "${name}": name one of ${SCENARIOS.join(', ')} or all.`, EXIT_BAD_INPUT);
      const delays = given.delays === 'stripe' ? 'stripe' : given.delays === 'fast' ? 'fast' : null;
      if (delays === null) throw new CliFailure(`--delays takes stripe or fast, not "${given.delays}".`, EXIT_BAD_INPUT);
      const shape: Parameters<typeof partialRun>[0] = { scenarios: names, reps: given.reps ?? null, delays, ...selection };
      const options = { ...given, delays: shape.delays, out: given.out ?? (running ? defaultOut(shape, dataDirOf(process.env), new Date()) : RESULTS_DIR) };
      // A try-out without --out would otherwise replace the committed results (and the README's tables) with itself.
      const partial = partialRun(shape);
      if (running && given.out === undefined && partial !== null) process.stderr.write(`This run (${partial}) is not the full one whose results are committed in ${RESULTS_DIR}: its pages go to ${options.out}. Give --out to choose the folder.\n`);
      if (name === 'render') {
        const { NoResultsError, renderFromJson } = await import('../scenarios/report.js');
        const { foreignFiles, foreignFolderProblem } = await import('../scenarios/out-folder.js');
        const foreign = foreignFiles(resolve(options.out));
        if (foreign !== null) throw new CliFailure(foreignFolderProblem(options.out, foreign, 'render'), EXIT_BAD_INPUT);
        try {
          process.stdout.write(`${renderFromJson(options.out).join('\n')}\n`);
        } catch (error) {
          if (error instanceof NoResultsError) throw new CliFailure(error.message, EXIT_BAD_INPUT);
          throw error;
        }
        return;
      }
      if (name === 'readme') {
        // The README's tables link into scenarios/results: copied from another folder, they would stand over pages
        // that do not hold their cells.
        const { sameFolder } = await import('../scenarios/out-folder.js');
        if (!sameFolder(options.out, RESULTS_DIR)) throw new CliFailure(`readme copies the tables of ${RESULTS_DIR} only: the README links them to the pages there, and ${options.out} is another folder, whose tables would stand over pages that do not hold their cells. Run the full scenarios into ${RESULTS_DIR} (no --out), then \`npx interlock scenario readme\`.`, EXIT_BAD_INPUT);
        const { copyTablesToReadme } = await import('../scenarios/report.js');
        try {
          const changed = copyTablesToReadme(options.out, 'README.md');
          process.stdout.write(changed ? `README.md: the scenario tables now match ${options.out}/README.md\n` : `README.md: the scenario tables already match ${options.out}/README.md\n`);
        } catch (error) {
          const path = (error as { path?: unknown } | null)?.path;
          const why = typeof path === 'string' ? `${path}: ${pathMeaning(error) ?? errorMessage(error)}` : errorMessage(error);
          throw new CliFailure(`Could not copy the scenario tables: ${why}. Run it from the project's root, with --out naming the results folder.`, EXIT_BAD_INPUT);
        }
        return;
      }
      try {
        const { results, files } = await runScenarios({ scenarios: names, reps: options.reps ?? null, delays: options.delays, out: options.out, rows: selection.rows, columns: selection.columns, keepJournals: options.keepJournals === true, startedBy: STARTED_BY });
        process.stdout.write(`${files.join('\n')}\n`);
        const { runFailures } = await import('../scenarios/verdict.js');
        const failed = runFailures(results);
        if (failed.length > 0) {
          process.stderr.write(`The run has ${failed.length} failure${failed.length === 1 ? '' : 's'} (the pages list them under "Cells that failed to run" and "The gate against issue 12 §3"):\n${failed.map((line) => `  ${line}`).join('\n')}\n`);
          process.exitCode = EXIT_FAILED;
        }
      } catch (error) {
        if (error instanceof ScenarioUsageError) throw new CliFailure(error.message, EXIT_BAD_INPUT);
        throw error;
      }
    });
}

/** `interlock scenario chaos`: the chaos run (scenarios/chaos.ts), its summary on stdout; exit 1 with its findings. */
async function runChaosCommand(given: { reps?: number; delays: string; out?: string; rows?: string; columns?: string; keepJournals?: boolean; seed?: string; scale?: string; durationMs?: number }): Promise<void> {
  const other = (['reps', 'out', 'rows', 'columns', 'keepJournals'] as const).filter((option) => given[option] !== undefined);
  if (other.length > 0) throw new CliFailure(`The chaos run takes --seed, --scale, --duration-ms and --delays, not --${other.map((option) => option.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`)).join(', --')}.`, EXIT_BAD_INPUT);
  const delays = given.delays === 'stripe' ? 'stripe' : given.delays === 'fast' ? 'fast' : null;
  if (delays === null) throw new CliFailure(`--delays takes stripe or fast, not "${given.delays}".`, EXIT_BAD_INPUT);
  const scale = Number(given.scale ?? '1');
  if (!/^\d+(\.\d+)?$/.test(given.scale ?? '1') || !(scale > 0) || scale > 20) throw new CliFailure(`--scale takes a number above 0 and at most 20, in digits (e.g. 0.1), not "${given.scale ?? ''}".`, EXIT_BAD_INPUT);
  const seed = given.seed === undefined ? Date.now() % 100_000 : /^\d{1,10}$/.test(given.seed) ? Number(given.seed) : Number.NaN;
  if (!(seed <= 2_147_483_647)) throw new CliFailure(`--seed takes a whole number from 0 to 2147483647, in digits, not "${given.seed ?? ''}".`, EXIT_BAD_INPUT);
  const { chaosSummary, runChaos } = await import('../scenarios/chaos.js');
  const result = await runChaos({ seed, scale, durationMs: given.durationMs ?? 90_000, delays, startedBy: STARTED_BY });
  process.stdout.write(chaosSummary(result));
  if (result.findings.length > 0) process.exitCode = EXIT_FAILED;
}

const program = createProgram();
addServiceCommands(program);
addScenarioCommand(program);
// A re-approval reads the effect's facts at Stripe now and queues the new proposal, as `refund` and `credit` do.
addInboxCommands(program, async ({ stores }) => {
  const stripe = commandStripe(loadConfig());
  const { createEffectsQueue } = await outerLayers();
  const queue = createEffectsQueue(stores);
  return {
    readFacts: async (effect, effectId) => readAtStripe(() => stripe.target.readFacts(effectId, effect, effect.kind === 'refund' ? REFUND_FACTS : CREDIT_FACTS, { timeoutMs: 10_000 })),
    propose: (proposal, how) => queue.propose(proposal, how),
    // Bounded as refund's is: a Redis that stopped answering must not hold the command for ever.
    close: () => queue.close({ withinMs: stores.config.redisCommandTimeoutMs }).catch(() => undefined),
  };
});
addSandboxCommand(program);
program.hook('preAction', (_program, command) => {
  if (command.name() !== 'sandbox' && command.name() !== 'scenario') useRunningService(process.env, { onlyWhileRunning: command.name() === 'serve' });
  // `serve` logs them (startService); a command says them on stderr, as its other warnings, unless
  // INTERLOCK_LOG_LEVEL keeps warnings out (error, fatal, silent).
  if (command.name() !== 'serve' && !['error', 'fatal', 'silent'].includes(process.env.INTERLOCK_LOG_LEVEL ?? '')) {
    for (const unknown of unknownSettings(process.env)) process.stderr.write(`${unknownSettingSentence(unknown)}\n`);
  }
});
await runProgram(program);
