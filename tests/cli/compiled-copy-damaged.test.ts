// Rule: the CLI runs the sources as they are, or, when no copy can be used, through tsx. A copy damaged after it was
// made (a file truncated by a crash before the page cache reached the disk, a cleaner, a partial restore of
// node_modules) no longer matches its manifest: it is set aside and made again, never taken as current, which would
// make every later start crash (or exit 0 having done nothing) until someone deleted the cache by hand.
import { readdirSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadedAtStart, repoCopy, runNode, temp } from './compiled-support.js';

let t: { dir: string; remove(): void };
let root: string;
beforeAll(() => {
  t = temp('damaged');
  root = join(t.dir, 'checkout');
  repoCopy(root);
});
afterAll(() => t.remove());

const copyDir = () => {
  const cache = join(root, 'node_modules', '.cache', 'interlock');
  const [name] = readdirSync(cache);
  return join(cache, name ?? '');
};

it('a file of the copy truncated to nothing: the next start still answers (rebuilds or runs the sources)', async () => {
  const first = await runNode([join(root, 'bin', 'interlock.js'), '--version'], { cwd: root });
  expect(first).toMatchObject({ code: 0, stdout: '0.1.0\n' });
  truncateSync(join(copyDir(), loadedAtStart(copyDir())[0] ?? ''), 0);
  const second = await runNode([join(root, 'bin', 'interlock.js'), '--version'], { cwd: root });
  expect(second.stderr).toBe('');
  expect(second).toMatchObject({ code: 0, stdout: '0.1.0\n' });
});

it('a file of the copy gone: the next start still answers', async () => {
  rmSync(join(root, 'node_modules', '.cache'), { recursive: true, force: true });
  const first = await runNode([join(root, 'bin', 'interlock.js'), '--version'], { cwd: root });
  expect(first).toMatchObject({ code: 0, stdout: '0.1.0\n' });
  rmSync(join(copyDir(), loadedAtStart(copyDir()).at(-1) ?? ''));
  const second = await runNode([join(root, 'bin', 'interlock.js'), '--version'], { cwd: root });
  expect(second.stderr).toBe('');
  expect(second).toMatchObject({ code: 0, stdout: '0.1.0\n' });
});

it('the copy\'s entry file truncated to nothing: `receipt verify` of a forged receipt does not exit 0 with no output', async () => {
  rmSync(join(root, 'node_modules', '.cache'), { recursive: true, force: true });
  const first = await runNode([join(root, 'bin', 'interlock.js'), '--version'], { cwd: root });
  expect(first).toMatchObject({ code: 0, stdout: '0.1.0\n' });
  truncateSync(join(copyDir(), 'src', 'main.js'), 0);
  const forged = join(t.dir, 'forged.json');
  writeFileSync(forged, '{"receipt":"forged"}\n');
  const run = await runNode([join(root, 'bin', 'interlock.js'), 'receipt', 'verify', forged], { cwd: root });
  // From the sources: the forged receipt is refused (a non-zero exit, saying why).
  expect({ code: run.code === 0 ? 0 : 'non-zero', said: run.stdout + run.stderr !== '' }).toEqual({ code: 'non-zero', said: true });
});
