// Rule: everything under /ui answers an HTML page, never the API's JSON: a malformed percent-encoded path is 400, a
// form the page's parser refuses is 413 (too large, too many fields) or 415 (a character set or content encoding it
// does not read), each a page saying nothing was recorded. These were answered with the API's JSON error, which a
// browser shows raw. The API's own paths still answer JSON.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { signIn } from '../http/page-sessions.js';
import { bearer, rigSuite, TOKENS } from '../http/rig.js';

const rig = rigSuite();

const ITEM = `stale_premise:${'a'.repeat(64)}`;

function expectPage(answer: request.Response, status: number, says: string): void {
  expect({ status: answer.status, type: answer.type }).toEqual({ status, type: 'text/html' });
  expect(answer.text.startsWith('<!doctype html>') || answer.text.startsWith('<!DOCTYPE html>')).toBe(true);
  expect(answer.text).toContain(says);
  expect(answer.headers['content-security-policy']).toContain("default-src 'none'");
}

describe('a request under /ui that cannot be read', () => {
  it('with a malformed percent-encoded path is answered 400 with a page, signed in or not', async () => {
    const { cookie } = await signIn(rig.app, TOKENS.operator);
    for (const path of ['/ui/effects/%ZZ', '/ui/effects/%E0%A4%A/receipt', `/ui/inbox/%ZZ`]) {
      expectPage(await request(rig.app).get(path), 400, 'This is not a valid address');
      const signedIn = await request(rig.app).get(path).set('Cookie', cookie);
      expectPage(signedIn, 400, 'This is not a valid address');
      expect(signedIn.text).toContain('<nav aria-label="Sections">');
    }
    expectPage(await request(rig.app).post('/ui/inbox/%ZZ/dismiss').type('form').set('Cookie', cookie).send({ note: 'x' }), 400, 'Nothing was recorded.');
  });

  it('with a form larger than the page takes is answered 413 with a page', async () => {
    const { cookie, csrf } = await signIn(rig.app, TOKENS.approver);
    const answer = await request(rig.app).post(`/ui/inbox/${ITEM}/dismiss`).type('form').set('Cookie', cookie).set('sec-fetch-site', 'same-origin').send({ csrf, note: 'x'.repeat(70_000) });
    expectPage(answer, 413, 'Nothing was recorded.');
    expect(answer.text).toContain('larger than this page takes');
  });

  it('with more fields than the page takes is answered 413 with a page', async () => {
    const fields = Object.fromEntries(Array.from({ length: 12 }, (_, at) => [`f${at}`, 'x']));
    expectPage(await request(rig.app).post('/ui/sign-in').type('form').set('sec-fetch-site', 'same-origin').send({ token: TOKENS.operator, ...fields }), 413, 'more fields than');
  });

  it('in a character set or content encoding the page does not read is answered 415 with a page', async () => {
    const { cookie, csrf } = await signIn(rig.app, TOKENS.approver);
    const latin = await request(rig.app).post(`/ui/inbox/${ITEM}/dismiss`).set('Content-Type', 'application/x-www-form-urlencoded; charset=koi8-r').set('Cookie', cookie).set('sec-fetch-site', 'same-origin').send(`csrf=${encodeURIComponent(csrf)}&note=x`);
    expectPage(latin, 415, 'Nothing was recorded.');
    const encoded = await request(rig.app).post('/ui/sign-out').set('Content-Type', 'application/x-www-form-urlencoded').set('Content-Encoding', 'x-unknown').set('Cookie', cookie).set('sec-fetch-site', 'same-origin').send(`csrf=${encodeURIComponent(csrf)}`);
    expectPage(encoded, 415, 'Nothing was recorded.');
  });

  it('leaves the API answering its own paths with JSON', async () => {
    const answer = await request(rig.app).get('/v1/effects/%ZZ').set(bearer(TOKENS.operator));
    expect({ status: answer.status, type: answer.type }).toEqual({ status: 400, type: 'application/json' });
  });
});
