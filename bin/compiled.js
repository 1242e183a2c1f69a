// A compiled copy of the program's TypeScript, so a command starts without tsx's loader. Through the loader (a hook
// thread that resolves every import and hands back its cached transform) a command such as `interlock approvals
// describe` took ≈ 0.9 s and ≈ 1.3 s of CPU here; from compiled JavaScript ≈ 0.5 s and ≈ 0.65 s.
//
// The copy lives in node_modules/.cache/interlock/<fingerprint>/, one folder per state of the sources: the fingerprint
// hashes every source file's path and content, the compile options, esbuild's version, this file and the Node.js
// version, so an edited, added or removed file makes a new copy at the next start. Each file is read once: the bytes
// hashed are the bytes compiled, so a file saved during a build cannot put one state's code under another's name.
// A copy is written to a folder of its own, flushed to disk, and renamed into place, so processes starting at once
// never read half of one (the first rename wins; the others use it); its manifest lists every file with its size,
// and a copy that no longer matches it (a file truncated or removed since) is set aside and made again. Each file
// keeps its own `import.meta.url` (defined at compile time as the source file's URL): the Lua scripts, the scenario
// results and the repository root are found where they are in a checkout. When no copy can be made (a read-only
// install, esbuild missing, a file that does not compile) the caller runs the sources through tsx, as before.
//
// Only .ts files are compiled: a module of another kind (.js, .json) or a folder reached through a symbolic link in
// the source folders would be missing from the copy (tests/cli/compiled-copy.test.ts checks there is none).
import { createHash } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The folders whose TypeScript the program imports (src/main.ts reaches all of them). */
export const SOURCE_FOLDERS = ['src', 'queues', 'webhooks', 'sandbox', 'scenarios'];

/** Raised when the compile options below change (this file's own text is hashed too). */
const FORMAT = 2;

/** Output that lives in a source folder and is no source: the scenario runs' pages and JSON. */
const NOT_SOURCES = [join('scenarios', 'results')];

/** Copies older than this, beyond the newest few, are removed when a new one is made. */
const STALE_MS = 60 * 60 * 1000;
const KEEP_NEWEST = 3;

const MANIFEST = 'manifest.json';

/** Every TypeScript file of the program under `root` (tests excluded: nothing the program runs imports one), sorted. */
export function sourceFiles(root) {
  const skipped = new Set(NOT_SOURCES.map((path) => join(root, path)));
  const files = [];
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (entry.name !== 'node_modules' && !skipped.has(path)) walk(path);
      } else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') && !entry.name.endsWith('.d.ts')) {
        files.push(path);
      }
    }
  };
  for (const folder of SOURCE_FOLDERS) if (existsSync(join(root, folder))) walk(join(root, folder));
  return files.sort();
}

/** What makes the same sources compile differently: this file, esbuild's version, Node's. */
function toolchain() {
  const esbuild = JSON.parse(readFileSync(createRequire(import.meta.url).resolve('esbuild/package.json'), 'utf8')).version;
  return `format ${FORMAT}\nnode ${process.versions.node}\nesbuild ${esbuild}\n${readFileSync(fileURLToPath(import.meta.url), 'utf8')}\n`;
}

/**
 * The sources as they are now, each file read once: `contents` (path → bytes) is what is compiled, and `name` hashes
 * exactly those bytes (about 2 MB, 10-20 ms), not sizes and modification times, which a same-size edit within one
 * clock tick, or a tool that restores times (rsync -t, tar, cp -p), would leave unchanged.
 */
export function readSources(root) {
  const files = sourceFiles(root);
  const contents = new Map(files.map((file) => [file, readFileSync(file)]));
  const tsconfig = existsSync(join(root, 'tsconfig.json')) ? readFileSync(join(root, 'tsconfig.json')) : null;
  const hash = createHash('sha256').update(toolchain());
  for (const [file, content] of [...contents, [join(root, 'tsconfig.json'), tsconfig]]) {
    hash.update(`${relative(root, file)}\0${content?.length ?? -1}\0`);
    if (content !== null) hash.update(content);
  }
  return { name: hash.digest('hex').slice(0, 24), contents, tsconfig };
}

/** The compiler options tsx would give esbuild: those of tsconfig.json that change how a file is emitted. */
function tsconfigRaw(tsconfig) {
  try {
    return tsconfig === null ? undefined : { compilerOptions: JSON.parse(tsconfig.toString('utf8')).compilerOptions ?? {} };
  } catch {
    return undefined;
  }
}

