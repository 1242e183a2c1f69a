// Wiring for the post-send facts tests: the Stripe sandbox, the service's parts in this process (the gate's sender
// with the Stripe targets, the effects queue and worker, the facts queue and worker, the webhook route on its own
// loopback port) on the machine's Redis under a private key prefix, and the helpers every facts test needs: a
// gated $20 refund committed through the queue, a receipt verified with its public key, and waiting for facts.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createInterface } from 'node:readline';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import express from 'express';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import Stripe from 'stripe';
import { afterAll, beforeAll } from 'vitest';
import { createEffectsQueue, startEffectsWorker, type EffectsQueue } from '../../queues/effects.js';
import { createFactsQueue, startFactsWorker, type FactsQueue } from '../../queues/facts.js';
import { startSandbox, type Sandbox } from '../../sandbox/index.js';
import { createFacts, createWebhookVerifier, effectIdFor, openStores, startSender, stripeSide, verify, CREDIT_FACTS, REFUND_FACTS, type Applied, type Config, type Effect, type FactsApplier, type Sender, type Stores, type StripeEvent, type Target, type Verification } from '../../src/interlock.js';
import { stripeWebhookRouter } from '../../webhooks/stripe-route.js';
import { approvalTerms, sleep, testConfig, testKey } from '../support/harness.js';
import { pay } from '../stripe/stripe-support.js';
export { pay } from '../stripe/stripe-support.js';

export const SANDBOX_KEY = 'sk_test_interlockFactsTests0001';

/** A `whsec_` secret of the shape Stripe's have. */
export const newSecret = () => `whsec_${randomBytes(24).toString('base64').replace(/[^A-Za-z0-9]/g, '')}`;

export type FactsRig = {
  sandbox: Sandbox;
  /** The SDK for setting up the world (payments, disputes). */
  stripe: Stripe;
  config: Config;
  stores: Stores;
  sender: Sender;
  /** The Stripe target the sender sends through (a test may hold one of its calls back). */
  target: Target;
  effects: EffectsQueue;
  factsQueue: FactsQueue;
  facts: FactsApplier;
  /** The webhook route's URL (`http://127.0.0.1:PORT/webhooks/stripe`). */
  webhookUrl: string;
  /** The secret the sandbox's own forwarding signs with. */
  forwardSecret: string;
  /** The secrets the route verifies against now (a rotation replaces them). */
  useSecrets(secrets: string[]): void;
  /** Every event the facts worker finished, in order, with what it appended. */
  applied: { event: StripeEvent; applied: Applied[] }[];
  /** Every status the webhook route answered. */
  answers: number[];
  /** Log lines at warn and above, parsed. */
  warnings: Record<string, unknown>[];
  redis: Redis;
  /** The rig's signing key (PEM), for a facts process of its own that signs what it appends. */
  signingKeyPem: string;
  /** Queues a gated effect, its premises read at Stripe as a decision would, without waiting for it; returns its effect id. */
  submit(effect: RigEffect): Promise<string>;
  /** Commits a gated effect through the queue, its premises read at Stripe as a decision would; returns its effect id. */
  commit(effect: RigEffect): Promise<string>;
  /** Commits a gated refund of `amount` cents on the payment through the queue; returns its effect id. */
  refund(paymentIntent: string, amount?: number): Promise<string>;
  /**
   * A $100 payment with a gated $20 refund committed on it, its events applied: the payment, the effect and the refund
   * Stripe holds for it.
   */
  committedRefund(): Promise<{ paymentIntent: string; effectId: string; refund: Stripe.Refund }>;
  /** The receipt, verified against the rig's public key. */
  receipt(effectId: string): Promise<Verification>;
  /** Waits until `check` holds for the verified receipt (the facts worker is asynchronous). */
  until(effectId: string, check: (verification: Verification) => boolean, timeoutMs?: number): Promise<Verification>;
  /** The OBSERVED entries of the effect. */
  observed(effectId: string): Promise<{ source: string; eventId: string | null; eventType: string; objectId: string; status: string | null }[]>;
  /** Waits until the facts queue has nothing waiting, delayed or running. */
  drained(timeoutMs?: number): Promise<void>;
  /** Starts the facts worker (again, after `stopFactsWorker`). */
  startFactsWorker(): void;
  stopFactsWorker(): Promise<void>;
  close(): Promise<void>;
};

