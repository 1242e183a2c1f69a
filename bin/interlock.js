#!/usr/bin/env node
// Runs the CLI from a checkout without a build step: from a compiled copy of the TypeScript kept in a cache
// (bin/compiled.js: made at the first start after a source file changes), or through tsx's loader when no copy can
// be made or INTERLOCK_CODE_CACHE=0 asks for the sources themselves.
import { fileURLToPath } from 'node:url';
import { codeCacheOn, compiledEntry } from './compiled.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const compiled = codeCacheOn(process.env) ? await compiledEntry(root, 'src/main.ts') : undefined;
if (compiled === undefined) {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/main.ts');
} else {
  // As tsx does: a stack trace names the TypeScript file and line, not the compiled copy's.
  process.setSourceMapsEnabled(true);
  await import(compiled);
}
