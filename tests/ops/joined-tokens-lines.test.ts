// Rule: a second `npm start` that joins a running one, its stdout no terminal, says where the tokens are as the first
// one's lines do: the tokens file and, since it holds the same tokens, the running service's service.json with the
// command that reads one. It printed the tokens file alone, which a script reading the README's service.json line
// could not follow.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { spawnWorker } from '../pipeline/pipeline-support.js';

const data = mkdtempSync(join(tmpdir(), 'interlock-joined-tokens-'));

afterAll(() => {
  try {
    process.kill(Number(readFileSync(join(data, 'redis', 'redis.pid'), 'utf8')), 'SIGKILL');
  } catch {
    // Gone.
  }
  rmSync(data, { recursive: true, force: true });
});

it('a joining start names the running service\'s service.json and how to read a token from it', { timeout: 120_000 }, async () => {
  // A Stripe nobody answers at: nothing here sends. REDIS_URL blank: the first start runs its private Redis.
  const env = { REDIS_URL: '', INTERLOCK_DATA_DIR: data, INTERLOCK_PORT: '0', STRIPE_SECRET_KEY: 'sk_test_joinedtokens', STRIPE_API_BASE: 'http://127.0.0.1:9' };
  const owner = spawnWorker(env, ['serve', '--roles', 'api']);
  let joined: ReturnType<typeof spawnWorker> | null = null;
  try {
    await owner.ready;
    joined = spawnWorker(env, ['serve', '--roles', 'api']);
    await joined.ready;
    const serviceFile = join(data, 'service.json');
    const tokensLine = joined.logs().split('\n').find((line) => line.startsWith('  Tokens')) ?? '';
    expect(tokensLine, joined.logs()).toContain(`and for scripts in ${serviceFile}`);
    expect(joined.logs()).toContain("service.json\")).tokens.");
  } finally {
    await joined?.stop(2_000);
    await owner.stop(2_000);
  }
});