export type RigEffect = (Effect & { kind: 'refund'; paymentIntent: string }) | (Effect & { kind: 'credit'; customer: string; incident: string });

export type FactsRigOptions = {
  /** The sandbox forwards every event to the route itself (`--forward-to`); off when `stripe listen` does it. */
  forward?: boolean;
  /** Whether the facts worker runs from the start. */
  factsWorker?: boolean;
  config?: Partial<Config>;
  /** Whether the facts worker re-reads each object before recording it (the default); off, events speak for themselves. */
  reread?: boolean;
};

const keyPair = testKey();

export async function startFactsRig(options: FactsRigOptions = {}): Promise<FactsRig> {
  const closers: (() => Promise<unknown>)[] = [];
  const closeAll = async () => {
    for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
  };
  try {
    const warnings: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString('utf8').split('\n')) if (line !== '') warnings.push(JSON.parse(line) as Record<string, unknown>);
        done();
      },
    });
    const logger = pino({ level: 'warn' }, sink);
    // The route listens first, so the sandbox can be told where to forward.
    const app = express();
    let verifier = createWebhookVerifier([newSecret()]);
    let accept: (event: StripeEvent) => Promise<{ duplicate?: boolean } | void> = () => Promise.reject(new Error('not ready'));
    const answers: number[] = [];
    app.use((_req, res, next) => {
      res.on('finish', () => answers.push(res.statusCode));
      next();
    });
    app.use(stripeWebhookRouter({ verify: (body, signature) => verifier(body, signature), accept: (event) => accept(event) }));
    const server: Server = createServer(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    closers.push(() => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }));
    const webhookUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks/stripe`;

    const forwardSecret = newSecret();
    const sandbox = await startSandbox({ port: 0, delays: 'fast', ...(options.forward === false ? {} : { forwardTo: webhookUrl }), webhookSecret: forwardSecret });
    closers.push(() => sandbox.close());
    verifier = createWebhookVerifier([forwardSecret]);
    const stripe = new Stripe('sk_test_setup', { host: sandbox.host, port: sandbox.port, protocol: 'http', maxNetworkRetries: 0 });

    const config = testConfig({ keyPrefix: `tf${randomBytes(6).toString('hex')}`, stripeSecretKey: SANDBOX_KEY, stripeApiBase: sandbox.url, sendTimeoutMs: 5_000, claimTtlMs: 10_000, dedupMarginMs: 60_000, ...options.config });
    const redis = new Redis(config.redisUrl);
    closers.push(async () => {
      for (const pattern of [`${config.keyPrefix}:*`, `{${config.keyPrefix}-queues}:*`]) {
        const stale = await redis.keys(pattern);
        for (let i = 0; i < stale.length; i += 500) await redis.del(...stale.slice(i, i + 500));
      }
      await redis.quit();
    });
    const stores = await openStores(config, { logger, signingKey: keyPair.key });
    closers.push(() => stores.close());
    const side = stripeSide(config);
    const facts = createFacts(stores, side.reader, { rereadBeforeAppend: options.reread ?? true });
    // As serve wires it: the sender re-reads an effect's facts when a payment fact came for it in flight.
    const sender = await startSender(stores, side.target, { facts });
    closers.push(() => sender.close());
    const effects = createEffectsQueue(stores, { backoffMs: 50 });
    closers.push(() => effects.close());
    const effectsWorker = startEffectsWorker(stores, sender, { concurrency: 4 });
    closers.push(() => effectsWorker.close());
    const factsQueue = createFactsQueue(stores);
    closers.push(() => factsQueue.close());
    accept = (event) => factsQueue.accept(event);
    const applied: FactsRig['applied'] = [];
    let factsWorker: ReturnType<typeof startFactsWorker> | null = null;
    const startWorker = () => {
      factsWorker ??= startFactsWorker(stores, facts, { onApplied: (event, result) => applied.push({ event, applied: result }) });
    };
    const stopWorker = async () => {
      const running = factsWorker;
      factsWorker = null;
      await running?.close();
    };
    closers.push(stopWorker);
    if (options.factsWorker !== false) startWorker();

    const submit: FactsRig['submit'] = async (effect) => {
      const subject = effect.kind === 'refund' ? `payment:${effect.paymentIntent}` : `customer:${effect.customer}`;
      const terms = approvalTerms({ scope: subject, capCents: effect.amount });
      await stores.approvals.grant(terms);
      const requestId = `case-${randomBytes(6).toString('hex')}`;
      const effectId = effectIdFor({ requestId, effect });
      const premises = await side.target.readFacts(effectId, effect, effect.kind === 'refund' ? REFUND_FACTS : CREDIT_FACTS, { timeoutMs: 5_000 });
      return (await effects.propose({ requestId, agent: 'support-bot', approval: terms.id, premises, effect })).effectId;
    };
    const commit: FactsRig['commit'] = async (effect) => {
      const effectId = await submit(effect);
      const answer = await effects.waitFor(effectId, 15_000);
      if (answer?.outcome !== 'COMMITTED') throw new Error(`the ${effect.kind} did not commit: ${JSON.stringify(answer)}`);
      return effectId;
    };

    const receipt = async (effectId: string): Promise<Verification> => {
      const bundle = await stores.journal.receipt(effectId);
      if (bundle === null) throw new Error(`no receipt for ${effectId}`);
      return verify(JSON.parse(JSON.stringify(bundle)), { publicKeys: keyPair.publicKeys });
    };

    const drained = async (timeoutMs = 15_000): Promise<void> => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const counts = await factsQueue.queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized');
        if (Object.values(counts).every((count) => count === 0)) return;
        if (Date.now() > deadline) throw new Error(`the facts queue still holds jobs after ${timeoutMs} ms: ${JSON.stringify(counts)}`);
        await sleep(50);
      }
    };
    return {
      sandbox,
      stripe,
      config,
      stores,
      sender,
      target: side.target,
      effects,
      factsQueue,
      facts,
      webhookUrl,
      forwardSecret,
      useSecrets: (secrets) => {
        verifier = createWebhookVerifier(secrets);
      },
      applied,
      answers,
      warnings,
      redis,
      signingKeyPem: keyPair.privatePem,
      submit,
      commit,
      refund(paymentIntent, amount = 2_000) {
        return commit({ kind: 'refund', paymentIntent, amount, reason: 'requested_by_customer' });
      },
      async committedRefund() {
        const { paymentIntent } = await pay(stripe, 'pm_card_visa', 10_000);
        const effectId = await commit({ kind: 'refund', paymentIntent, amount: 2_000, reason: 'requested_by_customer' });
        await sandbox.control.idle();
        await drained();
        const refund = (await stripe.refunds.list({ payment_intent: paymentIntent })).data[0];
        if (refund === undefined) throw new Error(`no refund at Stripe for ${paymentIntent}, whose effect ${effectId} committed`);
        return { paymentIntent, effectId, refund };
      },
      receipt,
      async until(effectId, check, timeoutMs = 15_000) {
        const deadline = Date.now() + timeoutMs;
        for (;;) {
          const verification = await receipt(effectId);
          if (check(verification)) return verification;
          if (Date.now() > deadline) throw new Error(`the receipt of ${effectId} did not reach the expected state within ${timeoutMs} ms: ${JSON.stringify({ finalMoney: verification.finalMoney, exposure: verification.exposure })}`);
          await sleep(50);
        }
      },
      async observed(effectId) {
        const bundle = await stores.journal.receipt(effectId);
        return (bundle?.entries ?? []).flatMap((entry) => (entry.kind === 'OBSERVED' ? [{ source: entry.source, eventId: entry.eventId, eventType: entry.eventType, objectId: entry.objectId, status: entry.status }] : []));
      },
      drained,
      startFactsWorker: startWorker,
      stopFactsWorker: stopWorker,
      close: closeAll,
    };
  } catch (error) {
    await closeAll();
    throw error;
  }
}

/** The payment's one dispute (the inquiry card opens it inside confirm). */
/** Polls `check` every 50 ms until it returns a value, or fails saying what it waited for. */
export async function waitFor<T>(what: string, check: () => Promise<T | null | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = await check();
    if (found !== null && found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`waited ${timeoutMs} ms for ${what}`);
    await sleep(50);
  }
}

export async function disputeOf(stripe: Stripe, paymentIntent: string): Promise<Stripe.Dispute> {
  const list = await stripe.disputes.list({ payment_intent: paymentIntent });
  const dispute = list.data[0];
  if (dispute === undefined) throw new Error(`no dispute on ${paymentIntent}`);
  return dispute;
}

/** The answer a receipt gives, without ids that differ from one payment to the next. */
export function answerOf(verification: Verification) {
  return {
    happened: verification.happened,
    status: verification.finalMoney.status,
    failureReason: verification.finalMoney.failureReason,
    refunds: verification.finalMoney.refunds.map((refund) => refund.status),
    disputes: verification.finalMoney.disputes.map((dispute) => dispute.status),
    exposure: verification.exposure === null ? null : verification.exposure.cents,
    answerMatchesFinalMoney: verification.answerMatchesFinalMoney,
  };
}

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export type Served = { child: ChildProcess; lines: string[]; exited: Promise<number | null> };

/** `interlock serve ARGS` as its own process with `env` (info logs); resolves once it logs `ready` (default: serving). */
export async function spawnServe(args: readonly string[], env: Record<string, string>, ready = 'interlock serving'): Promise<Served> {
  const child = spawn(process.execPath, ['bin/interlock.js', 'serve', ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, INTERLOCK_LOG_LEVEL: 'info', ...env } });
  const lines: string[] = [];
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve ${args.join(' ')} did not start within 30 s:\n${lines.join('\n')}`)), 30_000);
    // The structured log goes to stderr, the start-up lines to stdout.
    for (const stream of [child.stdout, child.stderr]) {
      if (stream === null) continue;
      createInterface({ input: stream }).on('line', (line) => {
        lines.push(line);
        if (line.includes(ready)) {
          clearTimeout(timer);
          resolve();
        }
      });
    }
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`serve ${args.join(' ')} exited (${code}) before it was ready:\n${lines.join('\n')}`));
    });
  });
  return { child, lines, exited };
}

