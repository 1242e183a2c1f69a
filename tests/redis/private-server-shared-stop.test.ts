// Rule: stopping the private Redis (`npm start` stopped cleanly) leaves it running while other processes are connected
// to it (a `serve --roles worker` that joined through service.json, with a send in progress): stopping it would cut
// them off. The stop says so in one line (its pid and port, that the next start takes it over, how to stop it by hand),
// and the next start on the data directory takes that server over (same pid, same address) instead of failing or
// starting a second one on the same append-only file; its stop, once they have gone, stops it. This process's own
// connections, still open or closing, do not keep it running.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface, type Interface } from 'node:readline';
import { Redis } from 'ioredis';
import { afterAll, expect, it } from 'vitest';
import { processRuns, startPrivateRedis, type WarnLog } from '../../src/redis/private-server.js';

const REPO = join(import.meta.dirname, '..', '..');
const root = mkdtempSync(join(tmpdir(), 'interlock-shared-stop-'));
const servers: number[] = [];
const children: ChildProcess[] = [];

afterAll(() => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  for (const pid of servers) if (processRuns(pid)) process.kill(pid, 'SIGKILL');
  rmSync(root, { recursive: true, force: true });
});

/** Another process connected to the Redis at `url`: `ping()` asks it for that Redis's answer. */
async function joiner(url: string): Promise<{ child: ChildProcess; ping(): Promise<string> }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'tests/support/redis-joiner.ts', url], { cwd: REPO, stdio: ['pipe', 'pipe', 'inherit'] });
  children.push(child);
  const lines: Interface = createInterface({ input: child.stdout! });
  const next = () => new Promise<string>((resolve) => lines.once('line', resolve));
  expect(await next()).toBe('joined');
  return {
    child,
    ping() {
      const answer = next();
      child.stdin?.write('ping\n');
      return answer;
    },
  };
}

function recorder(): { log: WarnLog; lines: string[] } {
  const lines: string[] = [];
  return { lines, log: { warn: (fields, message) => lines.push(`${JSON.stringify(fields)} ${message}`) } };
}

it('is left running while another process is connected, and the next start takes it over', { timeout: 60_000 }, async () => {
  const dataDir = join(root, 'joined');
  const first = recorder();
  const redis = await startPrivateRedis(dataDir, { logger: first.log });
  servers.push(redis.pid);
  const worker = await joiner(redis.url);
  await redis.stop();
  expect(processRuns(redis.pid)).toBe(true);
  expect(await worker.ping()).toBe('PONG');
  const port = new URL(redis.url).port;
  expect(first.lines).toHaveLength(1);
  expect(first.lines[0]).toContain(`the private Redis (pid ${redis.pid}, port ${port})`);
  expect(first.lines[0]).toContain('The next `npm start` on this data directory takes it over');
  expect(first.lines[0]).toContain(`\`kill ${redis.pid}\``);

  const second = recorder();
  const next = await startPrivateRedis(dataDir, { orphanOf: redis.url, logger: second.log });
  expect(next.pid).toBe(redis.pid);
  expect(next.url).toBe(redis.url);
  expect(await worker.ping()).toBe('PONG');
  // Still joined: the stop leaves it again.
  await next.stop();
  expect(processRuns(redis.pid)).toBe(true);
  expect(second.lines).toHaveLength(1);

  worker.child.stdin?.end();
  await new Promise((done) => worker.child.once('exit', done));
  const last = await startPrivateRedis(dataDir, { orphanOf: null });
  servers.push(last.pid);
  await last.stop();
  expect(processRuns(last.pid)).toBe(false);
});

it('is stopped when the only connections left are this process\'s own', { timeout: 60_000 }, async () => {
  const dataDir = join(root, 'own');
  const { log, lines } = recorder();
  const redis = await startPrivateRedis(dataDir, { logger: log });
  servers.push(redis.pid);
  const own = new Redis(redis.url, { maxRetriesPerRequest: 0, retryStrategy: () => null });
  own.on('error', () => undefined);
  await own.ping();
  try {
    await redis.stop();
  } finally {
    own.disconnect();
  }
  expect(lines).toEqual([]);
  expect(processRuns(redis.pid)).toBe(false);
});

// Rule: the server left running is still its directory's owner whatever the wall clock did since it wrote redis.pid: a
// clock stepped forward (NTP fixing a VM's clock, a resumed laptop) made the live server look started after its file
// was written, stale, and the next start ran a second redis-server on the same append-only file.
it('is taken over, not doubled, when its redis.pid looks an hour old', { timeout: 60_000 }, async () => {
  const dataDir = join(root, 'clock');
  const redis = await startPrivateRedis(dataDir, { logger: recorder().log });
  servers.push(redis.pid);
  const worker = await joiner(redis.url);
  await redis.stop();
  const earlier = (Date.now() - 3_600_000) / 1_000;
  utimesSync(join(dataDir, 'redis', 'redis.pid'), earlier, earlier);
  const next = await startPrivateRedis(dataDir, { orphanOf: redis.url, logger: recorder().log });
  servers.push(next.pid);
  expect({ pid: next.pid, url: next.url }).toEqual({ pid: redis.pid, url: redis.url });
  worker.child.stdin?.end();
  await new Promise((done) => worker.child.once('exit', done));
  await next.stop();
  expect(processRuns(redis.pid)).toBe(false);
});
