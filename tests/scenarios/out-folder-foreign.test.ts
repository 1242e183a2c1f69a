// Rule: a run (or a render) writes its index as <out>/README.md and replaces its pages there, so it takes only a new or
// empty --out, or one a run wrote (its index carries RESULTS_MARKER, every other file is a scenario's page or JSON). A
// folder holding the user's own files (`--out .` at the project's root, `--out docs`) is refused, exit 2, with nothing
// written: the index used to replace the user's README.md. A page's or JSON file's name counts only for a regular file,
// and a page only beside the marked index: a user's own stripe_dispute.md used to be replaced, and a folder named
// stripe_dispute.json let the run start and fail at its end.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { foreignFiles } from '../../scenarios/out-folder.js';
import { RESULTS_MARKER } from '../../scenarios/report.js';
import { RESULTS_DIR, ScenarioUsageError } from '../../scenarios/run.js';
import { runCli, tempDir } from '../cli/run-cli.js';
import { oneCell } from './no-world-run.js';

const temp = tempDir('scenario-out-foreign');
afterAll(() => temp.remove());
const mine = '# My project\n\nNotes I wrote by hand.\n';

describe('scenario --out at a folder of the user', { timeout: 60_000 }, () => {
  it("refuses a folder holding the user's README.md and other files, writing nothing there", async () => {
    const dir = join(temp.dir, 'user');
    mkdirSync(dir);
    writeFileSync(join(dir, 'README.md'), mine);
    writeFileSync(join(dir, 'todo.txt'), 'buy milk\n');
    const opened = { count: 0 };
    const run = oneCell(dir, opened);
    await expect(run).rejects.toThrow(ScenarioUsageError);
    await expect(run).rejects.toThrow(`--out ${dir} holds files a scenario run did not write (README.md, todo.txt)`);
    expect(opened.count).toBe(0);
    expect(readFileSync(join(dir, 'README.md'), 'utf8')).toBe(mine);
    expect(readdirSync(dir).sort()).toEqual(['README.md', 'todo.txt']);
  });

  it('takes a new folder, then the same folder again (its index carries the marker), and refuses it once the user adds a file', async () => {
    const dir = join(temp.dir, 'runs');
    const opened = { count: 0 };
    const first = await oneCell(dir, opened);
    expect(first.files.map((file) => file.slice(dir.length + 1)).sort()).toEqual(['README.md', 'stripe_dispute.json', 'stripe_dispute.md']);
    expect(readFileSync(join(dir, 'README.md'), 'utf8').split('\n')).toContain(RESULTS_MARKER);
    expect(foreignFiles(dir)).toBeNull();
    await oneCell(dir, opened);
    expect(opened.count).toBe(2);
    writeFileSync(join(dir, 'notes.md'), 'mine\n');
    await expect(oneCell(dir, opened)).rejects.toThrow('holds files a scenario run did not write (notes.md)');
    expect(opened.count).toBe(2);
  });

  it('takes the committed results folder (its index carries the marker)', () => {
    expect(foreignFiles(RESULTS_DIR)).toBeNull();
  });

  it('exits 2 for a run and for a render into such a folder, saying why, its README.md left as it was', async () => {
    const dir = join(temp.dir, 'cli');
    mkdirSync(dir);
    writeFileSync(join(dir, 'README.md'), mine);
    const args = ['--out', dir];
    const run = await runCli(['scenario', 'stripe-dispute', '--delays', 'fast', '--rows', 'crash_after_send_chargeback_during_outage', '--columns', 'no_check', ...args], { REDIS_URL: undefined, STRIPE_SECRET_KEY: undefined }, { timeoutMs: 40_000 });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(`--out ${dir} holds files a scenario run did not write (README.md)`);
    expect(run.stderr).not.toMatch(/\d+\/\d+ cells/);
    // A render reads the JSON files there and writes the index over README.md too.
    writeFileSync(join(dir, 'stripe_dispute.json'), readFileSync(join(RESULTS_DIR, 'stripe_dispute.json')));
    const render = await runCli(['scenario', 'render', ...args]);
    expect(render.code, render.stderr).toBe(2);
    expect(render.stderr).toContain('render writes its index as README.md there');
    expect(readFileSync(join(dir, 'README.md'), 'utf8')).toBe(mine);
    expect(existsSync(join(dir, 'stripe_dispute.md'))).toBe(false);
  });

  it("refuses a page of a run's name with no marked index beside it (the user's own notes), and a folder of a JSON file's name", async () => {
    const notes = join(temp.dir, 'notes');
    mkdirSync(notes);
    const mine = '# Stripe dispute dp_123\n\nMy notes from the call with the bank.\n';
    writeFileSync(join(notes, 'stripe_dispute.md'), mine);
    const opened = { count: 0 };
    await expect(oneCell(notes, opened)).rejects.toThrow(`--out ${notes} holds files a scenario run did not write (stripe_dispute.md)`);
    expect(readFileSync(join(notes, 'stripe_dispute.md'), 'utf8')).toBe(mine);
    const sub = join(temp.dir, 'sub');
    mkdirSync(join(sub, 'stripe_dispute.json'), { recursive: true });
    writeFileSync(join(sub, 'stripe_dispute.json', 'keep.txt'), 'mine\n');
    await expect(oneCell(sub, opened)).rejects.toThrow(`--out ${sub} holds files a scenario run did not write (stripe_dispute.json)`);
    expect(opened.count).toBe(0);
    // Beside a marked index the page is a run's; the JSON files alone (a render's input) are a run's too.
    const run = join(temp.dir, 'run-pages');
    await oneCell(run);
    expect(foreignFiles(run)).toBeNull();
    rmSync(join(run, 'README.md'));
    expect(foreignFiles(run)).toEqual(['stripe_dispute.md']);
    rmSync(join(run, 'stripe_dispute.md'));
    expect(foreignFiles(run)).toBeNull();
  });
});
