// Rule: a usage error is one readable line. Commander puts its "(Did you mean --max-uses?)" on a line of its own; the
// line is joined with a space before it is escaped (src/cli/program.ts), so the suggestion reads as words, never as a
// literal \u000a, and still ends in "(add --help for usage)" on the same line.
import { expect, it } from 'vitest';
import { runCli } from './run-cli.js';

it('an option misspelt in camelCase is answered on one line with a readable suggestion', { timeout: 60_000 }, async () => {
  const run = await runCli(['approvals', 'grant', '--id', 'ap_1', '--approver', 'dana', '--cap-cents', '3000', '--scope', 'payment:pi_1', '--maxUses', '2'], { REDIS_URL: 'redis://127.0.0.1:1' });
  expect(run.code).toBe(2);
  expect(run.stdout).toBe('');
  expect(run.stderr).toBe("error: unknown option '--maxUses' (Did you mean --max-uses?) (add --help for usage)\n");
});
