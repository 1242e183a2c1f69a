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

// Rule: every option any command's --help lists is in the README (an operator reads a command's options there:
// `receipt verify --threads` and `reconcile --hours` were in --help alone). --version is commander's own, as --help is.
/** The subcommands a --help lists (its Commands block, `help` aside), and the options of its own Options block. */
function helpParts(stdout: string): { commands: string[]; options: Set<string> } {
  const blocks = stdout.split(/\n(?=[A-Z][a-z]+:\n)/);
  const block = (title: string) => blocks.find((text) => text.startsWith(`${title}:\n`)) ?? '';
  const commands = [...block('Commands').matchAll(/^ {2}([a-z][\w-]*)/gm)].map((match) => match[1] ?? '').filter((name) => name !== 'help');
  return { commands, options: optionsIn(block('Options')) };
}

it('README names every option of every command\'s --help', async () => {
  const missing: string[] = [];
  const listed = optionsIn(readme);
  let seen = 0;
  const walk = async (path: string[]): Promise<void> => {
    const help = await runCli([...path, '--help']);
    expect(help.code, `${path.join(' ')}: ${help.stderr}`).toBe(0);
    const { commands, options } = helpParts(help.stdout);
    seen += 1;
    for (const option of options) if (option !== '--version' && !listed.has(option)) missing.push(`${path.join(' ')} ${option}`);
    await Promise.all(commands.map((name) => walk([...path, name])));
  };
  await walk([]);
  // The walk reached the commands (a --help layout it could not read would check nothing).
  expect(seen).toBeGreaterThan(20);
  expect(missing.sort()).toEqual([]);
}, 120_000);
