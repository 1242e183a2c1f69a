// `expand[]` (stripe-facts §7): dotted paths whose every segment must be an expandable field of the object (or nested
// hash) it lands on (`expandable-fields.ts`, Stripe's `x-expandableFields`), at most 4 segments; list answers take
// paths starting with `data.`. Anything else is Stripe's 400, checked before the endpoint runs like any other
// parameter, so a refusal never follows a change that happened. Expansion replaces id strings with the objects they
// name, on a copy so stored objects keep their ids.
import { invalidRequest } from '../core/errors.js';
import { expandableFields } from './expandable-fields.js';
import type { StripeObject } from '../core/store.js';
import type { ExpandTarget } from './expandable-fields.js';

export type Finder = (id: string) => StripeObject | undefined;
/** Include-only fields such as `charge.refunds`, computed when expanded. */
export type VirtualExpansion = (object: Record<string, unknown>) => unknown;

const MAX_DEPTH = 4;
/** Not checked further: several object types, or one the sandbox does not model. */
const UNCHECKED = '*';
const LIST = 'list:';

/**
 * What a route answers with, as an `ExpandTarget`: the object named by the last collection in its path
 * (`/v1/payment_intents/:id/confirm` → `payment_intent`), or `list:<object>` for a GET of a collection. Null when the
 * path names no object the sandbox knows (`/v1/stripecli/sessions`): its paths are not checked.
 */
export function answerOf(method: string, routePath: string): ExpandTarget {
  const segments = routePath.split('/').filter((s) => s !== '' && s !== 'v1' && s !== 'test_helpers');
  const last = segments.at(-1) ?? '';
  for (let i = segments.length - 1; i >= 0; i--) {
    const segment = segments[i] ?? '';
    if (segment.startsWith(':')) continue;
    const parent = segments.slice(0, i).filter((s) => !s.startsWith(':')).at(-1);
    const object = collections[`${parent ?? ''}/${segment}`] ?? collections[segment];
    if (object === undefined) continue;
    if (singular.has(segment)) return object;
    return method === 'GET' && segment === last ? `${LIST}${object}` : object;
  }
  return null;
}

/** Path segments that name a collection, and the object it holds (`parent/segment` where the parent decides). */
const collections: Readonly<Record<string, string>> = {
  balance_transactions: 'balance_transaction',
  charges: 'charge',
  credit_notes: 'credit_note',
  'credit_notes/lines': 'credit_note_line_item',
  'customers/balance_transactions': 'customer_balance_transaction',
  customers: 'customer',
  dispute: 'dispute',
  disputes: 'dispute',
  events: 'event',
  invoiceitems: 'invoiceitem',
  invoices: 'invoice',
  'invoices/lines': 'line_item',
  payment_intents: 'payment_intent',
  payment_methods: 'payment_method',
  prices: 'price',
  products: 'product',
  refunds: 'refund',
  subscription_items: 'subscription_item',
  subscriptions: 'subscription',
  test_clocks: 'test_helpers.test_clock',
  webhook_endpoints: 'webhook_endpoint',
};
/** A charge's one dispute (`/v1/charges/:charge/dispute`): an object, never a list. */
const singular: ReadonlySet<string> = new Set(['dispute']);

function refuse(segment: string, onList: boolean): never {
  const hint = onList ? ` You may want to try expanding 'data.${segment}' instead.` : '';
  throw invalidRequest(`This property cannot be expanded (${segment}).${hint}`);
}

/** Stripe's refusals of `paths` on an answer of type `answer` (see `answerOf`); returns nothing when all may expand. */
export function checkExpand(paths: readonly string[], answer: ExpandTarget): void {
  for (const path of paths) {
    const segments = path.split('.');
    if (segments.length > MAX_DEPTH) throw invalidRequest(`You cannot expand more than ${MAX_DEPTH} levels of a property.`);
  }
  if (answer === null) return;
  for (const path of paths) {
    let at: ExpandTarget = answer;
    for (const segment of path.split('.')) {
      if (at === UNCHECKED || at === `${LIST}${UNCHECKED}`) break;
      if (at === null) refuse(segment, false);
      if (at.startsWith(LIST)) {
        if (segment !== 'data') refuse(segment, true);
        at = at.slice(LIST.length);
        continue;
      }
      const fields: Readonly<Record<string, ExpandTarget>> | undefined = expandableFields[at];
      if (fields === undefined) break;
      const next: ExpandTarget | undefined = fields[segment];
      if (next === undefined) refuse(segment, false);
      at = next;
    }
  }
}

export function expand(result: unknown, paths: readonly string[], find: Finder, virtual: ReadonlyMap<string, VirtualExpansion>): unknown {
  if (paths.length === 0) return result;
  const copy: unknown = structuredClone(result);
  for (const path of paths) walk(copy, null, path.split('.').slice(0, MAX_DEPTH), find, virtual);
  return copy;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Follows one path through the answer. A node's type is its own `object` where it has one, else what its parent's
 * field leads to (`type`); only fields expandable on that type are touched, so an id elsewhere stays an id.
 */
function walk(node: unknown, type: ExpandTarget, segments: readonly string[], find: Finder, virtual: ReadonlyMap<string, VirtualExpansion>): void {
  if (Array.isArray(node)) {
    for (const item of node) walk(item, type, segments, find, virtual);
    return;
  }
  const [key, ...rest] = segments;
  if (!isRecord(node) || key === undefined) return;
  const own = typeof node['object'] === 'string' ? node['object'] : null;
  if (own === 'list') {
    if (key === 'data') walk(node['data'], null, rest, find, virtual);
    return;
  }
  const fields = expandableFields[own ?? type ?? ''];
  const target = fields?.[key];
  if (fields === undefined || target === undefined) return;
  const computed = virtual.get(`${String(own)}.${key}`);
  if (computed !== undefined) node[key] = computed(node);
  const value = node[key];
  if (typeof value === 'string') {
    const found = find(value);
    if (found !== undefined) node[key] = structuredClone(found);
  }
  if (rest.length > 0) walk(node[key], target, rest, find, virtual);
}
