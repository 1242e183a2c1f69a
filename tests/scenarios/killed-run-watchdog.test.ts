// Rule: a run killed outright (SIGKILL: the OOM killer, a CI hard stop) leaves no process or temporary directory
// behind: its watchdog (scenarios/watchdog.ts) SIGKILLs the private redis-server and the `interlock serve` children it
// was told of and removes their directories. It kills only a process that is still the one it was told of (same
// start time in /proc), never one that took over its pid. They used to run for ever, their directories with them.
// Rule: the registry holds one JSON entry a line, and a line that is not one whole entry is ignored: a path holding a
// newline (a TMPDIR may) used to be read as two `dir` lines, and the watchdog removed a folder that was not the run's.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startTimeOf } from '../../scenarios/processes.js';
import { REPO, tempDir } from '../cli/run-cli.js';
import { alive, until } from './no-world-run.js';

const temp = tempDir('scenario-killed-run');
const started: number[] = [];
afterAll(() => {
  for (const pid of started) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone.
    }
  }
  temp.remove();
});

function parentOf(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return null;
  }
}

function commandOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
  } catch {
    return '';
  }
}

/** Every live descendant of `root`. */
function descendants(root: number): number[] {
  const pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name)).map(Number);
  const found: number[] = [];
  const queue = [root];
  for (let at = queue.shift(); at !== undefined; at = queue.shift()) {
    for (const pid of pids) {
      if (parentOf(pid) === at && alive(pid)) {
        found.push(pid);
        queue.push(pid);
      }
    }
  }
  return found;
}

