// Webhook endpoints registered through the API. The signing secret is shown only in the create response, as
// Stripe does; the delivery engine reads it from a side table. Stripe renders an endpoint's events at its
// `api_version` (stripe-facts §6.4); the sandbox has one rendering, its own API_VERSION, so it refuses any other
// version rather than accept it and send events in a shape the endpoint did not ask for.
import { snapshot } from '../core/diff.js';
import { invalidRequest, requireObject } from '../core/errors.js';
import { API_VERSION } from '../core/event-bus.js';
import { newId, newWebhookSecret } from '../core/ids.js';
import { listParams, paginate } from '../core/list.js';
import { bool, mergeMetadata, metadata, required, str, strList } from '../core/params.js';
import { route } from '../http/router.js';
import type { Core } from '../core/core.js';
import type { StripeObject } from '../core/store.js';
import type { Route } from '../http/router.js';
import type { WebhookTarget } from '../webhooks/delivery.js';

export interface WebhookEndpoint extends StripeObject {
  object: 'webhook_endpoint';
  api_version: string | null;
  application: null;
  description: string | null;
  enabled_events: string[];
  livemode: false;
  metadata: Record<string, string>;
  status: 'enabled' | 'disabled';
  url: string;
}

export interface WebhookEndpoints {
  targets(): WebhookTarget[];
  routes: Route[];
}

function checkApiVersion(version: string | undefined): void {
  if (version === undefined || version === API_VERSION) return;
  throw invalidRequest(`This sandbox renders events only at its own API version, ${API_VERSION}, and cannot send them at ${version}. Leave api_version out or pass ${API_VERSION}.`, {
    param: 'api_version',
  });
}

function checkUrl(url: string): void {
  try {
    const parsed = new URL(url);
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error('scheme');
  } catch {
    throw invalidRequest(`Invalid URL: ${url}`, { param: 'url', code: 'url_invalid' });
  }
}

export function createWebhookEndpoints({ store, clock }: Core): WebhookEndpoints {
  const collection = store.collection<WebhookEndpoint>('webhook_endpoint');
  const secrets = store.sideTable<string>('webhook_endpoint.secret');

  const require = (id: string): WebhookEndpoint => requireObject(collection, 'webhook_endpoint', id);

  const routes = [
    route({
      method: 'POST',
      path: '/v1/webhook_endpoints',
      params: { url: required(str()), enabled_events: required(strList()), description: str(), metadata: metadata(), api_version: str(), connect: bool() },
      check: (params) => {
        checkUrl(params.url);
        checkApiVersion(params.api_version);
      },
      handle: (params) => {
        const endpoint = collection.insert({
          id: newId('we'),
          object: 'webhook_endpoint',
          api_version: params.api_version ?? null,
          application: null,
          created: clock.nowSeconds(),
          description: params.description ?? null,
          enabled_events: params.enabled_events,
          livemode: false,
          metadata: mergeMetadata({}, params.metadata),
          status: 'enabled',
          url: params.url,
        });
        const secret = newWebhookSecret();
        secrets.set(endpoint.id, secret);
        return { ...snapshot(endpoint), secret };
      },
    }),
    route({ method: 'GET', path: '/v1/webhook_endpoints/:id', params: {}, handle: (_params, path) => require(path['id'] ?? '') }),
    route({
      method: 'POST',
      path: '/v1/webhook_endpoints/:id',
      params: { url: str(), enabled_events: strList(), description: str(), metadata: metadata(), disabled: bool() },
      check: (params) => {
        if (params.url !== undefined) checkUrl(params.url);
      },
      handle: (params, path) => {
        const endpoint = require(path['id'] ?? '');
        endpoint.metadata = mergeMetadata(endpoint.metadata, params.metadata);
        if (params.url !== undefined) endpoint.url = params.url;
        if (params.enabled_events !== undefined) endpoint.enabled_events = params.enabled_events;
        if (params.description !== undefined) endpoint.description = params.description;
        if (params.disabled !== undefined) endpoint.status = params.disabled ? 'disabled' : 'enabled';
        return endpoint;
      },
    }),
    route({
      method: 'DELETE',
      path: '/v1/webhook_endpoints/:id',
      params: {},
      handle: (_params, path) => {
        const endpoint = require(path['id'] ?? '');
        collection.remove(endpoint.id);
        return { id: endpoint.id, object: 'webhook_endpoint', deleted: true };
      },
    }),
    route({ method: 'GET', path: '/v1/webhook_endpoints', params: listParams, handle: (params) => paginate(collection.newestFirst(), params, '/v1/webhook_endpoints') }),
  ];

  return {
    targets: () =>
      collection
        .newestFirst()
        .filter((e) => e.status === 'enabled')
        .map((e) => ({ id: e.id, url: e.url, secret: secrets.get(e.id) ?? '', enabledEvents: e.enabled_events })),
    routes,
  };
}
