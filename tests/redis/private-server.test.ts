// The private redis-server `npm start` runs under the data directory (src/redis/private-server.ts). A serve killed
// before it could stop it leaves it running on the append-only file: the next start stops that one (only when the
// address the dead serve recorded, in its service.json or in the address file its start writes beside the server, says
// it serves this very directory: SHUTDOWN fsyncs first) and starts its own on
// the same file, keeping what was written. Without that address, or with one that serves something else, the start is
// refused as before and nothing else is touched: two servers on one append-only file would corrupt it. Two starts at
// the same moment take the directory's start lock, which only one gets.
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { createInterface } from 'node:readline';
import { afterEach, describe, expect, it } from 'vitest';
import { processRuns, startPrivateRedis, type PrivateRedis } from '../../src/redis/private-server.js';

const started: PrivateRedis[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const redis of started.splice(0)) await redis.stop();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** The pid of a process that has exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(child.stdout);
}

async function read(url: string, key: string): Promise<string | null> {
  const client = new Redis(url);
  try {
    return await client.get(key);
  } finally {
    client.disconnect();
  }
}

describe('a private redis-server left running by a killed serve', () => {
  it('is stopped by the next start given its address, which starts its own on the same file and keeps what was written', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'interlock-private-'));
    dirs.push(dataDir);
    const left = await startPrivateRedis(dataDir);
    started.push(left);
    const client = new Redis(left.url);
    await client.set('journal', 'kept');
    client.disconnect();
    // The serve that started it is killed: its start lock names a process that no longer runs.
    writeFileSync(join(left.dir, 'start.lock'), String(deadPid()));

    // Without its address (no service.json, and the address its start records beside it gone), it is left alone.
    const recorded = join(left.dir, 'address');
    const address = readFileSync(recorded, 'utf8');
    rmSync(recorded);
    await expect(startPrivateRedis(dataDir)).rejects.toThrow(/Another redis-server/);
    // An address that serves another directory (the machine's Redis, say) is not stopped.
    const other = mkdtempSync(join(tmpdir(), 'interlock-private-other-'));
    dirs.push(other);
    const elsewhere = await startPrivateRedis(other);
    started.push(elsewhere);
    await expect(startPrivateRedis(dataDir, { orphanOf: elsewhere.url })).rejects.toThrow(/Another redis-server/);
    expect(await read(elsewhere.url, 'journal')).toBeNull();

    writeFileSync(recorded, address);
    const next = await startPrivateRedis(dataDir, { orphanOf: elsewhere.url });
    expect(processRuns(elsewhere.pid)).toBe(true);
    started.push(next);
    expect(next.url).not.toBe(left.url);
    expect(await read(next.url, 'journal')).toBe('kept');
    // The dead start's release (were it to run) leaves the new start's lock in place.
    await left.stop();
    await expect(startPrivateRedis(dataDir)).rejects.toThrow(/is starting or running the private Redis/);
  });

  it('two starts at the same moment on one directory: one starts, the other is refused', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'interlock-private-'));
    dirs.push(dataDir);
    const both = await Promise.allSettled([startPrivateRedis(dataDir), startPrivateRedis(dataDir)]);
    for (const one of both) if (one.status === 'fulfilled') started.push(one.value);
    expect(both.map((one) => one.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect(String((both.find((one) => one.status === 'rejected') as PromiseRejectedResult).reason)).toMatch(/is starting or running the private Redis/);
  });
});

