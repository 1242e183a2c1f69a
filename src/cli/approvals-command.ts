// `interlock approvals grant|revoke|describe` and `interlock caps set`.
import type { Command } from 'commander';
import { ApprovalError } from '../redis/approvals.js';
import { withStores } from './stores.js';

function positiveInt(name: string) {
  return (value: string): number => {
    const parsed = Number(value);
    if (!Number.isSafeInteger(parsed) || parsed <= 0) throw new Error(`${name} must be a positive whole number, got "${value}"`);
    return parsed;
  };
}

function report(error: unknown): void {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = error instanceof ApprovalError ? 1 : 2;
}

export function addApprovalCommands(program: Command): void {
  const approvals = program.command('approvals').description('grant, revoke and describe approvals');

  approvals
    .command('grant')
    .description('grant an approval scoped to one payment or customer')
    .requiredOption('--id <id>', 'approval id')
    .requiredOption('--approver <who>', 'the person or policy that approves')
    .requiredOption('--cap-cents <n>', 'most cents all effects under it may move together', positiveInt('--cap-cents'))
    .requiredOption('--scope <subject>', 'what it covers: payment:pi_... or customer:cus_...')
    .option('--max-uses <n>', 'how many effects may use it', positiveInt('--max-uses'), 1)
    .option('--expires-in <seconds>', 'lifetime in seconds', positiveInt('--expires-in'), 3600)
    .action(async (options: { id: string; approver: string; capCents: number; scope: string; maxUses: number; expiresIn: number }) => {
      await withStores(async ({ approvals, journal }) => {
        try {
          const now = await journal.serverTime();
          const terms = { id: options.id, approver: options.approver, capCents: options.capCents, expiresAt: now + options.expiresIn * 1000, maxUses: options.maxUses, scope: options.scope };
          const granted = await approvals.grant(terms);
          process.stdout.write(`${JSON.stringify({ ...terms, ...granted }, null, 2)}\n`);
        } catch (error) {
          report(error);
        }
      });
    });

  approvals
    .command('revoke')
    .description('revoke an approval; prints the effects already dispatched under it, which may still land')
    .argument('<id>')
    .requiredOption('--by <who>', 'who revokes')
    .action(async (id: string, options: { by: string }) => {
      await withStores(async ({ approvals }) => {
        try {
          process.stdout.write(`${JSON.stringify(await approvals.revoke(id, options.by), null, 2)}\n`);
        } catch (error) {
          report(error);
        }
      });
    });

  approvals
    .command('describe')
    .description('show an approval, what it has reserved and its uses')
    .argument('<id>')
    .action(async (id: string) => {
      await withStores(async ({ approvals }) => {
        const { now, snapshot } = await approvals.describe(id);
        if (!snapshot) {
          process.stderr.write(`No approval ${id}.\n`);
          process.exitCode = 1;
          return;
        }
        process.stdout.write(`${JSON.stringify({ ...snapshot, live: !snapshot.revoked && snapshot.expiresAt > now, now }, null, 2)}\n`);
      });
    });

  program
    .command('caps')
    .description('shared caps every agent is held to')
    .command('set')
    .description('cap the cents moved on one subject by all agents together')
    .argument('<subject>', 'payment:pi_... or customer:cus_...')
    .argument('<cents>', 'the cap', positiveInt('cents'))
    .action(async (subject: string, cents: number) => {
      await withStores(async ({ approvals }) => {
        try {
          await approvals.setSubjectCap(subject, cents);
          process.stdout.write(`${JSON.stringify({ subject, limitCents: cents })}\n`);
        } catch (error) {
          report(error);
        }
      });
    });
}
