// Rule: `INTERLOCK_SIGNING_KEY_FILE=NEW interlock keys adopt --yes` beside a running service found through its
// service.json adopts NEW on purpose (README "Rotating the signing key", step 6), so its output says what it did: it
// never says the named key file was passed over for the service's ("is used instead"), only that the running service
// goes on signing with its own key until it is restarted with NEW.
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REDIS_URL, removePrefixes, testKey } from '../support/harness.js';
import { runCli, tempDir } from './run-cli.js';

const temp = tempDir('keys-adopt-named');
const prefix = `keysadoptnamed${process.pid}`;
afterAll(async () => {
  await removePrefixes([prefix]);
  temp.remove();
});

describe('keys adopt naming its key beside a running service', { timeout: 60_000 }, () => {
  it('adopts the named key and does not claim the service key file is used instead', async () => {
    const service = testKey();
    const adopted = testKey();
    const dataDir = join(temp.dir, 'data');
    mkdirSync(join(dataDir, 'keys'), { recursive: true, mode: 0o700 });
    chmodSync(dataDir, 0o700);
    const serviceKeyFile = join(dataDir, 'keys', 'signing-key.pem');
    writeFileSync(serviceKeyFile, service.privatePem, { mode: 0o600 });
    const newKeyFile = join(temp.dir, 'signing-key-2.pem');
    writeFileSync(newKeyFile, adopted.privatePem, { mode: 0o600 });
    // Written by a service that runs: this test's own process stands for it (alive, started before the file).
    const facts = { pid: process.pid, redis_url: REDIS_URL, key_prefix: prefix, signing_kid: service.key.kid, signing_key_file: serviceKeyFile };
    writeFileSync(join(dataDir, 'service.json'), `${JSON.stringify(facts)}\n`, { mode: 0o600 });

    const run = await runCli(['keys', 'adopt', '--yes'], { REDIS_URL: undefined, INTERLOCK_KEY_PREFIX: undefined, INTERLOCK_RETIRED_PUBLIC_KEYS_FILE: undefined, INTERLOCK_DATA_DIR: dataDir, INTERLOCK_SIGNING_KEY_FILE: newKeyFile });
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ kid: adopted.key.kid, changed: true, now: { kids: [adopted.key.kid], newest: adopted.key.kid } });
    expect(run.stderr).not.toContain('is used instead');
    expect(run.stderr).toContain(`signs with ${service.key.kid}, not ${adopted.key.kid}: it goes on signing with it until it is restarted with ${newKeyFile}`);
  });
});
