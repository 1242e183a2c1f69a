// STYLE habit 1, checked a second way beside the lint rule: no file in src/core imports a socket library or
// anything outside src/core, and none reads the wall clock or randomness on its own. Imports and clock reads are
// found with the TypeScript parser (tests/support/imports.ts), so every import form counts and comments do not;
// tests/fences.test.ts checks the collector on each form and holds the other layers' fences.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { layerViolations } from '../support/fences.js';
import { clockAndRandomness, collectImports } from '../support/imports.js';

const CORE = new URL('../../src/core/', import.meta.url).pathname;

describe('the pure core', () => {
  const files = readdirSync(CORE).filter((name) => name.endsWith('.ts'));

  it('has files to check, and the parser finds their imports', () => {
    expect(files.length).toBeGreaterThan(5);
    const imports = files.flatMap((file) => collectImports(readFileSync(join(CORE, file), 'utf8'), file));
    expect(imports.length).toBeGreaterThan(files.length);
  });

  it.each(files)('%s imports no socket library and nothing outside src/core', (file) => {
    const violations = layerViolations(new Map([[`src/core/${file}`, readFileSync(join(CORE, file), 'utf8')]]));
    expect(violations.map((violation) => `line ${violation.line}: ${violation.specifier ?? '(computed)'}: ${violation.rule}`)).toEqual([]);
  });

  it.each(files)('%s takes time and randomness as inputs', (file) => {
    expect(clockAndRandomness(readFileSync(join(CORE, file), 'utf8'), file)).toEqual([]);
  });

  it('the clock and randomness reader finds each form, and not in comments or strings', () => {
    const source = ['const a = Date.now();', 'const b = new Date();', 'const c = Math.random();', 'const d = performance.now();', 'const e = new Date(a);', '// Date.now()', "const f = 'Math.random()';"].join('\n');
    expect(clockAndRandomness(source).map((use) => [use.what, use.line])).toEqual([['Date.now', 1], ['new Date()', 2], ['Math.random', 3], ['performance.now', 4]]);
  });
});
