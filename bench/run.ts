// Runs every benchmark in this folder (files named *.bench.ts), one process each, in name order.
import { readdirSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';

const here = dirname(fileURLToPath(import.meta.url));
const tsxCli = createRequire(import.meta.url).resolve('tsx/cli');
const only = process.argv[2];
const files = readdirSync(here)
  .filter((name) => name.endsWith('.bench.ts'))
  .filter((name) => only === undefined || name.includes(only))
  .sort();

let failed = 0;
for (const file of files) {
  console.log(`\n== ${file}`);
  const run = spawnSync(process.execPath, [tsxCli, join(here, file)], { stdio: 'inherit' });
  if (run.status !== 0) failed += 1;
}
console.log(`\n${files.length - failed} benchmarks met their targets, ${failed} did not`);
process.exit(failed === 0 ? 0 : 1);
