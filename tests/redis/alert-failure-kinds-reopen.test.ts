// Rule: a not_judged or send_unanswered alert is about one failure of its effect (a job that failed for good before
// the effect was judged, a dispatch Stripe gave no definite answer to). Once resolved (by the worker that raised it,
// or by a person), a raise about a NEWER failure of the same effect opens it again, and the open-alerts index (the
// interlock_alerts_open gauge, `interlock alerts`) counts it; a raise about the failure resolved, or an older one,
// leaves it resolved. They used to stay resolved for good: a re-decision's job failing for good, or a later dispatch
// again unanswered, only rewrote the resolved alert's updatedAt.
// "Newer": a raise that says when its failure happened (`occurredAt`) is newer than the failure the alert named by
// its resolution. Unsaid: a not_judged raise (made once, as its job fails for good) is; a send_unanswered raise is
// when recovery resolved the alert because the effect settled (its dispatch closed), not when a person resolved it
// while recovery keeps raising it about the same open dispatch.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { createAlerts, type AlertKind } from '../../src/redis/alerts.js';
import { createKeys } from '../../src/redis/keys.js';
import { REDIS_URL } from '../support/harness.js';

const prefix = `alert-failure-reopen-${randomBytes(5).toString('hex')}`;
const redis = new Redis(REDIS_URL);
const keys = createKeys(prefix);
let clock = 1_700_000_000_000;
const alerts = createAlerts({ redis, keys, now: async () => (clock += 1_000) });

afterAll(async () => {
  const stale = await redis.keys(`${prefix}:*`);
  if (stale.length > 0) await redis.del(...stale);
  await redis.quit();
});

function failure(kind: 'not_judged' | 'send_unanswered') {
  const effectId = randomBytes(32).toString('hex');
  return { id: `${kind}:${effectId}`, draft: { kind, effectId, subject: 'payment:pi_1', centsAtStake: 2_000, currency: 'usd', refund: null, disputes: [], sentence: 's', action: 'a' } };
}

async function openOf(kind: AlertKind): Promise<string[]> {
  const ids: string[] = [];
  for await (const alert of alerts.openOf(kind)) ids.push(alert.id);
  return ids;
}

async function isOpen(id: string, kind: AlertKind): Promise<{ open: boolean; indexed: boolean }> {
  return { open: (await alerts.get(id))?.resolvedAt === null, indexed: (await openOf(kind)).includes(id) };
}

const OPEN = { open: true, indexed: true };
const RESOLVED = { open: false, indexed: false };

describe('not_judged', () => {
  it('opens again for a later job failing for good, after the effects worker resolved it, and after a person did', async () => {
    const { id, draft } = failure('not_judged');
    await alerts.raise(draft);
    expect((await alerts.resolve(id, 'effects worker: the effect was judged'))?.resolved).toBe(true);
    expect(await isOpen(id, 'not_judged')).toEqual(RESOLVED);
    const before = (await alerts.openCountByKind()).not_judged;

    const again = (await alerts.raise(draft)).alert;
    expect({ resolvedAt: again.resolvedAt, resolvedBy: again.resolvedBy, reopened: again.reopenedAt !== undefined }).toEqual({ resolvedAt: null, resolvedBy: null, reopened: true });
    expect(await isOpen(id, 'not_judged')).toEqual(OPEN);
    expect((await alerts.openCountByKind()).not_judged).toBe(before + 1);

    expect((await alerts.resolve(id, 'lee (operator)'))?.resolved).toBe(true);
    await alerts.raise(draft);
    expect(await isOpen(id, 'not_judged')).toEqual(OPEN);
  });

  it('a raise saying its failure is the one resolved, or older, leaves it resolved; a newer one opens it', async () => {
    const { id, draft } = failure('not_judged');
    const failedAt = clock;
    await alerts.raise({ ...draft, occurredAt: failedAt });
    expect((await alerts.resolve(id, 'effects worker: the effect was judged'))?.resolved).toBe(true);
    await alerts.raise({ ...draft, occurredAt: failedAt });
    await alerts.raise({ ...draft, occurredAt: failedAt - 5_000 });
    expect(await isOpen(id, 'not_judged')).toEqual(RESOLVED);
    expect((await alerts.get(id))?.resolvedBy).toBe('effects worker: the effect was judged');
    await alerts.raise({ ...draft, occurredAt: failedAt + 1 });
    expect(await isOpen(id, 'not_judged')).toEqual(OPEN);
  });
});

describe('send_unanswered', () => {
  it('opens again for a later dispatch unanswered, after recovery resolved it because the effect settled', async () => {
    const { id, draft } = failure('send_unanswered');
    await alerts.raise(draft);
    expect((await alerts.resolve(id, 'recovery: the effect settled REFUSED:stale_premise_at_recovery'))?.resolved).toBe(true);
    const before = (await alerts.openCountByKind()).send_unanswered;
    await alerts.raise(draft);
    expect(await isOpen(id, 'send_unanswered')).toEqual(OPEN);
    expect((await alerts.openCountByKind()).send_unanswered).toBe(before + 1);
  });

  it('a person\'s resolution stands through the raises about the dispatch they resolved; a later dispatch opens it', async () => {
    const { id, draft } = failure('send_unanswered');
    const dispatchedAt = clock;
    await alerts.raise({ ...draft, occurredAt: dispatchedAt });
    expect((await alerts.resolve(id, 'lee (operator)'))?.resolved).toBe(true);
    // Recovery raises it again with every pass while that dispatch stays open.
    await alerts.raise({ ...draft, occurredAt: dispatchedAt });
    await alerts.raise(draft);
    expect(await isOpen(id, 'send_unanswered')).toEqual(RESOLVED);
    expect((await alerts.get(id))?.resolvedBy).toBe('lee (operator)');
    // The effect settled and was dispatched again (a re-decision); that dispatch goes unanswered too.
    await alerts.raise({ ...draft, occurredAt: clock + 1 });
    expect(await isOpen(id, 'send_unanswered')).toEqual(OPEN);
  });

  it('a pass that raced the settle, raising about the dispatch that settled, leaves it resolved', async () => {
    const { id, draft } = failure('send_unanswered');
    const dispatchedAt = clock;
    await alerts.raise({ ...draft, occurredAt: dispatchedAt });
    expect((await alerts.resolve(id, 'recovery: the effect settled COMMITTED_ON_QUERY'))?.resolved).toBe(true);
    await alerts.raise({ ...draft, occurredAt: dispatchedAt });
    expect(await isOpen(id, 'send_unanswered')).toEqual(RESOLVED);
  });
});

it('the facts kinds keep their own rule: an exposure a person resolved stays resolved through the same raise', async () => {
  const effectId = randomBytes(32).toString('hex');
  const exposure = { kind: 'exposure' as const, effectId, subject: 'payment:pi_1', centsAtStake: 2_000, currency: 'usd', refund: 're_1', disputes: ['du_1'], disputeStatuses: ['needs_response'], sentence: 's', action: 'a' };
  await alerts.raise(exposure);
  expect((await alerts.resolve(`exposure:${effectId}`, 'lee (operator)'))?.resolved).toBe(true);
  const again = (await alerts.raise({ ...exposure, occurredAt: clock + 1 })).alert;
  expect({ resolvedBy: again.resolvedBy, occurredAt: again.occurredAt }).toEqual({ resolvedBy: 'lee (operator)', occurredAt: undefined });
});
