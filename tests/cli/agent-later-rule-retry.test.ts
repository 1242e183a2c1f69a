// Rule: a refusal says only what is true. `refund --agent` with a name an earlier version took but the one-script rule
// refuses now (`Ольга Smith`) records nothing by this command, but the same --request may have been recorded by that
// earlier version and sent: the line says so and how to read it, instead of "Nothing was recorded." (exit 2, before
// Redis is reached). Any other bad value keeps the plain sentence.
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { runCli, tempDir } from './run-cli.js';

const temp = tempDir('agent-later-rule');
afterAll(() => temp.remove());
const env = { INTERLOCK_DATA_DIR: join(temp.dir, 'data'), REDIS_URL: 'redis://127.0.0.1:1' };
const refund = ['refund', '--request', 'case-77', '--payment-intent', 'pi_123', '--amount', '100', '--approval', 'ap_1'];

it('a name refused by the one-script rule points at the request an earlier version may have recorded', { timeout: 60_000 }, async () => {
  const run = await runCli([...refund, '--agent', 'Ольга Smith'], env);
  expect(run.code, run.stderr).toBe(2);
  expect(run.stderr).toContain('--agent:');
  expect(run.stderr).toContain('Nothing was recorded by this command; if --request case-77 was recorded before');
  expect(run.stderr).toContain('`interlock effect show --request case-77`');
});

it('a name refused by an older rule says nothing was recorded, plainly', { timeout: 60_000 }, async () => {
  const run = await runCli([...refund, '--agent', 'a'.repeat(201)], env);
  expect(run.code, run.stderr).toBe(2);
  expect(run.stderr).toContain('Nothing was recorded.');
  expect(run.stderr).not.toContain('earlier version');
});
