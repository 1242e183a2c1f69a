// Rule: `effect show --request` refuses, as bad input (exit 2), an id no refund or credit can be proposed under, by the
// rule `refund --request` applies: "no effect for request" (exit 1) would tell a script that checks before it sends that
// nothing was sent for it.
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli, tempDir } from './run-cli.js';
import { REDIS_URL } from '../support/harness.js';

const prefix = `showreq${randomBytes(4).toString('hex')}`;
const temp = tempDir('effect-show-request-id');
const env = { REDIS_URL, INTERLOCK_KEY_PREFIX: prefix, INTERLOCK_DATA_DIR: temp.dir };

afterAll(() => temp.remove());

describe('effect show --request with an id no request can have', { timeout: 60_000 }, () => {
  it.each([' case-1', 'case-1 ', 'r'.repeat(300), 'cafe\u0301-1'])('"%s" is bad input (exit 2), as refund --request says', async (request) => {
    const refund = await runCli(['refund', '--request', request, '--payment-intent', 'pi_showreq', '--amount', '100', '--approval', 'ap_x'], env);
    expect(refund.code, refund.stderr).toBe(2);
    const reason = /--request: ([^)]*)\)/.exec(refund.stderr)?.[1];
    expect(reason).toBeDefined();
    const shown = await runCli(['effect', 'show', '--request', request], env);
    expect(shown.code, shown.stderr).toBe(2);
    expect(shown.stderr).toContain(`--request: ${reason ?? ''}`);
    expect(shown.stderr).not.toContain('No effect');
  });

  it('a well-formed id that nothing was proposed under is still "no effect" (exit 1)', async () => {
    const shown = await runCli(['effect', 'show', '--request', `nothing-${randomBytes(3).toString('hex')}`], env);
    expect(shown.code, shown.stderr).toBe(1);
    expect(shown.stderr).toContain('No effect for request');
  });
});
