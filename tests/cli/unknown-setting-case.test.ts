// Rule: an unknown INTERLOCK_* variable is warned of with the setting it was meant as (config.ts unknownSettings: "the
// nearest setting"), its letters compared in one case: `INTERLOCK_key_prefix=x` is INTERLOCK_KEY_PREFIX typed in the
// wrong case, not nearest to INTERLOCK_API_TOKENS.
import { expect, it } from 'vitest';
import { unknownSettings } from '../../src/config.js';
import { runCli, tempDir } from './run-cli.js';

it('INTERLOCK_key_prefix is warned of as INTERLOCK_KEY_PREFIX', async () => {
  const temp = tempDir('rv-cli67-case');
  try {
    const fixtures = 'tests/fixtures/receipts';
    const run = await runCli(['receipt', 'verify', `${fixtures}/committed.json`, '--public-key', `${fixtures}/public-key.pem`], { INTERLOCK_DATA_DIR: temp.dir, INTERLOCK_LOG_LEVEL: '', INTERLOCK_key_prefix: 'support-eu' });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain('INTERLOCK_key_prefix is set but is not a setting');
    expect(run.stderr).toContain('the nearest setting is INTERLOCK_KEY_PREFIX');
  } finally {
    temp.remove();
  }
});

it('a setting typed in the wrong case is ranked nearest to itself', () => {
  expect(unknownSettings({ INTERLOCK_key_prefix: 'x', INTERLOCK_Signing_Key: 'y' })).toEqual([
    { variable: 'INTERLOCK_Signing_Key', nearest: 'INTERLOCK_SIGNING_KEY_FILE' },
    { variable: 'INTERLOCK_key_prefix', nearest: 'INTERLOCK_KEY_PREFIX' },
  ]);
});
