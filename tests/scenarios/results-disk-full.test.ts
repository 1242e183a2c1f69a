// Rule: a results file in --out (a scenario's JSON, its page, the index) is written whole or not at all. A disk that
// fills up while it is written leaves the previous file byte for byte, no temporary file beside it, and an error naming
// the file and saying it keeps its previous results. The JSON used to be truncated and half rewritten in place (the
// previous results gone, every later run failing to parse it for the index), with only `ENOSPC: no space left on
// device, write` said, naming no file.
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { copyTablesToReadme, README_MARKERS, writeWhole } from '../../scenarios/report.js';
import { REPO, tempDir } from '../cli/run-cli.js';

const temp = tempDir('scenario-results-disk-full');
afterAll(() => temp.remove());

/** A full disk, as a writer sees it: half of what it writes lands, then the write fails. */
function fullDisk(fd: number, bytes: Uint8Array, offset: number): number {
  writeSync(fd, bytes, offset, Math.floor((bytes.byteLength - offset) / 2));
  throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', syscall: 'write' });
}

describe('scenario results on a disk that fills up', () => {
  it('keep the previous shared_cap.json whole, and the error names it', () => {
    const json = join(temp.dir, 'shared_cap.json');
    copyFileSync(join(REPO, 'scenarios/results/shared_cap.json'), json);
    const before = readFileSync(json);
    const text = `${JSON.stringify({ ...(JSON.parse(before.toString('utf8')) as object), generated: 'a later run' }, null, 2)}\n`;
    expect(() => writeWhole(json, text, fullDisk)).toThrow(`Could not write ${json} (ENOSPC: no space left on device, write): it keeps its previous results.`);
    expect(readFileSync(json).equals(before)).toBe(true);
    expect(readdirSync(temp.dir)).toEqual(['shared_cap.json']);
  });

  // Rule: so is the README the tables are copied into (`interlock scenario readme`): it was rewritten in place, and a
  // full disk left the project's README cut short.
  it("keep the project's README whole when the tables are copied into it", () => {
    const readme = join(temp.dir, 'README.md');
    const out = join(temp.dir, 'out');
    mkdirSync(out);
    writeFileSync(join(out, 'README.md'), '# Scenario results\n\nintro\n\n- [a: one](a.md) ([JSON](a.json)): sandbox\n\n## a\n');
    const before = `# Project\n\n${'text before\n'.repeat(200)}${README_MARKERS.start}\n- stale table\n${README_MARKERS.end}\n\ntext after\n`;
    writeFileSync(readme, before);
    expect(() => copyTablesToReadme(out, readme, fullDisk)).toThrow(`Could not write ${readme} (ENOSPC: no space left on device, write): it keeps its previous results.`);
    expect(readFileSync(readme, 'utf8')).toBe(before);
    expect(readdirSync(temp.dir).sort()).toEqual(['README.md', 'out', 'shared_cap.json']);
    rmSync(out, { recursive: true });
    rmSync(readme);
  });

  it('leave no page where there was none', () => {
    const md = join(temp.dir, 'billing_credit.md');
    expect(() => writeWhole(md, '# Billing credit\n', fullDisk)).toThrow(`Could not write ${md} (ENOSPC: no space left on device, write): it was not created.`);
    expect(existsSync(md)).toBe(false);
    expect(readdirSync(temp.dir)).toEqual(['shared_cap.json']);
  });
});
