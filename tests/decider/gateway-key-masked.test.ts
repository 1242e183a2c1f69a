// Rule: the decider's own ANTHROPIC_API_KEY is never kept in a decider error, whatever its shape: a gateway's token
// (no sk-ant- prefix) quoted back in an API error, a request-id header or a page that is no Messages API message is
// masked as redactSecrets masks a secret (secretHint) before the error is stored with the case, so neither the case
// record nor GET /v1/cases/:id shows it.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { createAnthropicDecider, createDecider } from '../../src/decider/decider.js';
import { casesSuite } from '../support/cases-rig.js';
import { bearer, caseBody, TOKENS } from '../http/rig.js';
import { refundCase } from './cases.js';
import { configFor, failure } from './decider-support.js';
import { replies } from './messages-server.js';

const { rig, server } = casesSuite();

const GATEWAY_KEY = 'gw-live-9f8e7d6c5b4a39281706f5e4d3c2b1a0';

const config = configFor(() => server, { apiKey: GATEWAY_KEY });

describe('a gateway that quotes the key it was given', () => {
  it('a refused key (401), a rate limit (429) and a request-id holding the key: masked in every error kept', async () => {
    server.script(replies.error(401, { message: `Invalid proxy token: ${GATEWAY_KEY}` }));
    const refused = await failure(createAnthropicDecider(config()).decide(refundCase()));
    expect(refused).toMatchObject({ code: 'invalid_config', apiStatus: 401 });
    expect(refused.message).toContain('Invalid proxy token: …)');
    expect(refused.message).not.toContain(GATEWAY_KEY);
    server.reset();
    server.script(replies.error(429, { message: `token ${GATEWAY_KEY} is over its quota`, headers: { 'request-id': `req-${GATEWAY_KEY}` } }));
    const limited = await failure(createAnthropicDecider(config()).decide(refundCase()));
    expect(limited).toMatchObject({ code: 'decider_unavailable', apiRequestId: 'req-…' });
    expect(limited.message).toContain('(429, request-id req-…: token … is over its quota)');
    expect(limited.message).not.toContain(GATEWAY_KEY);
  });

  it('a key of a known kind is shown as that kind with its last four characters, as other secrets are', async () => {
    const key = 'sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789wxyz';
    server.script(replies.error(403, { message: `key ${key} may not use this model` }));
    const error = await failure(createAnthropicDecider(config({ apiKey: key })).decide(refundCase()));
    expect(error.message).toContain('key sk-ant-api03-…wxyz may not use this model');
    expect(error.message).not.toContain(key);
  });

  it("a gateway's page that quotes the key is no Messages API message: decider_unavailable, the key masked", async () => {
    const gateway = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/plain' });
      response.end(`Unknown token ${GATEWAY_KEY}`);
    });
    await new Promise<void>((resolve) => gateway.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(gateway.address() as AddressInfo).port}`;
      const error = await failure(createAnthropicDecider(config({ baseURL: url })).decide(refundCase()));
      expect(error).toMatchObject({ code: 'decider_unavailable' });
      expect(error.message).toContain('(text: "Unknown token …")');
      expect(error.message).not.toContain(GATEWAY_KEY);
    } finally {
      await new Promise((resolve) => gateway.close(resolve));
    }
  });

  it('never puts ANTHROPIC_API_KEY into the stored case or the GET /v1/cases answer', async () => {
    rig.useDecider(createDecider(config()));
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    server.script(replies.error(401, { message: `Invalid proxy token: ${GATEWAY_KEY}` }));
    const body = caseBody({ payment_intent: paymentIntent, approval });
    const posted = await request(rig.app).post('/v1/cases?wait=10').set(bearer(TOKENS.support)).send(body);
    expect(posted.status, JSON.stringify(posted.body)).toBe(202);
    expect(posted.body).toMatchObject({ state: 'failed', error: { code: 'invalid_config' } });
    const shown = await request(rig.app).get(`/v1/cases/${String(body.case_id)}`).set(bearer(TOKENS.support));
    expect(shown.status).toBe(200);
    expect(shown.body.error.message).toContain('Invalid proxy token: …');
    expect(JSON.stringify(shown.body)).not.toContain(GATEWAY_KEY);
    expect(JSON.stringify(await rig.stores.cases.get(String(body.case_id)))).not.toContain(GATEWAY_KEY);
  });
});
