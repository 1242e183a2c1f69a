// `interlock approvals grant|revoke|describe` and `interlock caps set`.
import { InvalidArgumentError, type Command } from 'commander';
import { identifier } from '../core/text.js';
import { approvalRoom, GRANT_LIMITS, SUBJECT } from '../core/approval.js';
import { APPROVAL_ID } from '../core/proposal.js';
import { checked, CliFailure, EXIT_FAILED, wholeNumber } from './failure.js';
import { fellBackNote, withStores } from './stores.js';
import { printJson, printProblem, whenOutputLost } from './output.js';

/**
 * A subject is checked here with the rule approvals and caps hold it to (one payment or one customer, as the support
 * API does), so a bad one is bad input: `caps set pi_123 3000` would otherwise cap a subject no effect ever moves on.
 */
function subject(name: string) {
  return (value: string): string => {
    if (!SUBJECT.test(value)) throw new InvalidArgumentError(`${name} must name one payment or one customer, e.g. payment:pi_123 or customer:cus_123 (letters, digits and _ after pi_ or cus_).`);
    return value;
  };
}

/**
 * An approval id as every approval is stored under (APPROVAL_ID): one no approval can have is bad input (exit 2), not
 * an approval that is not there (`approvals describe ""` answered "No approval .", exit 1).
 */
function approvalId(value: string): string {
  if (!APPROVAL_ID.test(value)) throw new InvalidArgumentError(`"${value.slice(0, 100)}" is not an approval id (1-200 letters, digits or _ . : -).`);
  return value;
}

/**
 * Where to look for an approval besides its id's binding: on a Redis Cluster a failover can lose the binding while the
 * approval stands on its subject (approvals.notFound), still authorizing money.
 */
/**
 * An approval not found (exit 1), said with where it was looked when the command fell back to the default Redis
 * (`note`: fellBackNote); any other error as it was thrown.
 */
function notFoundWhere(error: unknown, note: string | null): unknown {
  if (!(error instanceof Error) || (error as { code?: unknown }).code !== 'unknown_approval') return error;
  return new CliFailure(note === null ? error.message : `${error.message} ${note}`, EXIT_FAILED, { cause: error });
}

const SUBJECT_HELP = 'the approval\'s scope (payment:pi_... or customer:cus_...): find it on that subject, whatever its id is bound to (on a Redis Cluster, a failover can lose the binding of an approval that still stands)';

