// Rule: `approvals describe` and `approvals revoke` refuse, as bad input (exit 2, naming the rule, nothing read or
// written), an id no approval can have (APPROVAL_ID): `approvals describe ""` answered "No approval ." (exit 1), as if
// an approval by that name might exist, and an id with a newline was shown with a space in its place.
import { describe, expect, it } from 'vitest';
import { runCli, tempDir } from './run-cli.js';

const temp = tempDir('approval-id-argument');
// No Redis answers here: a refused argument is refused before any store is opened.
const env = { REDIS_URL: 'redis://127.0.0.1:1', INTERLOCK_KEY_PREFIX: 'approvalidarg', INTERLOCK_DATA_DIR: temp.dir };

describe('an approval id argument no approval can have', { timeout: 60_000 }, () => {
  it.each([
    ['describe', ''],
    ['describe', 'ap 1'],
    ['describe', 'ap\n1'],
    ['describe', 'a'.repeat(201)],
    ['revoke', ''],
  ])('approvals %s %j exits 2 naming the rule', async (command, id) => {
    const args = command === 'revoke' ? ['approvals', 'revoke', id, '--by', 'ops@example.com'] : ['approvals', command, id];
    const run = await runCli(args, env);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain('is not an approval id (1-200 letters, digits or _ . : -)');
    expect(run.stderr).not.toContain('Cannot reach Redis');
  });
});
