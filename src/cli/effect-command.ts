// `interlock effect show EFFECT_ID | --request ID`, `interlock alerts` and `interlock alerts resolve ID --by NAME`. Output is one JSON object on stdout;
// exit codes follow issue 9 §5: 0 committed (or already committed), 3 refused, 4 not settled (in flight or
// ambiguous), 2 bad input or configuration, 1 anything else (an unknown effect, a journal that fails verification).
import { InvalidArgumentError, type Command } from 'commander';
import { identifier } from '../core/text.js';
import { proposalSchema } from '../core/proposal.js';
import { ALERT_KINDS, currentOutcome, effectIdFor, explainOutcome, explainRecorded, isEffectId, moneyAfterSend, moneyText, outcomeReason, resolveAlert, verify, type Alert, type Outcome, type RecoveryReport } from '../interlock.js';
import type { Receipt } from '../core/receipt.js';
import { recordedProposal } from '../core/recorded.js';
import { firstProposal } from '../core/decisions.js';
import { checked, CliFailure, EXIT_BAD_INPUT, EXIT_FAILED } from './failure.js';
import { CLI_ROLE } from './inbox-command.js';
import { signersNotHeld } from './held-keys.js';
import { fellBackNote, unknownSignersNote, whereLooked, withStores, type CliStores } from './stores.js';
import { printJson, printLine, printProblem, whenOutputLost } from './output.js';

/** Alerts read per round trip by `interlock alerts`, which lists them all. */
const ALERTS_PAGE = 100;
const ALERT_ID = new RegExp(`^(${ALERT_KINDS.join('|')}):[0-9a-f]{64}$`);
const personOf = checked(identifier(200), '--by');

function alertId(value: string): string {
  if (!ALERT_ID.test(value)) throw new InvalidArgumentError(`"${value.slice(0, 100)}" is not an alert id (<kind>:<effect id>, kinds ${ALERT_KINDS.join(', ')}); \`interlock alerts --json\` shows them.`);
  return value;
}

/** Most characters of a request id a message repeats. */
const REQUEST_SHOWN_CHARS = 100;

/**
 * A request id as the user typed it, quoted for a message: JSON escapes its control characters (printProblem escapes
 * the unseen ones), and a long one is cut.
 */
function shownRequest(requestId: string): string {
  const cut = requestId.length > REQUEST_SHOWN_CHARS;
  return `${JSON.stringify(requestId.slice(0, REQUEST_SHOWN_CHARS))}${cut ? '…' : ''}`;
}

export const EXIT_COMMITTED = 0;
export const EXIT_REFUSED = 3;
export const EXIT_UNSETTLED = 4;
/** An effect (or a case's) that committed but whose money did not go back (Stripe failed the refund after accepting it). */
export const EXIT_NOT_RETURNED = 5;

const COMMITTED = new Set(['COMMITTED', 'COMMITTED_ON_QUERY', 'COMMITTED_BY_RETRY', 'REAPPLIED_AFTER_QUERY', 'DUPLICATE_IGNORED']);

const kindOf = (kind: unknown): string | null => (typeof kind === 'string' ? kind : null);


/**
 * The exit code of `interlock recover`: 4 while its pass left anything open, waiting (a quiet period), unresolved
 * (Stripe could not be asked) or passed over with a time to come back (a sender whose heartbeat has not lapsed, a
 * proposal only the service can queue): run it again later. 0 when nothing is left.
 */
export function exitForRecovery(report: RecoveryReport): number {
  const left = report.waiting.length + report.unresolved.length + report.skipped.filter((skipped) => skipped.retryAt !== undefined).length;
  return left > 0 ? EXIT_UNSETTLED : 0;
}

/** The exit code an outcome ends a command with. */
export function exitFor(outcome: string | null): number {
  if (outcome === null || outcome === 'IN_FLIGHT' || outcome === 'AMBIGUOUS' || outcome.startsWith('UNRESOLVED:')) return EXIT_UNSETTLED;
  if (COMMITTED.has(outcome)) return EXIT_COMMITTED;
  if (outcome.startsWith('REFUSED:')) return EXIT_REFUSED;
  return EXIT_FAILED;
}

