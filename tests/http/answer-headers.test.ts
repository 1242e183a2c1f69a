// Rule: every answer says it must not be sniffed as another type (X-Content-Type-Options: nosniff): the support API's
// JSON, its errors (which quote the path asked for), the probes and the metrics, on the API port and on the metrics
// listener; and every support API answer (amounts, payments, names) says no cache may keep it (Cache-Control:
// no-store), as the page's already do.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { metricsApp } from '../../webhooks/ops/metrics.js';
import { bearer, rigSuite, TOKENS } from './rig.js';

const rig = rigSuite();

describe('answer headers', () => {
  it.each([
    ['a list of effects', '/v1/effects', TOKENS.auditor, 200],
    ['an unknown API path, signed in', '/v1/nowhere', TOKENS.auditor, 404],
    ['an API path without a token', '/v1/effects', null, 401],
  ])('%s: nosniff and no-store', async (_label, path, token, status) => {
    const answer = await (token === null ? request(rig.app).get(path) : request(rig.app).get(path).set(bearer(token)));
    expect(answer.status).toBe(status);
    expect(answer.headers['x-content-type-options']).toBe('nosniff');
    expect(answer.headers['cache-control']).toBe('no-store');
  });

  it('the probes and the OpenAPI document are not sniffed either', async () => {
    for (const path of ['/healthz', '/v1/openapi.json']) {
      const answer = await request(rig.app).get(path);
      expect(answer.status, path).toBe(200);
      expect(answer.headers['x-content-type-options'], path).toBe('nosniff');
    }
  });

  it('the metrics listener answers nosniff, metrics and refusals alike', async () => {
    const app = metricsApp({ render: async () => ({ contentType: 'text/plain; version=0.0.4', text: '' }) }, { error: () => undefined } as never, { checks: () => null });
    const metrics = await request(app).get('/metrics');
    expect(metrics.status).toBe(200);
    expect(metrics.headers['x-content-type-options']).toBe('nosniff');
    const misdirected = await request(app).get('/metrics').set('Host', 'evil.example');
    expect(misdirected.headers['x-content-type-options']).toBe('nosniff');
  });
});
