// Rule: a list page (the inbox, the effects) sent a page position (starting_after) it never gave out answers 400 with
// a page saying so and linking to the first page, its filters kept, as the API answers such a cursor with an error.
// The inbox showed its first page as if nothing was wrong.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { signIn } from '../http/page-sessions.js';
import { rigSuite, TOKENS } from '../http/rig.js';

const rig = rigSuite();

const SAYS = 'is not one this page gave out';

describe('a list page sent a page position it never gave out', () => {
  it('the inbox answers 400 with a page linking to its first page', async () => {
    const { cookie } = await signIn(rig.app, TOKENS.approver);
    for (const [query, first] of [
      ['starting_after=bogus', '/ui/inbox'],
      ['status=closed&starting_after=12.nothing', '/ui/inbox?status=closed'],
      ['starting_after=1.stale_premise:abc', '/ui/inbox'],
      [`starting_after=1.stale_premise:${'a'.repeat(64)}&starting_after=2.stale_premise:${'a'.repeat(64)}`, '/ui/inbox'],
    ] as const) {
      const answer = await request(rig.app).get(`/ui/inbox?${query}`).set('Cookie', cookie);
      expect({ query, status: answer.status, type: answer.type }).toEqual({ query, status: 400, type: 'text/html' });
      expect(answer.text).toContain(SAYS);
      expect(answer.text).toContain(`<a href="${first.replace(/&/g, '&amp;')}">First page</a>`);
    }
    // The API refuses the same cursor.
    expect((await request(rig.app).get('/v1/inbox?starting_after=bogus').set('Authorization', `Bearer ${TOKENS.approver}`)).status).toBe(400);
    // A position of the page's own form is taken: an item id after its time, whether or not that item is still there.
    expect((await request(rig.app).get(`/ui/inbox?starting_after=1.stale_premise:${'a'.repeat(64)}`).set('Cookie', cookie)).status).toBe(200);
    expect((await request(rig.app).get(`/ui/inbox?status=closed&starting_after=1.case_failed:${'b'.repeat(64)}:5`).set('Cookie', cookie)).status).toBe(200);
  });

  it('the effects page answers 400 the same way, its filters kept on the first page link', async () => {
    const { cookie } = await signIn(rig.app, TOKENS.operator);
    for (const [query, first] of [
      ['starting_after=bogus', '/ui'],
      ['state=committed&starting_after=bogus', '/ui?state=committed'],
      ['state=sideways&starting_after=bogus', '/ui'],
      [`starting_after=1.${'a'.repeat(64)}&starting_after=2.${'a'.repeat(64)}`, '/ui'],
    ] as const) {
      const answer = await request(rig.app).get(`/ui?${query}`).set('Cookie', cookie);
      expect({ query, status: answer.status, type: answer.type }).toEqual({ query, status: 400, type: 'text/html' });
      expect(answer.text).toContain(SAYS);
      expect(answer.text).toContain(`<a href="${first.replace(/&/g, '&amp;')}">First page</a>`);
    }
    expect((await request(rig.app).get(`/ui?starting_after=1.${'a'.repeat(64)}`).set('Cookie', cookie)).status).toBe(200);
  });
});
