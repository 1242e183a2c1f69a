// `interlock inbox list|show|reapprove|resolve|dismiss`: the escalation inbox from the command line (issue 13 §4),
// the same items and actions as GET/POST /v1/inbox. Who acts is `--by NAME`, recorded with the role `cli` in the
// signed RESOLVED entry (for a failed case's item, which has no effect, in its closure in the inbox index). Output is JSON on stdout; exit 0 done, 1 the answer is no (no such item, someone acted
// already, an action the item does not allow), 2 bad input (nothing recorded).
import { InvalidArgumentError, type Command } from 'commander';
import { BLANK_NOTE, FACTS_SHOWN, INBOX_KINDS, isVisibleNote, parseInboxItemId, type InboxKind } from '../core/inbox.js';
import { freeText, personName } from '../core/text.js';
import { APPROVAL_ID } from '../core/proposal.js';
import { checkFourEyes, createInboxActions, type Actor, type ProposeNow, type FactsNow } from '../interlock.js';
import { checked, CliFailure, EXIT_BAD_INPUT, EXIT_FAILED, wholeNumber } from './failure.js';
import { withStores, type CliStores } from './stores.js';
import { printJson, whenOutputLost } from './output.js';

/** What a re-approval needs beyond the stores: the facts read now (Stripe), and a producer that queues the proposal. */
export type ReapprovalWiring = (cli: CliStores) => Promise<{ readFacts: FactsNow; propose: ProposeNow; close(): Promise<void> }>;

export const CLI_ROLE = 'cli';
const MAX_NOTE = 2_000;

const noteOf = checked(freeText(MAX_NOTE).refine(isVisibleNote, BLANK_NOTE), '--note');
const personOf = checked(personName(200), '--by');

function itemId(value: string): string {
  if (parseInboxItemId(value) === null) throw new InvalidArgumentError(`"${value.slice(0, 100)}" is not an inbox item id (<kind>:<effect id>, or case_failed:<case effect id>:<failed at>; kinds ${INBOX_KINDS.join(', ')}); \`interlock inbox list\` shows them.`);
  return value;
}

function approvalOf(value: string): string {
  if (!APPROVAL_ID.test(value)) throw new InvalidArgumentError('--approval must be 1-200 letters, digits or _ . : -.');
  return value;
}

function factsShownOf(value: string): string {
  if (!FACTS_SHOWN.test(value)) throw new InvalidArgumentError('--facts-shown must be the factsShown of `interlock inbox show` (16 lowercase hex characters).');
  return value;
}

function kindOf(value: string): InboxKind {
  if (!(INBOX_KINDS as readonly string[]).includes(value)) throw new InvalidArgumentError(`--kind must be one of ${INBOX_KINDS.join(', ')}.`);
  return value as InboxKind;
}

const print = (value: unknown) => printJson(value);
const actor = (by: string): Actor => ({ name: by, role: CLI_ROLE });

