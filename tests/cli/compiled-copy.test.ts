// Rule: bin/interlock.js runs a compiled copy of the sources only while it matches them. The copy is made once per
// state of the sources (an edited, added or removed file makes a new one; an unchanged tree reuses it), it behaves as
// the sources do (imports, each file's own import.meta.url, stack traces naming the .ts file), processes starting at
// once share one copy and never read half of one, and when no copy can be made the caller is told to run the sources.
// The copies here are of a small program of this test's own, in a cache directory of its own: the suite's copy of
// the real sources (node_modules/.cache/interlock) is in use by every other test and is never touched.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { compiledEntry, readSources, SOURCE_FOLDERS, sourceFiles } from '../../bin/compiled.js';
import { REPO, runCli, tempDir } from './run-cli.js';
import { modulesLoadedBy } from './compiled-support.js';

const temps: { remove(): void }[] = [];
afterEach(() => {
  for (const temp of temps.splice(0)) temp.remove();
});

/** A program of three files under `root`/src, its main printing what it imported, read and was given as its URL. */
function program(): { root: string; cache: string } {
  const temp = tempDir('compiled');
  temps.push(temp);
  const root = join(temp.dir, 'checkout');
  mkdirSync(join(root, 'src', 'lib'), { recursive: true });
  writeFileSync(join(root, 'package.json'), '{ "type": "module" }\n');
  writeFileSync(join(root, 'tsconfig.json'), '{ "compilerOptions": { "target": "ES2022", "verbatimModuleSyntax": true } }\n');
  writeFileSync(join(root, 'src', 'lib', 'data.txt'), 'beside the source\n');
  writeFileSync(join(root, 'src', 'lib', 'word.ts'), "export type Word = string;\nexport const word: Word = 'first';\nexport const wordUrl = import.meta.url;\n");
  writeFileSync(
    join(root, 'src', 'main.ts'),
    [
      "import { readFileSync } from 'node:fs';",
      "import { word, wordUrl, type Word } from './lib/word.js';",
      'const shown: Word = word;',
      "const data = readFileSync(new URL('./lib/data.txt', import.meta.url), 'utf8').trim();",
      'console.log(JSON.stringify({ word: shown, data, url: import.meta.url, wordUrl }));',
      "if (process.argv[2] === 'throw') throw new Error('thrown on purpose');",
      '',
    ].join('\n'),
  );
  return { root, cache: join(temp.dir, 'cache') };
}

function runNode(args: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, args, { timeout: 30_000 }, (error, stdout, stderr) => resolve({ code: error === null ? 0 : Number(error.code ?? -1), stdout, stderr }));
  });
}

const copies = (cache: string) => readdirSync(cache).sort();

