// Rule: the request line's url has its secrets masked, never the token itself: an API token (random base64url, with no
// prefix redactSecrets finds) or a page session pasted into the path is written as `…`, percent-encoded or not, while
// ordinary ids in the path (effect ids, case ids) stay whole.
import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { createTokenRegistry } from '../../webhooks/app.js';
import { signIn } from './page-sessions.js';
import { rigSuite } from './rig.js';

/** Generated as local tokens are (random base64url, no prefix), and one holding + / = (percent-encoded in a path). */
const PLAIN = randomBytes(32).toString('base64url');
const ODD = `${randomBytes(24).toString('base64url')}+/=`;
const rig = rigSuite({ deps: { tokens: createTokenRegistry([{ name: 'gen', role: 'auditor', token: PLAIN }, { name: 'odd', role: 'support', token: ODD }]) } });

const settle = () => new Promise((resolve) => setTimeout(resolve, 50));

describe('the request log and secrets in the path', () => {
  it('masks an API token written into the path, as sent or percent-encoded, and keeps an ordinary id', async () => {
    await request(rig.app).get(`/v1/effects/${PLAIN}`).set('Authorization', `Bearer ${PLAIN}`).set('X-Request-Id', 'path-token-plain');
    await request(rig.app).get(`/v1/effects/${encodeURIComponent(ODD)}?limit=1`).set('Authorization', `Bearer ${PLAIN}`).set('X-Request-Id', 'path-token-encoded');
    await request(rig.app).get('/v1/effects/eff_ordinary_id_0123456789abcdef').set('Authorization', `Bearer ${PLAIN}`).set('X-Request-Id', 'path-ordinary');
    await settle();
    expect(rig.logs.find((line) => line.reqId === 'path-token-plain')).toMatchObject({ url: '/v1/effects/…', token: 'gen' });
    expect(rig.logs.find((line) => line.reqId === 'path-token-encoded')).toMatchObject({ url: '/v1/effects/…?limit=…', token: 'gen' });
    expect(rig.logs.find((line) => line.reqId === 'path-ordinary')).toMatchObject({ url: '/v1/effects/eff_ordinary_id_0123456789abcdef' });
    const text = rig.logText();
    expect(text).not.toContain(PLAIN);
    expect(text).not.toContain(encodeURIComponent(ODD));
  });

  it("masks a page session's cookie value written into the path", async () => {
    const session = await signIn(rig.app, PLAIN);
    await request(rig.app).get(`/ui/effects/${encodeURIComponent(session.value)}`).set('Cookie', session.cookie).set('X-Request-Id', 'path-session');
    await settle();
    expect(rig.logs.find((line) => line.reqId === 'path-session')).toMatchObject({ url: '/ui/effects/…' });
    expect(rig.logText()).not.toContain(session.value.split('.').at(-1));
  });
});
