// Rule: the private Redis `serve` starts (REDIS_URL unset) answers only a client holding its password, which lives in
// a 0600 file of its 0700 directory, never on its command line (every user of the machine reads that with `ps`) nor
// in what is printed; its address carries the password, the same from one start to the next. One left running by an
// older version, without a password, is still stopped through the address that version recorded.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { shownUrl } from '../../src/core/redact.js';
import { makeDirectory } from '../../src/files.js';
import { freePort, passwordFile, privateRedisArgs, privateRedisCommand, processRuns, startPrivateRedis, type PrivateRedis } from '../../src/redis/private-server.js';

const started: PrivateRedis[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const redis of started.splice(0)) await redis.stop();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function dataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'interlock-private-password-'));
  dirs.push(dir);
  return dir;
}

/** What the server at host:port answers a client that gives `password` (none: a local user who only found the port). */
async function answer(url: string, password?: string): Promise<string> {
  const { hostname, port } = new URL(url);
  const client = new Redis({ host: hostname, port: Number(port), password, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  // ioredis 6 opens with HELLO: the server's refusal comes as an error event, and connect() only says the connection closed.
  const errors: string[] = [];
  client.on('error', (error: Error) => errors.push(error.message));
  try {
    await client.connect();
    return String(await client.ping());
  } catch (error) {
    return `refused: ${errors[0] ?? (error as Error).message}`;
  } finally {
    client.disconnect();
  }
}

describe('the password of the private Redis', () => {
  it('is required, kept in a 0600 file of its directory rather than on its command line or in what is shown, and the same at the next start', async () => {
    const data = dataDir();
    const first = await startPrivateRedis(data);
    started.push(first);
    const password = decodeURIComponent(new URL(first.url).password);
    expect(password).toMatch(/^[0-9a-f]{64}$/);
    expect(await answer(first.url)).toMatch(/^refused: NOAUTH/);
    expect(await answer(first.url, 'guess')).toMatch(/^refused: WRONGPASS/);
    expect(await answer(first.url, password)).toBe('PONG');

    expect(statSync(first.dir).mode & 0o777).toBe(0o700);
    expect(statSync(passwordFile(first.dir)).mode & 0o777).toBe(0o600);
    expect(readFileSync(passwordFile(first.dir), 'utf8')).toBe(`requirepass ${password}\n`);
    const { port } = new URL(first.url);
    const command = privateRedisCommand(first.dir, Number(port));
    expect(command[0]).toBe(passwordFile(first.dir));
    expect(command.join(' ')).not.toContain(password);
    expect(shownUrl(first.url)).toBe(`redis://…@127.0.0.1:${port}`);

    const client = new Redis(first.url);
    await client.set('journal', 'kept');
    client.disconnect();
    await started.pop()?.stop();
    const next = await startPrivateRedis(data);
    started.push(next);
    expect(new URL(next.url).password).toBe(password);
    const again = new Redis(next.url);
    expect(await again.get('journal')).toBe('kept');
    again.disconnect();
  });

  it('one an older version left running without a password is stopped through its recorded address, and the next one has a password', { timeout: 30_000 }, async () => {
    const data = dataDir();
    const dir = join(data, 'redis');
    makeDirectory(dir, 0o700);
    const port = await freePort();
    const old = spawn('redis-server', privateRedisArgs(dir, port), { stdio: 'ignore', detached: true });
    const oldUrl = `redis://127.0.0.1:${port}`;
    try {
      const giveUp = Date.now() + 10_000;
      while ((await answer(oldUrl)) !== 'PONG' && Date.now() < giveUp) await new Promise((wait) => setTimeout(wait, 50));
      const client = new Redis(oldUrl);
      await client.set('journal', 'kept');
      client.disconnect();

      const next = await startPrivateRedis(data, { orphanOf: oldUrl });
      started.push(next);
      expect(processRuns(old.pid ?? 0)).toBe(false);
      expect(await answer(next.url)).toMatch(/^refused: NOAUTH/);
      const reader = new Redis(next.url);
      expect(await reader.get('journal')).toBe('kept');
      reader.disconnect();
    } finally {
      if (old.exitCode === null && old.signalCode === null) old.kill('SIGKILL');
    }
  });
});
