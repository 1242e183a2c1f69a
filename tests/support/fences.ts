// The layer fences (STYLE "Architecture you can see from the tree", issue 9 §1), as one function over a tree of
// sources, so the same rules run on the repository and on small made-up trees that must break them.
import { posix } from 'node:path';
import { collectImports, packageOf, type ImportSite } from './imports.js';

/** Libraries that open sockets (or are adapters built on them); the pure core imports none of them. */
export const SOCKET_MODULES = [
  'ioredis', 'bullmq', 'express', 'stripe', '@anthropic-ai/sdk', 'ws', 'undici',
  'node:http', 'node:https', 'node:http2', 'node:net', 'node:tls', 'node:dgram',
  'http', 'https', 'http2', 'net', 'tls', 'dgram',
] as const;

/**
 * The only file in src/ that may import from queues/, webhooks/, scenarios/ or sandbox/: the composition root, which
 * wires the whole program together (the service's roles, the queue commands, the sandbox's own command).
 */
export const COMPOSITION_ROOTS = ['src/main.ts'] as const;

/** The one module of src/ that queues/ and webhooks/ may use. */
export const PUBLIC_ENTRY = 'src/interlock.ts';

export const OUTER_LAYERS = ['queues', 'webhooks', 'scenarios', 'sandbox'] as const;

export type Violation = { file: string; line: number; specifier: string | null; rule: string };

const EXTENSION = /\.(?:[cm]?[jt]s|tsx|jsx)$/;

/** The repository path a relative specifier names, without its extension (`src/cli/main.ts` + `../x.js` → `src/x`). */
function target(file: string, specifier: string): string {
  // An absolute path lies outside every folder of the repository as far as a fence is concerned.
  if (specifier.startsWith('/')) return specifier;
  return posix.normalize(posix.join(posix.dirname(file), specifier)).replace(EXTENSION, '');
}

function within(path: string, folder: string): boolean {
  return path === folder || path.startsWith(`${folder}/`);
}

/** Every import in `files` (repository path → source) that crosses a fence. */
export function layerViolations(files: ReadonlyMap<string, string>): Violation[] {
  const violations: Violation[] = [];
  for (const [file, source] of files) {
    for (const site of collectImports(source, file)) {
      const broken = (rule: string) => violations.push({ file, line: site.line, specifier: site.specifier, rule });
      checkSite(file, site, broken);
    }
  }
  return violations;
}

function checkSite(file: string, site: ImportSite, broken: (rule: string) => void): void {
  const fenced = within(file, 'src') || OUTER_LAYERS.some((layer) => within(file, layer));
  if (site.specifier === null) {
    if (fenced) broken('a computed import cannot be checked by any fence; import a literal path');
    return;
  }
  const pkg = packageOf(site.specifier);
  const resolved = pkg === null ? target(file, site.specifier) : null;

  if (within(file, 'src/core')) {
    if (pkg !== null && (SOCKET_MODULES as readonly string[]).includes(pkg)) broken(`src/core imports no socket library (${pkg})`);
    if (resolved !== null && !within(resolved, 'src/core')) broken('src/core imports nothing outside src/core');
  }
  if (within(file, 'sandbox') && resolved !== null && within(resolved, 'src')) {
    broken('sandbox/ imports nothing from src/ (it stands in for Stripe and must not know the gate)');
  }
  if (within(file, 'src') && resolved !== null && !(COMPOSITION_ROOTS as readonly string[]).includes(file)) {
    const layer = OUTER_LAYERS.find((outer) => within(resolved, outer));
    if (layer) broken(`src/ imports nothing from ${layer}/ outside the composition roots (${COMPOSITION_ROOTS.join(', ')})`);
  }
  if (within(file, 'scenarios/baselines') && resolved !== null && (within(resolved, 'src') || within(resolved, 'sandbox'))) {
    broken('scenarios/baselines/ imports nothing from src/ or sandbox/ (the baselines never share the gate\'s code)');
  } else if (within(file, 'scenarios') && resolved !== null && within(resolved, 'src') && resolved !== PUBLIC_ENTRY.replace(EXTENSION, '')) {
    broken(`scenarios/ uses src/ only through ${PUBLIC_ENTRY}`);
  }
  if ((within(file, 'queues') || within(file, 'webhooks')) && resolved !== null && within(resolved, 'src') && resolved !== PUBLIC_ENTRY.replace(EXTENSION, '')) {
    broken(`queues/ and webhooks/ use src/ only through ${PUBLIC_ENTRY}`);
  }
}
