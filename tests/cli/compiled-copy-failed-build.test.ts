// Rule: a start that cannot make a copy leaves no half-made one behind: every file is compiled before any is
// written, so a file that does not compile among many leaves no `building-…` folder (transforms still in flight when
// the first failed once wrote into a folder already removed, and it stayed for an hour).
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { compiledEntry } from '../../bin/compiled.js';
import { smallCheckout } from './compiled-support.js';

const temps: { remove(): void }[] = [];
afterEach(() => {
  for (const t of temps.splice(0)) t.remove();
});

it('a file that does not compile among many leaves no building folder behind', async () => {
  const { root, cache } = smallCheckout('leftover', temps);
  mkdirSync(join(root, 'src', 'many'));
  for (let i = 0; i < 400; i += 1) writeFileSync(join(root, 'src', 'many', `m${i}.ts`), `export const m${i}: string = ${JSON.stringify('x'.repeat(20_000))};\n`);
  writeFileSync(join(root, 'src', 'aaa-broken.ts'), 'export const broken = ;\n');
  // All of them in the program: the entry imports each.
  const imports = [...Array.from({ length: 400 }, (_, i) => `./many/m${i}.js`), './aaa-broken.js'].map((path) => `import ${JSON.stringify(path)};`);
  writeFileSync(join(root, 'src', 'main.ts'), `${imports.join('\n')}\n${readFileSync(join(root, 'src', 'main.ts'), 'utf8')}`);
  expect(await compiledEntry(root, 'src/main.ts', cache)).toBeUndefined();
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  expect(existsSync(cache) ? readdirSync(cache) : []).toEqual([]);
});
