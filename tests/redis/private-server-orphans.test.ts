// Rule: the private redis-server a killed start left running is stopped by the next start on the same data directory,
// which then starts its own (README: the next start stops the one a killed start left running): also when the start
// was killed before it wrote service.json (the address each start records beside the server names it, with its
// password), and when the data directory is reached through a symbolic link (Redis reports its directory with links
// resolved). It is left running while another process is connected to it (a worker that joined the killed serve through
// service.json still uses it), and the next start takes it over as it runs. A password file that cannot be read (a directory where it should be) stops the start with a sentence
// naming it, not a bare EISDIR.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { passwordFile, processRuns, startPrivateRedis, type PrivateRedis } from '../../src/redis/private-server.js';

const REPO = join(import.meta.dirname, '..', '..');
const root = mkdtempSync(join(tmpdir(), 'interlock-orphans-'));
const started: PrivateRedis[] = [];
const orphans: number[] = [];

afterAll(async () => {
  for (const redis of started) await redis.stop();
  for (const pid of orphans) if (processRuns(pid)) process.kill(pid, 'SIGKILL');
  rmSync(root, { recursive: true, force: true });
});

/** A start killed (SIGKILL) once its Redis runs, before anything else: as `npm start` killed before service.json. */
async function killedStart(dataDir: string): Promise<number> {
  const holder = spawn(process.execPath, ['--import', 'tsx', 'tests/support/private-redis-holder.ts', dataDir], { cwd: REPO, stdio: ['pipe', 'pipe', 'inherit'] });
  const pid = Number(await new Promise<string>((resolve) => createInterface({ input: holder.stdout }).once('line', resolve)));
  orphans.push(pid);
  holder.kill('SIGKILL');
  await new Promise((done) => holder.once('exit', done));
  expect(processRuns(pid)).toBe(true);
  return pid;
}

describe('the redis-server of a killed start', () => {
  it('is stopped by the next start when no service.json names it', { timeout: 60_000 }, async () => {
    const dataDir = join(root, 'no-service-file');
    const orphan = await killedStart(dataDir);
    const next = await startPrivateRedis(dataDir, { orphanOf: null });
    started.push(next);
    expect(processRuns(orphan)).toBe(false);
    expect(next.pid).not.toBe(orphan);
  });

  it('is stopped by the next start on a data directory reached through a link', { timeout: 60_000 }, async () => {
    mkdirSync(join(root, 'real'), { mode: 0o700 });
    symlinkSync(join(root, 'real'), join(root, 'link'));
    const orphan = await killedStart(join(root, 'link'));
    const next = await startPrivateRedis(join(root, 'link'), { orphanOf: null });
    started.push(next);
    expect(processRuns(orphan)).toBe(false);
  });
});

describe('the redis-server of a killed start that another process still uses', () => {
  it('is not stopped while that process is connected (a worker that joined it): the next start takes it over, and its stop stops it once that process has gone', { timeout: 60_000 }, async () => {
    const dataDir = join(root, 'joined');
    const orphan = await killedStart(dataDir);
    const address = readFileSync(join(dataDir, 'redis', 'address'), 'utf8').trim();
    const joiner = new Redis(address);
    await joiner.ping();
    const adopted = await startPrivateRedis(dataDir, { orphanOf: null });
    expect({ pid: adopted.pid, url: adopted.url }).toEqual({ pid: orphan, url: address });
    expect(await joiner.ping()).toBe('PONG');
    await joiner.quit();
    await adopted.stop();
    expect(processRuns(orphan)).toBe(false);
  });
});

describe('a password file that cannot be read', () => {
  it('stops the start with a sentence naming it and what to do', async () => {
    const dataDir = join(root, 'password-dir');
    mkdirSync(join(dataDir, 'redis'), { recursive: true, mode: 0o700 });
    const file = passwordFile(join(dataDir, 'redis'));
    mkdirSync(file);
    await expect(startPrivateRedis(dataDir)).rejects.toThrow(`The password file of the private Redis, ${file}, cannot be used (EISDIR): remove what is there (the next start makes a new one) and start again.`);
  });
});
