// Rule: bad input gets a clear 400 and loses nothing: a page form whose bytes are not UTF-8 (a script that wrote the
// note in Latin-1, "café" as 63 61 66 E9), or whose %-escapes do not decode (caf%E9, or a bare % beside a good escape),
// is refused with a page saying so, and nothing is recorded. The parser read such a byte as U+FFFD, and such a field
// undecoded, so the dismissal was signed with another note than the one sent. A UTF-8 form, and one in ISO-8859-1
// that says so, are read.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { inboxSuite } from './inbox-items.js';
import { pageSession } from './page-sessions.js';
import { bearer, TOKENS } from './rig.js';

const { rig, make } = inboxSuite();

describe('an inbox form that is not UTF-8', () => {
  it('is refused 400 with nothing recorded; the note in UTF-8, or in ISO-8859-1 said so, is recorded as written', async () => {
    const dana = await pageSession(rig.app, TOKENS.danaApprover);
    const fields = `csrf=${encodeURIComponent(dana.csrf)}&token=${encodeURIComponent(TOKENS.danaApprover)}&note=`;
    const post = (item: string, note: Buffer, type = 'application/x-www-form-urlencoded') =>
      request(rig.app)
        .post(`/ui/inbox/${item}/dismiss`)
        .set('Content-Type', type)
        .set('Cookie', dana.cookie)
        .set('sec-fetch-site', 'same-origin')
        .serialize((body: unknown) => body as string)
        .send(Buffer.concat([Buffer.from(fields), note]));
    const noteOf = async (item: string) => (await request(rig.app).get(`/v1/inbox/${item}`).set(bearer(TOKENS.approver))).body as { status: string; closed?: { note: string } };

    const { item } = await make.stale();
    for (const note of [Buffer.from('caf\u00e9 customer', 'latin1'), Buffer.from('caf%E9+customer'), Buffer.from('caf%C3%A9+customer,+100%')]) {
      const refused = await post(item, note);
      expect(refused.status, refused.text.slice(0, 300)).toBe(400);
      expect(refused.text).toContain('The form is not UTF-8');
      expect(refused.text).toContain('Nothing was recorded.');
    }
    expect((await noteOf(item)).status).toBe('open');

    const written = await post(item, Buffer.from(`${encodeURIComponent('caf\u00e9')}+customer,+100%25`));
    expect(written.status, written.text.slice(0, 300)).toBe(303);
    expect(await noteOf(item)).toMatchObject({ status: 'closed', closed: { note: 'caf\u00e9 customer, 100%' } });

    const other = await make.stale();
    const latin1 = await post(other.item, Buffer.from('caf%E9 customer'), 'application/x-www-form-urlencoded; charset=iso-8859-1');
    expect(latin1.status, latin1.text.slice(0, 300)).toBe(303);
    expect(await noteOf(other.item)).toMatchObject({ status: 'closed', closed: { note: 'caf\u00e9 customer' } });
  });
});
