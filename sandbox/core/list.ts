// Stripe's list envelope and cursor pagination (stripe-facts §7): newest first, `limit` 1–100 (default 10),
// `starting_after` pages to older objects, `ending_before` to newer ones.
import { invalidRequest } from './errors.js';
import { int, range, str } from './params.js';
import type { Range } from './params.js';
import type { StripeObject } from './store.js';

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
