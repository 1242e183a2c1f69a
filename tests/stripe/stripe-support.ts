// Shared wiring for the Stripe adapter's tests: a fast sandbox, the official SDK pointed at it for setting up the
// world (payments, disputes, customers, credit notes), the adapter's own client, send contexts that record what
// the adapter asked of them, and the sandbox's request log to count calls.
import { createHash, randomBytes } from 'node:crypto';
import Stripe from 'stripe';
import { startSandbox, type LoggedRequest, type Sandbox } from '../../sandbox/index.js';
import type { SendContext } from '../../src/core/target.js';
import type { RecoveryReport } from '../../src/gate/context.js';
import { createStripeClient, type StripeClient } from '../../src/stripe/client.js';

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
