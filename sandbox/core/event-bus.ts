// The one event bus. Every state change an object family makes is published here as a Stripe event; the bus
// stores it (for /v1/events) and hands it to subscribers (webhook delivery).
import { previousAttributes, snapshot } from './diff.js';
import { newId } from './ids.js';
import type { Clock } from './clock.js';
import type { Collection, Store, StripeObject } from './store.js';

export const API_VERSION = '2026-10-28.endive';

/** What caused an event: the API request (id and Idempotency-Key) or nothing, for Stripe's own transitions. */
export interface EventOrigin {
  id: string | null;
  idempotency_key: string | null;
}

export const automatic: EventOrigin = { id: null, idempotency_key: null };

export interface StripeEvent extends StripeObject {
  object: 'event';
  api_version: string;
  data: { object: unknown; previous_attributes?: Record<string, unknown> };
  livemode: false;
  pending_webhooks: number;
  request: EventOrigin;
  type: string;
}

export interface EmitOptions {
  /** The object as it was before the change; the bus turns it into `previous_attributes`. */
  before?: unknown;
  /**
   * Fields Stripe sends only when `expand[]` names them (includable), as they were before the change and are now:
   * never in `data.object`, yet `previous_attributes` names those that changed, as it names the object's own fields.
   */
  includable?: { before: Record<string, unknown>; after: Record<string, unknown> };
  /**
   * Stripe's own lag before webhooks for this event go out, in ms. The event (and the change it reports) exists
   * at once; only delivery waits, as with the test cards' disputes.
   */
  deliverAfterMs?: number;
}

export type EventListener = (event: StripeEvent, delivery: { afterMs: number }) => void;

export interface EventBus {
  readonly events: Collection<StripeEvent>;
  emit(type: string, object: StripeObject, origin: EventOrigin, options?: EmitOptions): StripeEvent;
  subscribe(listener: EventListener): void;
}

export function createEventBus(store: Store, clock: Clock): EventBus {
  const events = store.collection<StripeEvent>('event');
  const listeners: EventListener[] = [];
  return {
    events,
    emit(type, object, origin, options = {}) {
      const { before, includable } = options;
      let previous: Record<string, unknown> | undefined;
      if (before !== undefined) {
        previous = includable === undefined ? previousAttributes(before, object) : previousAttributes({ ...(before as Record<string, unknown>), ...includable.before }, { ...object, ...includable.after });
      }
      const event: StripeEvent = {
        id: newId('evt'),
        object: 'event',
        api_version: API_VERSION,
        created: clock.nowSeconds(),
        data: { object: snapshot(object), ...(previous === undefined ? {} : { previous_attributes: previous }) },
        livemode: false,
        pending_webhooks: 0,
        request: { ...origin },
        type,
      };
      events.insert(event);
      for (const listener of listeners) listener(event, { afterMs: options.deliverAfterMs ?? 0 });
      return event;
    },
    subscribe(listener) {
      listeners.push(listener);
    },
  };
}
