// Rule (src/cli/program.ts, countOptions and the preAction hook): an option given twice is refused, counted as
// commander reads the words, so the count and the parse agree. Counting the raw words before the first `--` did not:
// commander reads `--` as the value of an option that takes one (`--reason --`) and goes on parsing options after it,
// so a second `--amount` there was taken silently; and a value that reads like an option's name was counted as one.
import { describe, expect, it } from 'vitest';
import { createProgram } from '../../src/cli/program.js';

async function parse(args: string[]): Promise<{ options: Record<string, unknown> | null; error: string | null }> {
  const program = createProgram();
  let options: Record<string, unknown> | null = null;
  // A command shaped like `interlock refund`: an amount and a free-text reason, both taking a value.
  program.command('t').option('--amount <cents>').option('--reason <text>').action((given: Record<string, unknown>) => {
    options = given;
  });
  try {
    await program.parseAsync(['node', 'interlock', 't', ...args]);
    return { options, error: null };
  } catch (error) {
    return { options, error: error instanceof Error ? error.message : String(error) };
  }
}

describe('an option given twice is refused wherever the second one is', () => {
  it('the plain case is refused', async () => {
    const answer = await parse(['--amount', '100', '--amount', '5000']);
    expect(answer.options).toBeNull();
    expect(answer.error).toMatch(/given 2 times/);
  });

  it('a second --amount after an option whose value is `--` is refused too, not taken as the amount', async () => {
    const answer = await parse(['--amount', '100', '--reason', '--', '--amount', '5000']);
    expect(answer.options).toBeNull();
    expect(answer.error).toMatch(/--amount was given 2 times/);
  });

  // The same cause the other way round: a value that reads like an option's name (a reason text "--amount") is counted
  // as that option, and a command that gave --amount once is refused as if it had given it twice.
  it('an option given once is not refused because another option\'s value is its name', async () => {
    const answer = await parse(['--reason', '--amount', '--amount', '5000']);
    expect(answer.error).toBeNull();
    expect(answer.options).toEqual({ reason: '--amount', amount: '5000' });
  });
});
