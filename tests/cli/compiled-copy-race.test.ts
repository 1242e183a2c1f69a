// Rule: a compiled copy named for a state of the sources holds exactly that state, also when a file is saved while
// processes start (no mock here: real processes, a real file flipping between two contents as an editor or a
// `git checkout` back and forth would). Afterwards, with the file at either content, the CLI must run that content.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterEach, expect, it } from 'vitest';
import { compiledEntry } from '../../bin/compiled.js';
import { REPO, runNode, smallCheckout } from './compiled-support.js';

const temps: { remove(): void }[] = [];
afterEach(() => {
  for (const t of temps.splice(0)) t.remove();
});

it('processes starting while a file flips between two contents leave no copy that runs the other content', async () => {
  const { root, cache } = smallCheckout('race', temps);
  const word = join(root, 'src', 'lib', 'word.ts');
  const A = "export const word: string = 'first';\n";
  const B = "export const word: string = 'other';\n"; // same size
  const flipper = spawn(process.execPath, ['-e', `const fs=require('fs');let i=0;setInterval(()=>fs.writeFileSync(${JSON.stringify(word)}, i++%2?${JSON.stringify(A)}:${JSON.stringify(B)}),1);`]);
  const starter = join(root, '..', 'start.mjs');
  writeFileSync(starter, `import { compiledEntry } from ${JSON.stringify(pathToFileURL(join(REPO, 'bin', 'compiled.js')).href)};\nawait compiledEntry(${JSON.stringify(root)}, 'src/main.ts', ${JSON.stringify(cache)});\n`);
  try {
    for (let round = 0; round < 6; round += 1) await Promise.all(Array.from({ length: 8 }, () => runNode([starter])));
  } finally {
    flipper.kill();
  }
  await new Promise((resolve) => setTimeout(resolve, 50));
  const runs: Record<string, string> = {};
  for (const [content, expected] of [[A, 'first'], [B, 'other']] as const) {
    writeFileSync(word, content);
    const entry = await compiledEntry(root, 'src/main.ts', cache);
    const run = await runNode([fileURLToPath(entry ?? '')]);
    runs[expected] = run.code === 0 ? JSON.parse(run.stdout).word : `exit ${run.code}: ${run.stderr.split('\n').find((line) => line.includes('Error')) ?? run.stderr}`;
  }
  expect(runs).toEqual({ first: 'first', other: 'other' });
});
