// `interlock scenario` given what it cannot run: it says what is wrong and what to name instead, exits 2 at once and
// leaves nothing running behind it (no private redis-server, no temporary directory).
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { processRuns } from '../../src/redis/private-server.js';
import { inTempDir, REPO, runCli, tempDir } from '../cli/run-cli.js';
import { defaultOut, FULL_RUN_REPS, RESULTS_DIR } from '../../scenarios/run.js';

describe('interlock scenario with bad input', () => {
  it('refuses an unknown row or column with exit 2 and exits, starting no private Redis it would leave running', { timeout: 60_000 }, async () => {
    for (const args of [['--rows', 'no_such_row'], ['--columns', 'no_such_column']]) {
      const run = await runCli(['scenario', 'stripe-dispute', '--delays', 'fast', '--out', '/tmp/interlock-usage-never-written', ...args], { REDIS_URL: undefined, STRIPE_SECRET_KEY: undefined }, { timeoutMs: 20_000 });
      expect(run.stderr).toMatch(/Unknown (row|column)\(s\) no_such_/);
      expect(run.code, run.stderr).toBe(2);
    }
  });

  it('refuses --keep-journals without REDIS_URL (exit 2), whose private Redis is removed when the run ends, instead of saying it kept keys that are gone', { timeout: 60_000 }, async () => {
    await inTempDir('scenario-keep', async (dir) => {
      const run = await runCli(['scenario', 'shared-cap', '--delays', 'fast', '--reps', '1', '--rows', 'after_commit', '--columns', 'interlock', '--out', dir, '--keep-journals'], { REDIS_URL: undefined, STRIPE_SECRET_KEY: undefined }, { timeoutMs: 40_000 });
      expect(run.stderr).toContain('--keep-journals');
      expect(run.stderr).toContain('REDIS_URL is not set');
      expect(run.stderr).not.toContain('Kept the Redis keys');
      expect(run.code, run.stderr).toBe(2);
      expect(readdirSync(dir)).toEqual([]);
    });
  });

  it('a run that cannot open its world (Redis not answering) fails saying so and leaves no temporary directory', { timeout: 60_000 }, async () => {
    await inTempDir('scenario-tmp', async (dir) => {
      const run = await runCli(['scenario', 'stripe-dispute', '--delays', 'fast', '--out', join(dir, 'out'), '--rows', 'crash_after_send_chargeback_during_outage', '--columns', 'interlock'], { REDIS_URL: 'redis://127.0.0.1:1', STRIPE_SECRET_KEY: undefined, TMPDIR: dir }, { timeoutMs: 40_000 });
      expect(run.code, run.stderr).not.toBe(0);
      expect(run.stderr).toMatch(/Redis/);
      expect(readdirSync(dir).filter((name) => name.startsWith('interlock-'))).toEqual([]);
    });
  });

  it('render on a folder with no results says so and how to produce them (exit 2), writing nothing there', { timeout: 60_000 }, async () => {
    await inTempDir('scenario-render', async (dir) => {
      const missing = join(dir, 'not-there');
      const [empty, absent] = await Promise.all([runCli(['scenario', 'render', '--out', dir]), runCli(['scenario', 'render', '--out', missing])]);
      expect([empty.code, absent.code], `${empty.stderr}\n${absent.stderr}`).toEqual([2, 2]);
      const advice = (out: string) => `render re-renders the pages from the JSON files a run writes there (stripe_dispute.json, billing_credit.json, shared_cap.json), and it has none. Run the scenarios first (\`npx interlock scenario all --out ${out}\`), or give --out the folder a run wrote (by default scenarios/results).`;
      expect(empty.stderr.trim()).toBe(`${dir} holds no scenario results: ${advice(dir)}`);
      expect(absent.stderr.trim()).toBe(`${missing} does not exist: ${advice(missing)}`);
      expect(readdirSync(dir)).toEqual([]);
    });
  });

  it('refuses a row or column of another scenario, which would run nothing and exit 0, naming the scenario it belongs to', { timeout: 60_000 }, async () => {
    await inTempDir('scenario-usage', async (dir) => {
      const row = await runCli(['scenario', 'stripe-dispute', '--delays', 'fast', '--out', dir, '--rows', 'after_commit'], { REDIS_URL: undefined, STRIPE_SECRET_KEY: undefined }, { timeoutMs: 20_000 });
      expect(row.stderr).toContain('after_commit is a row of shared-cap');
      expect(row.code, row.stderr).toBe(2);
      const column = await runCli(['scenario', 'billing-credit', '--delays', 'fast', '--out', dir, '--columns', 'hand_lock'], { REDIS_URL: undefined, STRIPE_SECRET_KEY: undefined }, { timeoutMs: 20_000 });
      expect(column.stderr).toContain('hand_lock is a column of shared-cap');
      expect(column.code, column.stderr).toBe(2);
      const none = await runCli(['scenario', 'all', '--delays', 'fast', '--out', dir, '--rows', 'crash_after_send_chargeback_during_outage', '--columns', 'hand_lock'], { REDIS_URL: undefined, STRIPE_SECRET_KEY: undefined }, { timeoutMs: 20_000 });
      expect(none.stderr).toContain('No cell to run');
      expect(none.code, none.stderr).toBe(2);
    });
  });
});

