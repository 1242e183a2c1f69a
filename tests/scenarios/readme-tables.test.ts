// The scenario tables in the project's README are a copy of the committed results index (scenarios/results/README.md),
// made by `interlock scenario readme` (scenarios/report.ts, copyTablesToReadme): the README never shows figures of a
// run other than the one whose pages and JSON are committed, and the copy touches nothing outside its markers.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { README_MARKERS, copyTablesToReadme, readmeTables } from '../../scenarios/report.js';

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
