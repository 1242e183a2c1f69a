// Rule: an alert a person resolved opens again only for a dispute the person did not see when resolving it (or a
// decided dispute that changed the advice); a raise from another facts process's older read (before a dispute was
// recorded) neither reopens it nor drops from it a dispute the resolution named (nor a compensation: billing's second
// note for the incident). It used to write the alert without that dispute (or note), and the next up-to-date raise
// naming it again counted it as new and reopened the alert. A stale raise that also names a new item opens the alert
// again showing what the raise names, and "new" is judged against every resolution of the alert, so resolving it as
// shown and the up-to-date raise never reopen it for an item already handled; and a stale raise that keeps the alert
// resolved keeps the amount and sentence of the last raise that named all of it.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { createAlerts } from '../../src/redis/alerts.js';
import { createKeys } from '../../src/redis/keys.js';
import { REDIS_URL } from '../support/harness.js';

const prefix = `alert-stale-raise-${randomBytes(5).toString('hex')}`;
const redis = new Redis(REDIS_URL);
const keys = createKeys(prefix);
let clock = 1_700_000_000_000;
const alerts = createAlerts({ redis, keys, now: async () => (clock += 1) });

afterAll(async () => {
  const stale = await redis.keys(`${prefix}:*`);
  if (stale.length > 0) await redis.del(...stale);
  await redis.quit();
});

function exposure(withStatuses: boolean) {
  const effectId = randomBytes(32).toString('hex');
  const base = { kind: 'exposure' as const, effectId, subject: 'payment:pi_stale', currency: 'usd', refund: 're_stale', sentence: 'Charged back.', action: 'Reply to the disputes.' };
  const statuses = (count: number) => (withStatuses ? { disputeStatuses: Array.from({ length: count }, () => 'needs_response') } : {});
  return {
    id: `exposure:${effectId}`,
    both: { ...base, centsAtStake: 6_000, disputes: ['du_1', 'du_2'], ...statuses(2) },
    olderRead: { ...base, centsAtStake: 4_000, disputes: ['du_1'], ...statuses(1) },
    third: { ...base, centsAtStake: 8_000, disputes: ['du_1', 'du_2', 'du_3'], ...statuses(3) },
  };
}

describe('a resolved exposure alert and a raise from an older read', () => {
  for (const withStatuses of [true, false]) {
    const which = withStatuses ? 'disputes carrying statuses' : 'an alert whose disputes carry no statuses';
    it(`stays resolved, still naming both disputes, through the stale raise and the up-to-date one (${which})`, async () => {
      const alert = exposure(withStatuses);
      await alerts.raise(alert.both);
      expect((await alerts.resolve(alert.id, 'lee (cli)'))?.resolved).toBe(true);

      const stale = (await alerts.raise(alert.olderRead)).alert;
      expect(stale.resolvedAt).not.toBeNull();
      expect(stale.disputes).toEqual(['du_1', 'du_2']);
      if (withStatuses) expect(stale.disputeStatuses).toEqual(['needs_response', 'needs_response']);

      const current = (await alerts.raise(alert.both)).alert;
      expect(current.disputes).toEqual(['du_1', 'du_2']);
      expect({ resolvedBy: current.resolvedBy, reopenedAt: current.reopenedAt }).toEqual({ resolvedBy: 'lee (cli)', reopenedAt: undefined });
      expect(current.resolvedAt).not.toBeNull();
    });

    it(`opens again for a dispute the person did not see, after a stale raise (${which})`, async () => {
      const alert = exposure(withStatuses);
      await alerts.raise(alert.both);
      await alerts.resolve(alert.id, 'lee (cli)');
      await alerts.raise(alert.olderRead);
      const reopened = (await alerts.raise(alert.third)).alert;
      expect(reopened.resolvedAt).toBeNull();
      expect(reopened.disputes).toEqual(['du_1', 'du_2', 'du_3']);
    });
  }
});

