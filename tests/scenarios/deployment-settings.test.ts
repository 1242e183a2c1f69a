// `interlock scenario` starts processes of its own (`serve --roles api`, `serve --roles worker` killed and restarted),
// and they used to take every INTERLOCK_* setting of the shell that ran it, clearing a few. A shell set up for the real
// service (the compose worker container, the README's key rotation) then broke the run or reached into production:
// INTERLOCK_METRICS_ADDR made every child bind one address, so the second did not start and every gate cell failed;
// INTERLOCK_SIGNING_KEY_FILE signed the sandbox's refunds with the production key, so a verifier holding the
// production public key accepted them. The children take only what describes the Redis the run was given.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { generateSigningKeyPem } from '../../src/keys/key-store.js';
import { runCli, tempDir } from '../cli/run-cli.js';

const temp = tempDir('scenario-deployment-settings');
afterAll(() => temp.remove());

type Written = { public_key: string; cells: { outcome: string; error?: string }[] };

describe('interlock scenario run from a shell configured for the real service', { timeout: 240_000 }, () => {
  it("runs its gate cells with none of the deployment's settings: not its metrics address, not its signing key", async () => {
    const production = generateSigningKeyPem();
    const keyFile = join(temp.dir, 'production-signing-key.pem');
    writeFileSync(keyFile, production.privatePem, { mode: 0o600 });
    const out = join(temp.dir, 'out');
    const deployment = { INTERLOCK_METRICS_ADDR: `127.0.0.1:${20_000 + Math.floor(Math.random() * 20_000)}`, INTERLOCK_SIGNING_KEY_FILE: keyFile };
    // A private Redis for the run (no REDIS_URL), as the README's sandbox run.
    const run = await runCli(['scenario', 'stripe-dispute', '--delays', 'fast', '--rows', 'crash_after_send_chargeback_during_outage', '--columns', 'interlock', '--out', out], { REDIS_URL: undefined, INTERLOCK_KEY_PREFIX: undefined, ...deployment }, { timeoutMs: 200_000 });
    const written = JSON.parse(readFileSync(join(out, 'stripe_dispute.json'), 'utf8')) as Written;
    expect(written.cells.map((cell) => cell.error ?? cell.outcome), run.stderr.slice(-2000)).toEqual(['COMMITTED_ON_QUERY']);
    expect(run.code, run.stderr.slice(-2000)).toBe(0);
    // The sandbox's receipts must not verify with the production public key.
    expect(written.public_key.trim()).not.toBe(production.publicPem.trim());
  });
});
