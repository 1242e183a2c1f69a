// What every object family receives: the shared store, clock, event bus, tunable settings and logger.
import type { Clock } from './clock.js';
import type { EventBus } from './event-bus.js';
import type { Logger } from './log.js';
import type { Store } from './store.js';

/** Knobs tests and the control API may turn at runtime (`POST /_sandbox/config`). */
export interface Settings {
  /**
   * A refund younger than this when a chargeback posts on its charge fails with
   * `charge_for_pending_refund_disputed`; an older one stays `succeeded` (seeds: 5–7 s failed, 300 s stayed).
   */
  pendingRefundDisputeWindowSeconds: number;
  /** Dispute fee in the charge's minor unit, withdrawn with a chargeback. */
  disputeFee: number;
  /** Whether a won dispute gives the fee back (pricing dependent, stripe-facts §5.3). */
  reinstateDisputeFeeOnWin: boolean;
  /** Days from a chargeback posting to `evidence_details.due_by` (end of that UTC day). */
  disputeDueDays: number;
  /** How long a webhook endpoint may take before the attempt counts as failed, in ms. */
  webhookTimeoutMs: number;
  /** Retries after the first failed attempt; test mode retries 3 times. */
  webhookMaxRetries: number;
  /**
   * Deliveries in flight at once to one endpoint. Stripe promises no order (stripe-facts §6.4) and the CLI forwards
   * concurrently (§6.5), so a slow answer to one event does not hold the next back; 1 is strict FIFO per endpoint.
   */
  webhookConcurrency: number;
  /**
   * `reconnect_delay` of new `stripe listen` sessions: the CLI closes and re-dials its socket this often. Stripe
   * sends values around 36–242 s; a long default keeps the CLI's ~1 s gaps rare.
   */
  cliReconnectDelaySeconds: number;
  /** A `stripe listen` session with no socket for this long is forgotten; the CLI's next dial is refused. */
  cliSessionExpiresAfterMs: number;
}

export const defaultSettings: Readonly<Settings> = {
  pendingRefundDisputeWindowSeconds: 60,
  disputeFee: 1500,
  reinstateDisputeFeeOnWin: false,
  disputeDueDays: 8,
  webhookTimeoutMs: 30_000,
  webhookMaxRetries: 3,
  webhookConcurrency: 4,
  cliReconnectDelaySeconds: 300,
  cliSessionExpiresAfterMs: 60_000,
};

export interface Core {
  store: Store;
  clock: Clock;
  events: EventBus;
  settings: Settings;
  log: Logger;
}

export type { Logger };
