// Rule: the --help of every command an operator types shows an Example block of command lines that work as printed:
// each runs the command it is shown under (or another command of src/cli/examples.ts's table), with options that
// command's own --help lists, so a line copied from the help is never refused as an unknown option.
import { expect, it } from 'vitest';
import { COMMAND_EXAMPLES } from '../../src/cli/examples.js';
import { runCli } from './run-cli.js';

/** The commands the review asked for, each of which must show an example. */
const TYPED = ['approvals grant', 'approvals revoke', 'refund', 'credit', 'receipt verify', 'receipt export', 'keys generate', 'caps set'];

const helps = new Map<string, Promise<string>>();
/** A command's --help text, run once per command. */
function helpOf(path: string): Promise<string> {
  let help = helps.get(path);
  if (help === undefined) {
    help = runCli([...path.split(' '), '--help']).then((run) => {
      expect(run.code, run.stderr).toBe(0);
      return run.stdout;
    });
    helps.set(path, help);
  }
  return help;
}

/** The example lines of a --help text: those under its "Example:" or "Examples:" heading. */
const examplesIn = (help: string) => help.slice(help.search(/^Examples?:$/m)).split('\n').slice(1).map((line) => line.trim()).filter((line) => line !== '');

/** The shell words of an example line up to its comment or redirection, quotes kept. */
const wordsOf = (line: string) => {
  const words = [...line.matchAll(/"[^"]*"|'[^']*'|\S+/g)].map((match) => match[0]);
  const end = words.findIndex((word) => word === '#' || word.startsWith('>'));
  return end === -1 ? words : words.slice(0, end);
};

/** The command an example line runs: the longest run of words after `npx interlock` that is a command of the table. */
const commandOf = (words: readonly string[]) => [3, 2, 1].map((count) => words.slice(2, 2 + count).join(' ')).find((path) => Object.hasOwn(COMMAND_EXAMPLES, path));

const optionsIn = (text: string) => new Set([...text.matchAll(/(?<![\w-])--[a-z][a-z-]*/g)].map((match) => match[0]));

it('shows an Example block in the --help of every command the operator types, each line one that command takes', { timeout: 120_000 }, async () => {
  const paths = [...new Set([...TYPED, ...Object.keys(COMMAND_EXAMPLES)])];
  const checked = await Promise.all(paths.map(async (path) => {
    const help = await helpOf(path);
    const lines = examplesIn(help);
    const problems: string[] = [];
    if (!/^Examples?:$/m.test(help) || lines.length === 0) problems.push(`${path}: no Example block`);
    for (const line of lines) {
      const words = wordsOf(line);
      const command = commandOf(words);
      if (words[0] !== 'npx' || words[1] !== 'interlock' || command === undefined) {
        problems.push(`${path}: "${line}" runs no command of the table`);
        continue;
      }
      const known = optionsIn((await helpOf(command)).split(/^Examples?:$/m)[0] ?? '');
      for (const option of words.filter((word) => word.startsWith('--'))) {
        if (!known.has(option)) problems.push(`${path}: "${line}" gives ${option}, which \`${command} --help\` does not list`);
      }
    }
    return problems;
  }));
  expect(checked.flat()).toEqual([]);
});
