// Issue 7, point 2: every `stripe trigger` fixture the project relies on runs, unmodified, with the official CLI
// against the sandbox, and emits the event it is named after. Each trigger gets its own sandbox (so the event
// found is the trigger's own) under the `stripe` delay profile (so nothing passes only because delays are short).
import { describe, expect, it } from 'vitest';
import { startSandbox } from '../index.js';
import { stripeFor } from './helpers.js';
import { apiBase, cliEnvironment, runStripe, tempConfigDir } from './stripe-cli-driver.js';

const triggers = [
  'charge.dispute.created',
  'charge.dispute.updated',
  'charge.dispute.closed',
  'charge.refunded',
  'charge.refund.updated',
  'charge.succeeded',
  'charge.captured',
  'charge.failed',
  'payment_intent.succeeded',
  'payment_intent.canceled',
  'payment_intent.payment_failed',
  'customer.created',
  'customer.updated',
  'credit_note.created',
  'invoiceitem.created',
  'invoice.created',
  'invoice.finalized',
  'invoice.paid',
  'invoice.payment_succeeded',
  'customer.subscription.created',
  'customer.subscription.updated',
  'customer.subscription.deleted',
  'product.created',
  'price.created',
] as const;

describe('stripe trigger against the sandbox (CLI 1.52.0)', () => {
  it.concurrent.each(triggers)('`stripe trigger %s` succeeds and emits that event', async (event) => {
    const sandbox = await startSandbox({ port: 0, delays: 'stripe' });
    // The CLI writes its config on every run; concurrent runs each get their own directory.
    const config = tempConfigDir();
    try {
      const run = await runStripe(['trigger', event, '--api-base', apiBase(sandbox.port)], cliEnvironment(config.path));
      expect(run.stdout, run.stderr).toContain('Trigger succeeded!');
      expect(run.code).toBe(0);
      const emitted = await stripeFor(sandbox).events.list({ type: event, limit: 100 });
      expect(emitted.data.length).toBeGreaterThan(0);
    } finally {
      await sandbox.close();
      config.remove();
    }
  });
});
