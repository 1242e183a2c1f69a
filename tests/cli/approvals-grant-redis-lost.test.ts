// Rule: a CLI command never says "nothing was changed" when it did change something (cli/stores.ts withStores).
// `approvals grant` binds the id to its scope's partition (bind-approval-2, on the ids' index) before the grant script
// writes the approval; when Redis goes away between the two, the command says what it asked may or may not have been
// done, and a later grant of that id under another scope says the id was taken by a grant that did not finish
// (describe answers "no approval" for it), not that the approval "already exists".
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli, tempDir } from './run-cli.js';
import { cutAfter } from './redis-proxy.js';

const prefix = `cli-grant-lost-${randomBytes(4).toString('hex')}`;
const temp = tempDir('cli-grant-lost');
const env = { REDIS_URL: 'redis://127.0.0.1:6379', INTERLOCK_KEY_PREFIX: prefix, INTERLOCK_DATA_DIR: temp.dir };
const redis = new Redis('redis://127.0.0.1:6379');

afterAll(async () => {
  const keys = await redis.keys(`*${prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
  temp.remove();
});

describe('approvals grant when Redis goes away between its two writes', () => {
  it('says something may have been written, and a grant of the id under another scope names the unfinished grant', async () => {
    // Cut once the binding script, the first command naming the approval ids' index, was answered.
    const proxy = await cutAfter(`${prefix}:{~index}:approvals`);
    let first;
    try {
      first = await runCli(['approvals', 'grant', '--id', 'ap_lost', '--approver', 'dana', '--cap-cents', '2000', '--scope', 'payment:pi_typo'], { ...env, REDIS_URL: proxy.url });
    } finally {
      await proxy.close();
    }
    expect(proxy.cut(), 'the proxy never cut the connection').toBe(true);
    expect({ code: first.code, nothingChanged: first.stderr.includes('nothing was changed'), mayHave: first.stderr.includes('may or may not have been done') }, first.stderr).toEqual({ code: 2, nothingChanged: false, mayHave: true });
    expect((await runCli(['approvals', 'describe', 'ap_lost'], env)).code).toBe(1);
    const meant = await runCli(['approvals', 'grant', '--id', 'ap_lost', '--approver', 'dana', '--cap-cents', '2000', '--scope', 'payment:pi_meant'], env);
    expect(meant.code).toBe(1);
    expect(meant.stderr).toContain('was taken for scope payment:pi_typo by a grant that did not finish');
    // Granted again as first asked, the unfinished grant is completed.
    const again = await runCli(['approvals', 'grant', '--id', 'ap_lost', '--approver', 'dana', '--cap-cents', '2000', '--scope', 'payment:pi_typo'], env);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse((await runCli(['approvals', 'describe', 'ap_lost'], env)).stdout)).toMatchObject({ id: 'ap_lost', scope: 'payment:pi_typo', live: true });
  });
});