/** One rig for the test file: started before its tests, closed after them; the object stands for it meanwhile. */
export function sharedFactsRig(options: FactsRigOptions = {}): FactsRig {
  let rig: FactsRig | null = null;
  beforeAll(async () => {
    rig = await startFactsRig(options);
  }, 60_000);
  afterAll(async () => {
    await rig?.close();
  });
  return new Proxy({} as FactsRig, {
    get(_target, name) {
      if (rig === null) throw new Error('the facts rig is used before beforeAll started it');
      const value: unknown = Reflect.get(rig, name);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(rig) : value;
    },
  });
}

/**
 * Runs `run` with `meanwhile` done after each send of the rig's target lands at the sandbox and before its answer comes
 * back: what happens at Stripe between a credit's landing and its commit (a deletion, an invoice). A throw from
 * `meanwhile` is the send's own (its answer lost). The target is put back however `run` ends.
 */
export async function betweenLandingAndAnswer<T>(rig: FactsRig, meanwhile: (landed: Awaited<ReturnType<Target['apply']>>) => Promise<void>, run: () => Promise<T>): Promise<T> {
  const target = rig.target;
  const apply = target.apply.bind(target);
  target.apply = async (effectId, sent, context) => {
    const landed = await apply(effectId, sent, context);
    await meanwhile(landed);
    return landed;
  };
  try {
    return await run();
  } finally {
    target.apply = apply;
  }
}

