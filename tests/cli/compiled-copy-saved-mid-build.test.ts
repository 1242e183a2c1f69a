// Rule: a compiled copy named for a state of the sources holds exactly that state. Each file is read once, and the
// bytes hashed for the copy's name are the bytes compiled: a file saved during a build (an editor, a git checkout, a
// test writing sources while another process starts) cannot put state B's code under state A's name, which every
// later start on state A (after a revert, a checkout back, an undo) would run for good.
import type * as Esbuild from 'esbuild';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, expect, it, vi } from 'vitest';
import { runNode, smallCheckout } from './compiled-support.js';

const temps: { remove(): void }[] = [];
afterEach(() => {
  for (const t of temps.splice(0)) t.remove();
  vi.doUnmock('esbuild');
  vi.resetModules();
});

it('a file saved while a copy is being made never leaves a copy that runs other code than the sources it is named for', async () => {
  const { root, cache } = smallCheckout('label', temps);
  const word = join(root, 'src', 'lib', 'word.ts');
  const stateA = readFileSync(word, 'utf8');
  const stateB = "export const word: string = 'second';\n";

  // The save lands in the window between the fingerprint and the compile: here, while esbuild is being loaded.
  vi.doMock('esbuild', async () => {
    writeFileSync(word, stateB);
    return await vi.importActual('esbuild');
  });
  const { compiledEntry } = await import('../../bin/compiled.js');
  await compiledEntry(root, 'src/main.ts', cache);

  // Sources back to state A (a revert, a `git checkout` back): the CLI must run state A.
  writeFileSync(word, stateA);
  const entry = await compiledEntry(root, 'src/main.ts', cache);
  expect(entry).toBeDefined();
  const run = await runNode([fileURLToPath(entry ?? '')]);
  expect(JSON.parse(run.stdout).word).toBe('first');
});

it('a save caught half-way (the entry file empty for an instant, as an in-place write truncates first) never makes every later start exit 0 having done nothing', async () => {
  const { root, cache } = smallCheckout('label-empty', temps);
  const main = join(root, 'src', 'main.ts');
  const stateA = readFileSync(main, 'utf8');

  vi.doMock('esbuild', async () => {
    writeFileSync(main, ''); // the editor has truncated the file and not yet written it
    const actual = await vi.importActual<typeof Esbuild>('esbuild');
    return {
      ...actual,
      transform: async (code: string, options: Esbuild.TransformOptions) => {
        const result = await actual.transform(code, options); // every file has been read by now
        writeFileSync(main, stateA); // the save completes: the sources are state A again
        return result;
      },
    };
  });
  const { compiledEntry } = await import('../../bin/compiled.js');
  await compiledEntry(root, 'src/main.ts', cache);
  expect(readFileSync(main, 'utf8')).toBe(stateA);

  const entry = await compiledEntry(root, 'src/main.ts', cache);
  const run = await runNode([fileURLToPath(entry ?? '')]);
  expect(run.stdout).not.toBe('');
  expect(JSON.parse(run.stdout).word).toBe('first');
});
