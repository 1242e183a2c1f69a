// A compiled copy of the program's TypeScript, so a command starts without tsx's loader. Through the loader (a hook
// thread that resolves every import and hands back its cached transform) a command such as `interlock approvals
// describe` took ≈ 0.9 s and ≈ 1.3 s of CPU here; from compiled JavaScript ≈ 0.5 s and ≈ 0.65 s.
//
// The copy lives in node_modules/.cache/interlock/<fingerprint>/, one folder per state of the sources: the fingerprint
// hashes every source file's path and content, the compile options and the Node.js version, so an edited, added or
// removed file makes a new copy at the next start. A copy is written to a folder of its own and
// renamed into place, so processes starting at once never read half of one (the first rename wins; the others use
// it). Each file keeps its own `import.meta.url` (defined at compile time as the source file's URL): the Lua scripts,
// the scenario results and the repository root are found where they are in a checkout. When no copy can be made (a
// read-only install, esbuild missing) the caller runs the sources through tsx, as before.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';

/** The folders whose TypeScript the program imports (src/main.ts reaches all of them). */
export const SOURCE_FOLDERS = ['src', 'queues', 'webhooks', 'sandbox', 'scenarios'];

/** Raised when the compile options below change, so an older copy is never taken for a current one. */
const FORMAT = 1;

/** Copies older than this, beyond the newest few, are removed when a new one is made. */
const STALE_MS = 60 * 60 * 1000;
const KEEP_NEWEST = 3;

/** Every TypeScript file of the program under `root` (tests excluded: nothing the program runs imports one), sorted. */
export function sourceFiles(root) {
  const files = [];
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (entry.name !== 'node_modules' && entry.name !== 'results') walk(path);
      } else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') && !entry.name.endsWith('.d.ts')) {
        files.push(path);
      }
    }
  };
  for (const folder of SOURCE_FOLDERS) if (existsSync(join(root, folder))) walk(join(root, folder));
  return files.sort();
}

/**
 * The name of the copy that matches the sources as they are now: a hash of every file's path and content (about 2 MB,
 * 10-20 ms), not of sizes and modification times, which a same-size edit within a coarse clock tick, or a tool that
 * restores times (rsync -t, tar, cp -p), would leave unchanged.
 */
export function fingerprint(root, files) {
  const hash = createHash('sha256').update(`format ${FORMAT}\nnode ${process.versions.node}\n`);
  for (const file of [...files, join(root, 'tsconfig.json')]) {
    const content = existsSync(file) ? readFileSync(file) : undefined;
    hash.update(`${relative(root, file)}\0${content?.length ?? -1}\0`);
    if (content !== undefined) hash.update(content);
  }
  return hash.digest('hex').slice(0, 24);
}

/** The compiler options tsx would give esbuild: those of tsconfig.json that change how a file is emitted. */
function tsconfigRaw(root) {
  try {
    const { compilerOptions = {} } = JSON.parse(readFileSync(join(root, 'tsconfig.json'), 'utf8'));
    return { compilerOptions };
  } catch {
    return undefined;
  }
}

/** Compiles `files` into `outDir` (created), each to the same path with .js, its import.meta.url its source's URL. */
export async function compileInto(root, files, outDir) {
  const { transform } = await import('esbuild');
  const raw = tsconfigRaw(root);
  await Promise.all(files.map(async (file) => {
    const url = pathToFileURL(file).href;
    const { code } = await transform(readFileSync(file, 'utf8'), {
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
    const out = join(outDir, relative(root, file).replace(/\.ts$/, '.js'));
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, code);
  }));
  // Inside node_modules, Node looks for no package.json above the copy, so it must say its files are modules.
  writeFileSync(join(outDir, 'package.json'), '{ "type": "module" }\n');
}

/** Removes copies nobody is likely to run any more: beyond the newest few, older than an hour (and abandoned builds). */
function removeStale(cacheDir, keep) {
  const now = Date.now();
  const entries = readdirSync(cacheDir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && entry.name !== keep)
    .map((entry) => ({ path: join(cacheDir, entry.name), building: entry.name.startsWith('building-'), mtime: statSync(join(cacheDir, entry.name)).mtimeMs }))
    .sort((a, b) => b.mtime - a.mtime);
  let copies = 1;
  for (const entry of entries) {
    if (!entry.building) copies += 1;
    if (now - entry.mtime > STALE_MS && (entry.building || copies > KEEP_NEWEST)) rmSync(entry.path, { recursive: true, force: true });
  }
}

/**
 * The file URL of `entry` (a path under `root`, such as src/main.ts) in a compiled copy of the sources as they are
 * now, compiling one into `cacheDir` first if none matches; undefined when none could be made.
 */
export async function compiledEntry(root, entry, cacheDir = join(root, 'node_modules', '.cache', 'interlock')) {
  try {
    const files = sourceFiles(root);
    const name = fingerprint(root, files);
    const copy = join(cacheDir, name);
    const target = join(copy, entry.replace(/\.ts$/, '.js'));
    if (!existsSync(target)) {
      mkdirSync(cacheDir, { recursive: true });
      const building = join(cacheDir, `building-${process.pid}-${Date.now()}`);
      try {
        await compileInto(root, files, building);
        try {
          renameSync(building, copy);
        } catch (error) {
          // Another process renamed its copy of the same sources first: use that one.
          if (!existsSync(target)) throw error;
        }
      } finally {
        rmSync(building, { recursive: true, force: true });
      }
      removeStale(cacheDir, name);
    }
    return pathToFileURL(target).href;
  } catch {
    return undefined;
  }
}

/** Whether INTERLOCK_CODE_CACHE (a flag, on unless 0, false or no) lets commands run from a compiled copy. */
export function codeCacheOn(env) {
  const value = (env.INTERLOCK_CODE_CACHE ?? '').trim().toLowerCase();
  return !['0', 'false', 'no'].includes(value);
}
