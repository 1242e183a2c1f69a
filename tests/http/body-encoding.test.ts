// A body that does not decode as its Content-Encoding says is refused as such (400 invalid_request naming the
// encoding), not blamed on "a malformed path or header"; a body that does decode is taken.
import { gzipSync } from 'node:zlib';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { bearer, refundBody, rigSuite, TOKENS } from './rig.js';

const rig = rigSuite();

describe('a body with a Content-Encoding', () => {
  it('that does not decode is refused naming the encoding; one that decodes is read', async () => {
    const post = () => request(rig.app).post('/v1/refunds').set(bearer(TOKENS.support)).set('Content-Type', 'application/json').set('Content-Encoding', 'gzip');
    const broken = await post().send('{"not":"gzip"}');
    expect(broken.status).toBe(400);
    expect(broken.body.error.code).toBe('invalid_request');
    expect(broken.body.error.message).toMatch(/^The body does not decode as its Content-Encoding \(Z_[A-Z_]+\)/);
    // Decoded, it reaches the route: an approval that does not exist is its answer, not the encoding.
    const decoded = await post()
      .serialize((body: unknown) => body as string)
      .send(gzipSync(JSON.stringify(refundBody({ approval: 'ap_missing_encoding' }))));
    expect(decoded.body.error?.code, JSON.stringify(decoded.body)).toBe('unknown_approval');
  });
});
