// A compiled copy of the program's TypeScript, so a command starts without tsx's loader. Through the loader (a hook
// thread that resolves every import and hands back its cached transform) a command such as `interlock approvals
// describe` took ≈ 0.9 s and ≈ 1.3 s of CPU here; from one compiled .js file per source ≈ 0.7 s of CPU, most of it
// Node's module loader resolving, loading and linking ≈ 110 project modules and ≈ 95 of zod's. From the bundle below,
// user + system CPU per start, medians of 15 runs each, the two shapes in turn on the same sources (2 cores, shared):
// `approvals describe --help` 0.67 s → 0.43 s, `keys public` 0.71 s → 0.45 s, `approvals describe ap_x` against
// Redis 0.70 s → 0.49 s; peak memory ≈ 97 MiB instead of ≈ 86.
//
// The copy is one esbuild bundle of the entry (src/main.ts) with what it imports: the entry's file at the same path
// with .js, and chunks/ holding the modules it loads lazily (the outer layers, the sandbox, the scenarios: each
// `import()` stays a chunk of its own, loaded only by the commands that need it) and the code they share. The
// packages in INLINED are bundled in with the project's modules (pure JavaScript that nothing outside the copy loads:
// BullMQ is handed the program's ioredis clients and never loads its own); every other package is imported from
// node_modules as before (those that read files beside their code, such as BullMQ's Lua scripts, bull-board's pages
// or pino's workers, the lazily required Stripe SDK, express).
//
// The copy lives in node_modules/.cache/interlock/<fingerprint>/, one folder per state of the sources: the fingerprint
// hashes the checkout's path, the entry, every source file's path and content, tsconfig.json,
// node_modules/.package-lock.json (which npm rewrites at every install: a new version of an inlined package), the
// compile options, esbuild's version, this file and the Node.js version, so an edited, added or removed file makes a
// new copy at the next start. Each file is read once: the bytes hashed are the bytes compiled (the bundler is handed
// them, it reads no source file itself, and a module outside the source folders and node_modules fails the build), so a
// file saved during a build cannot put one state's code under another's name. A copy is written to a folder of its own,
// flushed to disk, and renamed into place, so processes starting at once never read half of one (the first rename wins;
// the others use it); its manifest lists every file with its size, and every file of an inlined package with its size
// and modification time (a hand edit in node_modules makes a new copy too), and a copy that no longer matches it (a
// file truncated or removed since) is set aside and made again. Each module keeps its own `import.meta.url` (defined at
// compile time as the source file's URL, before the modules are bundled; an inlined package's `__dirname` and
// `__filename` likewise): the Lua scripts, the scenario results, the repository root and the verifying threads' module
// (src/cli/verify-pool.ts, loaded through tsx in each thread) are found where they are in a checkout. Each file carries
// an inline source map back to the TypeScript (and the inlined packages' files), so a stack trace names the .ts file
// and line. When no copy can be made (a read-only install, esbuild missing, a file that does not compile) the caller
// runs the sources through tsx, as before.
//
// Only .ts files are compiled: a module of another kind (.js, .json) in the source folders fails the build (the
// caller then runs the sources), and tests/cli/compiled-copy.test.ts checks there is none.
import { createHash } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The folders whose TypeScript the program imports (src/main.ts reaches all of them). */
export const SOURCE_FOLDERS = ['src', 'queues', 'webhooks', 'sandbox', 'scenarios'];

/** Raised when the compile options below change (this file's own text is hashed too). */
const FORMAT = 3;

/**
 * The packages bundled into the copy, with the modules they import. Chosen by measuring: each is many small modules
 * (zod's ≈ 95 ES modules, ioredis's and commander's CommonJS files) that every command loads, and none is loaded by
 * another package outside the copy, which would then run a second instance of it.
 */
export const INLINED = ['zod', 'commander', 'ioredis', 'canonicalize'];

/** Output that lives in a source folder and is no source: the scenario runs' pages and JSON. */
const NOT_SOURCES = [join('scenarios', 'results')];

