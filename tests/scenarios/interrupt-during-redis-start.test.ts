// Rule: scenarios/README.md "Redis": without REDIS_URL the run's private redis-server and temporary directory are
// "removed afterwards (also after Ctrl-C ...), which end the run with exit 130, its processes stopped and its
// temporary directories removed". That must hold for a Ctrl-C that arrives while the private Redis is still starting
// (a slow start is simulated by a redis-server on PATH that waits 3 s before it execs the real one).
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, existsSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO, tempDir } from '../cli/run-cli.js';

/** Pids of the live processes whose command line or working directory mentions `needle` (Linux /proc; redis-server rewrites its title, its cwd is its --dir). */
function processesMentioning(needle: string): number[] {
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      if (/^\d+ \(.*\) Z/.test(stat)) continue;
      let cwd = '';
      try {
        cwd = readlinkSync(`/proc/${name}/cwd`);
      } catch {
        // not ours to read
      }
      if (readFileSync(`/proc/${name}/cmdline`, 'utf8').includes(needle) || cwd.includes(needle)) pids.push(Number(name));
    } catch {
      // gone
    }
  }
  return pids;
}

describe('interlock scenario interrupted while its private Redis starts', () => {
  it('exits 130 and leaves no redis-server and no temporary directory behind', { timeout: 60_000 }, async () => {
    const tmp = tempDir('scenario-interrupt-start');
    const bin = join(tmp.dir, 'bin');
    const real = execFileSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' }).trim();
    const marker = join(tmp.dir, 'redis-starting');
    execFileSync('mkdir', ['-p', bin]);
    writeFileSync(join(bin, 'redis-server'), `#!/bin/sh\nif [ "$1" = "--version" ]; then exec ${real} "$@"; fi\ntouch ${marker}\nsleep 3\nexec ${real} "$@" >/dev/null 2>&1\n`);
    chmodSync(join(bin, 'redis-server'), 0o755);
    const runTmp = join(tmp.dir, 'tmp');
    execFileSync('mkdir', ['-p', runTmp]);
    const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${bin}:${process.env.PATH ?? ''}`, TMPDIR: runTmp, INTERLOCK_LOG_LEVEL: 'silent' };
    for (const name of ['REDIS_URL', 'STRIPE_SECRET_KEY', 'STRIPE_API_BASE', 'ANTHROPIC_API_KEY']) delete env[name];
    const child = spawn(process.execPath, [join(REPO, 'bin', 'interlock.js'), 'scenario', 'shared-cap', '--delays', 'fast', '--reps', '1', '--rows', 'after_commit', '--columns', 'interlock', '--out', join(tmp.dir, 'out')], { cwd: REPO, env, stdio: ['ignore', 'ignore', 'pipe'], detached: true });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const exited = once(child, 'exit');
    try {
      const deadline = Date.now() + 30_000;
      while (!existsSync(marker)) {
        if (Date.now() > deadline || child.exitCode !== null) throw new Error(`redis never started: ${stderr}`);
        await new Promise((wait) => setTimeout(wait, 20));
      }
      // Ctrl-C to the terminal's foreground group, while the private Redis is still starting.
      process.kill(-(child.pid ?? 0), 'SIGINT');
      const [code, signal] = (await exited) as [number | null, NodeJS.Signals | null];
      // Let the slow redis-server come up, as it would after the run has gone.
      await new Promise((wait) => setTimeout(wait, 4_000));
      const left = processesMentioning(runTmp);
      const dirs = readdirSync(runTmp).filter((name) => name.startsWith('interlock-'));
      expect({ code, signal, redisLeftRunning: left.length, dirsLeft: dirs }).toEqual({ code: 130, signal: null, redisLeftRunning: 0, dirsLeft: [] });
    } finally {
      if (child.exitCode === null && child.signalCode === null) process.kill(-(child.pid ?? 0), 'SIGKILL');
      for (const pid of processesMentioning(runTmp)) process.kill(pid, 'SIGKILL');
      tmp.remove();
    }
  });
});
