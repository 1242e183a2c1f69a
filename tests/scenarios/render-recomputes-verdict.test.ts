// Rule: scenarios/README.md "Output": each receipt in <scenario>.json is re-verified from the file, and a receipt that
// does not verify is one of the gate's problems (verdict.ts: "its receipt did not verify from the results file").
// `scenario render` re-verifies the JSON and re-renders; the JSON it leaves must not keep saying `gate_problems: []`
// (the list a script reads) once one of its receipts no longer verifies, while the page it just wrote lists the problem.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { renderFromJson } from '../../scenarios/report.js';
import { runScenarios } from '../../scenarios/run.js';
import { inTempDir } from '../cli/run-cli.js';
import { REDIS_URL } from '../support/harness.js';

describe('scenario render after a receipt in the JSON was altered', { timeout: 180_000 }, () => {
  it("updates the JSON's gate_problems as it does the page", async () => {
    await inTempDir('scenario-render-reverify', async (out) => {
      await runScenarios({ scenarios: ['shared-cap'], reps: 1, delays: 'fast', out, rows: ['after_commit'], columns: ['interlock'], env: { REDIS_URL, INTERLOCK_UNSAFE_DURABILITY: '1' } });
      const file = join(out, 'shared_cap.json');
      const json = JSON.parse(readFileSync(file, 'utf8')) as { gate_problems: string[]; cells: { receipts: Record<string, { receipt: { entries: Record<string, unknown>[] } }> }[] };
      expect(json.gate_problems).toEqual([]);
      // Alter one receipt's settling entry (a forged result), as a reader of the file might find it.
      const receipt = Object.values(json.cells[0]?.receipts ?? {})[0]?.receipt;
      const entry = receipt?.entries.find((e) => e.kind === 'COMMITTED' || e.kind === 'REFUSED');
      if (entry === undefined) throw new Error('no settling entry');
      entry.via = 'forged';
      writeFileSync(file, JSON.stringify(json, null, 2));
      renderFromJson(out);
      const page = readFileSync(join(out, 'shared_cap.md'), 'utf8');
      expect(page).toContain('did not verify from the results file');
      const after = JSON.parse(readFileSync(file, 'utf8')) as { gate_problems: string[]; cells: { receipt_reverified_from_results?: boolean }[] };
      expect(after.cells[0]?.receipt_reverified_from_results).toBe(false);
      expect(after.gate_problems).toEqual([expect.stringContaining('did not verify from the results file')]);
    });
  });
});
