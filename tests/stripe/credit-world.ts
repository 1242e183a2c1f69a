// A sandbox run in this process, with its world in reach, so a credit test can put thousands of balance transactions
// on a customer, dated when it likes, without thousands of HTTP requests; and the suite of a credit test file over it
// (creditSuite): the world, a config under a key prefix of its own, a signing key, and the nodes it started, closed
// and removed after the file.
import { createServer } from 'node:http';
import { afterAll, beforeAll } from 'vitest';
import type { AddressInfo } from 'node:net';
import Stripe from 'stripe';
import { createControlClient, type ControlClient } from '../../sandbox/index.js';
import { createRequestHandler } from '../../sandbox/http/server.js';
import { createWorld, type World } from '../../sandbox/world.js';
import type { Config } from '../../src/config.js';
import type { Target } from '../../src/core/target.js';
import { createStripeClient, type StripeClient } from '../../src/stripe/client.js';
import { removePrefixes, startNode, testConfig, testKey, type TestNode } from '../support/harness.js';

export type CreditWorld = { world: World; control: ControlClient; stripe: Stripe; client: StripeClient; close(): Promise<void> };

export async function openCreditWorld(): Promise<CreditWorld> {
  const world = createWorld({ delays: 'fast' });
  const server = createServer({ keepAlive: true }, createRequestHandler(world));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;
  return {
    world,
    control: createControlClient(url),
    stripe: new Stripe('sk_test_setup', { host: '127.0.0.1', port, protocol: 'http', maxNetworkRetries: 0 }),
    client: createStripeClient({ secretKey: 'sk_test_interlockAdapterTests0001', apiBase: url }),
    close: () =>
      new Promise<void>((resolve) => {
        world.close();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

let serial = 0;
/**
 * `count` balance adjustments of 1 cent (debits: billing's metered usage) on `customer`, put straight into the
 * sandbox's store, newer in the list than anything it has, each `created` `ageSeconds` before the sandbox's now.
 */
export function addTransactions(open: CreditWorld, customer: string, count: number, ageSeconds = 0): void {
  const store = open.world.core.store.collection<{ id: string; object: string; created: number } & Record<string, unknown>>('customer_balance_transaction');
  const created = open.world.core.clock.nowSeconds() - ageSeconds;
  for (let i = 0; i < count; i += 1) {
    serial += 1;
    store.insert({
      id: `cbtxn_bulk${process.pid}${serial.toString().padStart(10, '0')}`,
      object: 'customer_balance_transaction',
      amount: 1,
      checkout_session: null,
      created,
      credit_note: null,
      currency: 'usd',
      customer,
      customer_account: null,
      description: 'metered usage',
      ending_balance: 0,
      invoice: null,
      livemode: false,
      metadata: {},
      type: 'adjustment',
    });
  }
}

/** GET requests to `path` the sandbox received after `since` (a request log seq). */
export async function getsSince(open: CreditWorld, path: string, since: number): Promise<number> {
  return (await open.control.requests(since)).filter((entry) => entry.method === 'GET' && entry.path === path).length;
}

/** The request log's position now. */
export async function logMark(open: CreditWorld): Promise<number> {
  return (await open.control.requests()).at(-1)?.seq ?? 0;
}

export type CreditSuite = {
  readonly open: CreditWorld;
  readonly config: Config;
  readonly key: ReturnType<typeof testKey>;
  /** A node (a worker) on the suite's config and key over `target`, closed after the file. */
  start(target: Target, workerId: string): Promise<TestNode>;
};

/** The world, config (`timing` under a key prefix of its own, named after `label`) and key of one test file. */
export function creditSuite(label: string, timing: Partial<Config>): CreditSuite {
  let open: CreditWorld | null = null;
  let config: Config | null = null;
  const key = testKey();
  const nodes: TestNode[] = [];
  const ready = <T>(value: T | null): T => {
    if (value === null) throw new Error('the credit suite is used before its beforeAll ran');
    return value;
  };
  beforeAll(async () => {
    open = await openCreditWorld();
    config = testConfig({ ...timing, keyPrefix: `t-credit-${label}-${Math.random().toString(36).slice(2, 10)}` });
  });
  afterAll(async () => {
    await Promise.all(nodes.map((node) => node.close().catch(() => undefined)));
    await open?.close();
    if (config !== null) await removePrefixes([config.keyPrefix, `{${config.keyPrefix}-queues}`]);
  });
  return {
    get open() {
      return ready(open);
    },
    get config() {
      return ready(config);
    },
    key,
    async start(target, workerId) {
      const node = await startNode({ config: ready(config), target, key: key.key, workerId });
      nodes.push(node);
      return node;
    },
  };
}
