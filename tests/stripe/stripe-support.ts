// Shared wiring for the Stripe adapter's tests: a fast sandbox, the official SDK pointed at it for setting up the
// world (payments, disputes, customers, credit notes), the adapter's own client, a gate over a Stripe target for one
// test file (gateOnStripe), send contexts that record what the adapter asked of them, and the sandbox's request log to
// count calls.
import { createHash, randomBytes } from 'node:crypto';
import Stripe from 'stripe';
import { afterAll, beforeAll } from 'vitest';
import { startSandbox, type LoggedRequest, type Sandbox } from '../../sandbox/index.js';
import type { Config } from '../../src/config.js';
import type { SendContext, Target } from '../../src/core/target.js';
import type { RecoveryReport } from '../../src/gate/context.js';
import { createStripeClient, type StripeClient } from '../../src/stripe/client.js';
import { createCreditTarget } from '../../src/stripe/credit-target.js';
import { createRefundTarget } from '../../src/stripe/refund-target.js';
import { removePrefixes, startNode, testConfig, testKey, type TestNode } from '../support/harness.js';
import { startedLater } from '../support/started-later.js';

export type StripeWorld = {
  sandbox: Sandbox;
  /** The SDK for setting up and inspecting the world (never the adapter's client). */
  stripe: Stripe;
  client: StripeClient;
  close(): Promise<void>;
};

export const TEST_KEY = 'sk_test_interlockAdapterTests0001';

export async function startStripeWorld(): Promise<StripeWorld> {
  const sandbox = await startSandbox({ port: 0, delays: 'fast' });
  const stripe = new Stripe('sk_test_setup', { host: sandbox.host, port: sandbox.port, protocol: 'http', maxNetworkRetries: 0 });
  const client = createStripeClient({ secretKey: TEST_KEY, apiBase: sandbox.url });
  return { sandbox, stripe, client, close: () => sandbox.close() };
}

export type StripeGate = {
  world: StripeWorld;
  /** `settings` over the test defaults, under a key prefix of its own unless `settings` names one. */
  config: Config;
  /** A gate (one worker) on `config` over the node target. */
  node: TestNode;
  /**
   * A target of the file's kind for a test to call by itself (2 s sends), not the node's: what it reads before a
   * send is its own.
   */
  target: Target;
};

export type GateOnStripeOptions = {
  /** The kind of Stripe target (default refund). */
  kind?: 'refund' | 'credit';
  /** The node's target (default: one of `kind` with the config's send timeout). */
  target?: (world: StripeWorld, config: Config) => Target;
  workerId?: string;
};

/**
 * A Stripe world and a gate over it for one test file, started before its tests and closed after them, its keys
 * deleted: `const { world, config, node, target } = gateOnStripe(TIMING);` where the hooks would go. Each is a
 * stand-in (used in tests and in hooks registered after this one), so do not compare, spread or reassign it.
 */
export function gateOnStripe(settings: Partial<Config>, options: GateOnStripeOptions = {}): StripeGate {
  const create = options.kind === 'credit' ? createCreditTarget : createRefundTarget;
  let world: StripeWorld | undefined;
  let config: Config | undefined;
  let node: TestNode | undefined;
  let target: Target | undefined;
  beforeAll(async () => {
    const opened = await startStripeWorld();
    const made = testConfig(settings);
    world = opened;
    config = made;
    target = create(opened.client, { sendTimeoutMs: 2_000 });
    const onNode = options.target?.(opened, made) ?? create(opened.client, { sendTimeoutMs: made.sendTimeoutMs });
    node = await startNode({ config: made, target: onNode, key: testKey().key, ...(options.workerId === undefined ? {} : { workerId: options.workerId }) });
  });
  afterAll(async () => {
    await node?.close().catch(() => undefined);
    await world?.close();
    if (config !== undefined) await removePrefixes([config.keyPrefix]);
  });
  return {
    world: startedLater('Stripe world', () => world),
    config: startedLater('config', () => config),
    node: startedLater('node', () => node),
    target: startedLater('target', () => target),
  };
}

/** A confirmed payment of `amount` cents with a test payment method (e.g. `pm_card_createDisputeInquiry`). */
export async function pay(stripe: Stripe, paymentMethod = 'pm_card_visa', amount = 10_000): Promise<{ paymentIntent: string; charge: string }> {
  const intent = await stripe.paymentIntents.create({ amount, currency: 'usd', payment_method: paymentMethod, confirm: true });
  if (typeof intent.latest_charge !== 'string') throw new Error('the confirmed payment has no charge');
  return { paymentIntent: intent.id, charge: intent.latest_charge };
}

export type RecordingContext = SendContext & { beforeWriteCalls: number };

/** The dispatch attempt a test's premise read and send share (ReadContext.attempt, SendContext.attempt), unless told otherwise. */
export const TEST_ATTEMPT = 'test-attempt';

/**
 * A send context with `ms` to its deadline, counting beforeWrite calls; `fence` makes beforeWrite refuse; `attempt`
 * (TEST_ATTEMPT unless given; null for none) names the premise read whose findings the send may use.
 */
export function sendContext(ms = 2_000, options: { fence?: () => Error | null; requestId?: string; attempt?: string | null } = {}): RecordingContext {
  const attempt = options.attempt === undefined ? TEST_ATTEMPT : options.attempt;
  const deadline = performance.now() + ms;
  const context: RecordingContext = {
    beforeWriteCalls: 0,
    timeLeftMs: () => Math.floor(deadline - performance.now()),
    async beforeWrite() {
      context.beforeWriteCalls += 1;
      const refusal = options.fence?.() ?? null;
      if (refusal !== null) throw refusal;
    },
    requestId: options.requestId ?? null,
    ...(attempt === null ? {} : { attempt }),
  };
  return context;
}

/** The request log's position now, so a test can count the requests made after it. */
export async function mark(sandbox: Sandbox): Promise<number> {
  const log = await sandbox.control.requests();
  return log.at(-1)?.seq ?? 0;
}

/** Requests after `since`, as `METHOD /path` lines. */
export async function callsSince(sandbox: Sandbox, since: number): Promise<string[]> {
  return (await sandbox.control.requests(since)).map((entry: LoggedRequest) => `${entry.method} ${entry.path}`);
}

/** A made-up effect id (64 hex characters, as the gate's are). */
export function effectIdFor(label: string): string {
  return createHash('sha256').update(`test-effect:${label}:${randomBytes(8).toString('hex')}`).digest('hex');
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Recovery passes on one effect, each when the one before said to look again, until it settles (or `withinMs`). */
export async function recoverUntilSettled(node: { gate: { recover(options: { only: string[] }): Promise<RecoveryReport> } }, effectId: string, withinMs: number): Promise<{ outcome: string; passes: RecoveryReport[] }> {
  const passes: RecoveryReport[] = [];
  const until = Date.now() + withinMs;
  while (Date.now() < until) {
    const report = await node.gate.recover({ only: [effectId] });
    passes.push(report);
    const settled = report.settled.find((item) => item.effectId === effectId);
    if (settled) return { outcome: settled.outcome, passes };
    const waiting = report.waiting.find((item) => item.effectId === effectId);
    await sleep(waiting ? Math.max(50, Math.min(waiting.until - Date.now() + 20, 1_000)) : 200);
  }
  throw new Error(`effect ${effectId} was not settled within ${withinMs} ms: ${JSON.stringify(passes.at(-1))}`);
}