describe('the compiled copy of a program', () => {
  it('runs as its sources do: imports resolve, types are erased, and each module\'s import.meta.url is its own source file, so a file beside it is found', async () => {
    const { root, cache } = program();
    const entry = await compiledEntry(root, 'src/main.ts', cache);
    expect(entry).toBeDefined();
    expect(fileURLToPath(entry ?? '').startsWith(cache)).toBe(true);
    const run = await runNode([fileURLToPath(entry ?? '')]);
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout)).toEqual({
      word: 'first',
      data: 'beside the source',
      url: pathToFileURL(join(root, 'src', 'main.ts')).href,
      wordUrl: pathToFileURL(join(root, 'src', 'lib', 'word.ts')).href,
    });
  });

  it('a stack trace names the TypeScript file and its line, not the copy', async () => {
    const { root, cache } = program();
    const entry = fileURLToPath((await compiledEntry(root, 'src/main.ts', cache)) ?? '');
    const run = await runNode(['--enable-source-maps', entry, 'throw']);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain('thrown on purpose');
    expect(run.stderr).toContain(`${join(root, 'src', 'main.ts')}:6`);
    expect(run.stderr).not.toContain(cache);
  });

  it('is made once: a second start on the same sources reuses it', async () => {
    const { root, cache } = program();
    const first = await compiledEntry(root, 'src/main.ts', cache);
    const made = statSync(fileURLToPath(first ?? '')).mtimeMs;
    const second = await compiledEntry(root, 'src/main.ts', cache);
    expect(second).toBe(first);
    expect(statSync(fileURLToPath(second ?? '')).mtimeMs).toBe(made);
    expect(copies(cache)).toHaveLength(1);
  });

  it('an edited file makes a new copy that runs the edit, even one of the same size and modification time; an added or a removed file does too', async () => {
    const { root, cache } = program();
    const first = await compiledEntry(root, 'src/main.ts', cache);
    const word = join(root, 'src', 'lib', 'word.ts');
    writeFileSync(word, "export type Word = string;\nexport const word: Word = 'second';\nexport const wordUrl = '';\n");
    const edited = await compiledEntry(root, 'src/main.ts', cache);
    expect(edited).not.toBe(first);
    expect(JSON.parse((await runNode([fileURLToPath(edited ?? '')])).stdout).word).toBe('second');

    // The same size and the same modification time as the file it replaces (a tool that restores times, a clock
    // too coarse to tell two edits apart): still a new copy.
    const before = statSync(word);
    writeFileSync(word, "export type Word = string;\nexport const word: Word = 'thirds';\nexport const wordUrl = '';\n");
    utimesSync(word, before.atime, before.mtime);
    expect(statSync(word).size).toBe(before.size);
    const sameSize = await compiledEntry(root, 'src/main.ts', cache);
    expect(sameSize).not.toBe(edited);
    expect(JSON.parse((await runNode([fileURLToPath(sameSize ?? '')])).stdout).word).toBe('thirds');
    writeFileSync(word, "export type Word = string;\nexport const word: Word = 'second';\nexport const wordUrl = '';\n");

    const added = join(root, 'src', 'lib', 'unused.ts');
    writeFileSync(added, 'export const unused = 1;\n');
    const withAdded = await compiledEntry(root, 'src/main.ts', cache);
    expect(withAdded).not.toBe(edited);
    rmSync(added);
    const withRemoved = await compiledEntry(root, 'src/main.ts', cache);
    expect(withRemoved).toBe(edited);
    expect(copies(cache)).toHaveLength(4);
  });

  it('a test file is not part of the program: adding one makes no new copy', async () => {
    const { root, cache } = program();
    const first = await compiledEntry(root, 'src/main.ts', cache);
    writeFileSync(join(root, 'src', 'lib', 'word.test.ts'), "import { word } from './word.js';\nexport const seen = word;\n");
    expect(sourceFiles(root).some((file) => file.endsWith('.test.ts'))).toBe(false);
    expect(await compiledEntry(root, 'src/main.ts', cache)).toBe(first);
  });

  it('sources that do not compile give no copy (the caller runs them through tsx, which names the error) and leave no half-made one', async () => {
    const { root, cache } = program();
    writeFileSync(join(root, 'src', 'lib', 'word.ts'), 'export const word = ;\n');
    expect(await compiledEntry(root, 'src/main.ts', cache)).toBeUndefined();
    expect(existsSync(cache) ? copies(cache) : []).toEqual([]);
  });

  it('a cache directory that cannot be made gives no copy, not a failure', async () => {
    const { root } = program();
    const file = join(root, 'not-a-directory');
    writeFileSync(file, 'a file where the cache would be\n');
    expect(await compiledEntry(root, 'src/main.ts', join(file, 'cache'))).toBeUndefined();
  });

  it('processes starting at once on new sources all run one complete copy, and no half-made one is left', async () => {
    const { root, cache } = program();
    // Many files, so a process that read a copy still being written would find one missing: each part is imported
    // lazily, so each is a file of the copy.
    const parts = Array.from({ length: 80 }, (_, index) => `part${index}`);
    for (const part of parts) writeFileSync(join(root, 'src', 'lib', `${part}.ts`), `export const ${part}: number = ${part.length};\n`);
    writeFileSync(join(root, 'src', 'parts.ts'), `export const total = (await Promise.all([${parts.map((part) => `import('./lib/${part}.js').then((m) => m.${part})`).join(', ')}])).reduce((a, b) => a + b, 0);\n`);
    writeFileSync(join(root, 'src', 'main.ts'), `${readFileSync(join(root, 'src', 'main.ts'), 'utf8')}const { total } = await import('./parts.js');\nconsole.log(total);\n`);
    const starter = join(root, '..', 'start.mjs');
    writeFileSync(
      starter,
      `import { compiledEntry } from ${JSON.stringify(pathToFileURL(join(REPO, 'bin', 'compiled.js')).href)};\n` +
        `const entry = await compiledEntry(${JSON.stringify(root)}, 'src/main.ts', ${JSON.stringify(cache)});\n` +
        "if (entry === undefined) process.exit(3);\nconsole.log(entry);\nawait import(entry);\n",
    );
    const runs = await Promise.all(Array.from({ length: 8 }, () => runNode([starter])));
    for (const run of runs) expect(run).toMatchObject({ code: 0, stderr: '' });
    const entries = new Set(runs.map((run) => run.stdout.split('\n')[0]));
    expect(entries.size).toBe(1);
    for (const run of runs) expect(JSON.parse(run.stdout.split('\n')[1] ?? '')).toMatchObject({ word: 'first' });
    for (const run of runs) expect(run.stdout.split('\n')[2]).toBe(String(parts.reduce((sum, part) => sum + part.length, 0)));
    expect(copies(cache)).toEqual([readSources(root, 'src/main.ts').name]);
    expect(readdirSync(join(cache, readSources(root, 'src/main.ts').name, 'chunks')).length).toBeGreaterThanOrEqual(parts.length);
  });

  it('old copies are removed when a new one is made, beyond the newest three; an abandoned half-made copy older than an hour too', async () => {
    const { root, cache } = program();
    mkdirSync(cache, { recursive: true });
    const hoursAgo = (hours: number) => new Date(Date.now() - hours * 3_600_000);
    const old = ['old-a', 'old-b', 'old-c', 'old-d'];
    old.forEach((name, index) => {
      mkdirSync(join(cache, name));
      utimesSync(join(cache, name), hoursAgo(2 + index), hoursAgo(2 + index));
    });
    mkdirSync(join(cache, 'building-1-1'));
    utimesSync(join(cache, 'building-1-1'), hoursAgo(2), hoursAgo(2));
    mkdirSync(join(cache, 'building-2-2'));
    const made = await compiledEntry(root, 'src/main.ts', cache);
    expect(made).toBeDefined();
    // The new copy and the two newest old ones stay; a build started minutes ago may still be running.
    expect(copies(cache)).toEqual(['building-2-2', 'old-a', 'old-b', readSources(root, 'src/main.ts').name].sort());
  });
});


