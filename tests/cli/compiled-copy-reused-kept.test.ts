// Rule (bin/compiled.js markUsed, removeStale): a copy started again is in use, however long ago it was made: the
// cleanup that removes copies nobody is likely to run any more (older than an hour, beyond the newest three) keeps it,
// so a command running from it still finds the chunks it loads late (the scenarios' report after a run). A copy made
// two hours ago and started again, then three other states of the sources starting, leaves it in place.
import { existsSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { compiledEntry, readSources } from '../../bin/compiled.js';
import { smallCheckout } from './compiled-support.js';

const temps: { remove(): void }[] = [];
afterEach(() => {
  for (const made of temps.splice(0)) made.remove();
});

describe('a compiled copy made long ago and started again', () => {
  it('is kept while three other states of the sources make their copies', async () => {
    const { root, cache } = smallCheckout('reused-kept', temps);
    const first = await compiledEntry(root, 'src/main.ts', cache);
    expect(first).toBeDefined();
    const copy = join(cache, readSources(root, 'src/main.ts').name);
    const longAgo = new Date(Date.now() - 2 * 60 * 60 * 1000);
    utimesSync(copy, longAgo, longAgo);
    // Started again now: it is in use from here on.
    expect(await compiledEntry(root, 'src/main.ts', cache)).toBe(first);
    expect(statSync(copy).mtimeMs).toBeGreaterThan(longAgo.getTime());
    for (const word of ['second', 'third', 'fourth']) {
      writeFileSync(join(root, 'src', 'lib', 'word.ts'), `export const word: string = '${word}';\n`);
      expect(await compiledEntry(root, 'src/main.ts', cache)).toBeDefined();
    }
    expect(existsSync(copy)).toBe(true);
  });
});
