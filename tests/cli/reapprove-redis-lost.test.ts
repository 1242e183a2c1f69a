// Rule: a CLI command never says "nothing was changed" when it did change something (README "The command line",
// cli/stores.ts withStores). `interlock inbox reapprove` closes the item with a signed RESOLVED entry naming the new
// request, and leaves a note the recovery pass proposes from (src/inbox/actions.ts repairReapprovals): when Redis goes
// away right after that entry is written, the re-approval WILL be proposed and its money moved once Redis is back.
// Telling the operator "nothing was changed" invites them to propose the refund again under a request of their own.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { effectIdFor } from '../../src/interlock.js';
import { sandboxInboxSuite } from './inbox-cli-rig.js';
import { runCli } from './run-cli.js';
import { cutAfter } from './redis-proxy.js';
import { staleOnChargedBack } from './sandbox-items.js';

const { rig, make, stripe, temp } = sandboxInboxSuite('rv-cli-reapprove');
/** The deployment's (the rig's) signing key as a file: a command records entries only with a key the deployment signs with. */
function keyFile(): string {
  const file = join(temp.dir, 'signing-key.pem');
  writeFileSync(file, rig.stores.signingKey.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string, { mode: 0o600 });
  return file;
}

describe('inbox reapprove when Redis goes away after the item was closed', () => {
  it('does not say "nothing was changed": the item is closed as re-approved and the re-approval is pending for recovery', async () => {
    // The item shows the chargeback the sandbox has on the payment: a re-approval stands on the facts the item showed
    // (facts_changed, refused before the item is closed), and the CLI reads them at the sandbox.
    const { paymentIntent, item, effectId } = await staleOnChargedBack(stripe, make, rig);
    const approval = await make.grant(paymentIntent);
    const proxy = await cutAfter('"action":"reapprove"');
    try {
      const env = { REDIS_URL: proxy.url, INTERLOCK_KEY_PREFIX: rig.stores.config.keyPrefix, INTERLOCK_DATA_DIR: temp.dir, INTERLOCK_SIGNING_KEY_FILE: keyFile(), INTERLOCK_UNSAFE_DURABILITY: '1', STRIPE_SECRET_KEY: 'sk_test_rvcli0001', STRIPE_API_BASE: stripe.sandbox.url };
      const run = await runCli(['inbox', 'reapprove', item, '--approval', approval, '--by', 'lee', '--note', 'Refund anyway.'], env);
      expect(proxy.cut(), 'the proxy never cut the connection').toBe(true);
      const receipt = await rig.stores.journal.receipt(effectId);
      const resolved = receipt?.entries.filter((entry) => entry.kind === 'RESOLVED') ?? [];
      expect(resolved).toMatchObject([{ action: 'reapprove', reapproval: { approval, effectId: effectIdFor({ requestId: `reapproval:${item}`, effect: null }) } }]);
      // The recovery pass will propose it from this note (repairReapprovals).
      expect((await rig.stores.inbox.pendingReapprovals()).map((pending) => pending.pending?.item)).toContain(item);
      expect(run.stderr, `exit ${run.code}`).not.toContain('nothing was changed');
      expect(run.stderr).toContain('may or may not have been done');
    } finally {
      await proxy.close();
    }
  });
});
