// The product catalog: products and their prices (stripe-facts §8, scenarios.md §3.3). Only per-unit prices are
// modelled; a recurring price's interval drives subscription periods. `product_data` creates the product inline,
// and `lookup_keys[]` finds prices the way the billing scenario reuses its plans across runs.
import { snapshot } from '../core/diff.js';
import { invalidRequest, parameterMissing, requireObject } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { listParams, paginate, requireFilterIds } from '../core/list.js';
import { bool, currency, int, mergeMetadata, metadata, object, oneOf, required, str, strList } from '../core/params.js';
import { route } from '../http/router.js';
import type { Core } from '../core/core.js';
import type { EventOrigin } from '../core/event-bus.js';
import type { MetadataParam } from '../core/params.js';
import type { Collection, StripeObject } from '../core/store.js';
import type { Route } from '../http/router.js';

export const intervals = ['day', 'week', 'month', 'year'] as const;
export type Interval = (typeof intervals)[number];

export interface Product extends StripeObject {
  object: 'product';
  active: boolean;
  default_price: string | null;
  description: string | null;
  images: string[];
  livemode: false;
  marketing_features: never[];
  metadata: Record<string, string>;
  name: string;
  package_dimensions: null;
  shippable: null;
  statement_descriptor: string | null;
  tax_code: null;
  tax_details: null;
  type: 'service';
  unit_label: string | null;
  updated: number;
  url: null;
}

export interface Recurring {
  interval: Interval;
  interval_count: number;
  meter: null;
  trial_period_days: null;
  usage_type: 'licensed';
}

export interface Price extends StripeObject {
  object: 'price';
  active: boolean;
  billing_scheme: 'per_unit';
  currency: string;
  custom_unit_amount: null;
  livemode: false;
  lookup_key: string | null;
  metadata: Record<string, string>;
  nickname: string | null;
  product: string;
  recurring: Recurring | null;
  tax_behavior: 'unspecified';
  tiers_mode: null;
  transform_quantity: null;
  type: 'one_time' | 'recurring';
  unit_amount: number;
  /** Stripe sends decimals as strings; the SDK turns them into its Decimal type. */
  unit_amount_decimal: string;
}

const productFields = { name: str(), description: str(), metadata: metadata(), active: bool(), statement_descriptor: str({ maxLength: 22 }), unit_label: str() };
const recurringParam = object({ interval: required(oneOf(intervals)), interval_count: int({ min: 1 }), usage_type: oneOf(['licensed']) });

export interface Catalog {
  readonly products: Collection<Product>;
  requireProduct(id: string, param?: string): Product;
  requirePrice(id: string, param?: string): Price;
  routes: Route[];
}

