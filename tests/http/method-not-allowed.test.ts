// Rule: a request with a method a known path does not take is told which methods the path takes (Allow, RFC 9110
// §15.5.6), not that the route does not exist. A path that only reads answers 405 read_only, as the queue dashboard
// does; a path that takes a write answers 405 method_not_allowed (read_only would call it read-only). A public path (the probes, the
// OpenAPI document) answers so before any token is asked for, since it needs none; a path behind a token still asks
// for one first. The methods in Allow are the ones the OpenAPI document lists for the path.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { bearer, rigSuite, TOKENS } from './rig.js';

const rig = rigSuite();

const EFFECT = 'a'.repeat(64);

describe('a method a known path does not take', () => {
  it('DELETE /v1/effects/{id}, PATCH /v1/approvals/{id}, POST /v1/effects/{id}/receipt: 405 read_only with Allow: GET, HEAD', async () => {
    const asked = [
      await request(rig.app).delete(`/v1/effects/${EFFECT}`).set(bearer(TOKENS.auditor)),
      await request(rig.app).patch('/v1/approvals/ap_1').set(bearer(TOKENS.approver)).send({}),
      await request(rig.app).post(`/v1/effects/${EFFECT}/receipt`).set(bearer(TOKENS.auditor)),
    ];
    for (const answer of asked) {
      expect([answer.status, answer.body.error?.code, answer.headers.allow]).toEqual([405, 'read_only', 'GET, HEAD']);
      expect(answer.body.error.message).toMatch(/is read-only: it takes GET, HEAD, not (DELETE|PATCH|POST)\. GET \/v1\/openapi\.json lists every route and its methods\.$/);
    }
  });

  it('POST /healthz, /readyz, /v1/openapi.json without a token: 405 with Allow, not 401 (they need no token)', async () => {
    for (const path of ['/healthz', '/readyz', '/v1/openapi.json']) {
      const answer = await request(rig.app).post(path);
      expect([answer.status, answer.body.error?.code, answer.headers.allow], path).toEqual([405, 'read_only', 'GET, HEAD']);
      expect(answer.headers['www-authenticate']).toBeUndefined();
    }
  });

  it('a path behind a token, without one: still 401 first', async () => {
    const answer = await request(rig.app).delete(`/v1/effects/${EFFECT}`);
    expect(answer.status).toBe(401);
  });

  it('PUT /v1/cases, GET /v1/refunds: named with the methods the path takes (Allow: POST)', async () => {
    const asked = [await request(rig.app).put('/v1/cases').set(bearer(TOKENS.support)).send({}), await request(rig.app).get('/v1/refunds').set(bearer(TOKENS.support))];
    for (const answer of asked) {
      expect([answer.status, answer.body.error?.code, answer.headers.allow]).toEqual([405, 'method_not_allowed', 'POST']);
      expect(answer.body.error.message).toMatch(/ takes POST, not (PUT|GET)\. GET \/v1\/openapi\.json lists every route and its methods\.$/);
    }
  });

  it('every path of the OpenAPI document, asked with DELETE (which none takes): Allow lists exactly the methods the document lists', async () => {
    const doc = (await request(rig.app).get('/v1/openapi.json')).body as { paths: Record<string, Record<string, unknown>> };
    const disagree: string[] = [];
    for (const [path, operations] of Object.entries(doc.paths)) {
      const url = path.replace('{id}', path.startsWith('/v1/inbox') ? `stale_premise:${EFFECT}` : path.startsWith('/v1/effects') ? EFFECT : 'x_1').replace('{subject}', 'payment:pi_1');
      const answer = await request(rig.app).delete(url).set(bearer(TOKENS.operator));
      const documented = Object.keys(operations).flatMap((method) => (method === 'get' ? ['GET', 'HEAD'] : [method.toUpperCase()]));
      if (String(answer.headers.allow) !== documented.join(', ')) disagree.push(`${path}: Allow ${String(answer.headers.allow)}, document ${documented.join(', ')}`);
    }
    expect(Object.keys(doc.paths).length).toBeGreaterThanOrEqual(15);
    expect(disagree).toEqual([]);
  });
});
