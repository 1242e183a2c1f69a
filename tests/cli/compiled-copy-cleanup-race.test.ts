// Rule: a copy that was made and renamed into place is used, whatever happens to the others while they are cleaned
// up: an entry another process removes between the listing and the look at it (a concurrent start's `building-…`
// folder, gone once its rename lost) does not send this start through tsx.
import type * as FileSystem from 'node:fs';
import { join } from 'node:path';
import { afterEach, expect, it, vi } from 'vitest';
import { smallCheckout } from './compiled-support.js';

const temps: { remove(): void }[] = [];
afterEach(() => {
  for (const t of temps.splice(0)) t.remove();
  vi.doUnmock('node:fs');
  vi.resetModules();
});

it('an entry of the cache removed by another process during the cleanup does not cost this start its copy', async () => {
  const { root, cache } = smallCheckout('cleanup', temps);
  vi.doMock('node:fs', async () => {
    const fs = await vi.importActual<typeof FileSystem>('node:fs');
    const readdirSync = ((path: string, options?: unknown) => {
      const entries = fs.readdirSync(path, options as never) as unknown[];
      // Another process's build folder, listed here, removed by that process before it is stat'ed.
      if (path === cache && options !== undefined) {
        fs.mkdirSync(join(cache, 'building-999999-1'));
        const listed = fs.readdirSync(path, options as never);
        fs.rmSync(join(cache, 'building-999999-1'), { recursive: true });
        return listed;
      }
      return entries;
    }) as typeof fs.readdirSync;
    return { ...fs, default: { ...fs, readdirSync }, readdirSync };
  });
  const { compiledEntry } = await import('../../bin/compiled.js');
  expect(await compiledEntry(root, 'src/main.ts', cache)).toBeDefined();
});
