// Rule: README "The command line": each command's --help ends with examples. `serve`, `sandbox` and `scenario` had
// none; each now ends with an Examples block of `npx interlock <command>` lines (tests/cli/help-examples.test.ts
// checks every line's options against the command's own --help).
import { expect, it } from 'vitest';
import { runCli } from './run-cli.js';

for (const command of ['serve', 'sandbox', 'scenario']) {
  it(`${command} --help ends with examples of ${command}`, { timeout: 60_000 }, async () => {
    const run = await runCli([command, '--help']);
    expect(run.code, run.stderr).toBe(0);
    const block = run.stdout.slice(run.stdout.search(/^Examples?:$/m));
    expect(run.stdout).toMatch(/^Examples?:$/m);
    const lines = block.split('\n').slice(1).map((line) => line.trim()).filter((line) => line !== '');
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(line.startsWith(`npx interlock ${command}`), line).toBe(true);
  });
}