/** Copies not started for longer than this (markUsed), beyond the newest few, are removed when a new one is made. */
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
 * The sources of `entry` (a path under `root`, such as src/main.ts) as they are now, each file read once: `contents`
 * (path → bytes) is what is compiled, and `name` hashes exactly those bytes (about 2 MB, 10-20 ms), not sizes and
 * modification times, which a same-size edit within one clock tick, or a tool that restores times (rsync -t, tar,
 * cp -p), would leave unchanged.
 */
export function readSources(root, entry) {
  const files = sourceFiles(root);
  const contents = new Map(files.map((file) => [file, readFileSync(file)]));
  const tsconfig = existsSync(join(root, 'tsconfig.json')) ? readFileSync(join(root, 'tsconfig.json')) : null;
  const installed = join(root, 'node_modules', '.package-lock.json');
  // The checkout's own path too: each module's URL is written into the copy, so a checkout moved with its cache
  // makes a copy of its own.
  const hash = createHash('sha256').update(`${toolchain()}root ${root}\nentry ${entry}\n`);
  for (const [file, content] of [...contents, [join(root, 'tsconfig.json'), tsconfig], [installed, existsSync(installed) ? readFileSync(installed) : null]]) {
    hash.update(`${relative(root, file)}\0${content?.length ?? -1}\0`);
    if (content !== null) hash.update(content);
  }
  return { name: hash.digest('hex').slice(0, 24), entry, contents, tsconfig };
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

/** The package an import names: `zod` of `zod/v4`, `@scope/name` of `@scope/name/sub`. */
function packageOf(specifier) {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/** Whether `path` is a file of an installed package. */
function inNodeModules(path) {
  return path.split(sep).includes('node_modules');
}

/**
 * Inlined CommonJS has no `require` of its own in an ES module: each file of the copy gets one (esbuild renames any of
 * the program's own bindings that would clash with it).
 */
const REQUIRE_BANNER = "import { createRequire as __interlockCreateRequire } from 'node:module'; const require = __interlockCreateRequire(import.meta.url);";

/**
 * Compiles `sources` (readSources) into `outDir`, which must exist: the entry to the same path with .js, the modules
 * it loads lazily and the code they share under chunks/, each module's import.meta.url its source's URL, then a
 * manifest of every file and its size and of every inlined package file with its size and modification time. The
 * whole copy is compiled before any file is written, so a file that does not compile leaves nothing behind.
 */
export async function compileInto(root, sources, outDir) {
  const { build, transform } = await import('esbuild');
  const raw = tsconfigRaw(sources.tsconfig);
  const target = `node${process.versions.node}`;
  // The bundler reports paths with symbolic links resolved; the sources are named by the paths under `root`.
  const realRoot = realpathSync(root);
  const sourceOf = (path) => {
    const inRoot = join(root, relative(realRoot, path));
    return sources.contents.has(path) ? path : sources.contents.has(inRoot) ? inRoot : undefined;
  };
  const program = {
    name: 'interlock-sources',
    setup(bundler) {
      // The program's imports of a package: bundled for the packages in INLINED, from node_modules for the others.
      // The inlined packages' own imports are bundled with them.
      bundler.onResolve({ filter: /^[^./]/ }, (args) => {
        if (args.kind === 'entry-point' || sourceOf(args.importer) === undefined) return undefined;
        return INLINED.includes(packageOf(args.path)) ? undefined : { path: args.path, external: true };
      });
      bundler.onLoad({ filter: /.*/ }, async (args) => {
        const source = sourceOf(args.path);
        if (source !== undefined) {
          // Compiled as the file alone, as before bundling: import.meta.url is defined where it is used as code.
          const url = pathToFileURL(source).href;
          const { code } = await transform(sources.contents.get(source).toString('utf8'), {
            loader: 'ts',
            format: 'esm',
            platform: 'node',
            target,
            sourcemap: 'inline',
            sourcesContent: false,
            sourcefile: source,
            define: { 'import.meta.url': JSON.stringify(url) },
            ...(raw === undefined ? {} : { tsconfigRaw: raw }),
          });
          return { contents: code, loader: 'js' };
        }
        if (!inNodeModules(args.path)) return { errors: [{ text: `${args.path} is imported but is none of the TypeScript sources the copy is named for` }] };
        if (!/\.[cm]?js$/.test(args.path)) return undefined;
        const text = readFileSync(args.path, 'utf8');
        if (!/__dirname|__filename|import\.meta\.url/.test(text)) return undefined;
        // An inlined package's file finds its neighbours where they are in node_modules, not beside the copy.
        const { code } = await transform(text, {
          loader: 'js',
          sourcefile: args.path,
          sourcemap: 'inline',
          sourcesContent: false,
          define: { __dirname: JSON.stringify(dirname(args.path)), __filename: JSON.stringify(args.path), 'import.meta.url': JSON.stringify(pathToFileURL(args.path).href) },
        });
        return { contents: code, loader: 'js' };
      });
    },
  };
  const result = await build({
    absWorkingDir: root,
    entryPoints: [join(root, sources.entry)],
    outdir: outDir,
    outbase: root,
    entryNames: '[dir]/[name]',
    chunkNames: 'chunks/[name]-[hash]',
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target,
    sourcemap: 'inline',
    sourcesContent: false,
    banner: { js: REQUIRE_BANNER },
    write: false,
    metafile: true,
    logLevel: 'silent',
    plugins: [program],
    ...(raw === undefined ? {} : { tsconfigRaw: raw }),
  });
  const files = result.outputFiles.map(({ path, contents }) => ({ path: relative(outDir, path), code: contents }));
  const inputs = {};
  for (const input of Object.keys(result.metafile.inputs)) {
    const path = isAbsolute(input) ? input : resolve(root, input);
    if (!inNodeModules(path)) continue;
    const stat = statSync(path);
    inputs[path] = [stat.size, stat.mtimeMs];
  }
  for (const { path, code } of files) {
    mkdirSync(dirname(join(outDir, path)), { recursive: true });
    writeDurably(join(outDir, path), code);
  }
  // Inside node_modules, Node looks for no package.json above the copy, so it must say its files are modules.
  writeDurably(join(outDir, 'package.json'), '{ "type": "module" }\n');
  writeDurably(join(outDir, MANIFEST), `${JSON.stringify({ files: Object.fromEntries(files.map(({ path, code }) => [path, code.length])), inputs })}\n`);
}

/**
 * Whether `copy` holds every file its manifest lists, each of the size it was written with, and every inlined package
 * file it was made from is as it was then.
 */
export function copyIntact(copy) {
  try {
    const { files, inputs } = JSON.parse(readFileSync(join(copy, MANIFEST), 'utf8'));
    return (
      Object.entries(files).every(([path, size]) => statSync(join(copy, path), { throwIfNoEntry: false })?.size === size) &&
      Object.entries(inputs).every(([path, [size, mtime]]) => {
        const stat = statSync(path, { throwIfNoEntry: false });
        return stat?.size === size && stat.mtimeMs === mtime;
      })
    );
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

/**
 * Marks a copy as used now (its folder's modification time, which removeStale judges age by): a copy made long ago and
 * started again is one a command may be running from, whose lazily loaded chunks (the scenarios' report after a run)
 * must still be there when it asks for them. A copy nobody may write keeps its time; only the cleanup reads it.
 */
function markUsed(copy) {
  try {
    const now = new Date();
    utimesSync(copy, now, now);
  } catch {
    // Another user's cache, or a read-only one: nothing this process makes there could remove it either.
  }
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
    const sources = readSources(root, entry);
    const copy = join(cacheDir, sources.name);
    const target = join(copy, entry.replace(/\.ts$/, '.js'));
    if (copyIntact(copy) && existsSync(target)) {
      markUsed(copy);
      return pathToFileURL(target).href;
    }
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
