// Rule: a forward-to URL with a user and password is shown by the control API as `http://user:…@host/x`, never the
// password (sandbox/README.md), the one `stripe listen --forward-to` reports too: its session and the responses it
// forwards are kept with the password masked.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startHarness, startReceiver } from './helpers.js';
import type { Harness, Receiver } from './helpers.js';
import { apiBase, cliEnvironment, startListen, tempConfigDir } from './stripe-cli-driver.js';

const PASSWORD = 'Sup3rSecretPw';
let h: Harness;
let receiver: Receiver;
const config = tempConfigDir();
beforeAll(async () => {
  h = await startHarness({ listenSecret: 'whsec_listenforwardmasked' });
  receiver = await startReceiver();
});
afterAll(async () => {
  await h.sandbox.close();
  await receiver.close();
  config.remove();
});

describe('stripe listen --forward-to with a password', () => {
  it('shows neither the session nor the forwarded response with the password', async () => {
    const base = apiBase(h.sandbox.port);
    const listen = startListen(['--api-base', base, '--skip-update', '--events', 'customer.created', '--forward-to', receiver.url.replace('http://', `http://hook:${PASSWORD}@`)], cliEnvironment(config.path));
    try {
      await listen.waitFor(/Ready!/);
      await h.stripe.customers.create({ email: 'masked@example.org' });
      await eventually(async () => receiver.received.length, (n) => n > 0, 10_000);
      const deliveries = await eventually(async () => (await fetch(`${base}/_sandbox/webhooks/deliveries`)).text(), (text) => text.includes('forward_url'), 10_000);
      const sessions = await (await fetch(`${base}/_sandbox/stripecli/sessions`)).text();
      expect(sessions).toContain('hook:…@');
      expect(sessions).not.toContain(PASSWORD);
      expect(deliveries).toContain('hook:…@');
      expect(deliveries).not.toContain(PASSWORD);
    } finally {
      await listen.stop();
    }
  }, 60_000);
});