export function createCatalog({ store, clock, events }: Core): Catalog {
  const products = store.collection<Product>('product');
  const prices = store.collection<Price>('price');

  const requireProduct = (id: string, param = 'id'): Product => requireObject(products, 'product', id, param);
  const requirePrice = (id: string, param = 'id'): Price => requireObject(prices, 'price', id, param);

  interface ProductInput {
    name: string;
    description?: string;
    metadata?: MetadataParam;
    active?: boolean;
    statement_descriptor?: string;
    unit_label?: string;
  }
  const createProduct = (input: ProductInput, origin: EventOrigin, id?: string): Product => {
    if (id !== undefined && products.get(id) !== undefined) {
      throw invalidRequest(`Product already exists.`, { code: 'resource_already_exists', param: 'id' });
    }
    const now = clock.nowSeconds();
    const product = products.insert({
      id: id ?? newId('prod'),
      object: 'product',
      active: input.active ?? true,
      created: now,
      default_price: null,
      description: input.description ?? null,
      images: [],
      livemode: false,
      marketing_features: [],
      metadata: mergeMetadata({}, input.metadata),
      name: input.name,
      package_dimensions: null,
      shippable: null,
      statement_descriptor: input.statement_descriptor ?? null,
      tax_code: null,
      tax_details: null,
      type: 'service',
      unit_label: input.unit_label ?? null,
      updated: now,
      url: null,
    });
    events.emit('product.created', product, origin);
    return product;
  };

  /** Refuses a lookup key another price holds, unless `transfer` moves it (taking it from the holder now). */
  const claimLookupKey = (key: string | undefined, transfer: boolean | undefined, claimant?: Price): void => {
    if (key === undefined) return;
    const holder = prices.newestFirst().find((p) => p.lookup_key === key);
    if (holder === undefined || holder === claimant) return;
    if (transfer !== true) throw invalidRequest(`A price (\`${holder.id}\`) already uses that lookup key.`, { param: 'lookup_key' });
    holder.lookup_key = null;
  };

  const routes = [
    route({
      method: 'POST',
      path: '/v1/products',
      params: { ...productFields, name: required(str()), id: str() },
      handle: (params, _path, ctx) => createProduct(params, ctx.origin, params.id),
    }),
    route({ method: 'GET', path: '/v1/products/:id', params: {}, handle: (_params, path) => requireProduct(path['id'] ?? '') }),
    route({
      method: 'POST',
      path: '/v1/products/:id',
      params: productFields,
      handle: (params, path, ctx) => {
        const product = requireProduct(path['id'] ?? '');
        const before = snapshot(product);
        product.metadata = mergeMetadata(product.metadata, params.metadata);
        if (params.name !== undefined) product.name = params.name;
        if (params.description !== undefined) product.description = params.description;
        if (params.active !== undefined) product.active = params.active;
        product.updated = clock.nowSeconds();
        events.emit('product.updated', product, ctx.origin, { before });
        return product;
      },
    }),
    route({
      method: 'GET',
      path: '/v1/products',
      params: { ...listParams, active: bool(), ids: strList() },
      handle: (params) => {
        const items = products
          .newestFirst()
          .filter((p) => (params.active === undefined || p.active === params.active) && (params.ids === undefined || params.ids.includes(p.id)));
        return paginate(items, params, '/v1/products');
      },
    }),
    route({
      method: 'POST',
      path: '/v1/prices',
      params: {
        currency: required(currency()),
        unit_amount: int({ min: 0 }),
        product: str(),
        product_data: object({ ...productFields, name: required(str()), id: str() }),
        recurring: recurringParam,
        lookup_key: str({ maxLength: 200 }),
        transfer_lookup_key: bool(),
        nickname: str(),
        metadata: metadata(),
        active: bool(),
        billing_scheme: oneOf(['per_unit']),
        tax_behavior: oneOf(['unspecified']),
      },
      check: (params) => {
        if (params.product === undefined && params.product_data === undefined) {
          throw invalidRequest('You must specify either `product` or `product_data` when creating a price.');
        }
        // Other pricing models (custom_unit_amount, tiers) are not modelled, so a per-unit amount is required.
        if (params.unit_amount === undefined) throw parameterMissing('unit_amount');
      },
      handle: (params, _path, ctx) => {
        const product = params.product === undefined ? null : requireProduct(params.product, 'product');
        claimLookupKey(params.lookup_key, params.transfer_lookup_key);
        const owner = product ?? createProduct(params.product_data ?? { name: '' }, ctx.origin, params.product_data?.id);
        const unitAmount = params.unit_amount ?? 0;
        const price = prices.insert({
          id: newId('price'),
          object: 'price',
          active: params.active ?? true,
          billing_scheme: 'per_unit',
          created: clock.nowSeconds(),
          currency: params.currency.toLowerCase(),
          custom_unit_amount: null,
          livemode: false,
          lookup_key: params.lookup_key ?? null,
          metadata: mergeMetadata({}, params.metadata),
          nickname: params.nickname ?? null,
          product: owner.id,
          recurring:
            params.recurring === undefined
              ? null
              : { interval: params.recurring.interval, interval_count: params.recurring.interval_count ?? 1, meter: null, trial_period_days: null, usage_type: 'licensed' },
          tax_behavior: 'unspecified',
          tiers_mode: null,
          transform_quantity: null,
          type: params.recurring === undefined ? 'one_time' : 'recurring',
          unit_amount: unitAmount,
          unit_amount_decimal: String(unitAmount),
        });
        events.emit('price.created', price, ctx.origin);
        return price;
      },
    }),
    route({ method: 'GET', path: '/v1/prices/:id', params: {}, handle: (_params, path) => requirePrice(path['id'] ?? '') }),
    route({
      method: 'POST',
      path: '/v1/prices/:id',
      params: { metadata: metadata(), nickname: str(), active: bool(), lookup_key: str({ maxLength: 200 }), transfer_lookup_key: bool() },
      handle: (params, path, ctx) => {
        const price = requirePrice(path['id'] ?? '');
        const before = snapshot(price);
        const merged = mergeMetadata(price.metadata, params.metadata);
        claimLookupKey(params.lookup_key, params.transfer_lookup_key, price);
        price.metadata = merged;
        if (params.lookup_key !== undefined) price.lookup_key = params.lookup_key;
        if (params.nickname !== undefined) price.nickname = params.nickname;
        if (params.active !== undefined) price.active = params.active;
        events.emit('price.updated', price, ctx.origin, { before });
        return price;
      },
    }),
    route({
      method: 'GET',
      path: '/v1/prices',
      params: { ...listParams, lookup_keys: strList(), product: str(), active: bool(), currency: currency(), type: oneOf(['one_time', 'recurring']) },
      handle: (params) => {
        requireFilterIds(store, { product: params.product });
        const items = prices
          .newestFirst()
          .filter(
            (p) =>
              (params.lookup_keys === undefined || (p.lookup_key !== null && params.lookup_keys.includes(p.lookup_key))) &&
              (params.product === undefined || p.product === params.product) &&
              (params.active === undefined || p.active === params.active) &&
              (params.currency === undefined || p.currency === params.currency) &&
              (params.type === undefined || p.type === params.type),
          );
        return paginate(items, params, '/v1/prices');
      },
    }),
  ];

  return { products, requireProduct, requirePrice, routes };
}