describe('a resolved compensated_twice alert and a raise from an older read', () => {
  function twice() {
    const effectId = randomBytes(32).toString('hex');
    const base = { kind: 'compensated_twice' as const, effectId, subject: 'customer:cus_stale', currency: 'usd', refund: 'cn_1', sentence: 'Paid twice.', action: 'Take one back.', disputes: [] };
    return {
      id: `compensated_twice:${effectId}`,
      both: { ...base, centsAtStake: 1_400, compensations: ['cn_1', 'cn_2'] },
      olderRead: { ...base, centsAtStake: 700, compensations: ['cn_1'] },
      third: { ...base, centsAtStake: 2_100, compensations: ['cn_1', 'cn_2', 'cn_3'] },
    };
  }

  it('stays resolved, still naming both compensations, through the stale raise and the up-to-date one', async () => {
    const alert = twice();
    await alerts.raise(alert.both);
    await alerts.resolve(alert.id, 'lee (cli)');
    expect((await alerts.raise(alert.olderRead)).alert.compensations).toEqual(['cn_1', 'cn_2']);
    const current = (await alerts.raise(alert.both)).alert;
    expect({ resolvedBy: current.resolvedBy, reopenedAt: current.reopenedAt, compensations: current.compensations }).toEqual({ resolvedBy: 'lee (cli)', reopenedAt: undefined, compensations: ['cn_1', 'cn_2'] });
    expect(current.resolvedAt).not.toBeNull();
  });

  it('opens again for a compensation the person did not see, after a stale raise', async () => {
    const alert = twice();
    await alerts.raise(alert.both);
    await alerts.resolve(alert.id, 'lee (cli)');
    await alerts.raise(alert.olderRead);
    const reopened = (await alerts.raise(alert.third)).alert;
    expect(reopened.resolvedAt).toBeNull();
    expect(reopened.compensations).toEqual(['cn_1', 'cn_2', 'cn_3']);
  });
});

describe('a stale raise that lacks an item the person handled and names a new one', () => {
  it('compensated_twice: opens again naming what the raise names, and resolving it as shown stands through the up-to-date raise', async () => {
    const effectId = randomBytes(32).toString('hex');
    const base = { kind: 'compensated_twice' as const, effectId, subject: 'customer:cus_mixed', currency: 'usd', refund: 'cn_1', sentence: 'Paid twice.', action: 'Take one back.', disputes: [] };
    const id = `compensated_twice:${effectId}`;
    await alerts.raise({ ...base, centsAtStake: 1_400, compensations: ['cn_1', 'cn_2'] });
    await alerts.resolve(id, 'lee (cli)');
    const reopened = (await alerts.raise({ ...base, centsAtStake: 1_400, compensations: ['cn_1', 'cn_3'] })).alert;
    expect({ open: reopened.resolvedAt === null, compensations: reopened.compensations }).toEqual({ open: true, compensations: ['cn_1', 'cn_3'] });
    await alerts.resolve(id, 'lee (cli)');
    const current = (await alerts.raise({ ...base, centsAtStake: 2_100, compensations: ['cn_1', 'cn_2', 'cn_3'] })).alert;
    expect({ resolvedBy: current.resolvedBy, compensations: current.compensations, centsAtStake: current.centsAtStake }).toEqual({ resolvedBy: 'lee (cli)', compensations: ['cn_1', 'cn_2', 'cn_3'], centsAtStake: 2_100 });
  });

  it('compensated_twice: an item handled by an earlier resolution is never new, even after the alert was open again without it', async () => {
    const effectId = randomBytes(32).toString('hex');
    const base = { kind: 'compensated_twice' as const, effectId, subject: 'customer:cus_mixed2', currency: 'usd', refund: 'cn_1', sentence: 'Paid twice.', action: 'Take one back.', disputes: [] };
    const id = `compensated_twice:${effectId}`;
    await alerts.raise({ ...base, centsAtStake: 1_400, compensations: ['cn_1', 'cn_2'] });
    await alerts.resolve(id, 'lee (cli)');
    await alerts.raise({ ...base, centsAtStake: 2_100, compensations: ['cn_1', 'cn_2', 'cn_3'] });
    // Open again for cn_3; an older read's raise (cn_1 only) shows what it names while the alert is open, and cn_2,
    // handled by the first resolution, stays handled.
    expect((await alerts.raise({ ...base, centsAtStake: 700, compensations: ['cn_1'] })).alert.compensations).toEqual(['cn_1']);
    await alerts.resolve(id, 'lee (cli)');
    const current = (await alerts.raise({ ...base, centsAtStake: 1_400, compensations: ['cn_1', 'cn_2'] })).alert;
    expect({ resolvedBy: current.resolvedBy, compensations: current.compensations }).toEqual({ resolvedBy: 'lee (cli)', compensations: ['cn_1', 'cn_2'] });
    expect((await alerts.raise({ ...base, centsAtStake: 2_100, compensations: ['cn_1', 'cn_2', 'cn_3'] })).alert.resolvedAt).toBeNull();
  });

  it('exposure: opens again naming what the raise names, and resolving it as shown stands through the up-to-date raise', async () => {
    const effectId = randomBytes(32).toString('hex');
    const base = { kind: 'exposure' as const, effectId, subject: 'payment:pi_mixed', currency: 'usd', refund: 're_mixed', sentence: 'Charged back.', action: 'Reply to the disputes.' };
    const id = `exposure:${effectId}`;
    await alerts.raise({ ...base, centsAtStake: 6_000, disputes: ['du_1', 'du_2'], disputeStatuses: ['needs_response', 'under_review'] });
    await alerts.resolve(id, 'lee (cli)');
    const reopened = (await alerts.raise({ ...base, centsAtStake: 6_000, disputes: ['du_1', 'du_3'], disputeStatuses: ['needs_response', 'needs_response'] })).alert;
    expect({ open: reopened.resolvedAt === null, disputes: reopened.disputes, statuses: reopened.disputeStatuses }).toEqual({ open: true, disputes: ['du_1', 'du_3'], statuses: ['needs_response', 'needs_response'] });
    await alerts.resolve(id, 'lee (cli)');
    const current = (await alerts.raise({ ...base, centsAtStake: 8_000, disputes: ['du_1', 'du_2', 'du_3'], disputeStatuses: ['needs_response', 'needs_response', 'needs_response'] })).alert;
    expect({ resolvedBy: current.resolvedBy, disputes: current.disputes }).toEqual({ resolvedBy: 'lee (cli)', disputes: ['du_1', 'du_2', 'du_3'] });
  });

  it('an alert the facts resolved opens again naming only what the facts call for now (nothing they found gone is kept)', async () => {
    const effectId = randomBytes(32).toString('hex');
    const base = { kind: 'compensated_twice' as const, effectId, subject: 'customer:cus_facts', currency: 'usd', refund: 'cn_1', sentence: 'Paid twice.', action: 'Take one back.', disputes: [] };
    const id = `compensated_twice:${effectId}`;
    await alerts.raise({ ...base, centsAtStake: 1_400, compensations: ['cn_1', 'cn_2'] });
    await alerts.resolve(id, 'lee (cli)');
    await alerts.raise({ ...base, centsAtStake: 2_100, compensations: ['cn_1', 'cn_2', 'cn_3'] });
    await alerts.settle(effectId, []);
    const again = (await alerts.raise({ ...base, refund: 'cn_4', centsAtStake: 700, compensations: ['cn_4'] })).alert;
    expect({ open: again.resolvedAt === null, compensations: again.compensations, centsAtStake: again.centsAtStake }).toEqual({ open: true, compensations: ['cn_4'], centsAtStake: 700 });
  });
});