export function addApprovalCommands(program: Command): void {
  const approvals = program.command('approvals').description('grant, revoke and describe approvals');

  approvals
    .command('grant')
    .description('grant an approval scoped to one payment or customer')
    .requiredOption('--id <id>', 'approval id')
    .requiredOption('--approver <who>', 'the person or policy that approves')
    .requiredOption('--cap-cents <n>', 'the most all effects under it may move together, in the smallest unit of the currency of the payment (or of the customer\'s credits) it covers, as Stripe counts amounts: 2000 is $20.00 in usd, ¥2000 in jpy (a zero-decimal currency: not ¥20)', wholeNumber('--cap-cents', 'cents', { min: 1 }))
    .requiredOption('--scope <subject>', 'what it covers: payment:pi_... or customer:cus_...', subject('--scope'))
    .option('--max-uses <n>', 'how many effects may use it', wholeNumber('--max-uses', 'uses', { min: 1, max: GRANT_LIMITS.maxUses }), 1)
    .option('--expires-in <seconds>', 'lifetime in seconds', wholeNumber('--expires-in', 'seconds', { min: 1, max: GRANT_LIMITS.maxExpiresInSeconds }), 3600)
    .action(async (options: { id: string; approver: string; capCents: number; scope: string; maxUses: number; expiresIn: number }) => {
      await withStores(async ({ approvals, journal }) => {
        const now = await journal.serverTime();
        const terms = { id: options.id, approver: options.approver, capCents: options.capCents, expiresAt: now + options.expiresIn * 1000, maxUses: options.maxUses, scope: options.scope };
        const granted = await approvals.grant(terms);
        // A retry of the same grant finds the first one standing, with its expiry (approvals.grant), and as it stands:
        // revoked or expired since, it covers nothing, and the answer says so rather than reading as granted.
        const described = granted.created ? null : await approvals.describe(terms.id);
        const standing = described?.snapshot ?? null;
        const live = described === null || standing === null || (!standing.revoked && standing.expiresAt > described.now);
        const until = new Date(standing?.expiresAt ?? terms.expiresAt).toISOString();
        if (live) whenOutputLost(`Approval ${terms.id} ${granted.created ? 'is granted' : 'stood already with these terms and stands'} (at most ${terms.capCents} in the smallest unit of ${terms.scope}'s currency, until ${until}): \`interlock approvals describe ${terms.id}\` shows it.`, true);
        printJson({ ...terms, expiresAt: standing?.expiresAt ?? terms.expiresAt, ...granted, ...(standing === null ? {} : { revoked: standing.revoked, revokedAt: standing.revokedAt, live }) });
        if (standing !== null && !live) {
          const why = standing.revoked ? `was revoked${standing.revokedAt === null ? '' : ` at ${new Date(standing.revokedAt).toISOString()}`}` : `expired at ${new Date(standing.expiresAt).toISOString()}`;
          throw new CliFailure(`Approval ${terms.id} already stands with these terms and ${why}, so it covers nothing; an approval never changes once granted. Grant a new id.`, EXIT_FAILED);
        }
      }, { signs: false });
    });

  approvals
    .command('revoke')
    .description('revoke an approval; prints the effects already dispatched under it, which may still land')
    .argument('<id>', 'the approval id', approvalId)
    .requiredOption('--by <who>', 'who revokes (recorded on the approval)', checked(identifier(200), '--by'))
    .option('--subject <subject>', SUBJECT_HELP, subject('--subject'))
    .action(async (id: string, options: { by: string; subject?: string }) => {
      await withStores(async ({ approvals, config }) => {
        const revoked = await approvals.revoke(id, options.by, options.subject).catch((error: unknown) => {
          throw notFoundWhere(error, fellBackNote(config));
        });
        const landing = revoked.mayStillLand.length === 0 ? 'no effect sent under it may still land' : `${revoked.mayStillLand.length} effect(s) sent under it may still land: ${revoked.mayStillLand.slice(0, 3).join(', ')}${revoked.mayStillLand.length > 3 ? ', …' : ''}`;
        const rebound = revoked.rebound ? '; its id, bound to nothing, is bound to it again' : '';
        whenOutputLost(`Approval ${id} ${revoked.alreadyRevoked ? `was revoked already${revoked.revokedBy === null ? '' : `, by ${revoked.revokedBy}`}` : `is revoked, by ${options.by}`} (${landing}${rebound}): \`interlock approvals describe ${id}\` shows it.`, true);
        printJson(revoked);
      }, { signs: false });
    });

  approvals
    .command('describe')
    .description('show an approval, what it has reserved and its uses')
    .argument('<id>', 'the approval id', approvalId)
    .option('--subject <subject>', SUBJECT_HELP, subject('--subject'))
    .action(async (id: string, options: { subject?: string }) => {
      await withStores(async ({ approvals, config }) => {
        const { now, snapshot, revokedBy, unbound } = await approvals.describe(id, options.subject);
        if (!snapshot) throw notFoundWhere(approvals.notFound(id, options.subject), fellBackNote(config));
        // Found on its subject only: the id leads to no approval, or to another one (approvals.notFound says how).
        if (unbound) printProblem(`Approval ${id} is found on ${snapshot.scope}, but its id is not bound to it (the binding was lost in a failover of the Redis master holding the approval ids' index, or the id was granted again elsewhere since): its id alone does not find it, and proposals under it are refused as unknown, while effects already queued under it may still be sent. \`interlock approvals revoke ${id} --by <who> --subject ${snapshot.scope}\` revokes it (and binds its id to it again when the id is bound to nothing).`);
        printJson({ ...snapshot, revokedBy, ...approvalRoom(snapshot, now, await approvals.subjectCap(snapshot.scope)), now });
      }, { readOnly: true });
    });

  program
    .command('caps')
    .description('shared caps every agent is held to')
    .command('set')
    .description('cap the money moved on one subject by all agents together (in the smallest unit of its currency)')
    .argument('<subject>', 'payment:pi_... or customer:cus_...', subject('subject'))
    .argument('<cents>', 'the cap, in the smallest unit of the subject\'s currency (2000 is $20.00 in usd, ¥2000 in jpy); 0 means nothing may move on this subject', wholeNumber('cents', 'cents', { min: 0 }))
    .action(async (capped: string, cents: number) => {
      await withStores(async ({ approvals }) => {
        // The cap in force, which is another operator's when theirs was set on the subject right after this one.
        const { limitCents } = await approvals.setSubjectCap(capped, cents);
        const replaced = limitCents === cents ? '' : ` (not ${cents}: another cap was set on it right after this one)`;
        whenOutputLost(`The shared cap on ${capped} is set to ${limitCents}${replaced} in the smallest unit of its currency: \`interlock approvals describe\` shows it as subjectCentsLeft for an approval on ${capped}.`, true);
        printJson({ subject: capped, limitCents }, { compact: true });
      }, { signs: false });
    });
}
