// The layer fences (issue 9 §1), read with the TypeScript parser over every source file of the tree:
// - src/core imports no socket library and nothing outside src/core (the pure core, STYLE habit 1);
// - sandbox/ imports nothing from src/ (the Stripe stand-in must not know the gate);
// - src/ imports nothing from queues/, webhooks/, scenarios/ or sandbox/, except in the composition roots;
// - queues/ and webhooks/ use src/ only through src/interlock.ts, and so does scenarios/;
// - scenarios/baselines/ imports nothing from src/ or sandbox/ (the baselines never share the gate's code).
// The collector is tested on every import form first, so a fence can never pass by reading nothing, and the
// ESLint zones that enforce the same fences while editing are checked against samples.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';
import { COMPOSITION_ROOTS, layerViolations, OUTER_LAYERS, SOCKET_MODULES } from './support/fences.js';
import { collectImports } from './support/imports.js';

const ROOT = new URL('..', import.meta.url).pathname;
const SOURCE = /\.(?:[cm]?[jt]s|tsx)$/;

function sourcesUnder(folder: string): string[] {
  const absolute = join(ROOT, folder);
  let names: string[];
  try {
    names = readdirSync(absolute);
  } catch {
    return [];
  }
  return names.flatMap((name) => {
    const path = join(absolute, name);
    if (name === 'node_modules') return [];
    if (statSync(path).isDirectory()) return sourcesUnder(join(folder, name));
    return SOURCE.test(name) ? [relative(ROOT, path).split(sep).join('/')] : [];
  });
}

const tree = new Map<string, string>();
for (const folder of ['src', ...OUTER_LAYERS]) for (const file of sourcesUnder(folder)) tree.set(file, readFileSync(join(ROOT, file), 'utf8'));
const files = [...tree.keys()];

describe('the import collector reads every form of import with the TypeScript parser', () => {
  it('finds static imports, type imports, side-effect imports and re-exports, across lines', () => {
    const source = [
      "import Redis from 'ioredis';",
      "import type { Logger } from 'pino';",
      "import 'node:net';",
      'import {',
      '  a,',
      '  b,',
      "} from './multi-line.js';",
      "export { c } from '../outside.js';",
      "export * from 'express';",
      "export type { D } from './types.js';",
      'export const local = 1;',
    ].join('\n');
    expect(collectImports(source)).toEqual([
      { kind: 'import', specifier: 'ioredis', typeOnly: false, line: 1 },
      { kind: 'import', specifier: 'pino', typeOnly: true, line: 2 },
      { kind: 'import', specifier: 'node:net', typeOnly: false, line: 3 },
      { kind: 'import', specifier: './multi-line.js', typeOnly: false, line: 4 },
      { kind: 'export', specifier: '../outside.js', typeOnly: false, line: 8 },
      { kind: 'export', specifier: 'express', typeOnly: false, line: 9 },
      { kind: 'export', specifier: './types.js', typeOnly: true, line: 10 },
    ]);
  });

  it('finds import() calls, require() calls, import x = require() and import() in type positions', () => {
    const source = [
      "const lazy = await import('stripe');",
      'const template = await import(`bullmq`);',
      "const old = require('undici');",
      "import ws = require('ws');",
      "type Client = import('ioredis').Redis;",
      'function later() {',
      "  return import(/* inside a function */ '../../sandbox/cli.js');",
      '}',
    ].join('\n');
    expect(collectImports(source).map(({ kind, specifier }) => [kind, specifier])).toEqual([
      ['dynamic-import', 'stripe'],
      ['dynamic-import', 'bullmq'],
      ['require', 'undici'],
      ['import-equals', 'ws'],
      ['import-type', 'ioredis'],
      ['dynamic-import', '../../sandbox/cli.js'],
    ]);
  });

  it('reports a computed import() or require() with a null specifier, which the fences refuse', () => {
    expect(collectImports("const name = 'ioredis';\nawait import(name);\nrequire(`${name}`);").map((site) => site.specifier)).toEqual([null, null]);
    expect(layerViolations(new Map([['src/core/computed.ts', 'await import(name);']]))).toEqual([expect.objectContaining({ file: 'src/core/computed.ts', specifier: null })]);
  });

  it("counts require() only when it is Node's: a file's own function named require is not an import", () => {
    expect(collectImports("const a = require('ws');")).toHaveLength(1);
    expect(collectImports("function require(id: string) { return id; }\nconst a = require('ws');")).toEqual([]);
  });

  it('ignores imports that appear only in comments and strings', () => {
    const source = ["// import Redis from 'ioredis';", "/* require('stripe') */", "const text = \"import('express')\";", "const more = `from 'net'`;"].join('\n');
    expect(collectImports(source)).toEqual([]);
  });

  it('reads the real tree: every fenced folder that has code yields imports', () => {
    expect(files.filter((file) => file.startsWith('src/core/')).length).toBeGreaterThan(5);
    expect(files.filter((file) => file.startsWith('sandbox/')).length).toBeGreaterThan(10);
    const imports = files.flatMap((file) => collectImports(tree.get(file) ?? '', file));
    expect(imports.length).toBeGreaterThan(200);
    expect(collectImports(tree.get('src/main.ts') ?? '').map((site) => site.specifier)).toContain('../sandbox/cli.js');
  });
});

