// The composition root: the `interlock` program with every command. src/cli has the commands that need only src/;
// this file adds the ones that run the outer layers (queues/, webhooks/, the sandbox) and wires them together:
// `serve` (the one long-running command, by roles), `refund` and `credit` (propose through the queue), `recover`
// and `reconcile` (one pass each). `npm start` runs `serve` with every role.
import type { Command } from 'commander';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type Express } from 'express';
import {
  createFacts,
  createWebhookVerifier,
  effectIdFor,
  loadConfig,
  openStores,
  parseProposal,
  startSender,
  stripeSide,
  CREDIT_FACTS,
  REFUND_FACTS,
  type Config,
  type Effect,
  type Sender,
  type Stores,
  type StripeSide,
} from './interlock.js';
import { createProgram, runProgram } from './cli/program.js';
import { describeEffect, exitFor } from './cli/effect-command.js';
import { CliFailure, EXIT_BAD_INPUT, wholeNumber } from './cli/failure.js';
import { withStores } from './cli/stores.js';
import { createEffectsQueue, startEffectsWorker } from '../queues/effects.js';
import { startRecovery } from '../queues/recovery.js';
import { createFactsQueue, reconcile, startFactsWorker, startReconciler } from '../queues/facts.js';
import { stripeWebhookRouter } from '../webhooks/stripe-route.js';
import { createApp, loadApiLimits, loadOrCreateLocalTokens, loadTokenRegistry, queueCheck, storeChecks, type TokenRegistry } from '../webhooks/app.js';
import { addSandboxCommand } from '../sandbox/cli.js';

export const ROLES = ['worker', 'webhooks', 'facts', 'api'] as const;
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
  stores: Stores;
  sender: Sender | null;
  /** The generated API tokens (when INTERLOCK_API_TOKENS is unset and the api role runs). */
  tokensFile: string | null;
  /** Stops taking work, lets sends in progress finish within their deadline, settles and closes, in that order. */
  close(): Promise<void>;
};