describe('a scenario run killed with SIGKILL', () => {
  it('leaves no redis-server, no interlock serve and no temporary directory behind', { timeout: 120_000 }, async () => {
    const runTmp = join(temp.dir, 'tmp');
    mkdirSync(runTmp);
    const env: NodeJS.ProcessEnv = { ...process.env, INTERLOCK_LOG_LEVEL: 'silent', TMPDIR: runTmp, INTERLOCK_DATA_DIR: join(temp.dir, 'data') };
    for (const name of ['REDIS_URL', 'STRIPE_SECRET_KEY', 'STRIPE_API_BASE', 'ANTHROPIC_API_KEY']) delete env[name];
    const run = spawn(process.execPath, [join(REPO, 'bin', 'interlock.js'), 'scenario', 'stripe-dispute', '--delays', 'fast', '--reps', '1', '--rows', 'crash_after_send_chargeback_during_outage', '--out', join(temp.dir, 'out')], { cwd: REPO, env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    run.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const pid = run.pid ?? 0;
    started.push(pid);
    // Half-way: its private Redis and its support API run.
    const up = () => descendants(pid).some((child) => commandOf(child).includes('serve --roles api')) && descendants(pid).some((child) => commandOf(child).startsWith('redis-server'));
    expect(await until(up, 60_000), stderr).toBe(true);
    const children = descendants(pid).filter((child) => !commandOf(child).includes('watchdog-process'));
    started.push(...children);
    const redis = children.find((child) => commandOf(child).startsWith('redis-server')) ?? 0;
    expect(readlinkSync(`/proc/${redis}/cwd`).startsWith(runTmp)).toBe(true);
    expect(readdirSync(runTmp).filter((name) => name.startsWith('interlock-')).length).toBeGreaterThan(0);
    run.kill('SIGKILL');
    await once(run, 'close');
    expect(await until(() => children.every((child) => !alive(child)), 20_000), children.filter(alive).map((child) => `${child}: ${commandOf(child)}`).join('\n')).toBe(true);
    // (tsx keeps its cache in TMPDIR too: only the run's own directories count.)
    const ours = () => readdirSync(runTmp).filter((name) => name.startsWith('interlock-'));
    expect(await until(() => ours().length === 0, 10_000), ours().join(', ')).toBe(true);
  });

  it('its watchdog kills only what is still the process it was told of, and removes the directories', { timeout: 30_000 }, async () => {
    const home = join(temp.dir, 'home');
    const dir = join(temp.dir, 'cell');
    mkdirSync(home);
    mkdirSync(dir);
    const noted = spawn('sleep', ['60'], { stdio: 'ignore' });
    const reused = spawn('sleep', ['60'], { stdio: 'ignore' });
    started.push(noted.pid ?? 0, reused.pid ?? 0);
    // `reused`: its pid noted with another start time, as a pid handed on after the noted process ended.
    const entries = [{ pid: noted.pid ?? 0, start: startTimeOf(noted.pid ?? 0) ?? '' }, { pid: reused.pid ?? 0, start: '1' }, { dir }];
    writeFileSync(join(home, 'registry'), entries.map((entry) => `${JSON.stringify(entry)}\n`).join(''));
    const watchdog = spawn(process.execPath, ['--import', 'tsx', join(REPO, 'scenarios', 'watchdog-process.ts'), String(process.pid), startTimeOf(process.pid) ?? '', home], { cwd: REPO, stdio: ['pipe', 'ignore', 'inherit'] });
    // The runner closing its end of the pipe (or dying) sends the watchdog to work.
    watchdog.stdin.end();
    const [code] = (await once(watchdog, 'exit')) as [number | null];
    expect(code).toBe(0);
    expect(await until(() => !alive(noted.pid ?? 0), 5_000)).toBe(true);
    expect(alive(reused.pid ?? 0)).toBe(true);
    expect([existsSync(dir), existsSync(home)]).toEqual([false, false]);
  });

  it("removes a noted directory whose path holds a newline, and nothing else: the registry keeps each entry on its line", { timeout: 60_000 }, async () => {
    const base = join(temp.dir, 'newline');
    // The user's folder, which `<base>/a\ndir …` read as two lines would name.
    const users = join(base, 'a');
    mkdirSync(users, { recursive: true });
    writeFileSync(join(users, 'precious.txt'), 'mine\n');
    const runTmp = join(base, 'a\ndir ', 'x');
    mkdirSync(runTmp, { recursive: true });
    const script = [
      "import { mkdtempSync } from 'node:fs';",
      "import { tmpdir } from 'node:os';",
      "import { join } from 'node:path';",
      "import { startWatchdog } from './scenarios/watchdog.ts';",
      'const dog = startWatchdog();',
      "const dir = mkdtempSync(join(tmpdir(), 'interlock-cell-'));",
      'dog.dir(dir);',
      "process.stdout.write(JSON.stringify(dir) + '\\n');",
      'setInterval(() => {}, 1000);',
    ].join('\n');
    const runner = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: REPO, env: { ...process.env, TMPDIR: runTmp }, stdio: ['ignore', 'pipe', 'inherit'] });
    started.push(runner.pid ?? 0);
    const [line] = (await once(runner.stdout, 'data')) as [Buffer];
    const dir = JSON.parse(line.toString('utf8').trim()) as string;
    expect([dir.startsWith(`${runTmp}/interlock-cell-`), existsSync(dir)]).toEqual([true, true]);
    runner.kill('SIGKILL');
    await once(runner, 'close');
    expect(await until(() => !existsSync(dir), 20_000)).toBe(true);
    expect(readFileSync(join(users, 'precious.txt'), 'utf8')).toBe('mine\n');
  });

  it('ignores a registry line that is not one whole entry', { timeout: 30_000 }, async () => {
    const home = join(temp.dir, 'home-junk');
    const kept = join(temp.dir, 'kept');
    mkdirSync(home);
    mkdirSync(kept);
    writeFileSync(join(home, 'registry'), `dir ${kept}\n${JSON.stringify({ dir: kept }).slice(0, -2)}\n${JSON.stringify({ dir: kept, extra: 1 })}\n`);
    const watchdog = spawn(process.execPath, ['--import', 'tsx', join(REPO, 'scenarios', 'watchdog-process.ts'), String(process.pid), startTimeOf(process.pid) ?? '', home], { cwd: REPO, stdio: ['pipe', 'ignore', 'inherit'] });
    watchdog.stdin.end();
    const [code] = (await once(watchdog, 'exit')) as [number | null];
    expect(code).toBe(0);
    expect([existsSync(kept), existsSync(home)]).toEqual([true, false]);
  });
});