describe('the fences catch a crossing in a made-up tree', () => {
  const violationsOf = (file: string, source: string) => layerViolations(new Map([[file, source]])).map((violation) => violation.rule);

  it.each(SOCKET_MODULES)('src/core importing %s', (name) => {
    expect(violationsOf('src/core/x.ts', `import '${name}';`)).toEqual([`src/core imports no socket library (${name})`]);
  });

  it('src/core importing a socket library through a subpath, require() or a type position', () => {
    expect(violationsOf('src/core/x.ts', "import Stripe from 'stripe/lib/stripe.js';")).toHaveLength(1);
    expect(violationsOf('src/core/x.ts', "const r = require('ioredis');")).toHaveLength(1);
    expect(violationsOf('src/core/x.ts', "type R = import('ioredis').Redis;")).toHaveLength(1);
  });

  it('src/core importing an adapter or anything outside src/core', () => {
    expect(violationsOf('src/core/x.ts', "import { createKeys } from '../redis/keys.js';")).toEqual(['src/core imports nothing outside src/core']);
    expect(violationsOf('src/core/x.ts', "export { x } from '../../sandbox/index.js';")).toContain('src/core imports nothing outside src/core');
    expect(violationsOf('src/core/x.ts', "import { canonicalJson } from './json.js'; import { z } from 'zod'; import { createHash } from 'node:crypto';")).toEqual([]);
  });

  it('sandbox/ importing from src/', () => {
    expect(violationsOf('sandbox/http/router.ts', "import { verify } from '../../src/core/verify.js';")).toEqual([expect.stringContaining('sandbox/ imports nothing from src/')]);
    expect(violationsOf('sandbox/world.ts', "const gate = await import('../src/gate/gate.js');")).toHaveLength(1);
  });

  it('scenarios/ reaching past the public entry, and the baselines importing the gate or the sandbox', () => {
    expect(violationsOf('scenarios/harness.ts', "import { verify } from '../src/interlock.js';")).toEqual([]);
    expect(violationsOf('scenarios/harness.ts', "import { createGate } from '../src/gate/gate.js';")).toEqual([expect.stringContaining('scenarios/ uses src/ only through')]);
    expect(violationsOf('scenarios/baselines/cap-bot.ts', "import { verify } from '../../src/interlock.js';")).toEqual([expect.stringContaining('scenarios/baselines/ imports nothing from src/')]);
    expect(violationsOf('scenarios/baselines/cap-bot.ts', "import '../../sandbox/index.js';")).toHaveLength(1);
    expect(violationsOf('scenarios/baselines/cap-bot.ts', "import { stripeHttpFromEnv } from '../stripe-http.js';")).toEqual([]);
  });

  it('src/ importing from an outer folder outside the composition roots', () => {
    for (const layer of OUTER_LAYERS) expect(violationsOf('src/gate/gate.ts', `import '../../${layer}/x.js';`)).toEqual([expect.stringContaining(`src/ imports nothing from ${layer}/`)]);
    expect(violationsOf('src/interlock.ts', "import '../queues/names.js';")).toHaveLength(1);
    for (const root of COMPOSITION_ROOTS) {
      const up = '../'.repeat(root.split('/').length - 1);
      expect(violationsOf(root, `import '${up}sandbox/cli.js';`)).toEqual([]);
    }
  });

  it('queues/ and webhooks/ using src/ other than through src/interlock.ts', () => {
    expect(violationsOf('queues/worker.ts', "import { createInterlock } from '../src/interlock.js';")).toEqual([]);
    expect(violationsOf('webhooks/http/app.ts', "import type { Interlock } from '../../src/interlock.js';")).toEqual([]);
    expect(violationsOf('queues/worker.ts', "import { createGate } from '../src/gate/gate.js';")).toEqual(['queues/ and webhooks/ use src/ only through src/interlock.ts']);
    expect(violationsOf('webhooks/app.ts', "export * from '../src/redis/journal.js';")).toHaveLength(1);
  });
});

