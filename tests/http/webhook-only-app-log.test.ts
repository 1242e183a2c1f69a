// Rule: the app of a process that takes only Stripe's events (createWebhookOnlyApp) faces Stripe, so anyone can send it
// junk: a request to a path it does not serve is answered the service's JSON 404 and logged at debug, never a warn line
// a request. A Stripe-signed request to a wrong path (a setting to fix) is warned of, but a Stripe-Signature is no
// secret (anyone can add one), so a flood of them writes one warn line an interval, with the count of the others.
import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { createWebhookOnlyApp } from '../../webhooks/app.js';

function logged(): { lines: ({ level: number; msg: string } & Record<string, unknown>)[]; logger: Logger } {
  const lines: ({ level: number; msg: string } & Record<string, unknown>)[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line !== '') lines.push(JSON.parse(line) as { level: number; msg: string } & Record<string, unknown>);
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
    const warned = lines.filter((line) => line.level === 40);
    expect(warned).toHaveLength(1);
    expect(warned[0]?.msg).toContain('point `stripe listen --forward-to` or the Dashboard endpoint\'s URL at /webhooks/stripe');
    expect(warned[0]).toMatchObject({ asked: 'POST /webhook' });
  });

  it('writes one warn line for a flood of requests carrying a forged Stripe-Signature', async () => {
    const { lines, logger } = logged();
    const app = createWebhookOnlyApp({ logger, mount: (router) => router.post('/webhooks/stripe', (_req, res) => res.json({ received: true })), health: () => ({ ok: true }) });
    for (let i = 0; i < 50; i += 1) expect((await request(app).get(`/wp-login-${i}.php`).set('stripe-signature', 'forged')).status).toBe(404);
    expect(lines.filter((line) => line.level >= 40)).toHaveLength(1);
    // Every request still has its line, at debug, with the refusal's code.
    expect(lines.filter((line) => line.level === 20 && line.msg.endsWith('404 stripe_event_elsewhere'))).toHaveLength(50);
  });
});
