// The `interlock` command line.
import { Command } from 'commander';
import { addApprovalCommands } from './approvals-command.js';
import { addKeysCommands } from './keys-command.js';
import { addReceiptCommands } from './receipt-command.js';
import { addSandboxCommand } from '../../sandbox/cli.js';

const program = new Command('interlock')
  .description('Interlock for Stripe: refunds and credits that reach Stripe at most once, on fresh facts, under a live approval, with signed receipts.')
  .showHelpAfterError();

addKeysCommands(program);
addReceiptCommands(program);
addApprovalCommands(program);
addSandboxCommand(program);

program
  .command('demo')
  .description('run the offline demo: a gated refund, a crash after the send, a recovery and the verified receipt')
  .action(async () => {
    const { runDemo } = await import('../demo.js');
    await runDemo();
  });

await program.parseAsync(process.argv);