describe('the layer fences hold on this tree', () => {
  it('every composition root exists', () => {
    for (const root of COMPOSITION_ROOTS) expect(tree.has(root), `${root} is listed as a composition root but does not exist`).toBe(true);
  });

  it.each(files)('%s crosses no fence', (file) => {
    const violations = layerViolations(new Map([[file, tree.get(file) ?? '']]));
    expect(violations.map((violation) => `${file}:${violation.line} imports ${violation.specifier ?? '(computed)'}: ${violation.rule}`)).toEqual([]);
  });
});

describe('the ESLint zones enforce the same fences while editing', () => {
  const eslint = new ESLint({ cwd: ROOT });
  async function restricted(filePath: string, code: string): Promise<string[]> {
    const [result] = await eslint.lintText(`${code}\nexport {};\n`, { filePath: join(ROOT, filePath) });
    return (result?.messages ?? []).filter((message) => message.ruleId === 'no-restricted-imports').map((message) => message.message);
  }

  it('src/core: every socket library, its subpaths, and anything outside src/core', async () => {
    for (const name of SOCKET_MODULES) expect(await restricted('src/core/sample.ts', `import '${name}';`), name).toHaveLength(1);
    expect(await restricted('src/core/sample.ts', "import 'stripe/lib/stripe.js';")).toHaveLength(1);
    expect(await restricted('src/core/sample.ts', "import '../redis/keys.js';")).toHaveLength(1);
    expect(await restricted('src/core/sample.ts', "import './json.js';\nimport 'zod';")).toEqual([]);
  }, 60_000);

  it('sandbox/: nothing from src/, at any depth', async () => {
    expect(await restricted('sandbox/sample.ts', "import '../src/core/verify.js';")).toHaveLength(1);
    expect(await restricted('sandbox/http/sample.ts', "import '../../src/config.js';")).toHaveLength(1);
    expect(await restricted('sandbox/http/sample.ts', "import '../core/clock.js';")).toEqual([]);
  }, 60_000);

  it('src/: nothing from the outer folders except in the composition roots', async () => {
    for (const layer of OUTER_LAYERS) expect(await restricted('src/gate/sample.ts', `import '../../${layer}/x.js';`), layer).toHaveLength(1);
    expect(await restricted('src/cli/other.ts', "import '../../sandbox/cli.js';")).toHaveLength(1);
    for (const root of COMPOSITION_ROOTS) {
      const up = '../'.repeat(root.split('/').length - 1);
      expect(await restricted(root, `import '${up}sandbox/cli.js';\nimport '${up}queues/x.js';`), root).toEqual([]);
    }
  }, 60_000);

  it('scenarios/: src/ only through src/interlock.ts; scenarios/baselines/: nothing from src/ or sandbox/', async () => {
    expect(await restricted('scenarios/sample.ts', "import '../src/interlock.js';\nimport '../sandbox/index.js';")).toEqual([]);
    expect(await restricted('scenarios/sample.ts', "import '../src/gate/gate.js';")).toHaveLength(1);
    expect(await restricted('scenarios/baselines/sample.ts', "import '../../src/interlock.js';")).toHaveLength(1);
    expect(await restricted('scenarios/baselines/sample.ts', "import '../../sandbox/index.js';")).toHaveLength(1);
    expect(await restricted('scenarios/baselines/sample.ts', "import '../stripe-http.js';")).toEqual([]);
  }, 60_000);

  it('queues/ and webhooks/: src/ only through src/interlock.ts', async () => {
    expect(await restricted('queues/sample.ts', "import '../src/interlock.js';")).toEqual([]);
    expect(await restricted('webhooks/http/sample.ts', "import '../../src/interlock.js';")).toEqual([]);
    expect(await restricted('queues/sample.ts', "import '../src/gate/gate.js';")).toHaveLength(1);
    expect(await restricted('webhooks/sample.ts', "import '../src/redis/journal.js';")).toHaveLength(1);
  }, 60_000);
});