/** A $10 usd invoice finalized for `customer`: it takes $10 of the customer's credit balance. */
export async function invoiceTen(rig: FactsRig, customer: string): Promise<void> {
  await rig.stripe.invoiceItems.create({ customer, amount: 1_000, currency: 'usd' });
  const draft = await rig.stripe.invoices.create({ customer, pending_invoice_items_behavior: 'include' });
  await rig.stripe.invoices.finalizeInvoice(draft.id ?? '');
}

/**
 * The next send to `path` ends REFUSED:target_error with a landing still possible: its answer is lost (its attempts are
 * closed before Stripe runs them, which the gate cannot tell from requests still on their way), recovery looks the
 * effect up, finds nothing, resends under the same key once the quiet period is over, and Stripe refuses the resend
 * with `refusal`. The refusal closes a dispatch whose first request may still land, so its reason does not say nothing
 * of the effect is at Stripe (refusalLeftNothing), and an object labelled with the effect's id found later is its late
 * landing. A first send Stripe refuses outright, or the target before sending, leaves nothing: no landing is recorded
 * for it (refused-leaving-nothing.test.ts).
 */
export async function refusedAfterLostAnswer(rig: FactsRig, path: string, refusal: { status: number; code: string; message: string }): Promise<void> {
  await rig.sandbox.control.dropNext({ path, method: 'POST', when: 'before', count: 2 });
  await rig.sandbox.control.failNext({ path, method: 'POST', ...refusal });
}
