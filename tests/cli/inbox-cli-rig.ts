// The wiring the CLI's inbox tests share: the support API's rig with an item maker (inboxSuite), a Stripe sandbox
// whose payments the items are about (the CLI's `inbox reapprove` reads their facts there), and a private data
// directory; and, for a CLI signing with a key of its own (inboxCliSuite), that key as a file the deployment signs with
// and the environment that points the real binary at all of it. Each suite registers its own hooks, so a test file
// closes nothing itself.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { inboxSuite, type ItemMaker } from '../http/inbox-items.js';
import type { Rig } from '../http/rig.js';
import { startStripeWorld, type StripeWorld } from '../stripe/stripe-support.js';
import { testKey } from '../support/harness.js';
import { startedLater } from '../support/started-later.js';
import { tempDir } from './run-cli.js';

export type SandboxInbox = {
  rig: Rig;
  make: ItemMaker;
  stripe: StripeWorld;
  /** The CLI's data directory, removed after the file. */
  temp: { dir: string };
};

/**
 * A rig, an item maker and a Stripe world for one test file, started before its tests and closed after them, and a
 * temporary directory named after `label`: `const { rig, make, stripe, temp } = sandboxInboxSuite('label');` at the
 * file's top. rig, make and stripe are stand-ins, so do not compare, spread or reassign them.
 */
export function sandboxInboxSuite(label: string): SandboxInbox {
  const { rig, make } = inboxSuite();
  const temp = tempDir(label);
  let stripe: StripeWorld | undefined;
  beforeAll(async () => {
    stripe = await startStripeWorld();
  });
  afterAll(async () => {
    await stripe?.close();
    temp.remove();
  });
  return { rig, make, stripe: startedLater('Stripe world', () => stripe), temp };
}

export type InboxCli = SandboxInbox & {
  /** The CLI's signing key, given to it as a file so a test knows its public half. */
  cliKey: ReturnType<typeof testKey>;
  /** The environment for runCli: the rig's Redis and key prefix, the data directory, the CLI's key, the sandbox. */
  env: Record<string, string>;
};

/** sandboxInboxSuite(label), with the CLI's own key and the environment its commands run in; `stripeSecretKey` is the key the CLI gives the sandbox. */
export function inboxCliSuite(label: string, stripeSecretKey: string): InboxCli {
  const suite = sandboxInboxSuite(label);
  const { rig, stripe, temp } = suite;
  const cliKey = testKey();
  const env: Record<string, string> = {};
  beforeAll(async () => {
    writeFileSync(join(temp.dir, 'cli-key.pem'), cliKey.privatePem, { mode: 0o600 });
    // The CLI's key is one the deployment signs with (a rotation's new key, say): a command records entries only with such
    // a key (cli/stores.ts withStores).
    await rig.redis.sadd(rig.stores.keys.signingKids, cliKey.key.kid);
    Object.assign(env, {
      REDIS_URL: rig.stores.config.redisUrl,
      INTERLOCK_KEY_PREFIX: rig.stores.config.keyPrefix,
      INTERLOCK_DATA_DIR: temp.dir,
      INTERLOCK_SIGNING_KEY_FILE: join(temp.dir, 'cli-key.pem'),
      INTERLOCK_UNSAFE_DURABILITY: '1',
      STRIPE_SECRET_KEY: stripeSecretKey,
      STRIPE_API_BASE: stripe.sandbox.url,
    });
  });
  return { ...suite, cliKey, env };
}