describe('a private redis-server that dies while the service runs', () => {
  it('is reported once, saying how it ended, that nothing can be recorded, and to start again; a stop is not reported', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'interlock-private-died-'));
    dirs.push(dataDir);
    const redis = await startPrivateRedis(dataDir);
    started.push(redis);
    const reports: string[] = [];
    redis.onExit((sentence) => reports.push(sentence));
    process.kill(redis.pid, 'SIGKILL');
    const giveUp = Date.now() + 5_000;
    while (reports.length === 0 && Date.now() < giveUp) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(reports).toHaveLength(1);
    expect(reports[0]).toContain(`The private redis-server (pid ${redis.pid}) in ${redis.dir} exited (SIGKILL) while the service ran`);
    expect(reports[0]).toContain('nothing can be recorded or sent');
    expect(reports[0]).toContain('`npm start`');

    const calm = await startPrivateRedis(mkdtempSync(join(tmpdir(), 'interlock-private-calm-')));
    dirs.push(join(calm.dir, '..'));
    const none: string[] = [];
    calm.onExit((sentence) => none.push(sentence));
    await calm.stop();
    expect(none).toEqual([]);
  });
});

describe('Ctrl-C on a service holding its private redis-server', () => {
  it('does not stop the server while the service drains; a service that then exits at once ends it on the way out', { timeout: 30_000 }, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'interlock-private-'));
    dirs.push(dataDir);
    // The holder leads a process group, as a terminal's foreground job does.
    const holder = spawn(process.execPath, ['--import', 'tsx', 'tests/support/private-redis-holder.ts', dataDir], { detached: true, stdio: ['pipe', 'pipe', 'inherit'] });
    const lines = createInterface({ input: holder.stdout });
    const [first] = (await once(lines, 'line')) as [string];
    const pid = Number(first);
    try {
      expect(processRuns(pid)).toBe(true);
      // Ctrl-C: the terminal signals every process of its foreground group.
      process.kill(-(holder.pid ?? 0), 'SIGINT');
      expect((await once(lines, 'line'))[0]).toBe('draining');
      await new Promise((wait) => setTimeout(wait, 500));
      expect(processRuns(pid)).toBe(true);
      // A second Ctrl-C: the service exits without stopping Redis itself.
      holder.stdin.write('exit\n');
      await once(holder, 'exit');
      const deadline = Date.now() + 10_000;
      while (processRuns(pid) && Date.now() < deadline) await new Promise((wait) => setTimeout(wait, 50));
      expect(processRuns(pid)).toBe(false);
    } finally {
      if (processRuns(pid)) process.kill(pid, 'SIGKILL');
      if (holder.exitCode === null) holder.kill('SIGKILL');
    }
  });
});

describe('a private redis-server start its caller aborts', () => {
  it('kills the server still starting, fails once it has gone, and frees the directory; an abort after the start leaves the server running', { timeout: 30_000 }, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'interlock-private-abort-'));
    dirs.push(dataDir);
    const real = spawnSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' }).stdout.trim();
    // A redis-server slow to start: it writes its pid, waits, then becomes the real one.
    const binary = join(dataDir, 'slow-redis-server');
    const pidFile = join(dataDir, 'slow.pid');
    writeFileSync(binary, `#!/bin/sh\nif [ "$1" = "--version" ]; then exec ${real} "$@"; fi\necho $$ > ${pidFile}\nsleep 5\nexec ${real} "$@"\n`, { mode: 0o755 });
    const controller = new AbortController();
    const starting = startPrivateRedis(dataDir, { binary, signal: controller.signal });
    const deadline = Date.now() + 10_000;
    let pid = 0;
    while (pid === 0 && Date.now() < deadline) {
      try {
        pid = Number(readFileSync(pidFile, 'utf8').trim());
      } catch {
        await new Promise((wait) => setTimeout(wait, 20));
      }
    }
    expect(pid).toBeGreaterThan(0);
    controller.abort();
    await expect(starting).rejects.toThrow(/was stopped while it started/);
    expect(processRuns(pid)).toBe(false);

    // The start lock went with it: the next start on the directory goes on, and a later abort leaves it running.
    const later = new AbortController();
    const redis = await startPrivateRedis(dataDir, { signal: later.signal });
    started.push(redis);
    later.abort();
    await new Promise((wait) => setTimeout(wait, 200));
    expect(await read(redis.url, 'nothing')).toBeNull();
  });
});
