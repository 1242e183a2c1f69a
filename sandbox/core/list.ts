// Stripe's list envelope and cursor pagination (stripe-facts §7): newest first, `limit` 1–100 (default 10),
// `starting_after` pages to older objects, `ending_before` to newer ones.
import { invalidRequest, resourceMissing } from './errors.js';
import { int, range, str } from './params.js';
import { deletedIds } from './store.js';
import type { Range } from './params.js';
import type { Store, StripeObject } from './store.js';

export const listParams = {
  limit: int({ min: 1, max: 100 }),
  starting_after: str(),
  ending_before: str(),
  created: range(),
};

export interface ListQuery {
  limit?: number;
  starting_after?: string;
  ending_before?: string;
  created?: Range;
}

export interface ListObject<T> {
  object: 'list';
  data: T[];
  has_more: boolean;
  url: string;
}

// The type of object each id filter of a list names, by the filter's name (`GET /v1/refunds?payment_intent=pi_…`);
// the name is also how Stripe's 404 calls the type.
const filterObjects = {
  charge: 'charge',
  customer: 'customer',
  invoice: 'invoice',
  payment_intent: 'payment_intent',
  price: 'price',
  product: 'product',
  subscription: 'subscription',
  test_clock: 'test_helpers.test_clock',
} as const;
export type IdFilter = keyof typeof filterObjects;

/**
 * Stripe answers a list filtered by an id it has no object for with a 404, not an empty list (docs.stripe.com, list
 * refunds: "If you provide a non-existent charge ID, this call throws an error"; list charges: the same of a customer
 * ID): `resource_missing`, `No such payment_intent: 'pi_…'`, `param` the filter. A deleted customer is still an id
 * Stripe knows (it retrieves as `deleted: true`), so a list filtered by one answers what it has.
 */
export function requireFilterIds(store: Store, filters: Partial<Record<IdFilter, string | undefined>>): void {
  for (const [param, id] of Object.entries(filters) as Array<[IdFilter, string | undefined]>) {
    if (id === undefined) continue;
    const object = filterObjects[param];
    if (store.find(id)?.object !== object && deletedIds(store, object).get(id) !== true) throw resourceMissing(param, id, param);
  }
}

export function inRange(value: number, bounds: Range | undefined): boolean {
  if (bounds === undefined) return true;
  if (bounds.gt !== undefined && !(value > bounds.gt)) return false;
  if (bounds.gte !== undefined && !(value >= bounds.gte)) return false;
  if (bounds.lt !== undefined && !(value < bounds.lt)) return false;
  if (bounds.lte !== undefined && !(value <= bounds.lte)) return false;
  return true;
}

/** `items` must already be newest first and filtered by everything except `created` and the cursors. */
export function paginate<T extends StripeObject>(items: readonly T[], query: ListQuery, url: string): ListObject<T> {
  const limit = query.limit ?? 10;
  const matching = items.filter((item) => inRange(item.created, query.created));
  const cursorIndex = (id: string, param: string): number => {
    const index = matching.findIndex((item) => item.id === id);
    if (index < 0) throw invalidRequest(`No such object: '${id}'`, { code: 'resource_missing', param });
    return index;
  };
  // Stripe takes one cursor: a page is after an object or before one, never between two.
  if (query.ending_before !== undefined && query.starting_after !== undefined) {
    throw invalidRequest('Received both starting_after and ending_before parameters. Please pass in only one.');
  }
  if (query.ending_before !== undefined) {
    const end = cursorIndex(query.ending_before, 'ending_before');
    const start = Math.max(0, end - limit);
    return { object: 'list', data: matching.slice(start, end), has_more: start > 0, url };
  }
  const start = query.starting_after === undefined ? 0 : cursorIndex(query.starting_after, 'starting_after') + 1;
  const data = matching.slice(start, start + limit);
  return { object: 'list', data, has_more: start + limit < matching.length, url };
}
