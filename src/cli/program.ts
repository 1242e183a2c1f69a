// The `interlock` command line's own commands (keys, receipts, approvals, effects, alerts, the demo): everything
// that needs only src/. The composition root (src/main.ts) adds the commands that run queues, the HTTP service and
// the sandbox, then runs the program. Every failure ends in one line on stderr and an exit code (failure.ts):
// commander's own usage errors, bad values, configuration, an unreachable Redis, and anything unexpected, never a
// stack trace.
import { readFileSync } from 'node:fs';
import { Command, type Option } from 'commander';
import { addApprovalCommands } from './approvals-command.js';
import { CliFailure, EXIT_BAD_INPUT, EXIT_FAILED, oneLine, reportFailure } from './failure.js';
import { outputLostNote, printProblem } from './output.js';
import { addKeysCommands } from './keys-command.js';
import { addReceiptCommands } from './receipt-command.js';
import { addEffectCommands, EXIT_UNSETTLED } from './effect-command.js';
import { addExamples } from './examples.js';
import { redactSecrets } from '../core/redact.js';
import { showable } from '../core/text.js';
import { errorMessage } from '../core/errors.js';

/** The version in package.json, which `interlock --version` prints. */
function packageVersion(): string {
  const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: unknown };
  return typeof version === 'string' ? version : 'unknown';
}

export function createProgram(): Command {
  // exitOverride and configureOutput are set before any subcommand is added, so every subcommand inherits them.
  const program = new Command('interlock')
    .description('Interlock for Stripe: refunds and credits that reach Stripe at most once, on fresh facts, under a live approval, with signed receipts.')
    .version(packageVersion(), '-V, --version', 'print the version and exit')
    .exitOverride()
    // A usage error quotes the value it refused, which may come from a ticket or a chat message: escaped as every
    // other line (output.ts), so it can neither clear the screen nor set the terminal's title. Commander's own line
    // breaks (before "(Did you mean --max-uses?)") are joined first: escaped, they would read as a literal \u000a.
    // Commander's own usage errors quote the refused argument, which may be a key typed in the wrong place
    // (`--amount sk_live_…`): shown only by its kind, as every other line the CLI writes to stderr.
    .configureOutput({ outputError: (text, write) => write(`${showable(redactSecrets(oneLine(text)), { lineBreaks: false })} (add --help for usage)\n`) });

  // An option given twice (`--cap-cents 100 … --cap-cents 5000`, a script appending its own defaults) is refused, not
  // read as its last value: terms that move money are what the operator wrote once. Counted as commander reads them
  // (its option events: a value that looks like an option, or `--` taken as a value, is no option), so the count and
  // the parse agree. An option that collects its values into a list (--public-key, one per rotated key) repeats.
  const parseAsync = program.parseAsync.bind(program);
  program.parseAsync = (argv, options) => {
    countOptions(program);
    return parseAsync(argv, options);
  };
  program.hook('preAction', (_program, action) => {
    const counts = optionCounts.get(action);
    for (const option of action.options) {
      const times = counts?.get(option) ?? 0;
      if (times < 2 || Array.isArray(action.getOptionValue(option.attributeName()))) continue;
      throw new CliFailure(`${option.long ?? option.name()} was given ${times} times; give it once (its last value would have been taken silently). Nothing was done.`, EXIT_BAD_INPUT);
    }
  });

  addKeysCommands(program);
  addReceiptCommands(program);
  addApprovalCommands(program);
  addEffectCommands(program);

  program
    .command('demo')
    .description('run the offline demo: a gated refund, a crash after the send, a recovery and the verified receipt')
    .action(async () => {
      const { runDemo } = await import('../demo.js');
      await runDemo();
    });
  return program;
}

/** How often each option of a command was given in the parse under way (countOptions). */
const optionCounts = new WeakMap<Command, Map<Option, number>>();

/** Starts counting, from zero, every option of `command` and of its subcommands as commander reads them. */
function countOptions(command: Command): void {
  let counts = optionCounts.get(command);
  if (counts === undefined) {
    const fresh = new Map<Option, number>();
    counts = fresh;
    optionCounts.set(command, fresh);
    for (const option of command.options) command.on(`option:${option.name()}`, () => fresh.set(option, (fresh.get(option) ?? 0) + 1));
  }
  counts.clear();
  for (const sub of command.commands) countOptions(sub);
}

/**
 * A command stopped by a signal (Ctrl-C, a closed terminal, a kill) after it may have changed something: whoever heard
 * the signal said what stands in one line on stderr as it came, and the command ends with this exit code once its
 * connections are closed, without waiting out what it was waiting for (a --wait's timer). runProgram does not say it
 * again.
 */
export class StoppedBySignal extends CliFailure {}

/** Parses argv and runs the command; a failure becomes one line on stderr and the exit code. */
export async function runProgram(program: Command, argv: readonly string[] = process.argv): Promise<void> {
  // A reader that stopped reading (`| head -1`, `| true`) closed stdout: what is left to print goes nowhere, and the
  // command ends as it would have (an approval granted is still a success), not with an unhandled EPIPE and its stack.
  // Any other write error (a full disk under `> result.json`: ENOSPC) is said in one line on stderr, with what the
  // command did (whenOutputLost), and the exit code stays the one its outcome set: a refund that was sent does not read
  // as failed to a script that would send it again under a new request id. A command that noted nothing (a read: its
  // answer was its whole job) exits 1. Thrown from this listener, it would be an uncaught exception: a stack trace and
  // exit 1.
  let said = false;
  // The exit code a lost answer sets, applied as the process exits: a command may set its own after the write failed
  // (`receipt verify a b` sets the worst of its files' once all are verified), and the error may be heard before or
  // after that, so it is applied last, whatever came in between.
  let lostExit: number | null = null;
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE' || error.code === 'ERR_STREAM_DESTROYED' || said) return;
    said = true;
    const lost = outputLostNote();
    printProblem(`Could not write to standard output (${errorMessage(error)}), so this command's answer was not printed. ${lost === null ? 'Whatever it changed stands; run a read-only command to see it.' : lost.done}`);
    // A command that noted nothing has failed to answer (`describe > f && use f` must not go on with an empty file).
    if (lost === null) lostExit = EXIT_FAILED;
    else if (!lost.outcomeKnown) lostExit = EXIT_UNSETTLED;
  });
  process.on('exit', () => {
    if (lostExit !== null) process.exitCode = lostExit;
  });
  // Here rather than in createProgram: the composition root adds refund, credit, case and more after it.
  addExamples(program);
  try {
    await program.parseAsync([...argv]);
  } catch (error) {
    // Said when the signal came (a second one may end the command before it gets here): not said again.
    if (error instanceof StoppedBySignal) process.exit(error.exitCode);
    reportFailure(error);
  }
}
