// Rule: a line the README gives to run works as written after `npm ci`, under any INTERLOCK_DATA_DIR. The official
// Stripe CLI comes from the @stripe/cli dev dependency, which `npm ci` installs into node_modules, not onto the PATH, so
// every `stripe listen` line to run goes through `npx`; and the `node -pe` lines that read a token from service.json
// read the one under INTERLOCK_DATA_DIR (as the `npx interlock` lines do), not always ./.data's.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { REPO, tempDir } from '../cli/run-cli.js';

const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
const temp = tempDir('readme-lines');
afterAll(() => temp.remove());

it('every `stripe listen` line the README gives to run (one with an address) runs the CLI through npx', () => {
  const lines = [...readme.matchAll(/(?:npx )?stripe listen --[^`\n]*https?:\/\//g)].map((match) => match[0]);
  expect(lines.length).toBeGreaterThanOrEqual(4);
  expect(lines.filter((line) => !line.startsWith('npx '))).toEqual([]);
});

it('each `node -pe` line that reads a token from service.json reads the one under INTERLOCK_DATA_DIR, and ./.data/service.json without it', () => {
  const snippets = [...readme.matchAll(/node -pe '([^']*service\.json[^']*)'/g)].map((match) => match[1] ?? '');
  expect(snippets.length).toBeGreaterThanOrEqual(5);
  const tokens = { support: 'tok-support', approver: 'tok-approver', auditor: 'tok-auditor', operator: 'tok-operator' };
  // A service started under another data dir, and a directory to run from that holds no .data of its own.
  const dataDir = join(temp.dir, 'elsewhere');
  const cwd = join(temp.dir, 'cwd');
  mkdirSync(dataDir, { recursive: true });
  mkdirSync(join(cwd, '.data'), { recursive: true });
  writeFileSync(join(dataDir, 'service.json'), JSON.stringify({ tokens }));
  writeFileSync(join(cwd, '.data', 'service.json'), JSON.stringify({ tokens: Object.fromEntries(Object.entries(tokens).map(([role, token]) => [role, `${token}-default`])) }));
  const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' };
  for (const snippet of snippets) {
    const role = /\.tokens\.(\w+)/.exec(snippet)?.[1] as keyof typeof tokens;
    expect(execFileSync(process.execPath, ['-pe', snippet], { cwd, env: { ...env, INTERLOCK_DATA_DIR: dataDir }, encoding: 'utf8' }).trim(), snippet).toBe(tokens[role]);
    expect(execFileSync(process.execPath, ['-pe', snippet], { cwd, env, encoding: 'utf8' }).trim(), snippet).toBe(`${tokens[role]}-default`);
  }
});
