// Webhook ingestion (issue 10 §7): verified Stripe events per second over HTTP into the facts queue through the
// real route (createApp with the Stripe webhook route mounted, as `serve` builds it: request log, metrics, signature check
// through the SDK, the event durably queued in BullMQ on a private Redis with appendfsync always, job id = event
// id), against a bare Express route that only runs `constructEvent` and answers. Both servers listen in this
// process, and the load (keep-alive node:http, CONCURRENCY requests in flight, every event distinct and freshly
// signed) comes from this process too; the two run interleaved, REPS times each, medians reported. Target: the real
// route ≥ 0.6× the bare one. The lag from an event to its OBSERVED entry is measured end to end in
// service.bench.ts, where the sandbox delivers to a running `serve`.
import { randomBytes } from 'node:crypto';
import { createServer, request, Agent, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import Stripe from 'stripe';
import { createEffectsQueue } from '../queues/effects.js';
import { createFactsQueue } from '../queues/facts.js';
import { createWebhookVerifier, loadConfig, openStores, signWebhookBody, type Config } from '../src/interlock.js';
import { signingKeyFromPem } from '../src/core/signing.js';
import { generateSigningKeyPem } from '../src/keys/key-store.js';
import { startPrivateRedis } from '../tests/support/private-redis.js';
import { createApp, createMetrics, createTokenRegistry } from '../webhooks/app.js';
import { stripeWebhookRouter, WEBHOOK_PATH } from '../webhooks/stripe-route.js';
import { cutRatio, deleteKeys, finish, inParallel, markdownTable, median, progress, QUICK } from './support.js';

const EVENTS = Number(process.env.BENCH_EVENTS ?? (QUICK ? 200 : 3_000));
const REPS = Number(process.env.BENCH_REPS ?? (QUICK ? 1 : 5));
const CONCURRENCY = 32;
const COLUMNS = ['bare_construct_event', 'interlock_route'] as const;
type Column = (typeof COLUMNS)[number];
const SECRET = `whsec_${randomBytes(24).toString('hex')}`;

const redis = await startPrivateRedis(['--appendonly', 'yes', '--appendfsync', 'always', '--maxmemory-policy', 'noeviction', '--save', '']);
const admin = new Redis(redis.url);
const prefix = `bw${randomBytes(4).toString('hex')}`;
const config: Config = { ...loadConfig({}), redisUrl: redis.url, keyPrefix: prefix, unsafeDurability: false, logLevel: 'silent' };
// The service logs one line per request; so does this route, to a sink that discards it.
const logger = pino({ level: 'info' }, pino.destination('/dev/null'));
const stores = await openStores(config, { logger, signingKey: signingKeyFromPem(generateSigningKeyPem().privatePem) });
const factsQueue = createFactsQueue(stores);
const effects = createEffectsQueue(stores);

function listen(app: express.Express): Promise<{ server: Server; port: number }> {
  const server = createServer(app);
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, port: (server.address() as AddressInfo).port })));
}

const verify = createWebhookVerifier([SECRET]);
// The metrics `serve` keeps, counting each webhook outcome, as it wires them.
const metrics = createMetrics({ stores });
const interlockApp = createApp({
  stores,
  effects,
  readFacts: async () => ({}),
  tokens: createTokenRegistry([{ name: 'bench', role: 'auditor', token: `itk_${randomBytes(16).toString('hex')}` }]),
  logger,
  metrics,
  mount: (app) => app.use(stripeWebhookRouter({ verify, accept: (event) => factsQueue.accept(event), onOutcome: (outcome, detail) => metrics.webhookOutcome(outcome, detail) })),
});
const bareApp = express();
bareApp.post(WEBHOOK_PATH, express.raw({ type: () => true, limit: 512 * 1024 }), (req, res) => {
  try {
    const event = Stripe.webhooks.constructEvent(req.body as Buffer, req.header('stripe-signature') ?? '', SECRET);
    res.json({ received: true, id: event.id });
  } catch {
    res.status(400).json({ error: 'bad signature' });
  }
});
const servers: Record<Column, { server: Server; port: number }> = { bare_construct_event: await listen(bareApp), interlock_route: await listen(interlockApp) };
const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });

