// Rule: the compiled copy is one bundle of the program (src/main.js and its chunks), with the packages bin/compiled.js
// inlines bundled in: a command starts without Node resolving, loading and linking each of the program's modules and
// each of those packages' files. A bundled package file still behaves as it does in node_modules (its own
// `__dirname`, `__filename` and `import.meta.url`, a working `require`), and a change to it (a hand edit, an npm
// install of another version) makes a new copy, as an edited source does.
import { mkdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { compiledEntry, INLINED, readSources } from '../../bin/compiled.js';
import { modulesLoadedBy, REPO, runNode, smallCheckout } from './compiled-support.js';

const temps: { remove(): void }[] = [];
afterEach(() => {
  for (const t of temps.splice(0)) t.remove();
});


describe('the copy of the real program', () => {
  it('starts from the bundle: every module of the copy it loads is its entry or a chunk, and no file of an inlined package is loaded from node_modules', () => {
    const copy = pathToFileURL(join(REPO, 'node_modules', '.cache', 'interlock', readSources(REPO, 'src/main.ts').name)).href;
    const { loaded } = modulesLoadedBy(['approvals', 'describe', '--help'], temps, { INTERLOCK_LOG_LEVEL: 'silent' });
    const ofCopy = loaded.filter((url) => url.startsWith(`${copy}/`)).map((url) => url.slice(copy.length + 1));
    expect(ofCopy).toContain('src/main.js');
    expect(ofCopy.filter((path) => path !== 'src/main.js' && !path.startsWith('chunks/'))).toEqual([]);
    const inlinedFromNodeModules = loaded.filter((url) => INLINED.some((name) => url.includes(`/node_modules/${name}/`)));
    expect(inlinedFromNodeModules).toEqual([]);
    // The outer layers stay out of a command that does not run them.
    expect(loaded.filter((url) => url.includes('/node_modules/express/') || url.includes('/node_modules/bullmq/'))).toEqual([]);
  });
});

/**
 * A small program whose main imports `canonicalize` (one of INLINED), here a package of this test's own in the
 * checkout's node_modules: CommonJS that reads a file beside it through __dirname and reports its own names.
 */
function withPackage(label: string): { root: string; cache: string; index: string; lock: string } {
  expect(INLINED).toContain('canonicalize');
  const { root } = smallCheckout(label, temps);
  const dir = join(root, 'node_modules', 'canonicalize');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), '{ "name": "canonicalize", "version": "1.0.0", "main": "index.js" }\n');
  writeFileSync(join(dir, 'beside.txt'), 'read beside the package\n');
  const index = join(dir, 'index.js');
  writeFileSync(
    index,
    "const { readFileSync } = require('node:fs');\nconst { join } = require('node:path');\nmodule.exports = { said: 'one', beside: readFileSync(join(__dirname, 'beside.txt'), 'utf8').trim(), dirname: __dirname, filename: __filename };\n",
  );
  const lock = join(root, 'node_modules', '.package-lock.json');
  writeFileSync(lock, '{ "packages": { "node_modules/canonicalize": { "version": "1.0.0" } } }\n');
  writeFileSync(join(root, 'src', 'main.ts'), "import found from 'canonicalize';\nconsole.log(JSON.stringify(found));\n");
  // Inside the checkout, as the real copy is, so the sources' copy (run without bundling) finds the package too.
  return { root, cache: join(root, 'node_modules', '.cache', 'interlock'), index, lock };
}

async function run(root: string, cache: string): Promise<Record<string, string>> {
  const entry = await compiledEntry(root, 'src/main.ts', cache);
  expect(entry).toBeDefined();
  const ran = await runNode([fileURLToPath(entry ?? '')]);
  expect(ran.stderr).toBe('');
  return JSON.parse(ran.stdout) as Record<string, string>;
}

describe('a package bundled into the copy', () => {
  it('keeps its own __dirname and __filename and can require: a file beside it in node_modules is found', async () => {
    const { root, cache, index } = withPackage('inlined-dirname');
    expect(await run(root, cache)).toEqual({ said: 'one', beside: 'read beside the package', dirname: join(root, 'node_modules', 'canonicalize'), filename: index });
  });

  it('a hand edit of its file makes a new copy that runs the edit', async () => {
    const { root, cache, index } = withPackage('inlined-edit');
    expect((await run(root, cache)).said).toBe('one');
    writeFileSync(index, readFileSync(index, 'utf8').replace("said: 'one'", "said: 'edited'"));
    expect((await run(root, cache)).said).toBe('edited');
  });

  it('another version installed (same size, the fixed modification time npm gives what it unpacks) makes a new copy too', async () => {
    const { root, cache, index, lock } = withPackage('inlined-install');
    const unpacked = new Date('1985-10-26T08:15:00Z');
    utimesSync(index, unpacked, unpacked);
    expect((await run(root, cache)).said).toBe('one');
    writeFileSync(index, readFileSync(index, 'utf8').replace("said: 'one'", "said: 'two'"));
    utimesSync(index, unpacked, unpacked);
    writeFileSync(lock, '{ "packages": { "node_modules/canonicalize": { "version": "2.0.0" } } }\n');
    expect((await run(root, cache)).said).toBe('two');
  });
});
