// Rule: the effects page never says "No effects match." while effects remain to be looked at: a filter few effects
// match can fill no page before the listing's scan budget (SCAN_BUDGET) stops it, and that page says no match was
// found among the effects looked at so far and links to the rest, where the match is.
import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { SCAN_BUDGET } from '../../webhooks/api/listing.js';
import { inboxSuite } from '../http/inbox-items.js';
import { signIn } from '../http/page-sessions.js';
import { bearer, TOKENS } from '../http/rig.js';

const { rig, make } = inboxSuite();

describe('filtering the effects page by a payment whose refund is older than a scan budget of other effects', () => {
  it('says the first page found none so far and more remain, and the link it gives finds the refund', async () => {
    const pi = `pi_${randomBytes(5).toString('hex')}`;
    const effectId = await make.proposed(pi);
    // More effects than the budget on another payment, bound after it: only their index entries are read.
    const newest = Date.now() + 1_000;
    const pipeline = rig.redis.pipeline();
    for (let n = 0; n <= SCAN_BUDGET; n += 1) {
      const other = randomBytes(32).toString('hex');
      pipeline.zadd(rig.stores.keys.effectsByTime, newest + n, other);
      pipeline.hset(rig.stores.keys.effectPartitions, other, 'payment:pi_someoneelse');
    }
    await pipeline.exec();
    const api = await request(rig.app).get(`/v1/effects?subject=payment:${pi}`).set(bearer(TOKENS.auditor));
    expect({ data: api.body.data, has_more: api.body.has_more }).toEqual({ data: [], has_more: true });

    const { cookie } = await signIn(rig.app, TOKENS.auditor);
    const page = await request(rig.app).get(`/ui?subject=${encodeURIComponent(`payment:${pi}`)}`).set('Cookie', cookie);
    expect(page.status).toBe(200);
    expect(page.text).not.toContain('No effects match.');
    const further = /No match among the effects looked at so far, newest first; older effects remain to be looked at: <a href="([^"]+)">look further<\/a>\./.exec(page.text)?.[1];
    expect(further).toBeDefined();
    const next = /<a href="([^"]+)" rel="next">Next page<\/a>/.exec(page.text)?.[1];
    expect(next).toBe(further);
    const second = await request(rig.app).get((further as string).replace(/&amp;/g, '&')).set('Cookie', cookie);
    expect(second.text).toContain(`/ui/effects/${effectId}`);
    // A filter that matches nothing once every effect was looked at still says so.
    const none = await request(rig.app).get('/ui?request=no-such-request').set('Cookie', cookie);
    expect(none.text).toContain('No effects match.');
  });
});