describe('a stale raise that keeps the alert resolved', () => {
  it('keeps the amount and sentence of the raise that named every compensation, until the next such raise', async () => {
    const effectId = randomBytes(32).toString('hex');
    const base = { kind: 'compensated_twice' as const, effectId, subject: 'customer:cus_amount', currency: 'usd', refund: 'cn_1', action: 'Take one back.', disputes: [] };
    const id = `compensated_twice:${effectId}`;
    await alerts.raise({ ...base, sentence: 'Paid twice: two notes.', centsAtStake: 1_400, compensations: ['cn_1', 'cn_2'] });
    await alerts.resolve(id, 'lee (cli)');
    const stale = (await alerts.raise({ ...base, sentence: 'Paid twice: one note.', centsAtStake: 700, compensations: ['cn_1'] })).alert;
    expect({ resolved: stale.resolvedAt !== null, compensations: stale.compensations, centsAtStake: stale.centsAtStake, sentence: stale.sentence }).toEqual({ resolved: true, compensations: ['cn_1', 'cn_2'], centsAtStake: 1_400, sentence: 'Paid twice: two notes.' });
    const current = (await alerts.raise({ ...base, sentence: 'Paid twice: two notes, read again.', centsAtStake: 1_500, compensations: ['cn_1', 'cn_2'] })).alert;
    expect({ centsAtStake: current.centsAtStake, sentence: current.sentence }).toEqual({ centsAtStake: 1_500, sentence: 'Paid twice: two notes, read again.' });
  });

  it('keeps the amount of the raise that named every dispute', async () => {
    const alert = exposure(true);
    await alerts.raise(alert.both);
    await alerts.resolve(alert.id, 'lee (cli)');
    expect((await alerts.raise(alert.olderRead)).alert.centsAtStake).toBe(6_000);
  });
});
