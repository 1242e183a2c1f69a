// Rule: an effect whose chain in Redis holds fewer entries than its state counts (gone while its state stays, or cut
// short, as after a partial loss in Redis) is never shown as the effect nor answered "no effect" by its own page, the
// API's or /ui's, which would tell an auditor that money moved never existed: both answer 500 journal_inconsistent,
// as its receipt does. An effect Redis knows nothing of stays 404 unknown_effect.
import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { beforeAll, expect, it } from 'vitest';
import { inboxSuite } from './inbox-items.js';
import { pageSession } from './page-sessions.js';
import { bearer, TOKENS } from './rig.js';

const { rig, make } = inboxSuite();

let chain = '';
let effectId = '';
let entriesKey = '';
beforeAll(async () => {
  const pi = `pi_${randomBytes(5).toString('hex')}`;
  effectId = await make.proposed(pi);
  expect(await make.submitLatest(effectId)).toBe('COMMITTED');
  entriesKey = rig.stores.keys.entries(`payment:${pi}`, effectId);
  chain = (await rig.redis.get(entriesKey)) ?? '';
  expect(chain.split('\n').length).toBeGreaterThan(1);
}, 120_000);

async function answers(): Promise<{ api: [number, string]; ui: number; receipt: [number, string] }> {
  const api = await request(rig.app).get(`/v1/effects/${effectId}`).set(bearer(TOKENS.auditor));
  const receipt = await request(rig.app).get(`/v1/effects/${effectId}/receipt`).set(bearer(TOKENS.auditor));
  const ui = await request(rig.app).get(`/ui/effects/${effectId}`).set('cookie', (await pageSession(rig.app, TOKENS.auditor)).cookie);
  return { api: [api.status, api.body?.error?.code], ui: ui.status, receipt: [receipt.status, receipt.body?.error?.code] };
}

it('answers a chain gone while its state stays as 500 journal_inconsistent, never 404', async () => {
  await rig.redis.del(entriesKey);
  try {
    expect(await answers()).toEqual({ api: [500, 'journal_inconsistent'], ui: 500, receipt: [500, 'journal_inconsistent'] });
  } finally {
    await rig.redis.set(entriesKey, chain);
  }
});

it('answers a chain cut short as 500 journal_inconsistent, never as the effect it no longer is', async () => {
  await rig.redis.set(entriesKey, chain.split('\n').slice(0, -1).join('\n'));
  try {
    expect(await answers()).toEqual({ api: [500, 'journal_inconsistent'], ui: 500, receipt: [500, 'journal_inconsistent'] });
  } finally {
    await rig.redis.set(entriesKey, chain);
  }
});

it('shows the effect whole again once its chain is back, and answers an effect Redis never held 404', async () => {
  const whole = await answers();
  expect([whole.api[0], whole.ui, whole.receipt[0]]).toEqual([200, 200, 200]);
  const never = await request(rig.app).get(`/v1/effects/${randomBytes(32).toString('hex')}`).set(bearer(TOKENS.auditor));
  expect([never.status, never.body?.error?.code]).toEqual([404, 'unknown_effect']);
});
