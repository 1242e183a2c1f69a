// Helpers for the compiled-copy tests: a small program in a temp checkout, and a temp copy of the real
// repository whose node_modules is a folder of links to the real packages (so its cache is its own, never the shared one).
import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

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

export function runNode(args: readonly string[], options: { cwd?: string; env?: NodeJS.ProcessEnv; timeout?: number } = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, args, { timeout: options.timeout ?? 60_000, cwd: options.cwd, env: { ...process.env, INTERLOCK_LOG_LEVEL: 'silent', ...options.env } }, (error, stdout, stderr) =>
      resolve({ code: error === null ? 0 : Number(error.code ?? -1), stdout, stderr }),
    );
  });
}
