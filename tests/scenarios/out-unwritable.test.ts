// An --out that cannot be written (a typo naming a file, a folder of another user's such as the image's
// scenarios/results) is refused before any Redis, world or cell starts, as every other usage error is. It used to be
// found only after the whole run (some ten minutes for `scenario all --delays stripe`), discarding every result of it.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ScenarioUsageError } from '../../scenarios/run.js';
import { runCli, tempDir } from '../cli/run-cli.js';
import { oneCell } from './no-world-run.js';

const temp = tempDir('scenario-out-unwritable');
const file = join(temp.dir, 'results');
writeFileSync(file, 'a file, not a folder\n');
const out = join(file, 'run');
afterAll(() => temp.remove());

describe('scenario --out that cannot be written', { timeout: 60_000 }, () => {
  it('is refused as a usage error before any world opens', async () => {
    const opened = { count: 0 };
    const run = oneCell(out, opened);
    await expect(run).rejects.toThrow(ScenarioUsageError);
    await expect(run).rejects.toThrow(`--out ${out} cannot be written`);
    expect(opened.count).toBe(0);
  });

  it('exits 2 at once, saying so, with no cell run', async () => {
    const run = await runCli(['scenario', 'stripe-dispute', '--delays', 'fast', '--rows', 'crash_after_send_chargeback_during_outage', '--columns', 'no_check', '--out', out], { REDIS_URL: undefined, STRIPE_SECRET_KEY: undefined }, { timeoutMs: 40_000 });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(`--out ${out} cannot be written`);
    expect(run.stderr).toContain('nothing was run');
    expect(run.stderr).not.toMatch(/\d+\/\d+ cells/);
  });
});
