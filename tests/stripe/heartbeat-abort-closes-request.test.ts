// Rule: when a live worker aborts its sends in progress because its heartbeat key could lapse soon (Redis cut off
// for most of the TTL), the Stripe target closes their requests still open at once, before their watchdog slots are
// freed, as the watchdog's SIGKILL closed them: recovery trusts an empty lookup a settle margin after the lapse, and a
// request still connecting writes its body whenever it connects. The send ends unknown (its claim kept), and the next
// request of the same client goes out on a fresh connection. Before, the aborted send's request lived on until its
// own timeout (the send deadline), free to write after the lapse.
import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { REFUND_FACTS, createRefundTarget } from '../../src/stripe/refund-target.js';
import { createStripeClient } from '../../src/stripe/client.js';
import { startRedisCutProxy, type RedisCutProxy } from '../support/redis-cut-proxy.js';
import { REDIS_URL, approvalTerms, removePrefixes, startNode, testConfig, testKey, type TestNode } from '../support/harness.js';
import { pay, startStripeWorld, TEST_KEY, type StripeWorld } from './stripe-support.js';

/** The connection a refund's POST came on: held from then on, nothing of it passed to Stripe. */
type Held = { bytesSince: (at: number) => number; closedAt: number | null; closed: Promise<void> };

/**
 * A TCP front to the sandbox that passes everything through, until `holding` and a connection carries a refund's POST:
 * that connection is held (nothing more of it reaches the sandbox, nothing comes back), as a Stripe that does not
 * answer. Records every byte the held connection brings, and when it closes.
 */
async function holdingFront(upstream: { host: string; port: number }) {
  const sockets = new Set<Socket>();
  const front = { url: '', holding: true, held: [] as Held[] };
  const server: Server = createServer((client) => {
    const toStripe = connect(upstream.port, upstream.host);
    let held: (Held & { arrivals: { at: number; bytes: number }[] }) | null = null;
    sockets.add(client);
    // The sandbox ending its side (its keep-alive timeout) ends a connection passed through, never a held one: only
    // the client closes that.
    const end = () => {
      toStripe.destroy();
      if (held === null) client.destroy();
    };
    client.on('error', () => client.destroy());
    client.on('close', () => {
      sockets.delete(client);
      toStripe.destroy();
    });
    toStripe.on('error', end);
    toStripe.on('close', end);
    toStripe.pipe(client);
    client.on('data', (chunk: Buffer) => {
      if (held === null && front.holding && chunk.toString('latin1').includes('POST /v1/refunds')) {
        let closed: () => void = () => undefined;
        const arrivals: { at: number; bytes: number }[] = [];
        held = { arrivals, closedAt: null, closed: new Promise<void>((resolve) => (closed = resolve)), bytesSince: (at) => arrivals.filter((one) => one.at >= at).reduce((sum, one) => sum + one.bytes, 0) };
        const record = held;
        toStripe.unpipe(client);
        toStripe.destroy();
        client.on('close', () => {
          record.closedAt = performance.now();
          closed();
        });
        front.held.push(held);
      }
      if (held !== null) held.arrivals.push({ at: performance.now(), bytes: chunk.length });
      else toStripe.write(chunk);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  front.url = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`;
  return {
    front,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

let world: StripeWorld;
let cut: RedisCutProxy;
let stripeFront: Awaited<ReturnType<typeof holdingFront>>;
let node: TestNode | undefined;
const prefixes: string[] = [];

beforeAll(async () => {
  world = await startStripeWorld();
  const redis = new URL(REDIS_URL);
  cut = await startRedisCutProxy({ host: redis.hostname, port: Number(redis.port || 6379) });
  stripeFront = await holdingFront(world.sandbox);
});

afterAll(async () => {
  cut.heal();
  await node?.close().catch(() => undefined);
  await stripeFront.close();
  await cut.close();
  await world.close();
  await removePrefixes(prefixes);
});

it('closes the request of a send aborted for its heartbeat at once; the send ends unknown and the next request goes out on a fresh connection', async () => {
  const config = testConfig({ sendWatchdog: true, redisUrl: cut.url, sendTimeoutMs: 20_000, claimTtlMs: 25_000, settleMarginMs: 300, dedupMarginMs: 60_000, heartbeatMs: 200, heartbeatTtlMs: 2_000 });
  prefixes.push(config.keyPrefix);
  const client = createStripeClient({ secretKey: TEST_KEY, apiBase: stripeFront.front.url });
  const target = createRefundTarget(client, { sendTimeoutMs: config.sendTimeoutMs });
  node = await startNode({ config, target, key: testKey().key, workerId: 'abort-closes' });

  /** A $10 refund proposal for the payment under a fresh approval, its premises read through the target. */
  const proposal = async (paymentIntent: string) => {
    const terms = approvalTerms({ scope: `payment:${paymentIntent}`, capCents: 2_000 });
    await node?.approvals.grant(terms);
    const effect = { kind: 'refund', paymentIntent, amount: 1_000 } as const;
    const premises = await target.readFacts('', effect, REFUND_FACTS, { timeoutMs: 5_000 });
    return { requestId: `case-${paymentIntent}`, agent: 'support-bot', approval: terms.id, premises, effect };
  };

  const first = await pay(world.stripe);
  const answer = node.gate.submit(await proposal(first.paymentIntent));
  // The refund's POST is on its way to a Stripe that does not answer: the send is in progress. Then Redis goes away.
  for (let i = 0; i < 500 && stripeFront.front.held.length === 0; i += 1) await new Promise((resolve) => setTimeout(resolve, 20));
  const held = stripeFront.front.held[0];
  expect(held, 'the refund request reached the front').toBeDefined();
  if (held === undefined) return;
  cut.cut();

  const answered = await answer;
  const abortedAt = performance.now();
  // Aborted as at the deadline: unknown, its claim kept for recovery; nothing says refused or not sent.
  expect(answered.outcome).toBe('IN_FLIGHT');
  // Its connection closes at the abort, not at the send's own timeout 20 s after it started.
  await Promise.race([held.closed, new Promise((resolve) => setTimeout(resolve, 5_000))]);
  expect(held.closedAt, 'the aborted send left its request open').not.toBeNull();
  expect(held.bytesSince(abortedAt)).toBe(0);

  // Redis back: the same client sends again, on a new connection, and the refund is made.
  cut.heal();
  stripeFront.front.holding = false;
  const second = await pay(world.stripe);
  const resubmit = await proposal(second.paymentIntent);
  // The first tries may meet Redis still reconnecting; the same proposal is the same effect, sent at most once.
  let again: unknown = null;
  for (let i = 0; i < 50; i += 1) {
    again = await node.gate.submit(resubmit).catch((error: unknown) => error);
    if (typeof again === 'object' && again !== null && 'outcome' in again && again.outcome === 'COMMITTED') break;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  expect(again).toMatchObject({ outcome: 'COMMITTED' });
  expect((await world.stripe.refunds.list({ payment_intent: second.paymentIntent })).data).toHaveLength(1);
  // The held request never reached Stripe.
  expect((await world.stripe.refunds.list({ payment_intent: first.paymentIntent })).data).toHaveLength(0);
}, 60_000);