/** A refund event as Stripe sends it (a few hundred bytes of the real shape), with a distinct id. */
function eventBody(id: string): string {
  const created = Math.floor(Date.now() / 1000);
  return JSON.stringify({
    id,
    object: 'event',
    api_version: '2025-09-30.clover',
    created,
    type: 'refund.updated',
    livemode: false,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    data: { object: { id: `re_${id.slice(4)}`, object: 'refund', amount: 2_000, charge: 'ch_bench', currency: 'usd', payment_intent: 'pi_bench', status: 'succeeded', reason: 'requested_by_customer', created, metadata: { interlock_effect_id: 'f'.repeat(64) } } },
  });
}

function post(port: number, body: string, signature: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: WEBHOOK_PATH, method: 'POST', agent, headers: { 'content-type': 'application/json', 'stripe-signature': signature, 'content-length': Buffer.byteLength(body) } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function run(column: Column, rep: number): Promise<number> {
  const signed = Array.from({ length: EVENTS }, (_, index) => {
    const body = eventBody(`evt_${prefix}${column === 'bare_construct_event' ? 'b' : 'i'}${rep}x${index}`);
    return { body, signature: signWebhookBody(body, SECRET) };
  });
  let failed = 0;
  const started = performance.now();
  await inParallel(signed.length, CONCURRENCY, async (index) => {
    const item = signed[index];
    if (item !== undefined && (await post(servers[column].port, item.body, item.signature)) !== 200) failed += 1;
  });
  const elapsed = performance.now() - started;
  if (failed > 0) throw new Error(`${column}: ${failed} of ${EVENTS} events were not answered 200`);
  return Math.round((EVENTS * 1000) / elapsed);
}

const runs = new Map<Column, number[]>(COLUMNS.map((column) => [column, []]));
let queued: number;
try {
  // Warm-up: both routes once, briefly.
  for (const column of COLUMNS) await post(servers[column].port, eventBody(`evt_${prefix}warm${column}`), signWebhookBody(eventBody(`evt_${prefix}warm${column}`), SECRET));
  for (let rep = 0; rep < REPS; rep += 1) {
    for (const column of COLUMNS) {
      progress(`webhook ingestion: run ${rep + 1}/${REPS}, ${column} (${EVENTS} events)`);
      runs.get(column)?.push(await run(column, rep));
    }
  }
  progress('');
  queued = await factsQueue.queue.count();
} finally {
  agent.destroy();
  for (const { server } of Object.values(servers)) await new Promise((resolve) => server.close(resolve));
  await effects.close();
  await factsQueue.close();
  await stores.close();
  await deleteKeys(admin, [`${prefix}:*`, `{${prefix}-queues}:*`]);
  await admin.quit();
  await redis.stop();
}

const bare = median(runs.get('bare_construct_event') ?? []);
const real = median(runs.get('interlock_route') ?? []);
const ratio = cutRatio(real, bare);
// Every event the real route answered 200 is a job in the facts queue (the warm-up's one included).
const expectedJobs = EVENTS * REPS + 1;
const table = markdownTable(
  ['route', 'verified events/s (median)', 'runs'],
  [
    ['bare Express route, `constructEvent` only', bare, (runs.get('bare_construct_event') ?? []).join(', ')],
    ['Interlock: createApp + the Stripe route, event queued durably', real, (runs.get('interlock_route') ?? []).join(', ')],
  ],
);
const markdown = `Both servers and the load in one process over loopback HTTP, ${CONCURRENCY} requests in flight, ${EVENTS} distinct signed events per run, ${REPS} interleaved runs; the queue on a private Redis with appendfsync always.\n\n${table}\n\nInterlock / bare: ${ratio}×. Jobs in the facts queue afterwards: ${queued} of ${expectedJobs} events answered 200 by the real route.`;
console.log(`\n${markdown}`);
finish('webhookIngest', 'Webhook ingestion into the facts queue (issue 10 §7)', markdown, { events: EVENTS, reps: REPS, concurrency: CONCURRENCY, barePerSecond: bare, interlockPerSecond: real, ratio, queued }, [
  { target: 'verified events/s through the real route ≥ 0.6× a bare constructEvent route', value: ratio, met: ratio >= 0.6 },
  { target: 'every event answered 200 is in the facts queue', value: `${queued}/${expectedJobs}`, met: queued === expectedJobs },
]);
