// Rule: the test files that change what other files would see in the same process (a module replaced with vi.mock,
// a global or an environment variable stubbed or assigned), or that assert on what the whole process holds (the
// default worker ids its senders hold), run isolated. The suite's other files share a worker process one after
// another (vitest.config.ts), so a mock or a stub left by one would reach the next, and a sender one left open would
// hold the default worker id another expects to get.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ISOLATED_TEST_FILES } from '../vitest.config.js';

const REPO = fileURLToPath(new URL('..', import.meta.url));

/** Every *.test.ts under the folders the suite includes, relative to the repository. */
function testFiles(): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (name === 'node_modules') continue;
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith('.test.ts')) found.push(relative(REPO, path));
    }
  };
  for (const folder of ['tests', 'sandbox', 'src']) walk(join(REPO, folder));
  return found.sort();
}

/** What a file does that would outlive it in a shared process, or that depends on what the process holds, if anything. */
export function leaks(source: string): string | undefined {
  const found = source.match(/\bvi\s*\.\s*(?:mock|doMock|stubGlobal|stubEnv)\s*\(|\bprocess\.env(?:\.\w+|\[[^\]]+\])\s*=(?!=)|\bdelete\s+process\.env\b|\bdefaultWorkerId\b/);
  return found?.[0];
}

describe('which test files run isolated', () => {
  it('finds what a file would leave behind', () => {
    expect(leaks("vi.mock('node:worker_threads', async () => ({}));")).toBeDefined();
    expect(leaks("vi.stubEnv('TZ', 'UTC');")).toBeDefined();
    expect(leaks("process.env.REDIS_URL = 'redis://x';")).toBeDefined();
    expect(leaks("process.env['REDIS_URL'] = 'redis://x';")).toBeDefined();
    expect(leaks('delete process.env.REDIS_URL;')).toBeDefined();
    expect(leaks('expect(gate.owner).toBe(defaultWorkerId());')).toBeDefined();
    expect(leaks("const env = { ...process.env, REDIS_URL: 'x' }; if (process.env.X === '1') vi.fn();")).toBeUndefined();
  });

  it('every file that mocks a module, stubs a global, sets an environment variable or expects the default worker id is in ISOLATED_TEST_FILES', () => {
    const leaking = testFiles().filter((file) => file !== 'tests/suite-config.test.ts' && leaks(readFileSync(join(REPO, file), 'utf8')) !== undefined);
    expect(leaking.filter((file) => !ISOLATED_TEST_FILES.includes(file))).toEqual([]);
  });

  it('every file ISOLATED_TEST_FILES names exists', () => {
    const files = new Set(testFiles());
    expect(ISOLATED_TEST_FILES.filter((file) => !files.has(file))).toEqual([]);
  });
});