/**
 * The exit code of an effect as `effect show`, `refund` and `credit` print it: its outcome's, except that one that
 * committed but whose money did not go back (final money not_returned: Stripe failed the refund after accepting it)
 * is 5, not 0, so a script that tells the customer on 0 does not tell them their money is back.
 */
export function exitForShown(shown: Record<string, unknown>): number {
  if (journalDoesNotVerify(shown)) return EXIT_FAILED;
  return exitForMoney(typeof shown.outcome === 'string' ? shown.outcome : null, shown.finalMoney);
}

/** Whether an effect as describeEffect shows it has a journal that fails verification (valid false: not merely unauthenticated). */
function journalDoesNotVerify(shown: Record<string, unknown>): boolean {
  return (shown.verification as { valid?: unknown } | null | undefined)?.valid === false;
}

/**
 * The line on stderr for an effect whose journal fails verification (changed, forged, or broken), so that an exit
 * of 1 is not read as "the effect failed": its outcome is what the journal says, and the journal cannot be trusted.
 */
export function warnIfJournalDoesNotVerify(shown: Record<string, unknown>): void {
  if (!journalDoesNotVerify(shown)) return;
  const problems = (shown.verification as { problems?: unknown }).problems;
  const first = Array.isArray(problems) && typeof problems[0] === 'string' ? problems[0] : 'see verification.problems';
  printProblem(`The journal of effect ${String(shown.effectId)} does not verify (${first}${Array.isArray(problems) && problems.length > 1 ? `; ${problems.length - 1} more in verification.problems` : ''}): the outcome it shows cannot be trusted. Compare with Stripe (the effect's refund or credit) and with an exported receipt, and look for writes to Redis by anyone but the service.`);
}

/** An outcome's exit, 5 instead of 0 when `finalMoney` (an effect's or a case's) says the money did not go back. */
export function exitForMoney(outcome: string | null, finalMoney: unknown): number {
  const exit = exitFor(outcome);
  return exit === EXIT_COMMITTED && (finalMoney as { status?: unknown } | null | undefined)?.status === 'not_returned' ? EXIT_NOT_RETURNED : exit;
}

/** What `effect show` (and `refund`/`credit` once settled) prints for one effect. */
export async function describeEffect(stores: CliStores, effectId: string): Promise<Record<string, unknown> | null> {
  const receipt = await stores.journal.receipt(effectId);
  return receipt === null ? null : describeReceipt(stores, effectId, receipt);
}

/**
 * What `refund` and `credit` print for a request refused REFUSED:conflicting_payload, as the API's 409 says it: the
 * refusal of this request on top (its outcome, sentence, reason and request id), and the effect first recorded under
 * that request id, as it stands, under `recorded`, with the payload it was recorded with (`payload`). Spread at the
 * top, the recorded effect's `state: "settled"` and `finalMoney` read as this request's, beside its refusal.
 */
export async function conflictAnswer(stores: CliStores, refusal: { requestId: string; effectId: string; reason: string | null }): Promise<Record<string, unknown>> {
  const outcome: Outcome = 'REFUSED:conflicting_payload';
  const receipt = await stores.journal.receipt(refusal.effectId);
  // Its request id is this request's: the effect id is derived from it.
  const recorded = receipt === null ? { effectId: refusal.effectId, payload: null, journal: [] } : { ...(await describeReceipt(stores, refusal.effectId, receipt)), payload: recordedProposal(receipt.entries, 'first')?.effect ?? null };
  return { outcome, sentence: explainOutcome(outcome), reason: refusal.reason, requestId: refusal.requestId, recorded };
}

