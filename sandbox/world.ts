// The composition root of the sandbox: builds the shared core (store, clock, event bus, settings), each object
// family, webhook delivery and the two routers (Stripe API and control API). Adding an object family means
// creating it here and adding its routes to `api` (see README.md).
import { createClock } from './core/clock.js';
import { defaultSettings } from './core/core.js';
import { delayProfiles } from './core/delays.js';
import { createEventBus } from './core/event-bus.js';
import { newWebhookSecret } from './core/ids.js';
import { createLogger } from './core/log.js';
import { createStore } from './core/store.js';
import { controlRoutes } from './control.js';
import { createFaults } from './http/faults.js';
import { createIdempotency, DEFAULT_IDEMPOTENCY_TTL_SECONDS } from './http/idempotency.js';
import { createRequestLog } from './http/request-log.js';
import { createRouter } from './http/router.js';
import { createBalanceTransactions } from './objects/balance-transactions.js';
import { createCatalog } from './objects/catalog.js';
import { createCharges } from './objects/charges.js';
import { createCreditNotes } from './objects/credit-notes.js';
import { createCustomers } from './objects/customers.js';
import { createDisputes } from './objects/disputes.js';
import { eventRoutes } from './objects/events.js';
import { createPaymentIntents } from './objects/payment-intents.js';
import { createPaymentMethods } from './objects/payment-methods.js';
import { createInvoices } from './objects/invoices.js';
import { createRefunds } from './objects/refunds.js';
import { createSubscriptions } from './objects/subscriptions.js';
import { createTestClocks } from './objects/test-clocks.js';
import { createWebhookEndpoints } from './objects/webhook-endpoints.js';
import { createWebhookDelivery } from './webhooks/delivery.js';
import { createStripeCli } from './webhooks/stripe-cli.js';
import type { Core, Settings } from './core/core.js';
import type { DelaysMode } from './core/delays.js';
import type { Logger } from './core/log.js';
import type { Disputes } from './objects/disputes.js';
import type { Refunds } from './objects/refunds.js';
import type { ApiResponseRecord, TransportDeps } from './http/server.js';
import type { Idempotency } from './http/idempotency.js';
import type { WebhookDelivery, WebhookTarget } from './webhooks/delivery.js';
import type { StripeCli } from './webhooks/stripe-cli.js';

export interface WorldOptions {
  delays?: DelaysMode;
  /** Every event is also POSTed here, signed with `webhookSecret`, like `stripe listen --forward-to`. */
  forwardTo?: string;
  /** Signing secret for `forwardTo`; generated when absent. */
  webhookSecret?: string;
  /** The secret `stripe listen` sessions sign with (the one `--print-secret` shows); one per CLI when absent. */
  listenSecret?: string;
  idempotencyTtlSeconds?: number;
  settings?: Partial<Settings>;
  logger?: Logger;
  /** Called with every Stripe API answer (status, body, the route it reached); for schema checks in tests. */
  onApiResponse?: (record: ApiResponseRecord) => void;
  /**
   * Host names, without a port, a request may address the sandbox by besides IP addresses, `localhost` (and names
   * under it) and `*.dev.stripe.me`, such as a compose service name; any other Host is answered 421 (server.ts
   * hostAdmitted), against DNS rebinding.
   */
  allowedHosts?: readonly string[];
}

export const FORWARD_TARGET_ID = 'forward-to';

export interface World extends TransportDeps {
  core: Core;
  idempotency: Idempotency;
  delivery: WebhookDelivery;
  refunds: Refunds;
  disputes: Disputes;
  forward: WebhookTarget | null;
  /** `stripe listen` sessions and their websockets. */
  stripeCli: StripeCli;
  reset(): void;
  close(): void;
}

