// The Stripe SDK, loaded the first time the adapter needs it rather than with the program: it is a large part of
// every command's start-up, and most commands (approvals, keys, receipts, the inbox) never call Stripe. Loaded with
// require, synchronously, so the adapter's functions stay synchronous; the same one module serves every caller in
// the process, so the SDK's error classes are the ones its clients throw.
import { createRequire } from 'node:module';
import type StripeModule from 'stripe';

export type StripeSdk = typeof StripeModule;

const load = createRequire(import.meta.url);
let sdk: StripeSdk | null = null;

export function stripeSdk(): StripeSdk {
  sdk ??= load('stripe') as StripeSdk;
  return sdk;
}
