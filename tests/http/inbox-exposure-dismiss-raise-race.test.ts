// Rule: a dismissal of an exposure item resolves its alert only when the alert names no dispute beyond those the
// item decided on (src/redis/inbox.ts resolveDecided, exposureDisputesDecided), judged on the alert as it stands when
// the resolution is written: a second chargeback raised between the dismissal's read of the alert and its write is
// new money at stake the person never saw, and must leave the alert open. The same holds for the exposure repair
// (src/interlock.ts repairExposures), which resolves the alert of an item a person closed.
import { describe, expect, it } from 'vitest';
import { journalOf, raiseAlert, repairExposures } from '../../src/interlock.js';
import { createAlerts } from '../../src/redis/alerts.js';
import { createInbox } from '../../src/redis/inbox.js';
import { createRedisClient, type RedisClient } from '../../src/redis/client.js';
import type { Rig } from './rig.js';
import { committedForExposure, inboxSuite } from './inbox-items.js';

const { rig, make } = inboxSuite();
const by = { name: 'dana', role: 'approver' as const };

/**
 * Alerts whose first write takes its time (after reading the alert, before writing it) while `raise` runs: a chargeback
 * raised between a resolution's read and its write.
 */
function raisingAtWrite(rig: Rig, redis: RedisClient, raise: () => Promise<unknown>) {
  let armed = true;
  const alerts = createAlerts({
    redis,
    keys: rig.stores.keys,
    now: async () => {
      if (armed) {
        armed = false;
        await raise();
      }
      return rig.stores.journal.serverTime();
    },
  });
  return { alerts, raised: () => !armed };
}

describe('a chargeback raised while an exposure alert is being resolved', () => {
  it('keeps the alert open when a dismissal of the item that showed only the first one resolves it', async () => {
    const { effectId, item, first, second, exposure } = await committedForExposure(make);
    await raiseAlert(rig.stores, exposure(4_000, [first]));
    expect((await rig.stores.inbox.get(item))?.detail?.['disputes']).toEqual([first]);

    // The inbox's alerts take the time for the resolution's write after reading the alert: the second chargeback is
    // raised right then, between that read and the write.
    const redis = createRedisClient(rig.stores.config);
    try {
      const { alerts, raised } = raisingAtWrite(rig, redis, () => raiseAlert(rig.stores, exposure(16_000, [first, second])));
      const racing = createInbox({ redis, keys: rig.stores.keys, journal: journalOf(rig.stores), alerts });
      await racing.act(item, { action: 'dismiss', by, note: 'answered the first chargeback' });
      expect(raised()).toBe(true);
    } finally {
      await redis.quit();
    }

    const alert = await rig.stores.alerts.get(`exposure:${effectId}`);
    expect({ disputes: alert?.disputes, resolvedAt: alert?.resolvedAt }).toEqual({ disputes: [first, second], resolvedAt: null });
  });

  it('keeps the alert open when the exposure repair resolves it for a closed item', async () => {
    const { effectId, item, first, second, exposure } = await committedForExposure(make);
    await raiseAlert(rig.stores, exposure(4_000, [first]));
    const redis = createRedisClient(rig.stores.config);
    try {
      // The person dismissed the item, and the process stopped before it resolved the alert: the repair's to do.
      const stoppedAlerts = { get: (id: string) => rig.stores.alerts.get(id), resolve: () => Promise.reject(new Error('the process stopped')) };
      const stopped = createInbox({ redis, keys: rig.stores.keys, journal: journalOf(rig.stores), alerts: stoppedAlerts });
      await expect(stopped.act(item, { action: 'dismiss', by, note: 'answered the first chargeback' })).rejects.toThrow('the process stopped');
      expect((await rig.stores.alerts.get(`exposure:${effectId}`))?.resolvedAt).toBeNull();

      // The repair reads the open alert (one chargeback, as the person saw), and the second is raised before it writes.
      const { alerts, raised } = raisingAtWrite(rig, redis, () => raiseAlert(rig.stores, exposure(16_000, [first, second])));
      const repair = await repairExposures({ ...rig.stores, alerts });
      expect({ raised: raised(), resolved: repair.resolvedAlerts.includes(`exposure:${effectId}`) }).toEqual({ raised: true, resolved: false });
    } finally {
      await redis.quit();
    }
    const alert = await rig.stores.alerts.get(`exposure:${effectId}`);
    expect({ disputes: alert?.disputes, resolvedAt: alert?.resolvedAt }).toEqual({ disputes: [first, second], resolvedAt: null });
  });
});
