// Rule: a refused inbox form says what is wrong in plain words, and a field the form does not take (a saved form, a
// browser extension, a post made by hand) is named, never "the the form is not valid".
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { inboxSuite } from '../http/inbox-items.js';
import { signIn } from '../http/page-sessions.js';
import { TOKENS } from '../http/rig.js';

const { rig, make } = inboxSuite();

describe('a dismiss form with fields it does not take', () => {
  it('is refused naming the fields, and nothing is recorded', async () => {
    const { item } = await make.stale();
    const approver = await signIn(rig.app, TOKENS.approver);
    const sent = await request(rig.app).post(`/ui/inbox/${item}/dismiss`).type('form').set('Cookie', approver.cookie).set('sec-fetch-site', 'same-origin').send({ csrf: approver.csrf, token: TOKENS.approver, note: 'handled by phone', resolution: 'landed', approval: 'apr_1' });
    expect(sent.status).toBe(400);
    const alert = /<p class="error" role="alert">([^<]*)<\/p>/.exec(sent.text)?.[1] ?? '';
    expect(alert).toBe('The form needs changes: remove the fields resolution, approval, which this form does not take. Nothing was recorded.');
    expect((await rig.stores.inbox.get(item))?.closure).toBeNull();
  });
});
