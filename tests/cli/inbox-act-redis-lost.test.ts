// Rule: a CLI command never says "nothing was changed" when it did change something (README "The command line",
// cli/stores.ts withStores): `interlock inbox dismiss`/`resolve` append a signed RESOLVED entry to the effect's receipt
// (journal.act) and then close the item (close-inbox-3). When Redis goes away between those two writes, the receipt
// already carries the person's action, so the command must not tell the operator that nothing was changed.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createItemMaker, type ItemMaker } from '../http/inbox-items.js';
import { startRig, type Rig } from '../http/rig.js';
import { runCli, tempDir } from './run-cli.js';
import { cutAfter } from './redis-proxy.js';

let rig: Rig;
let make: ItemMaker;
/** The deployment's (the rig's) signing key as a file: a command records entries only with a key the deployment signs with. */
function keyFile(): string {
  const file = join(temp.dir, 'signing-key.pem');
  writeFileSync(file, rig.stores.signingKey.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string, { mode: 0o600 });
  return file;
}
const temp = tempDir('rv-cli-act');

beforeAll(async () => {
  rig = await startRig();
  make = await createItemMaker(rig);
}, 60_000);
afterAll(async () => {
  await make?.close();
  await rig?.close();
  temp.remove();
});

describe('inbox actions when Redis goes away mid-command', () => {
  for (const action of ['dismiss', 'resolve'] as const) {
    it(`inbox ${action}: the RESOLVED entry is on the receipt, so the command does not say "nothing was changed"`, async () => {
      const { item, effectId } = action === 'dismiss' ? await make.stale() : await make.ambiguous();
      const proxy = await cutAfter(`"action":"${action}"`);
      try {
        const env = { REDIS_URL: proxy.url, INTERLOCK_KEY_PREFIX: rig.stores.config.keyPrefix, INTERLOCK_DATA_DIR: temp.dir, INTERLOCK_SIGNING_KEY_FILE: keyFile(), INTERLOCK_UNSAFE_DURABILITY: '1' };
        const args = action === 'dismiss' ? ['inbox', 'dismiss', item, '--note', 'Customer withdrew.', '--by', 'kim'] : ['inbox', 'resolve', item, '--did-not-land', '--note', 'Nothing in the dashboard.', '--by', 'kim'];
        const run = await runCli(args, env);
        expect(proxy.cut(), 'the proxy never cut the connection').toBe(true);
        const receipt = await rig.stores.journal.receipt(effectId);
        const resolved = receipt?.entries.filter((entry) => entry.kind === 'RESOLVED') ?? [];
        // The write did happen: the person's action is on the signed receipt.
        expect(resolved).toHaveLength(1);
        expect(run.stderr, `exit ${run.code}`).not.toContain('nothing was changed');
        expect(run.stderr).toContain('may or may not have been done');
      } finally {
        await proxy.close();
      }
    });
  }

  it('inbox show, which only reads, still says nothing was changed when Redis goes away mid-command', async () => {
    const { item } = await make.stale();
    const proxy = await cutAfter(item);
    try {
      const env = { REDIS_URL: proxy.url, INTERLOCK_KEY_PREFIX: rig.stores.config.keyPrefix, INTERLOCK_DATA_DIR: temp.dir, INTERLOCK_SIGNING_KEY_FILE: keyFile(), INTERLOCK_UNSAFE_DURABILITY: '1' };
      const run = await runCli(['inbox', 'show', item], env);
      expect(proxy.cut(), 'the proxy never cut the connection').toBe(true);
      expect({ code: run.code, nothingChanged: run.stderr.includes('nothing was changed') }, run.stderr).toEqual({ code: 2, nothingChanged: true });
    } finally {
      await proxy.close();
    }
  });
});
