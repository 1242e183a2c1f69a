// Rule: a CLI command that had begun writing when its connection to Redis closed before Redis answered says the
// command may or may not have been done, and to check before running it again: it is never sent again (the service's
// client resends nothing whose reply was lost), so "nothing was changed" would be a guess, and here a wrong one (the
// grant ran). With Redis answering again by then, it printed the client's error as it was.
import { randomBytes } from 'node:crypto';
import { afterAll, expect, it } from 'vitest';
import { removePrefixes } from '../support/harness.js';
import { replyLossProxy, scriptSha } from '../support/reply-loss-proxy.js';
import { runCli, tempDir } from './run-cli.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const prefix = `cli-lost-${randomBytes(4).toString('hex')}`;
const temp = tempDir('cli-reply-lost');

afterAll(async () => {
  await removePrefixes([prefix]);
  temp.remove();
});

it('approvals grant whose reply was lost says it may have been done, and the grant stands', async () => {
  const proxy = await replyLossProxy(REDIS_URL);
  try {
    const env = { REDIS_URL: proxy.url, INTERLOCK_KEY_PREFIX: prefix, INTERLOCK_DATA_DIR: temp.dir };
    const sha = scriptSha('grant-approval-1');
    proxy.arm((written) => written.includes(sha));
    const id = `ap_${randomBytes(4).toString('hex')}`;
    const granted = await runCli(['approvals', 'grant', '--id', id, '--approver', 'dana@support', '--cap-cents', '3000', '--scope', 'payment:pi_lost'], env);
    expect(proxy.fired()).toBe(1);
    expect(granted.code).toBe(2);
    expect(granted.stderr).toContain('after this command had begun writing, so what it asked may or may not have been done');
    expect(granted.stderr).not.toContain('nothing was changed');
    // It was done: the grant ran once.
    const described = await runCli(['approvals', 'describe', id], { ...env, REDIS_URL });
    expect(JSON.parse(described.stdout)).toMatchObject({ id, usesLeft: 1, centsLeft: 3000 });
  } finally {
    await proxy.close();
  }
}, 60_000);
