// Rule: the private Redis's start lock refuses a start only while another process that may have taken it runs. A lock
// naming this very process (a fresh pid namespace: a container started again gives the service the pid of the one
// that left the lock) or a process that started after the lock was written (a reboot reused its pid) is stale, and the
// start goes on. A process that exits without stopping (a second Ctrl-C) removes its lock on the way out.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, expect, it } from 'vitest';
import { processRuns, startPrivateRedis, type PrivateRedis } from '../../src/redis/private-server.js';

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

/** A data directory whose start lock names `pid`, written `ageMs` ago. */
function lockedBy(name: string, pid: number, ageMs = 0): string {
  const dataDir = join(root, name);
  mkdirSync(join(dataDir, 'redis'), { recursive: true, mode: 0o700 });
  const lock = join(dataDir, 'redis', 'start.lock');
  writeFileSync(lock, `${pid}\n0123456789abcdef`, { mode: 0o600 });
  const written = (Date.now() - ageMs) / 1_000;
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

it('a lock naming a process that started after it was written is stale: the start goes on', { timeout: 30_000 }, async () => {
  const redis = await startPrivateRedis(lockedBy('reused-pid', await running(), 3_600_000));
  started.push(redis);
  expect(processRuns(redis.pid)).toBe(true);
});

it('a lock its live writer may hold refuses the start', { timeout: 30_000 }, async () => {
  const holder = await running();
  const dataDir = lockedBy('held', holder);
  await expect(startPrivateRedis(dataDir)).rejects.toThrow(`Another \`interlock serve\` (pid ${holder}) is starting or running the private Redis`);
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
