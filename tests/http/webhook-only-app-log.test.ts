// Rule: the app of a process that takes only Stripe's events (createWebhookOnlyApp) faces Stripe, so anyone can send it
// junk: a request to a path it does not serve is answered the service's JSON 404 and logged at debug, never a warn line
// a request, while a Stripe-signed request to a wrong path (a setting to fix) is still logged at warn.
import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { createWebhookOnlyApp } from '../../webhooks/app.js';

function logged(): { lines: { level: number; msg: string }[]; logger: Logger } {
  const lines: { level: number; msg: string }[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line !== '') lines.push(JSON.parse(line) as { level: number; msg: string });
      done();
    },
  });
  return { lines, logger: pino({ level: 'debug' }, sink) };
}

describe('the webhooks-only app', () => {
  it('logs junk at debug, a Stripe-signed wrong path at warn', async () => {
    const { lines, logger } = logged();
    const app = createWebhookOnlyApp({ logger, mount: (router) => router.post('/webhooks/stripe', (_req, res) => res.json({ received: true })), health: () => ({ ok: true }) });
    for (const path of ['/', '/webhooks/stripe-x', '/wp-login.php']) {
      const answer = await request(app).post(path).send('x');
      expect(answer.status).toBe(404);
      expect(answer.body.error.code).toBe('not_found');
    }
    expect(lines.filter((line) => line.level >= 40)).toEqual([]);
    expect(lines.filter((line) => line.level === 20)).toHaveLength(3);
    expect((await request(app).post('/webhook').set('stripe-signature', 't=1,v1=x').send('{}')).status).toBe(404);
    expect(lines.filter((line) => line.level === 40).map((line) => line.msg)).toEqual(['POST /webhook 404']);
  });
});
