// A scenario none of whose cells ran (a test-mode run on a machine that cannot reach Stripe, a world that did not
// open) keeps the results its folder had: a run used to replace the committed scenarios/results, and with them what
// the README's tables were copied from, by a page of failed cells. The run still says so and exits 1 for the failures.
// In a folder with no results of that scenario yet, the failed cells are written, so what went wrong can be read.
import { cpSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { failedCell, type ScenarioResult } from '../../scenarios/cells.js';
import { writeResults } from '../../scenarios/report.js';
import { runScenarios } from '../../scenarios/run.js';
import { runFailures } from '../../scenarios/verdict.js';
import { REPO, tempDir } from '../cli/run-cli.js';
import { REDIS_URL } from '../support/harness.js';

const temp = tempDir('failed-run-keeps-results');
afterAll(() => temp.remove());

const WHY = 'Could not reach Stripe at https://api.stripe.com: POST /payment_intents got no answer (ENOTFOUND).';
const FILES = ['stripe_dispute.json', 'stripe_dispute.md', 'README.md'];

function failedRun(): ScenarioResult {
  const cells = ['crash_before_send_chargeback_during_outage', 'crash_after_send_chargeback_during_outage'].flatMap((row) => (['no_check', 'interlock'] as const).map((column) => failedCell({ row, column, rep: 1 }, WHY)));
  return { scenario: 'stripe_dispute', generated: new Date(0).toISOString(), model: 'rules', backend: 'test_mode', delays: 'stripe', reps: 1, cells };
}

/** A copy of the committed results, as a whole run finds them. */
function committedCopy(name: string): { dir: string; before: Record<string, string> } {
  const dir = join(temp.dir, name);
  cpSync(join(REPO, 'scenarios/results'), dir, { recursive: true });
  return { dir, before: Object.fromEntries(FILES.map((file) => [file, readFileSync(join(dir, file), 'utf8')])) };
}

const read = (dir: string) => Object.fromEntries(FILES.map((file) => [file, readFileSync(join(dir, file), 'utf8')]));

let stderr: string;
beforeEach(() => {
  stderr = '';
  vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stderr += String(chunk);
    return true;
  });
});
afterEach(() => vi.restoreAllMocks());

describe('a scenario none of whose cells ran', () => {
  it('leaves the results, page and index the folder had, and says so', () => {
    const { dir, before } = committedCopy('unit');
    expect(writeResults(dir, [failedRun()])).toEqual([]);
    expect(read(dir)).toEqual(before);
    expect(stderr).toContain(`stripe_dispute: none of its 4 cells ran, so ${join(dir, 'stripe_dispute.json')} and its page keep the results they had`);
  });

  it('is written to a folder that has no results of it, so its failures can be read there', () => {
    const dir = join(temp.dir, 'fresh');
    mkdirSync(dir);
    expect(writeResults(dir, [failedRun()]).map((file) => file.slice(dir.length + 1))).toEqual(FILES);
    expect(readFileSync(join(dir, 'stripe_dispute.md'), 'utf8')).toContain('## Cells that failed to run');
  });

  it('replaces nothing when a whole test-mode run cannot reach Stripe, and the run still lists its failures', { timeout: 180_000 }, async () => {
    const { dir, before } = committedCopy('run');
    const { results } = await runScenarios({
      scenarios: ['stripe-dispute'],
      reps: null,
      delays: 'stripe',
      out: dir,
      env: { REDIS_URL, STRIPE_SECRET_KEY: 'sk_test_unreachable0', STRIPE_API_BASE: 'http://127.0.0.1:9', INTERLOCK_UNSAFE_DURABILITY: '1' },
    });
    const cells = results[0]?.cells ?? [];
    expect(cells.length).toBeGreaterThan(0);
    expect(cells.every((cell) => cell.outcome === 'CELL_FAILED')).toBe(true);
    expect(read(dir)).toEqual(before);
    expect(runFailures(results)).toHaveLength(cells.length);
  });
});

describe('a scenario some of whose cells ran', () => {
  it('replaces the results it had', () => {
    const { dir, before } = committedCopy('partial');
    const result = failedRun();
    const [first, ...rest] = result.cells;
    if (first === undefined) throw new Error('no cell');
    const ran = { ...first, outcome: 'STRIPE_ERROR', error: undefined, held: true };
    writeResults(dir, [{ ...result, cells: [ran, ...rest] }]);
    expect(readFileSync(join(dir, 'stripe_dispute.json'), 'utf8')).not.toBe(before['stripe_dispute.json']);
    expect(existsSync(join(dir, 'stripe_dispute.md'))).toBe(true);
  });
});
