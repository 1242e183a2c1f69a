// Rule: a run whose parent goes away (`npx interlock scenario …` stopped with SIGTERM: npm's npx exits 143 at once
// and passes the signal on to no one) stops as for SIGHUP: its processes stopped, nothing written into --out, which
// keeps what it had, and exit 129. It used to go on unseen and write a whole result set into --out a minute later.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LOCK_FILE } from '../../scenarios/out-folder.js';
import { REPO, tempDir } from '../cli/run-cli.js';
import { alive, until } from './no-world-run.js';

const temp = tempDir('scenario-parent-gone');
let runner = 0;
afterAll(() => {
  try {
    if (runner > 0) process.kill(runner, 'SIGTERM');
  } catch {
    // Gone, as it should be.
  }
  temp.remove();
});

describe('a scenario run whose parent is gone', () => {
  it('stops as for SIGHUP and writes nothing into --out', { timeout: 120_000 }, async () => {
    const out = join(temp.dir, 'out');
    const log = join(temp.dir, 'run.log');
    const env: NodeJS.ProcessEnv = { ...process.env, INTERLOCK_LOG_LEVEL: 'silent', INTERLOCK_DATA_DIR: join(temp.dir, 'data') };
    for (const name of ['REDIS_URL', 'STRIPE_SECRET_KEY', 'STRIPE_API_BASE', 'ANTHROPIC_API_KEY']) delete env[name];
    // A parent that starts the run in the background, as npx's shell does, and is then killed outright.
    const command = `"${process.execPath}" "${join(REPO, 'bin', 'interlock.js')}" scenario stripe-dispute --delays fast --reps 1 --rows crash_after_send_chargeback_during_outage --out "${out}" >"${log}" 2>&1 & echo $!; wait`;
    const parent = spawn('sh', ['-c', command], { cwd: REPO, env, stdio: ['ignore', 'pipe', 'ignore'] });
    let said = '';
    parent.stdout.on('data', (chunk: Buffer) => (said += chunk.toString('utf8')));
    expect(await until(() => /^\d+\n/.test(said), 10_000)).toBe(true);
    runner = Number(said.trim());
    // The run has begun once it holds the folder's lock (before its Redis starts).
    expect(await until(() => existsSync(join(out, LOCK_FILE)), 60_000), readFileSync(log, 'utf8')).toBe(true);
    parent.kill('SIGKILL');
    expect(await until(() => !alive(runner), 60_000), readFileSync(log, 'utf8')).toBe(true);
    const said2 = readFileSync(log, 'utf8');
    expect(said2).toContain('has gone: stopping as for SIGHUP');
    expect(said2).toContain(`SIGHUP: stopped; the cells under way are not written, and ${out} keeps the results it had.`);
    // The run made --out and wrote nothing into it: the folder goes with it (refused-run-leaves-no-folder.test.ts).
    expect(existsSync(out)).toBe(false);
  });
});
