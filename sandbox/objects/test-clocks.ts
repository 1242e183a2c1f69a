// Test clocks (stripe-facts §8.5): a frozen time that customers attach to at creation. Objects made for those
// customers carry the clock's time, not the wall's (scenarios.md §3.7). Advancing is asynchronous:
//   ready ──advance──▶ advancing ──(testClockAdvances)──▶ ready
// and in between the billing families catch up to the new time (renewals, invoice finalization), in the order
// they registered, so every invoice event falls between `…advancing` and `…ready`.
import { snapshot } from '../core/diff.js';
import { automatic } from '../core/event-bus.js';
import { invalidRequest, requireObject } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { listParams, paginate } from '../core/list.js';
import { int, required, str } from '../core/params.js';
import { route } from '../http/router.js';
import type { Core } from '../core/core.js';
import type { EventOrigin } from '../core/event-bus.js';
import type { StripeObject } from '../core/store.js';
import type { Route } from '../http/router.js';

export const testClockStatuses = ['ready', 'advancing', 'internal_failure'] as const;
export type TestClockStatus = (typeof testClockStatuses)[number];

export interface TestClock extends StripeObject {
  object: 'test_helpers.test_clock';
  deletes_after: number;
  frozen_time: number;
  livemode: false;
  name: string | null;
  status: TestClockStatus;
  status_details: { advancing?: { target_frozen_time: number } };
}

/** Runs everything due on `clock` up to `until` (Unix seconds), before the clock reads `ready`. */
export type CatchUp = (clock: TestClock, until: number) => void;

export interface TestClocks {
  require(id: string, param?: string): TestClock;
  /** Billing families register what an advance must run; they run in registration order. */
  onAdvance(catchUp: CatchUp): void;
  routes: Route[];
}

const DELETES_AFTER_SECONDS = 30 * 86_400;

export function createTestClocks({ store, clock, events }: Core): TestClocks {
  const collection = store.collection<TestClock>('test_helpers.test_clock');
  const catchUps: CatchUp[] = [];

  const require = (id: string, param = 'test_clock'): TestClock => requireObject(collection, 'test_clock', id, param);

  const finishAdvance = (testClock: TestClock, target: number): void => {
    // A clock deleted while advancing has nothing left to run.
    if (collection.get(testClock.id) === undefined) return;
    const before = snapshot(testClock);
    // The clock already reads the target while its work runs, so what that work records is stamped in the new
    // present; each step that happened earlier (a renewal at period end) passes its own time.
    testClock.frozen_time = target;
    for (const catchUp of catchUps) catchUp(testClock, target);
    testClock.status = 'ready';
    testClock.status_details = {};
    events.emit('test_helpers.test_clock.ready', testClock, automatic, { before });
  };

  const advance = (testClock: TestClock, target: number, origin: EventOrigin): TestClock => {
    if (testClock.status === 'advancing') {
      throw invalidRequest(`Test clock ${testClock.id} is currently advancing. Wait for it to be ready before advancing it again.`);
    }
    if (target <= testClock.frozen_time) {
      throw invalidRequest('The frozen_time must be after the test clock’s current frozen_time.', { param: 'frozen_time' });
    }
    const before = snapshot(testClock);
    testClock.status = 'advancing';
    testClock.status_details = { advancing: { target_frozen_time: target } };
    events.emit('test_helpers.test_clock.advancing', testClock, origin, { before });
    clock.after('testClockAdvances', () => finishAdvance(testClock, target));
    return testClock;
  };

  const routes = [
    route({
      method: 'POST',
      path: '/v1/test_helpers/test_clocks',
      params: { frozen_time: required(int({ min: 0 })), name: str({ maxLength: 300 }) },
      handle: (params, _path, ctx) => {
        const now = clock.nowSeconds();
        const testClock = collection.insert({
          id: newId('clock'),
          object: 'test_helpers.test_clock',
          created: now,
          deletes_after: now + DELETES_AFTER_SECONDS,
          frozen_time: params.frozen_time,
          livemode: false,
          name: params.name ?? null,
          status: 'ready',
          status_details: {},
        });
        events.emit('test_helpers.test_clock.created', testClock, ctx.origin);
        return testClock;
      },
    }),
    route({ method: 'GET', path: '/v1/test_helpers/test_clocks/:id', params: {}, handle: (_params, path) => require(path['id'] ?? '', 'id') }),
    route({
      method: 'GET',
      path: '/v1/test_helpers/test_clocks',
      params: listParams,
      handle: (params) => paginate(collection.newestFirst(), params, '/v1/test_helpers/test_clocks'),
    }),
    route({
      method: 'POST',
      path: '/v1/test_helpers/test_clocks/:id/advance',
      params: { frozen_time: required(int({ min: 0 })) },
      handle: (params, path, ctx) => advance(require(path['id'] ?? '', 'id'), params.frozen_time, ctx.origin),
    }),
    route({
      method: 'DELETE',
      path: '/v1/test_helpers/test_clocks/:id',
      params: {},
      handle: (_params, path, ctx) => {
        const testClock = require(path['id'] ?? '', 'id');
        collection.remove(testClock.id);
        events.emit('test_helpers.test_clock.deleted', testClock, ctx.origin);
        return { id: testClock.id, object: 'test_helpers.test_clock', deleted: true };
      },
    }),
  ];

  return { require, onAdvance: (catchUp) => void catchUps.push(catchUp), routes };
}
