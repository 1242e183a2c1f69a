// Rule: who revoked an approval (`approvals revoke --by`, recorded on it) can be read back: `approvals describe` shows
// revokedBy, and a second revoke, by anyone, answers alreadyRevoked with who revoked it first.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli, tempDir } from './run-cli.js';
import { REDIS_URL } from '../support/harness.js';

const prefix = `revokedby${randomBytes(4).toString('hex')}`;
const temp = tempDir('revoked-by');
const env = { REDIS_URL, INTERLOCK_KEY_PREFIX: prefix, INTERLOCK_DATA_DIR: temp.dir };

afterAll(async () => {
  const redis = new Redis(REDIS_URL);
  const keys = await redis.keys(`${prefix}:*`);
  if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
  temp.remove();
});

describe('approvals revoke --by', { timeout: 60_000 }, () => {
  it('shows who revoked in the revoke answer, in approvals describe, and in a second revoke by someone else', async () => {
    const id = `ap_${randomBytes(4).toString('hex')}`;
    expect((await runCli(['approvals', 'grant', '--id', id, '--approver', 'dana', '--cap-cents', '100', '--scope', 'payment:pi_revokedby'], env)).code).toBe(0);
    const before = await runCli(['approvals', 'describe', id], env);
    expect(JSON.parse(before.stdout)).toMatchObject({ revoked: false, revokedBy: null });
    const first = await runCli(['approvals', 'revoke', id, '--by', 'lee@support'], env);
    expect(JSON.parse(first.stdout)).toMatchObject({ alreadyRevoked: false, revokedBy: 'lee@support' });
    const again = await runCli(['approvals', 'revoke', id, '--by', 'kim@support'], env);
    expect(JSON.parse(again.stdout)).toMatchObject({ alreadyRevoked: true, revokedBy: 'lee@support' });
    const described = await runCli(['approvals', 'describe', id], env);
    expect(described.code, described.stderr).toBe(0);
    expect(JSON.parse(described.stdout)).toMatchObject({ revoked: true, revokedBy: 'lee@support' });
  });
});
