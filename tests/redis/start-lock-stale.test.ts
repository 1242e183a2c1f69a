// Rule: the private Redis's start lock refuses a start only while another process that may have taken it runs. A lock
// naming this very process (a fresh pid namespace: a container started again gives the service the pid of the one
// that left the lock), or a pid whose process started at another moment than the lock's writer (the lock records it:
// a reboot, or the pid went to another process), is stale, and the start goes on; so is a redis.pid naming a process
// that is no redis-server. No wall clock is compared with a file's time: a clock stepped forward must not make a live
// writer look stale. A process that exits without stopping (a second Ctrl-C) removes its lock on the way out.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, expect, it } from 'vitest';
import { processRuns, processStartTicks, startPrivateRedis, type PrivateRedis } from '../../src/redis/private-server.js';

const REPO = join(import.meta.dirname, '..', '..');
const root = mkdtempSync(join(tmpdir(), 'interlock-start-lock-'));
const started: PrivateRedis[] = [];
const children: ChildProcess[] = [];
const servers: number[] = [];

afterAll(async () => {
  for (const redis of started) await redis.stop();
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  for (const pid of servers) if (processRuns(pid)) process.kill(pid, 'SIGKILL');
  rmSync(root, { recursive: true, force: true });
});

/** A data directory whose start lock names `pid` and, when given, the start of the process that wrote it; written `ageMs` ago. */
function lockedBy(name: string, pid: number, options: { started?: string; ageMs?: number } = {}): string {
  const dataDir = join(root, name);
  mkdirSync(join(dataDir, 'redis'), { recursive: true, mode: 0o700 });
  const lock = join(dataDir, 'redis', 'start.lock');
  writeFileSync(lock, `${pid}\n0123456789abcdef\n${options.started ?? ''}`, { mode: 0o600 });
  const written = (Date.now() - (options.ageMs ?? 0)) / 1_000;
  utimesSync(lock, written, written);
  return dataDir;
}

/** A process that runs until the test ends, started now. */
async function running(): Promise<number> {
  const child = spawn('sleep', ['60'], { stdio: 'ignore' });
  children.push(child);
  await new Promise((done) => child.once('spawn', done));
  return child.pid ?? 0;
}

it('a lock naming this process is stale: the start goes on', { timeout: 30_000 }, async () => {
  const redis = await startPrivateRedis(lockedBy('own-pid', process.pid));
  started.push(redis);
  expect(processRuns(redis.pid)).toBe(true);
});

it('a lock naming a pid whose process started at another moment than its writer is stale: the start goes on', { timeout: 30_000 }, async () => {
  const pid = await running();
  const redis = await startPrivateRedis(lockedBy('reused-pid', pid, { started: String(Number(processStartTicks(pid)) - 1) }));
  started.push(redis);
  expect(processRuns(redis.pid)).toBe(true);
});

it('a lock its live writer may hold refuses the start, however old the file looks (the clock stepped forward)', { timeout: 30_000 }, async () => {
  const holder = await running();
  const dataDir = lockedBy('held', holder, { started: processStartTicks(holder) ?? '', ageMs: 3_600_000 });
  await expect(startPrivateRedis(dataDir)).rejects.toThrow(`Another \`interlock serve\` (pid ${holder}) is starting or running the private Redis`);
});

it('a redis.pid naming a live process that is no redis-server is stale: the start goes on', { timeout: 30_000 }, async () => {
  const dataDir = join(root, 'redis-pid-reused');
  mkdirSync(join(dataDir, 'redis'), { recursive: true, mode: 0o700 });
  writeFileSync(join(dataDir, 'redis', 'redis.pid'), `${await running()}\n`, { mode: 0o600 });
  const redis = await startPrivateRedis(dataDir);
  started.push(redis);
  expect(processRuns(redis.pid)).toBe(true);
});

it('a process that exits without stopping its private Redis removes its start lock', { timeout: 60_000 }, async () => {
  const dataDir = join(root, 'exited');
  const holder = spawn(process.execPath, ['--import', 'tsx', 'tests/support/private-redis-holder.ts', dataDir], { cwd: REPO, stdio: ['pipe', 'pipe', 'inherit'] });
  children.push(holder);
  const pid = Number(await new Promise<string>((resolve) => createInterface({ input: holder.stdout! }).once('line', resolve)));
  servers.push(pid);
  expect(existsSync(join(dataDir, 'redis', 'start.lock'))).toBe(true);
  // As a second Ctrl-C: process.exit, no stop().
  holder.stdin?.write('exit\n');
  expect(await new Promise((done) => holder.once('exit', done))).toBe(130);
  expect(existsSync(join(dataDir, 'redis', 'start.lock'))).toBe(false);
});
