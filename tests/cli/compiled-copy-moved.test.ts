// Rule: the compiled copy writes each module's own source URL into it (import.meta.url), so a copy is only ever run by
// the checkout it was made from: a checkout moved or copied with its cache (cp -r, a restored backup, a container
// layer) makes a copy of its own, whose modules find the files beside them in the new place, not in the old one.
import { cpSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterEach, expect, it } from 'vitest';
import { compiledEntry } from '../../bin/compiled.js';
import { runNode, smallCheckout } from './compiled-support.js';

const temps: { remove(): void }[] = [];
afterEach(() => {
  for (const t of temps.splice(0)) t.remove();
});

it('a checkout copied elsewhere with its cache runs a copy whose import.meta.url is in the new place', async () => {
  const { root } = smallCheckout('moved', temps);
  const cacheOf = (checkout: string) => join(checkout, 'node_modules', '.cache', 'interlock');
  expect(await compiledEntry(root, 'src/main.ts', cacheOf(root))).toBeDefined();
  const moved = `${root}-moved`; // beside it, in the same temp directory
  cpSync(root, moved, { recursive: true });
  const entry = await compiledEntry(moved, 'src/main.ts', cacheOf(moved));
  const run = await runNode([fileURLToPath(entry ?? '')]);
  expect(JSON.parse(run.stdout)).toEqual({ word: 'first', url: pathToFileURL(join(moved, 'src', 'main.ts')).href });
});
