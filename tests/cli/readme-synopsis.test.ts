// README's "The command line" gives one line per effect command; a reader takes its options from there, so each line
// lists every option the command's own --help lists.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { REPO, runCli } from './run-cli.js';

const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
const section = readme.slice(readme.indexOf('\n## The command line\n'), readme.indexOf('\n## ', readme.indexOf('\n## The command line\n') + 1));
const optionsIn = (text: string) => new Set([...text.matchAll(/(?<![\w-])--[a-z][a-z-]*/g)].map((match) => match[0]).filter((option) => option !== '--help'));

it.each(['refund', 'credit'])('README\'s `%s` line lists every option of its --help', async (command) => {
  const line = section.split('\n').find((text) => text.startsWith(`npx interlock ${command} `));
  expect(line).toBeDefined();
  const help = await runCli([command, '--help']);
  expect(help.code, help.stderr).toBe(0);
  const listed = optionsIn(line ?? '');
  expect([...optionsIn(help.stdout)].filter((option) => !listed.has(option))).toEqual([]);
});