export function createWorld(options: WorldOptions = {}): World {
  const log = options.logger ?? createLogger();
  const profile = delayProfiles[options.delays ?? 'stripe'];
  const clock = createClock({ profile, onTaskError: (err) => log.error({ err }, 'scheduled transition failed') });
  const store = createStore();
  const events = createEventBus(store, clock);
  const settings: Settings = { ...defaultSettings, ...options.settings };
  const core: Core = { store, clock, events, settings, log };

  const ledger = createBalanceTransactions(core);
  const methods = createPaymentMethods(core);
  const charges = createCharges(core, ledger);
  // Refunds ask whether a chargeback holds the charge; disputes fail recent refunds when one posts. The
  // late-bound lookup breaks that cycle.
  let disputesRef: Disputes | null = null;
  const refunds = createRefunds(core, { charges, ledger, methods, isChargeRefundable: (charge) => disputesRef?.isChargeRefundable(charge) ?? true });
  const disputes = createDisputes(core, { charges, ledger, refunds });
  disputesRef = disputes;
  const paymentIntents = createPaymentIntents(core, { charges, methods, disputes });
  const endpoints = createWebhookEndpoints(core);

  // Billing. A test clock advance renews subscriptions first, then finalizes the drafts that are due, so a renewal
  // made during the advance is finalized (and consumes the balance) within the same advance.
  const clocks = createTestClocks(core);
  const customers = createCustomers(core, { methods, clocks });
  const catalog = createCatalog(core);
  const invoices = createInvoices(core, { customers, paymentIntents, catalog });
  const subscriptions = createSubscriptions(core, { customers, catalog, invoices });
  const creditNotes = createCreditNotes(core, { customers, invoices, refunds });
  clocks.onAdvance(subscriptions.renewDue);
  clocks.onAdvance(invoices.finalizeDue);

  const forward: WebhookTarget | null =
    options.forwardTo === undefined ? null : { id: FORWARD_TARGET_ID, url: options.forwardTo, secret: options.webhookSecret ?? newWebhookSecret(), enabledEvents: ['*'] };
  // The CLI's sessions report answers back to the delivery engine, which in turn lists them as targets.
  let deliveryRef: WebhookDelivery | null = null;
  const stripeCli = createStripeCli(core, {
    ...(options.listenSecret === undefined ? {} : { listenSecret: options.listenSecret }),
    delivery: () => {
      if (deliveryRef === null) throw new Error('webhook delivery is not built yet');
      return deliveryRef;
    },
  });
  const delivery = createWebhookDelivery(core, () => [...(forward === null ? [] : [forward]), ...endpoints.targets(), ...stripeCli.targets()]);
  deliveryRef = delivery;
  const idempotency = createIdempotency(clock, options.idempotencyTtlSeconds ?? DEFAULT_IDEMPOTENCY_TTL_SECONDS);
  const faults = createFaults();
  const requests = createRequestLog();

  const api = createRouter();
  api.add([
    ...paymentIntents.routes,
    ...charges.routes,
    ...refunds.routes,
    ...disputes.routes,
    ...methods.routes,
    ...ledger.routes,
    ...eventRoutes(events),
    ...endpoints.routes,
    ...clocks.routes,
    ...customers.routes,
    ...catalog.routes,
    ...invoices.routes,
    ...subscriptions.routes,
    ...creditNotes.routes,
    ...stripeCli.routes,
  ]);

  const world: World = {
    api,
    control: createRouter(),
    idempotency,
    store,
    faults,
    requests,
    virtualExpansions: new Map([...refunds.expansions, ...customers.expansions]),
    log,
    writeLatencyMs: profile.writeLatency,
    allowedHosts: options.allowedHosts ?? [],
    ...(options.onApiResponse === undefined ? {} : { onApiResponse: options.onApiResponse }),
    core,
    delivery,
    refunds,
    disputes,
    forward,
    stripeCli,
    reset() {
      clock.cancelAll();
      delivery.clear();
      store.clear();
      idempotency.clear();
      faults.clear();
      requests.clear();
      Object.assign(settings, defaultSettings, options.settings);
    },
    close() {
      clock.cancelAll();
      delivery.close();
      stripeCli.close();
    },
  };
  world.control.add(controlRoutes(world, charges));
  return world;
}