/** Runs and is not a zombie waiting for the init process to reap it (Linux's /proc). */
function alive(pid: number): boolean {
  if (!processRuns(pid)) return false;
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

describe('interlock scenario interrupted', () => {
  it.each([
    ['Ctrl-C', 'SIGINT'],
    ['a closed terminal', 'SIGHUP'],
  ] as const)('%s in the middle stops its private redis-server and removes its temporary directories', { timeout: 120_000 }, async (_, signal) => {
    // Its own temporary folder (TMPDIR), so what the run leaves there is this run's alone.
    const tmp = tempDir('scenario-interrupt');
    const env: NodeJS.ProcessEnv = { ...process.env, TMPDIR: tmp.dir, INTERLOCK_LOG_LEVEL: 'silent' };
    for (const name of ['REDIS_URL', 'STRIPE_SECRET_KEY', 'STRIPE_API_BASE', 'ANTHROPIC_API_KEY']) delete env[name];
    // A group of its own, as a terminal's foreground job: Ctrl-C signals the whole group.
    const child = spawn(process.execPath, [join(REPO, 'bin', 'interlock.js'), 'scenario', 'stripe-dispute', '--delays', 'fast', '--out', join(tmp.dir, 'out')], { cwd: REPO, env, stdio: ['ignore', 'ignore', 'pipe'], detached: true });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const exited = once(child, 'exit');
    let redisPid = 0;
    try {
      // Interrupted once the private Redis runs and a cell is under way.
      const deadline = Date.now() + 60_000;
      for (;;) {
        const dir = readdirSync(tmp.dir).find((name) => name.startsWith('interlock-scenario-redis-'));
        const pidFile = dir === undefined ? '' : join(tmp.dir, dir, 'redis', 'redis.pid');
        if (pidFile !== '' && existsSync(pidFile)) redisPid = Number(readFileSync(pidFile, 'utf8').trim());
        if (redisPid > 0 && stderr.includes('stripe_dispute crash_')) break;
        if (Date.now() > deadline || child.exitCode !== null) throw new Error(`no cell under way: ${stderr.slice(-2000)}`);
        await new Promise((wait) => setTimeout(wait, 100));
      }
      process.kill(-(child.pid ?? 0), signal);
      expect(await exited).toEqual([signal === 'SIGINT' ? 130 : 129, null]);
      const gone = Date.now() + 10_000;
      while (alive(redisPid) && Date.now() < gone) await new Promise((wait) => setTimeout(wait, 50));
      expect(alive(redisPid), `redis-server ${redisPid} still runs`).toBe(false);
      // (tsx keeps its compile cache there too: only the run's own directories count.)
      expect(readdirSync(tmp.dir).filter((name) => name.startsWith('interlock-'))).toEqual([]);
    } finally {
      if (child.exitCode === null && child.signalCode === null) process.kill(-(child.pid ?? 0), 'SIGKILL');
      if (redisPid > 0 && alive(redisPid)) process.kill(redisPid, 'SIGKILL');
      tmp.remove();
    }
  });
});

describe('where a run writes without --out', () => {
  it('a whole run into the committed results; a run of some rows or columns into a folder of its own, never over the committed pages', () => {
    const now = new Date('2026-12-04T07:31:02.123Z');
    const full = { scenarios: ['stripe-dispute'] as const, reps: FULL_RUN_REPS, delays: 'stripe' as const, rows: null, columns: null };
    expect(defaultOut({ ...full }, '.data', now)).toBe(RESULTS_DIR);
    expect(defaultOut({ ...full, rows: ['after_commit'] }, '.data', now)).toBe('.data/scenario-runs/2026-12-04T07-31-02-123Z');
    expect(defaultOut({ ...full, columns: ['interlock'] }, '/srv/interlock/', now)).toBe('/srv/interlock/scenario-runs/2026-12-04T07-31-02-123Z');
  });
});