export function addInboxCommands(program: Command, wiring: ReapprovalWiring): void {
  const inbox = program.command('inbox').description('the escalation inbox: effects a person must look at, and what they did');

  inbox
    .command('list')
    .description('items, newest first (open ones unless --closed)')
    .option('--closed', 'closed items instead (newest closure first)')
    .option('--kind <kind>', `only one kind: ${INBOX_KINDS.join(', ')}`, kindOf)
    .option('--limit <n>', 'at most this many', wholeNumber('--limit', 'items', { min: 1, max: 1_000 }), 50)
    .action(async (options: { closed?: boolean; kind?: InboxKind; limit: number }) => {
      await withStores(async ({ stores }) => {
        const page = await stores.inbox.list({ status: options.closed ? 'closed' : 'open', kind: options.kind }, options.limit);
        print({ items: await Promise.all(page.data.map((item) => stores.inbox.withFactsShown(item))), hasMore: page.hasMore });
      }, { readOnly: true });
    });

  inbox
    .command('show')
    .description('one item: what happened, the money at stake, the facts that changed, what may be done, and factsShown (the fingerprint of the facts it shows, for reapprove --facts-shown)')
    .argument('<id>', 'the item id (<kind>:<effect id>, or case_failed:<case effect id>:<failed at>)', itemId)
    .action(async (id: string) => {
      await withStores(async ({ stores }) => {
        const item = await stores.inbox.get(id);
        if (item === null) throw new CliFailure(`No inbox item ${id}; \`interlock inbox list\` shows the open ones.`, EXIT_FAILED);
        print(await stores.inbox.withFactsShown(item));
      }, { readOnly: true });
    });

  inbox
    .command('reapprove')
    .description('re-approve a refusal under a NEW approval: a new request, its facts read now, queued for the gate')
    .argument('<id>', 'the item id', itemId)
    .requiredOption('--approval <id>', 'the new approval (it must cover the item\'s payment or customer)', approvalOf)
    .requiredOption('--by <name>', 'who re-approves (recorded in the receipt)', personOf)
    .option('--note <text>', 'why', noteOf)
    .option(
      '--facts-shown <hash>',
      'the factsShown `interlock inbox show` printed: the re-approval stands on the facts that showed, and is refused (facts_changed, nothing recorded) if the item shows others by now; without it, the facts the item shows at this moment are taken as the ones you read',
      factsShownOf,
    )
    .action(async (id: string, options: { approval: string; by: string; note?: string; factsShown?: string }) => {
      await withStores(async (cli) => {
        const wired = await wiring(cli);
        try {
          const actions = createInboxActions({ inbox: cli.stores.inbox, journal: cli.journal, approvals: cli.approvals, checkFourEyes: (approval, by) => checkFourEyes(cli.stores, approval, [by.name]), readFacts: wired.readFacts, propose: wired.propose });
          const done = await actions.reapprove(id, { approval: options.approval, note: options.note ?? '', by: actor(options.by), factsShown: options.factsShown });
          if (done.recorded.status === 'conflict') throw new CliFailure(`The re-approval's request was recorded before with another payload (effect ${done.recorded.effectId}); nothing new was recorded.`, EXIT_FAILED);
          const requestId = done.item.closure?.reapproval?.requestId ?? null;
          whenOutputLost(`Inbox item ${id} is closed as re-approved under approval ${options.approval}, by ${options.by}: effect ${done.recorded.effectId}${requestId === null ? '' : ` (request ${requestId})`} is ${done.entry === null ? 'recorded already' : 'recorded and queued'}; \`interlock inbox show ${id}\` shows it.`, true);
          print({ item: done.item, effectId: done.recorded.effectId, requestId, recorded: done.entry === null ? 'exists' : 'recorded', premises: done.premises });
        } finally {
          await wired.close();
        }
      });
    });

  inbox
    .command('resolve')
    .description('resolve an AMBIGUOUS effect after checking Stripe: --landed or --did-not-land')
    .argument('<id>', 'the item id', itemId)
    .option('--landed', 'Stripe shows the effect landed')
    .option('--did-not-land', 'Stripe shows no trace of it')
    .requiredOption('--note <text>', 'what was checked', noteOf)
    .requiredOption('--by <name>', 'who resolves (recorded in the receipt)', personOf)
    .action(async (id: string, options: { landed?: boolean; didNotLand?: boolean; note: string; by: string }) => {
      if (options.landed === options.didNotLand) throw new CliFailure('Say what Stripe shows: exactly one of --landed or --did-not-land. Nothing was recorded.', EXIT_BAD_INPUT);
      await withStores(async (cli) => {
        const resolution = options.landed ? 'landed' : 'did_not_land';
        const { item } = await cli.stores.inbox.act(id, { action: 'resolve', resolution, note: options.note, by: actor(options.by) });
        whenOutputLost(`Inbox item ${id} is resolved as ${resolution}, by ${options.by}: \`interlock inbox show ${id}\` shows it.`, true);
        print(item);
      });
    });

  inbox
    .command('dismiss')
    .description('dismiss an item with a note saying why')
    .argument('<id>', 'the item id', itemId)
    .requiredOption('--note <text>', 'why', noteOf)
    .requiredOption('--by <name>', "who dismisses (recorded in the receipt; for a failed case's item, in the inbox index)", personOf)
    .action(async (id: string, options: { note: string; by: string }) => {
      await withStores(async (cli) => {
        const { item } = await cli.stores.inbox.act(id, { action: 'dismiss', note: options.note, by: actor(options.by) });
        whenOutputLost(`Inbox item ${id} is dismissed, by ${options.by}: \`interlock inbox show ${id}\` shows it.`, true);
        print(item);
      });
    });
}