/** describeEffect's answer for an effect whose receipt was read. */
async function describeReceipt(stores: CliStores, effectId: string, receipt: Receipt): Promise<Record<string, unknown>> {
  // Checked with every key this machine holds (its signing key's, the retired ones), which authenticate only what they
  // signed (held-keys.ts). Without the service's key here, the head was signed just now by a key made for this command
  // (it signed no entry), and entries signed by a key this machine does not hold are not authenticated: valid null,
  // saying which key, unless the chain or its rules are broken. An entry a held key signed that does not verify is a
  // forgery whatever other keys the chain names (valid false): an attacker who can write to Redis but has not the key
  // cannot turn it into "not authenticated" by re-sealing a later entry with a key of their own.
  const input: unknown = JSON.parse(JSON.stringify(receipt));
  const { publicKeys } = stores.stores;
  const held = verify(input, { publicKeys });
  const notHeld = signersNotHeld(held, input, publicKeys);
  const verification = notHeld.length === 0 ? held : { ...verify(input), unchecked: [unknownSignersNote(stores, notHeld)] };
  const partition = (await stores.journal.partitionOf(effectId)) ?? '';
  const { state } = await stores.journal.readState(partition, effectId);
  // The answer to the latest proposal: a refusal of an earlier one does not answer a re-decision.
  const outcome = state.open ? null : currentOutcome(receipt.entries);
  return {
    effectId,
    subject: partition,
    state: state.open ? 'in_flight' : outcome === null ? 'proposed' : 'settled',
    outcome,
    sentence: outcome === null ? 'Not settled yet: the effect is queued or being sent.' : `${explainRecorded(outcome as Outcome, outcomeReason(receipt.entries))}${moneyAfterSend(COMMITTED.has(outcome), kindOf(firstProposal(receipt.entries)?.effect.kind), verification.finalMoney, verification.exposure)}`,
    reason: outcomeReason(receipt.entries),
    // A refusal by its code: a REFUSED after a COMMITTED is another payload refused under the request id (evidence), not
    // this effect refused.
    journal: receipt.entries.map((entry) => (entry.kind === 'REFUSED' ? entry.code : entry.kind)),
    entries: receipt.entries.map((entry) => ({ kind: entry.kind, at: new Date(entry.at).toISOString() })),
    verification: { valid: verification.valid, happened: verification.happened, happenedOnce: verification.happenedOnce, authorizedWhenFired: verification.authorizedWhenFired, assumptionsHeld: verification.assumptionsHeld, evidence: verification.evidence, problems: verification.problems, unchecked: verification.unchecked },
    answer: verification.answerFrom === null ? null : verification.answer,
    answerFrom: verification.answerFrom,
    finalMoney: verification.finalMoney,
    answerMatchesFinalMoney: verification.answerMatchesFinalMoney,
    exposure: verification.exposure,
  };
}

/** Why no proposal can carry `requestId` (the proposal's own rule, as `refund --request` applies it), or null. */
function requestIdProblem(requestId: string): string | null {
  const parsed = proposalSchema.shape.requestId.safeParse(requestId);
  return parsed.success ? null : (parsed.error.issues[0]?.message ?? 'is not a request id');
}

