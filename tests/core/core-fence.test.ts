// STYLE habit 1, checked a second way beside the lint rule: no file in src/core imports a socket library or
// an adapter, and none reads the wall clock or randomness on its own.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const CORE = new URL('../../src/core/', import.meta.url).pathname;
const FORBIDDEN = ['ioredis', 'bullmq', 'express', 'stripe', '@anthropic-ai/sdk', 'node:http', 'node:https', 'node:net', 'http', 'https', 'net'];

function importsOf(source: string): string[] {
  const found: string[] = [];
  for (const match of source.matchAll(/(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|require\(\s*['"]([^'"]+)['"]\s*\)/g)) {
    found.push(match[1] ?? match[2] ?? match[3] ?? '');
  }
  return found;
}

describe('the pure core', () => {
  const files = readdirSync(CORE).filter((name) => name.endsWith('.ts'));

  it('has files to check', () => {
    expect(files.length).toBeGreaterThan(5);
  });

  it.each(files)('%s imports no socket library and no adapter', (file) => {
    const imports = importsOf(readFileSync(join(CORE, file), 'utf8'));
    for (const name of imports) {
      expect(FORBIDDEN, `${file} imports ${name}`).not.toContain(name);
      expect(name.startsWith('../'), `${file} imports ${name} from outside src/core`).toBe(false);
    }
  });

  it.each(files)('%s takes time and randomness as inputs', (file) => {
    const source = readFileSync(join(CORE, file), 'utf8');
    expect(source).not.toMatch(/Date\.now\(|Math\.random\(|new Date\(\)/);
  });
});
