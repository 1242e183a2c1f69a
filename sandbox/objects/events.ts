// The Events API: every event the bus has published, newest first, filterable by type (`*` wildcards),
// `types[]`, `created` and whether all webhooks were delivered. As in Stripe's OpenAPI document, `types[]` holds
// up to 20 names and cannot be combined with `type`.
import { invalidRequest, requireObject } from '../core/errors.js';
import { listParams, paginate } from '../core/list.js';
import { bool, str, strList } from '../core/params.js';
import { route } from '../http/router.js';
import { typeMatches } from '../webhooks/delivery.js';
import type { EventBus } from '../core/event-bus.js';
import type { Route } from '../http/router.js';

const MAX_TYPES = 20;

export function eventRoutes(bus: EventBus): Route[] {
  return [
    route({
      method: 'GET',
      path: '/v1/events/:id',
      params: {},
      handle: (_params, path) => requireObject(bus.events, 'event', path['id'] ?? ''),
    }),
    route({
      method: 'GET',
      path: '/v1/events',
      params: { ...listParams, type: str(), types: strList(), delivery_success: bool() },
      check: (params) => {
        if (params.type !== undefined && params.types !== undefined) {
          throw invalidRequest('Pass either type or types[] to filter events, not both.', { param: 'types' });
        }
        if (params.types !== undefined && params.types.length > MAX_TYPES) {
          throw invalidRequest(`types[] can name at most ${MAX_TYPES} event types; ${params.types.length} were given.`, { param: 'types' });
        }
      },
      handle: (params) => {
        const items = bus.events
          .newestFirst()
          .filter(
            (e) =>
              (params.type === undefined || typeMatches(params.type, e.type)) &&
              (params.types === undefined || params.types.some((t) => typeMatches(t, e.type))) &&
              (params.delivery_success === undefined || (e.pending_webhooks === 0) === params.delivery_success),
          );
        return paginate(items, params, '/v1/events');
      },
    }),
  ];
}
