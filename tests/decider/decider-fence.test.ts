// src/decider is the Anthropic adapter and nothing else: it imports the SDK, zod, the pure core and its own
// files, and no other adapter's library (stripe, ioredis, bullmq, express) or folder. The facts it answers
// tools with are read from Stripe by its caller.
import { readdirSync, readFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import { describe, expect, it } from 'vitest';
import { collectImports } from '../support/imports.js';

const ROOT = new URL('../..', import.meta.url).pathname;
const files = readdirSync(join(ROOT, 'src/decider')).filter((name) => name.endsWith('.ts'));

function allowed(specifier: string | null): boolean {
  if (specifier === null) return false;
  if (specifier === '@anthropic-ai/sdk' || specifier.startsWith('@anthropic-ai/sdk/') || specifier === 'zod') return true;
  if (!specifier.startsWith('.')) return false;
  const resolved = posix.normalize(posix.join('src/decider', specifier));
  return resolved.startsWith('src/decider/') || resolved.startsWith('src/core/');
}

describe('src/decider imports only the SDK, zod, src/core and itself', () => {
  it('has the files this test reads', () => {
    expect(files).toEqual(expect.arrayContaining(['anthropic.ts', 'case.ts', 'check.ts', 'config.ts', 'decider.ts', 'rules.ts']));
  });

  it.each(files)('src/decider/%s', (file) => {
    const crossings = collectImports(readFileSync(join(ROOT, 'src/decider', file), 'utf8'), file).filter((site) => !allowed(site.specifier));
    expect(crossings.map((site) => `${file}:${site.line} imports ${site.specifier ?? '(computed)'}`)).toEqual([]);
  });

  it('the rule refuses what it must', () => {
    for (const specifier of ['stripe', 'ioredis', 'bullmq', 'express', '../redis/journal.js', '../gate/gate.js', '../../queues/x.js', 'node:http', null]) expect(allowed(specifier), String(specifier)).toBe(false);
  });
});
