// Keeps the rule "every outcome code of DESIGN §4 is produced by a test named after it" true as codes are added:
// each code must open the title of a test or a group of tests in this folder.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { RECOVERY_OUTCOMES, SUBMIT_OUTCOMES } from '../../src/core/outcomes.js';

const HERE = dirname(fileURLToPath(import.meta.url));

it('every outcome code opens the title of a gate test', () => {
  const sources = readdirSync(HERE).filter((file) => file.endsWith('.test.ts')).map((file) => readFileSync(join(HERE, file), 'utf8'));
  const titles = sources.flatMap((source) => [...source.matchAll(/\b(?:it|describe)\(\s*'([^']+)'/g)].map((match) => match[1] ?? ''));
  const codes = [...new Set<string>([...SUBMIT_OUTCOMES, ...RECOVERY_OUTCOMES, 'UNRESOLVED:<error>'])];
  const untested = codes.filter((code) => !titles.some((title) => title.startsWith(`${code}:`) || title.startsWith(`${code} `) || title === code));
  expect(untested).toEqual([]);
});
