// The scenario tables in the project's README are a copy of the committed results index (scenarios/results/README.md),
// made by `interlock scenario readme` (scenarios/report.ts, copyTablesToReadme): the README never shows figures of a
// run other than the one whose pages and JSON are committed, and the copy touches nothing outside its markers.
// Rule: the committed gap probe's exposure is what its receipt's facts give under today's rule (a chargeback returns
// money twice only where it overlaps the refunds on its charge, read with the dispute), and the README's account of it
// names that figure: results recorded before the rule (the refund and the chargeback counted whole) fail here.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cellFailed, type ScenarioResult } from '../../scenarios/cells.js';
import { README_MARKERS, copyTablesToReadme, readmeTables } from '../../scenarios/report.js';
import { publicKeySet, verify } from '../../src/interlock.js';

const ROOT = new URL('../..', import.meta.url).pathname;
const temp = mkdtempSync(join(tmpdir(), 'interlock-readme-tables-'));
afterAll(() => rmSync(temp, { recursive: true, force: true }));

function between(text: string): string {
  const start = text.indexOf(README_MARKERS.start);
  const end = text.indexOf(README_MARKERS.end);
  return text.slice(text.indexOf('\n', start) + 1, end);
}

describe("the README's scenario tables", () => {
  it('are the committed results index, as readmeTables writes it', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const index = readFileSync(join(ROOT, 'scenarios/results/README.md'), 'utf8');
    expect(between(readme)).toBe(readmeTables(index));
  });

  it('point their links into scenarios/results and sit two heading levels down', () => {
    const index = ['# Scenario results', '', 'intro', '', '- [a: one](a.md) ([JSON](a.json)): sandbox', '', '## a', '', '| x |', ''].join('\n');
    expect(readmeTables(index)).toBe(['- [a: one](scenarios/results/a.md) ([JSON](scenarios/results/a.json)): sandbox', '', '#### a', '', '| x |', ''].join('\n'));
  });

  it('are replaced between the markers only, and a README without them is refused untouched', () => {
    const index = ['# Scenario results', '', 'intro', '', '- [b: two](b.md) ([JSON](b.json)): sandbox', '', '## b', ''].join('\n');
    const readme = join(temp, 'README.md');
    const before = `# Project\n\ntext before\n${README_MARKERS.start}\n- stale table\n${README_MARKERS.end}\n\ntext after\n`;
    writeFileSync(readme, before);
    const dir = mkdtempSync(join(temp, 'out-'));
    writeFileSync(join(dir, 'README.md'), index);
    expect(copyTablesToReadme(dir, readme)).toBe(true);
    const after = readFileSync(readme, 'utf8');
    expect(after).toBe(`# Project\n\ntext before\n${README_MARKERS.start}\n${readmeTables(index)}${README_MARKERS.end}\n\ntext after\n`);
    expect(copyTablesToReadme(dir, readme)).toBe(false);
    const unmarked = '# Project\n\nno tables here\n';
    writeFileSync(readme, unmarked);
    expect(() => copyTablesToReadme(dir, readme)).toThrow(/no place for the scenario tables/);
    expect(readFileSync(readme, 'utf8')).toBe(unmarked);
  });
});

describe("the committed gap probe's exposure", () => {
  const results = JSON.parse(readFileSync(join(ROOT, 'scenarios/results/stripe_dispute.json'), 'utf8')) as ScenarioResult & { public_key: string };
  const gate = results.cells.filter((cell) => cell.row.startsWith('gap_probe') && cell.column === 'interlock' && !cellFailed(cell));
  const keys = publicKeySet([results.public_key]);
  const dollars = (cents: number) => `$${(cents / 100).toFixed(0)}`;

  it("is what each receipt's facts give today: the chargeback weighed against the charge it read", () => {
    expect(gate.length).toBeGreaterThan(0);
    for (const cell of gate) {
      const today = verify(cell.receipt, { publicKeys: keys }).exposure;
      // A dispute fact that carried no charge (a receipt recorded before facts did) is counted whole with the refund.
      expect(today?.chargeCents, `${cell.row} #${cell.rep}: its dispute facts carry the charge`).toEqual(expect.any(Number));
      expect(cell.exposure, `${cell.row} #${cell.rep}: the stored exposure`).toEqual(today);
    }
  });

  it("is the figure the README's account of the run gives", () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    for (const cell of gate) {
      const exposure = cell.exposure as { cents: number; chargeCents: number | null };
      for (const figure of [`the ${dollars(exposure.cents)} returned twice`, `out on ${dollars(exposure.chargeCents ?? Number.NaN)}`]) expect(readme.includes(figure), `README.md names "${figure}" (${cell.row} #${cell.rep})`).toBe(true);
    }
  });
});