/** Writes `data` to `path` and flushes it, so a rename after it never leaves an empty file behind a power cut. */
function writeDurably(path, data) {
  const fd = openSync(path, 'w');
  try {
    writeFileSync(fd, data);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Compiles `sources` (readSources) into `outDir`, which must exist: each file to the same path with .js, its
 * import.meta.url its source's URL, then a manifest of every file and its size. Every file is compiled before any
 * is written, so a file that does not compile leaves nothing behind.
 */
export async function compileInto(root, sources, outDir) {
  const { transform } = await import('esbuild');
  const raw = tsconfigRaw(sources.tsconfig);
  const compiled = await Promise.all(
    [...sources.contents].map(async ([file, content]) => {
      const url = pathToFileURL(file).href;
      const { code } = await transform(content.toString('utf8'), {
        loader: 'ts',
        format: 'esm',
        platform: 'node',
        target: `node${process.versions.node}`,
        sourcemap: 'inline',
        sourcesContent: false,
        sourcefile: url,
        define: { 'import.meta.url': JSON.stringify(url) },
        ...(raw === undefined ? {} : { tsconfigRaw: raw }),
      });
      return { path: relative(root, file).replace(/\.ts$/, '.js'), code: Buffer.from(code, 'utf8') };
    }),
  );
  for (const { path, code } of compiled) {
    mkdirSync(dirname(join(outDir, path)), { recursive: true });
    writeDurably(join(outDir, path), code);
  }
  // Inside node_modules, Node looks for no package.json above the copy, so it must say its files are modules.
  writeDurably(join(outDir, 'package.json'), '{ "type": "module" }\n');
  writeDurably(join(outDir, MANIFEST), `${JSON.stringify(Object.fromEntries(compiled.map(({ path, code }) => [path, code.length])))}\n`);
}

/** Whether `copy` holds every file its manifest lists, each of the size it was written with. */
export function copyIntact(copy) {
  try {
    const manifest = JSON.parse(readFileSync(join(copy, MANIFEST), 'utf8'));
    return Object.entries(manifest).every(([path, size]) => statSync(join(copy, path), { throwIfNoEntry: false })?.size === size);
  } catch {
    return false;
  }
}

/** Moves `dir` out of the way (atomically: no process ever reads it half-removed), then removes it. */
function discard(cacheDir, dir) {
  const trash = join(cacheDir, `trash-${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`);
  try {
    renameSync(dir, trash);
  } catch {
    return; // another process moved it first, or it is gone
  }
  rmSync(trash, { recursive: true, force: true });
}

/** Removes copies nobody is likely to run any more: beyond the newest few, older than an hour (and abandoned builds). */
function removeStale(cacheDir, keep) {
  const now = Date.now();
  const entries = [];
  for (const entry of readdirSync(cacheDir, { withFileTypes: true })) {
    if (!entry.isDirectory() || entry.name === keep) continue;
    // Another process may remove one between the listing and this look at it.
    const stat = statSync(join(cacheDir, entry.name), { throwIfNoEntry: false });
    if (stat !== undefined) entries.push({ path: join(cacheDir, entry.name), name: entry.name, mtime: stat.mtimeMs });
  }
  entries.sort((a, b) => b.mtime - a.mtime);
  let copies = 1;
  for (const entry of entries) {
    const unfinished = entry.name.startsWith('building-') || entry.name.startsWith('trash-');
    if (!unfinished) copies += 1;
    if (now - entry.mtime > STALE_MS && (unfinished || copies > KEEP_NEWEST)) {
      try {
        if (entry.name.startsWith('trash-')) rmSync(entry.path, { recursive: true, force: true });
        else discard(cacheDir, entry.path);
      } catch {
        // Another user's copy, or gone already: left for whoever can remove it.
      }
    }
  }
}

/**
 * The file URL of `entry` (a path under `root`, such as src/main.ts) in a compiled copy of the sources as they are
 * now, compiling one into `cacheDir` first if none matches or the one that matches is damaged; undefined when none
 * could be made.
 */
export async function compiledEntry(root, entry, cacheDir = join(root, 'node_modules', '.cache', 'interlock')) {
  try {
    const sources = readSources(root);
    const copy = join(cacheDir, sources.name);
    const target = join(copy, entry.replace(/\.ts$/, '.js'));
    if (copyIntact(copy) && existsSync(target)) return pathToFileURL(target).href;
    // The folder is made before anything is compiled, so a cache nobody may write costs no compile.
    const building = join(cacheDir, `building-${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`);
    mkdirSync(building, { recursive: true });
    try {
      await compileInto(root, sources, building);
      if (existsSync(copy) && !copyIntact(copy)) discard(cacheDir, copy);
      try {
        renameSync(building, copy);
      } catch (error) {
        // Another process renamed its copy of the same sources first: use that one.
        if (!copyIntact(copy)) throw error;
      }
    } finally {
      rmSync(building, { recursive: true, force: true });
    }
    try {
      removeStale(cacheDir, sources.name);
    } catch {
      // Cleaning up is a courtesy: the copy just made is ready whatever happened to the others.
    }
    return existsSync(target) ? pathToFileURL(target).href : undefined;
  } catch {
    return undefined;
  }
}

/** Whether INTERLOCK_CODE_CACHE (a flag, on unless 0, false or no) lets commands run from a compiled copy. */
export function codeCacheOn(env) {
  const value = (env.INTERLOCK_CODE_CACHE ?? '').trim().toLowerCase();
  return !['0', 'false', 'no'].includes(value);
}
