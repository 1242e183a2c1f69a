// `interlock scenario` given what it cannot run: it says what is wrong and what to name instead, exits 2 at once and
// leaves nothing running behind it (no private redis-server, no temporary directory).
import { describe, expect, it } from 'vitest';
import { runCli } from '../cli/run-cli.js';

describe('interlock scenario with bad input', () => {
  it('refuses an unknown row or column with exit 2 and exits, starting no private Redis it would leave running', { timeout: 60_000 }, async () => {
    for (const args of [['--rows', 'no_such_row'], ['--columns', 'no_such_column']]) {
      const run = await runCli(['scenario', 'stripe-dispute', '--delays', 'fast', '--out', '/tmp/interlock-usage-never-written', ...args], { REDIS_URL: undefined, STRIPE_SECRET_KEY: undefined }, { timeoutMs: 20_000 });
      expect(run.stderr).toMatch(/Unknown (row|column)\(s\) no_such_/);
      expect(run.code, run.stderr).toBe(2);
    }
  });
});
