// Rule: `approvals grant` run again with the same terms answers the approval that stands (README "The command line").
// Run after the approval was revoked (an operator re-granting to undo a revoke, a retry racing a revoke), that approval
// covers nothing: the answer says so (revoked, not live, as POST /v1/approvals answers) and the command exits 1
// naming it, never exit 0 with terms that read as granted.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli, tempDir } from './run-cli.js';

const prefix = `cli-regrant-${randomBytes(4).toString('hex')}`;
const temp = tempDir('cli-regrant');
const env = { REDIS_URL: 'redis://127.0.0.1:6379', INTERLOCK_KEY_PREFIX: prefix, INTERLOCK_DATA_DIR: temp.dir };
const redis = new Redis('redis://127.0.0.1:6379');

afterAll(async () => {
  const keys = await redis.keys(`${prefix}:*`);
  if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
  temp.remove();
});

describe('approvals grant of a revoked approval', () => {
  it('answers it revoked and not live, and exits 1 saying so', async () => {
    const grant = ['approvals', 'grant', '--id', 'ap_regrant', '--approver', 'dana', '--cap-cents', '2000', '--scope', 'payment:pi_regrant'];
    const first = await runCli(grant, env);
    expect(first.code, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({ created: true });
    expect((await runCli(['approvals', 'revoke', 'ap_regrant', '--by', 'lee'], env)).code).toBe(0);
    const again = await runCli(grant, env);
    expect(JSON.parse(again.stdout)).toMatchObject({ id: 'ap_regrant', created: false, revoked: true, live: false });
    expect({ code: again.code, said: again.stderr.includes('Approval ap_regrant already stands with these terms and was revoked') }, again.stderr).toEqual({ code: 1, said: true });
    // The same grant again while it stands live is still a retry answered with exit 0.
    const live = ['approvals', 'grant', '--id', 'ap_live', '--approver', 'dana', '--cap-cents', '2000', '--scope', 'payment:pi_regrant'];
    expect((await runCli(live, env)).code).toBe(0);
    const retried = await runCli(live, env);
    expect({ code: retried.code, answer: JSON.parse(retried.stdout) as unknown }).toMatchObject({ code: 0, answer: { created: false, revoked: false, live: true } });
  });
});
