// Helpers for the compiled-copy tests: a small program in a temp checkout, and a temp copy of the real
// repository whose node_modules is a folder of links to the real packages (so its cache is its own, never the shared one).
import { execFile, execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const REPO = fileURLToPath(new URL('../..', import.meta.url));

export function temp(label: string): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), `interlock-compiled-${label}-`));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A temp directory holding a small program (`root`, smallProgram) and a cache directory for it; pushed on `temps`. */
export function smallCheckout(label: string, temps: { remove(): void }[]): { root: string; cache: string } {
  const made = temp(label);
  temps.push(made);
  const root = join(made.dir, 'checkout');
  smallProgram(root);
  return { root, cache: join(made.dir, 'cache') };
}

/** A program of two files under `root`/src: main prints the word it imports and its import.meta.url. */
export function smallProgram(root: string): void {
  mkdirSync(join(root, 'src', 'lib'), { recursive: true });
  writeFileSync(join(root, 'package.json'), '{ "type": "module" }\n');
  writeFileSync(join(root, 'tsconfig.json'), '{ "compilerOptions": { "target": "ES2022", "verbatimModuleSyntax": true } }\n');
  writeFileSync(join(root, 'src', 'lib', 'word.ts'), "export const word: string = 'first';\n");
  writeFileSync(
    join(root, 'src', 'main.ts'),
    "import { word } from './lib/word.js';\nconsole.log(JSON.stringify({ word, url: import.meta.url }));\nif (process.argv[2] === 'throw') throw new Error('thrown on purpose');\n",
  );
}

/** A copy of the repository's program at `root`: its source folders, and node_modules linking each real package. */
export function repoCopy(root: string): void {
  mkdirSync(root, { recursive: true });
  for (const entry of ['src', 'queues', 'webhooks', 'sandbox', 'scenarios', 'bin']) cpSync(join(REPO, entry), join(root, entry), { recursive: true });
  for (const file of ['tsconfig.json', 'package.json']) cpSync(join(REPO, file), join(root, file));
  mkdirSync(join(root, 'node_modules'));
  for (const entry of readdirSync(join(REPO, 'node_modules'))) {
    if (entry === '.cache') continue;
    symlinkSync(join(REPO, 'node_modules', entry), join(root, 'node_modules', entry));
  }
}

/**
 * The files of a compiled copy that its entry (src/main.js) imports statically, as paths within the copy: the shared
 * chunks every command loads, so a damaged one would fail every start.
 */
export function loadedAtStart(copy: string): string[] {
  const entry = readFileSync(join(copy, 'src', 'main.js'), 'utf8');
  const chunks = [...entry.matchAll(/^(?:import .*|\}) from "\.\.\/(chunks\/[^"]+\.js)";$/gm)].map((match) => match[1] ?? '');
  if (chunks.length === 0) throw new Error(`${copy}/src/main.js imports no chunk`);
  return chunks;
}

/**
 * The URLs of every ES module `node bin/interlock.js args` loads in the repository (a load hook writes them down), and
 * its stdout; the hook's temp directory is pushed on `temps`.
 */
export function modulesLoadedBy(args: readonly string[], temps: { remove(): void }[], env: Record<string, string> = {}): { loaded: string[]; stdout: string } {
  const made = temp('hook');
  temps.push(made);
  const log = join(made.dir, 'loaded.txt');
  const hook = join(made.dir, 'hook.mjs');
  writeFileSync(hook, `import { appendFileSync } from 'node:fs';\nexport async function load(url, context, next) { appendFileSync(${JSON.stringify(log)}, url + '\\n'); return next(url, context); }\n`);
  const register = join(made.dir, 'register.mjs');
  writeFileSync(register, `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(hook).href)});\n`);
  const stdout = execFileSync(process.execPath, ['--import', register, 'bin/interlock.js', ...args], { cwd: REPO, encoding: 'utf8', env: { ...process.env, ...env } });
  return { loaded: readFileSync(log, 'utf8').split('\n').filter((url) => url !== ''), stdout };
}

export function runNode(args: readonly string[], options: { cwd?: string; env?: NodeJS.ProcessEnv; timeout?: number } = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, args, { timeout: options.timeout ?? 60_000, cwd: options.cwd, env: { ...process.env, INTERLOCK_LOG_LEVEL: 'silent', ...options.env } }, (error, stdout, stderr) =>
      resolve({ code: error === null ? 0 : Number(error.code ?? -1), stdout, stderr }),
    );
  });
}
