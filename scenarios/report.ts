import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ScenarioResult } from './cells.js';

export function writeResults(out: string, results: ScenarioResult[]): string[] {
  return results.map((result) => {
    const file = join(out, `${result.scenario}.json`);
    writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
    return file;
  });
}