describe('bin/interlock.js', () => {
  it('the program has no module its copy would miss: no .js, .mjs, .cjs, .mts or .json file in the source folders (beside tests and scenario results) and no symbolic link', () => {
    const missed: string[] = [];
    const walk = (dir: string) => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, entry.name);
        if (entry.isSymbolicLink()) missed.push(`${path} (a symbolic link)`);
        else if (entry.isDirectory()) {
          if (!['node_modules', 'tests'].includes(entry.name) && path !== join(REPO, 'scenarios', 'results')) walk(path);
        } else if (/\.(?:js|mjs|cjs|mts|cts|json)$/.test(entry.name)) missed.push(path);
      }
    };
    for (const folder of SOURCE_FOLDERS) walk(join(REPO, folder));
    expect(missed).toEqual([]);
  });


  const copyOf = (path: string) => pathToFileURL(join(REPO, 'node_modules', '.cache', 'interlock', readSources(REPO, 'src/main.ts').name, path)).href;

  it('runs the real program from its compiled copy: the copy\'s main module loads and no TypeScript file does', () => {
    const { loaded, stdout } = modulesLoadedBy(['--version'], temps);
    expect(stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
    expect(loaded).toContain(copyOf('src/main.js'));
    expect(loaded.filter((url) => url.endsWith('.ts'))).toEqual([]);
  });

  it('INTERLOCK_CODE_CACHE=0 runs the sources through tsx, with the same answer', () => {
    const fromSources = modulesLoadedBy(['--version'], temps, { INTERLOCK_CODE_CACHE: '0' });
    expect(fromSources.loaded).toContain(pathToFileURL(join(REPO, 'src', 'main.ts')).href);
    expect(fromSources.loaded.some((url) => url.includes('/node_modules/.cache/interlock/'))).toBe(false);
    expect(fromSources.stdout).toBe(modulesLoadedBy(['--version'], temps).stdout);
  });

  it('a command answers the same from the copy and from the sources', async () => {
    const fromCopy = await runCli(['approvals', 'describe', 'ap_compiled_copy'], { REDIS_URL: 'redis://127.0.0.1:1' });
    const fromSources = await runCli(['approvals', 'describe', 'ap_compiled_copy'], { REDIS_URL: 'redis://127.0.0.1:1', INTERLOCK_CODE_CACHE: '0' });
    expect(fromCopy.code).toBe(2);
    expect(fromCopy.stderr).toContain('Cannot reach Redis');
    expect(fromSources).toEqual(fromCopy);
  });

  it('a value of INTERLOCK_CODE_CACHE that is no flag is named, exit 2', async () => {
    const run = await runCli(['approvals', 'describe', 'ap_compiled_copy'], { INTERLOCK_CODE_CACHE: 'sometimes' });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('INTERLOCK_CODE_CACHE');
  });
});