/** Starts the roles in one process. Throws (having closed what it opened) when a role cannot start. */
export async function startService(config: Config, roles: readonly Role[]): Promise<Service> {
  const stores = await openStores(config);
  const { logger } = stores;
  // Closed in reverse order of starting: HTTP first (no new work), then the workers, the sender, the stores.
  const closers: Closer[] = [{ name: 'stores', close: () => stores.close() }];
  const closeAll = async () => {
    for (const closer of closers.reverse()) {
      await closer.close().catch((error: unknown) => logger.error({ err: error, part: closer.name }, 'could not close cleanly'));
    }
  };
  try {
    if (!(await stores.ping())) throw new CliFailure(`Cannot reach Redis at ${config.redisUrl}. Start Redis or set REDIS_URL.`, EXIT_BAD_INPUT);
    const needsStripe = roles.includes('worker') || roles.includes('facts');
    const stripe: StripeSide | null = needsStripe ? stripeSide(config) : null;
    let sender: Sender | null = null;
    if (roles.includes('worker') && stripe !== null) {
      const started = await startSender(stores, stripe.target);
      sender = started;
      closers.push({ name: 'sender', close: () => started.close() });
      const recovery = startRecovery(stores, started, { safetyIntervalMs: config.recoveryIntervalMs });
      closers.push({ name: 'recovery', close: () => recovery.close() });
      const worker = startEffectsWorker(stores, started, { concurrency: config.concurrency, ratePerSecond: config.stripeRatePerSecond });
      closers.push({ name: 'effects worker', close: () => worker.close() });
    }
    if (roles.includes('facts') && stripe !== null) {
      const facts = createFacts(stores, stripe.reader);
      const factsWorker = startFactsWorker(stores, facts);
      closers.push({ name: 'facts worker', close: () => factsWorker.close() });
      const reconciler = startReconciler(stores, facts, { intervalMs: config.reconcileIntervalMs, horizonMs: config.reconcileHorizonMs });
      closers.push({ name: 'reconciler', close: () => reconciler.close() });
    }
    let url: string | null = null;
    let tokensFile: string | null = null;
    if (roles.includes('webhooks') || roles.includes('api')) {
      let mount: ((app: Express) => void) | undefined;
      if (roles.includes('webhooks')) {
        const verify = createWebhookVerifier(config.stripeWebhookSecrets);
        const factsQueue = createFactsQueue(stores);
        closers.push({ name: 'facts queue', close: () => factsQueue.close() });
        mount = (app) => app.use(stripeWebhookRouter({ verify, accept: (event) => factsQueue.accept(event) }));
      }
      let app: Express;
      if (roles.includes('api')) {
        const apiStripe = stripe ?? stripeSide(config);
        const effects = createEffectsQueue(stores);
        closers.push({ name: 'effects queue', close: () => effects.close() });
        let tokens: TokenRegistry;
        if (config.apiTokens !== null) {
          tokens = loadTokenRegistry(config.apiTokens);
        } else {
          const local = loadOrCreateLocalTokens(config.dataDir);
          tokens = local.registry;
          tokensFile = local.file;
          logger.info({ file: local.file, created: local.created, callers: tokens.callers() }, 'INTERLOCK_API_TOKENS is not set: using the local tokens in the data directory');
        }
        const recoverWith = sender;
        app = createApp({
          stores,
          effects,
          readFacts: (effect, names, context) => apiStripe.target.readFacts(context.effectId, effect, names, { timeoutMs: context.timeoutMs }),
          premises: { refund: REFUND_FACTS, credit: CREDIT_FACTS },
          tokens,
          logger,
          alerts: (query) => stores.alerts.list(query.all ? { all: true } : {}).then((list) => list.slice(0, query.limit)),
          ...(recoverWith === null ? {} : { recover: () => recoverWith.gate.recover() }),
          readiness: [...storeChecks(stores), queueCheck(effects)],
          limits: loadApiLimits(process.env),
          ...(mount === undefined ? {} : { mount }),
        });
      } else {
        // The webhook route alone (a process that only takes Stripe's events): no tokens, no support API.
        app = express();
        app.disable('x-powered-by');
        mount?.(app);
        app.get('/healthz', (_req, res) => {
          res.json({ ok: true, roles });
        });
      }
      const server = createServer(app);
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(config.port, config.host, () => {
          server.off('error', reject);
          resolve();
        });
      });
      const address = server.address() as AddressInfo;
      url = `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
      closers.push({ name: 'http', close: () => closeServer(server) });
    }
    logger.info({ roles, url, concurrency: roles.includes('worker') ? config.concurrency : undefined }, 'interlock serving');
    return { roles: [...roles], url, tokensFile, stores, sender, close: closeAll };
  } catch (error) {
    await closeAll();
    throw error;
  }
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    // Idle keep-alive connections would hold close() open; requests in progress still finish.
    server.closeIdleConnections();
  });
}

/**
 * Runs until SIGTERM or SIGINT. The first signal stops taking work and waits for sends in progress (each ends
 * within its send deadline) before closing; a second signal exits at once, and recovery settles what was left.
 */
async function serveUntilSignalled(config: Config, roles: Role[]): Promise<void> {
  const service = await startService(config, roles);
  const { logger } = service.stores;
  process.stdout.write(`${JSON.stringify({ serving: roles, url: service.url, pid: process.pid, ...(service.tokensFile === null ? {} : { tokens: service.tokensFile }) })}\n`);
  await new Promise<void>((resolve) => {
    let stopping = false;
    const onSignal = (signal: NodeJS.Signals) => {
      if (stopping) {
        logger.warn({ signal }, 'second signal: exiting now; recovery settles what was in flight');
        process.exit(130);
      }
      stopping = true;
      logger.info({ signal }, 'stopping: no new jobs; sends in progress finish within their deadline');
      service.close().then(resolve, (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        resolve();
      });
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  });
  logger.info('stopped');
}

type ProposeOptions = { request: string; approval: string; agent: string; reason?: string; wait?: number };

/**
 * Proposes one effect through the queue: validates the whole proposal first (bad input exits 2 and records
 * nothing), reads the effect's facts at Stripe as the decision stands on them, records PROPOSED and queues the job.
 * With --wait it waits for the worker's answer (queue events, no polling) and prints the settled effect.
 */
async function propose(effect: Effect & Record<string, unknown>, facts: readonly string[], options: ProposeOptions): Promise<void> {
  const draft = { requestId: options.request, agent: options.agent, approval: options.approval, premises: {}, effect, ...(options.reason === undefined ? {} : { request: { reason: options.reason } }) };
  parseProposal(draft);
  const config = loadConfig();
  const stripe = stripeSide({ ...config, crashAt: null });
  await withStores(async (cli) => {
    const effectId = effectIdFor({ requestId: options.request, effect });
    const premises = await stripe.target.readFacts(effectId, effect, facts, { timeoutMs: 10_000 });
    const queue = createEffectsQueue(cli.stores);
    try {
      const recorded = await queue.propose({ ...draft, premises });
      if (recorded.status === 'conflict') {
        process.stdout.write(`${JSON.stringify({ effectId: recorded.effectId, outcome: 'REFUSED:conflicting_payload', sentence: recorded.reason, journal: [] }, null, 2)}\n`);
        process.exitCode = exitFor('REFUSED:conflicting_payload');
        return;
      }
      if (options.wait !== undefined && options.wait > 0 && recorded.queued) await queue.waitFor(effectId, options.wait * 1000);
      const shown = (await describeEffect(cli, effectId)) ?? { effectId, outcome: null, sentence: 'Queued; not recorded yet.', journal: [] };
      process.stdout.write(`${JSON.stringify({ ...shown, premises }, null, 2)}\n`);
      process.exitCode = exitFor(shown.outcome as string | null);
    } finally {
      await queue.close();
    }
  });
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
      await serveUntilSignalled({ ...config, ...(options.concurrency === undefined ? {} : { concurrency: options.concurrency }), ...(options.port === undefined ? {} : { port: options.port }) }, roles);
    });

  const cents = wholeNumber('--amount', 'cents', { min: 1, max: 99_999_999 });
  const seconds = wholeNumber('--wait', 'seconds', { min: 0, max: 3_600 });
  program
    .command('refund')
    .description('propose a gated refund: facts read now, PROPOSED recorded, the job queued; --wait for the outcome')
    .requiredOption('--request <id>', 'the approved request (support case) this refund answers; the same id is the same refund')
    .requiredOption('--payment-intent <pi>', 'the PaymentIntent to refund')
    .requiredOption('--amount <cents>', 'amount in cents', cents)
    .requiredOption('--approval <id>', 'the approval it is sent under')
    .option('--agent <name>', 'who decided it', 'cli')
    .option('--reason <text>', 'why, for the receipt')
    .option('--wait <seconds>', 'wait this long for the outcome', seconds)
    .action(async (options: ProposeOptions & { paymentIntent: string; amount: number }) => {
      await propose({ kind: 'refund', paymentIntent: options.paymentIntent, amount: options.amount }, REFUND_FACTS, options);
    });
  program
    .command('credit')
    .description('propose a gated customer balance credit for an incident; --wait for the outcome')
    .requiredOption('--request <id>', 'the approved request this credit answers')
    .requiredOption('--customer <cus>', 'the customer to credit')
    .requiredOption('--amount <cents>', 'amount in cents', cents)
    .requiredOption('--incident <id>', 'the incident it compensates (no two credits for one incident)')
    .requiredOption('--approval <id>', 'the approval it is sent under')
    .option('--agent <name>', 'who decided it', 'cli')
    .option('--reason <text>', 'why, for the receipt')
    .option('--wait <seconds>', 'wait this long for the outcome', seconds)
    .action(async (options: ProposeOptions & { customer: string; amount: number; incident: string }) => {
      await propose({ kind: 'credit', customer: options.customer, amount: options.amount, incident: options.incident }, CREDIT_FACTS, options);
    });

  program
    .command('recover')
    .description('one recovery pass now: settle every effect whose sender died (resend, look up or refuse); prints the report')
    .action(async () => {
      const config = loadConfig();
      const stripe = stripeSide({ ...config, crashAt: null });
      await withStores(async ({ stores }) => {
        const sender = await startSender(stores, stripe.target);
        try {
          const report = await sender.gate.recover();
          process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
          // Anything still waiting (a sender whose heartbeat has not lapsed, a quiet period) or unresolved: exit 4.
          if (report.waiting.length + report.unresolved.length > 0) process.exitCode = 4;
        } finally {
          await sender.close();
        }
      });
    });

  program
    .command('reconcile')
    .description('re-read from Stripe every effect committed in the last --hours and append what changed (missed webhooks)')
    .option('--hours <n>', 'how far back', wholeNumber('--hours', 'hours', { min: 1, max: 24 * 400 }), 72)
    .action(async (options: { hours: number }) => {
      const config = loadConfig();
      const stripe = stripeSide({ ...config, crashAt: null });
      await withStores(async ({ stores }) => {
        const facts = createFacts(stores, stripe.reader);
        const now = await stores.journal.serverTime();
        const report = await reconcile(stores, facts, now - options.hours * 3_600_000);
        process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
      });
    });
}

const program = createProgram();
addServiceCommands(program);
addSandboxCommand(program);
await runProgram(program);