export function addEffectCommands(program: Command): void {
  const effect = program.command('effect').description('what happened to an effect');
  effect
    .command('show')
    .description('an effect\'s state, outcome, journal and verification, by effect id or request id')
    .argument('[effectId]', '64-hex effect id')
    .option('--request <id>', 'the request id the effect was proposed under')
    .action(async (given: string | undefined, options: { request?: string }) => {
      if (given !== undefined && options.request !== undefined) throw new CliFailure('Give an effect id or --request ID, not both.', EXIT_BAD_INPUT);
      if (options.request?.trim() === '') throw new CliFailure('--request is empty: give the request id the effect was proposed under.', EXIT_BAD_INPUT);
      // An id no proposal can carry (spaces around it, pasted from a sheet; too long; not NFC) is bad input, as
      // `refund --request` says: "no effect for request" would tell a script that checks before it sends to send.
      const requestProblem = options.request === undefined ? null : requestIdProblem(options.request);
      if (requestProblem !== null) throw new CliFailure(`The request id is invalid (--request: ${requestProblem}); no refund or credit can be proposed under it.`, EXIT_BAD_INPUT);
      const effectId = given ?? (options.request === undefined ? undefined : effectIdFor({ requestId: options.request, effect: {} }));
      if (effectId === undefined) throw new CliFailure('Give an effect id, or --request ID.', EXIT_BAD_INPUT);
      if (!isEffectId(effectId)) throw new CliFailure(`"${effectId.slice(0, 80)}" is not an effect id (64 lowercase hex characters).`, EXIT_BAD_INPUT);
      await withStores(async (stores) => {
        const shown = await describeEffect(stores, effectId);
        if (shown === null) {
          // Asked by request id, the answer names it: the effect id is derived from it, and the user never saw it.
          const what = options.request === undefined ? `effect ${effectId}` : `effect for request ${shownRequest(options.request)} (effect ${effectId})`;
          throw new CliFailure(`No ${what} ${whereLooked(stores.config)}.`, EXIT_FAILED);
        }
        printJson(shown);
        warnIfJournalDoesNotVerify(shown);
        process.exitCode = exitForShown(shown);
      }, { readOnly: true });
    });

  /**
   * One alert on its line, its money in its own currency (an alert raised before alerts carried one, in dollars as it
   * was); a resolved one (`--all`) says so, and who resolved it, in place of what to do.
   */
  const alertLine = (alert: Alert): string => {
    // The whole alert id (<kind>:<effect id>), as `interlock alerts resolve` takes it.
    const head = `${new Date(alert.raisedAt).toISOString()} ${alert.id} ${moneyText(alert.centsAtStake, alert.currency ?? null)} at stake: ${alert.sentence}`;
    if (alert.resolvedAt === null) return `${head} What to do: ${alert.action}`;
    return `${new Date(alert.raisedAt).toISOString()} RESOLVED ${head.slice(head.indexOf(' ') + 1)} Resolved by ${alert.resolvedBy ?? 'someone'} at ${new Date(alert.resolvedAt).toISOString()}.`;
  };

  const alerts = program
    .command('alerts')
    .description('money at stake (exposure, refunds that failed after landing, late landings, proposals not judged), newest first')
    .option('--all', 'resolved alerts too')
    .option('--json', 'one JSON object (default: one line per alert)')
    .action(async (options: { all?: boolean; json?: boolean }) => {
      await withStores(async ({ stores, config }) => {
        // Every alert, page after page: the oldest open alerts are the money at stake longest, so none may fall off
        // the end of a first page. The pages follow the list's cursor, so an alert raised meanwhile shifts nothing.
        const alerts: Alert[] = [];
        let cursor: string | undefined;
        do {
          const page = await stores.alerts.page({ all: options.all ?? false, limit: ALERTS_PAGE, ...(cursor === undefined ? {} : { cursor }) });
          alerts.push(...page.data);
          if (!options.json) for (const alert of page.data) printLine(alertLine(alert));
          cursor = page.next ?? undefined;
        } while (cursor !== undefined);
        if (options.json) printJson({ alerts });
        else if (alerts.length === 0) printLine(options.all ? 'No alerts.' : 'No open alerts.');
        // None read from the default Redis the command fell back to says nothing of the service's: said on stderr,
        // so stdout stays the list.
        const note = alerts.length === 0 ? fellBackNote(config) : null;
        if (note !== null) printProblem(note);
      }, { readOnly: true });
    });

  // Later facts resolve an alert they undo; what only a person can close (a late landing the customer was told of,
  // an exposure whose loss was accepted) is resolved here, naming who.
  alerts
    .command('resolve')
    .description('resolve an alert once what it asks is done (the customer told, the dispute answered or the loss accepted)')
    .argument('<id>', 'the alert id (<kind>:<effect id>, as `interlock alerts --json` shows it)', alertId)
    .requiredOption('--by <name>', 'who resolves it (recorded on the alert)', personOf)
    .action(async (id: string, options: { by: string }) => {
      // Only an exposure alert's resolve records an entry (it dismisses the alert's inbox item, signed).
      await withStores(async ({ stores, config }) => {
        const done = await resolveAlert(stores, id, { name: options.by, role: CLI_ROLE });
        if (done === null) throw new CliFailure(`No alert ${id} ${whereLooked(config)}; \`interlock alerts --all\` lists them.`, EXIT_FAILED);
        const { alert } = done;
        if (!done.resolved) throw new CliFailure(`Alert ${id} was resolved already, by ${alert.resolvedBy ?? 'someone'} at ${new Date(alert.resolvedAt ?? 0).toISOString()}. Nothing was changed.`, EXIT_FAILED);
        whenOutputLost(`Alert ${id} is resolved, by ${options.by}: \`interlock alerts --all\` shows it.`, true);
        printJson(alert);
      }, { signs: id.startsWith('exposure:') });
    });
}
