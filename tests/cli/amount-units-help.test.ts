// Rule: wherever a person types an amount or a cap on the command line (`approvals grant --cap-cents`, `caps set`,
// `refund --amount`, `credit --amount`), its --help says the number is in the smallest unit of the payment's (or the
// credit's) currency, with a zero-decimal example: 2000 is $20.00 in usd but ¥2000 in jpy. "Cents" alone leads the
// approver of a ¥500 refund to type 50000, a cap a hundred times the money meant.
import { describe, expect, it } from 'vitest';
import { runCli } from './run-cli.js';

/** A command's --help text with commander's line wrapping undone. */
async function helpOf(...path: string[]): Promise<string> {
  const run = await runCli([...path, '--help']);
  expect(run.code, run.stderr).toBe(0);
  return run.stdout.replace(/\s+/g, ' ');
}

describe.concurrent('the unit of an amount or a cap, in --help', { timeout: 60_000 }, () => {
  it.each(['approvals grant', 'caps set', 'refund', 'credit'])('%s --help says the smallest unit, and what 2000 is in jpy', async (command) => {
    const help = await helpOf(...command.split(' '));
    expect(help).toContain('smallest unit');
    expect(help).toContain('2000 is $20.00 in usd, ¥2000 in jpy');
    expect(help).not.toMatch(/\b(amount in cents|most cents)\b/);
  });
});
