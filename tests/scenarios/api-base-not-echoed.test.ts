// Rule: a secret is never printed (tests/cli/secret-in-setting.test.ts; src/core/redact.ts: the credentials of a URL
// are masked wherever they appear). `interlock scenario` run without STRIPE_SECRET_KEY warns that STRIPE_API_BASE goes
// unused, quoting it as `serve` quotes it (shownSetting): the user and password of a gateway URL, or a Stripe key put
// in STRIPE_API_BASE by a swapped line of an env file, are not printed; an address without credentials still is.
import { describe, expect, it } from 'vitest';
import { runCli } from '../cli/run-cli.js';

const LIVE_KEY = 'sk_live_51Hq7RvScenarioNotARealKey0123456789abcdef';

/** The warning, from a command refused at once after it (a row no scenario has), so nothing runs. */
async function unusedWarning(apiBase: string): Promise<string> {
  const args = ['scenario', 'stripe-dispute', '--delays', 'fast', '--rows', 'no_such_row', '--columns', 'no_check', '--out', '/tmp/interlock-api-base-never-written'];
  const run = await runCli(args, { REDIS_URL: undefined, STRIPE_SECRET_KEY: undefined, STRIPE_API_BASE: apiBase }, { timeoutMs: 20_000 });
  expect(run.code, run.stderr).toBe(2);
  expect(run.stderr).toContain('is not used: without STRIPE_SECRET_KEY each scenario runs against a sandbox of its own.');
  return run.stderr;
}

describe('the "STRIPE_API_BASE is not used" warning of interlock scenario', () => {
  it("does not print the password of a gateway URL, and still names the gateway's host", { timeout: 60_000 }, async () => {
    const stderr = await unusedWarning('http://gw:ScenarioGatewayPassword@127.0.0.1:1');
    expect(stderr).not.toContain('ScenarioGatewayPassword');
    expect(stderr).toContain('STRIPE_API_BASE (http://…@127.0.0.1:1) is not used');
  });

  it('does not print a Stripe key put in STRIPE_API_BASE, only its kind and last characters', { timeout: 60_000 }, async () => {
    const stderr = await unusedWarning(LIVE_KEY);
    expect(stderr).not.toContain(LIVE_KEY);
    expect(stderr).toContain('STRIPE_API_BASE (sk_live_…cdef) is not used');
  });
});
