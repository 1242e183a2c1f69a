// Runs the sandbox as its own process: `npx tsx sandbox/server-main.ts --port 0 --delays fast`. Prints one JSON
// line `{"url": ..., "webhookSecret": ...}` on stdout once listening, so a parent process can find it.
import { Command } from 'commander';
import { sandboxOptionsFromFlags, stopOnSignals, withSandboxFlags } from './cli.js';
import { startSandbox } from './index.js';
import type { SandboxFlags } from './cli.js';

const program = withSandboxFlags(new Command('stripe-sandbox')).action(async (flags: SandboxFlags) => {
  const sandbox = await startSandbox(sandboxOptionsFromFlags(flags));
  // Signal handlers first: a parent may send SIGTERM as soon as it reads the line.
  stopOnSignals(sandbox.close);
  process.stdout.write(`${JSON.stringify({ url: sandbox.url, webhookSecret: sandbox.webhookSecret ?? null })}\n`);
});

await program.parseAsync(process.argv);
