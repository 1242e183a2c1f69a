// The outputs: per scenario a JSON file (every cell, every receipt, the public key to check them) and a Markdown
// page in the seeds' shape (the table, the verdict lines computed from the cells, the seeds' comparison, setup,
// rows, the decisions, the ids), and one results page linking them. Every receipt is re-verified from the JSON as
// written, and the answer is stored in the cell.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { publicKeySet, verify, writeFileWhole, type WriteCall } from '../src/interlock.js';
import { cellFailed, type Cell, type Column, type ScenarioResult } from './cells.js';
import { differingCells, seedDifferences } from './seeds.js';
import { failedCellLines, gateProblems } from './verdict.js';

const COLUMN_TEXT: Record<Column, string> = {
  no_check: 'no_check: the saved decision re-sent under a stable Idempotency-Key on restart; no re-read, no log.',
  hand_check: 'hand_check: what a careful engineer writes by hand: its own effect looked up by metadata, the premises and the approval re-read and compared, an fsynced log line per step, the same stable key.',
  hand_lock: 'hand_lock (shared_cap): hand_check inside an exclusive lock file both bots share; a dead holder\'s lock is taken over at once.',
  interlock: "interlock: this project's gate: `interlock serve --roles worker` (INTERLOCK_CRASH_AT for the crash), the proposal made through the scenario's support API (`POST /v1/refunds|credits` with the decision), premises re-read before the send and at recovery, caps reserved at dispatch, a signed receipt with post-send facts.",
};

function yes(value: unknown): string {
  return value === true ? 'yes' : 'no';
}

function matches(value: unknown): string {
  return value === true ? 'matches' : 'CONTRADICTS';
}

function timing(cell: Cell): string {
  if (cell.settle_s === null) return cell.settle_after_restart_s === null ? 'no crash' : `${cell.settle_after_restart_s}s after restart`;
  return `${cell.settle_s}s crash to settled (${cell.settle_after_restart_s ?? '?'}s after restart)`;
}

/** A cell that failed to run, in a table: its error on one line, with no `|` to end the table's cell. */
function failedText(cell: Cell): string {
  return `**CELL FAILED**${cell.rep > 1 ? ` #${cell.rep}` : ''}: ${String(cell.error).replace(/\s+/g, ' ').replace(/\|/g, '\\|').slice(0, 300)}`;
}

function dollars(cents: number): string {
  return `$${(cents / 100).toFixed(0)}`;
}

function disputeText(cell: Cell): string {
  const refunds = (cell.stripe.refunds as { status: string; failure_reason: string | null }[]) ?? [];
  const final = refunds.length === 0 ? 'none' : refunds.map((r) => `${r.status}${r.failure_reason === null ? '' : ` (${r.failure_reason})`}`).join(', ');
  const parts = [
    cell.outcome,
    `${String(cell.issued)} refund object(s) (final: ${final}), want ${String(cell.want_refunds)}`,
    `created at or after the chargeback: ${cell.created_at_or_after_chargeback === 0 ? 'none' : String(cell.created_at_or_after_chargeback)}`,
    `money returned: ${yes(cell.money_returned)}`,
    `dispute ${String(cell.dispute_status)}`,
    cell.held ? 'held' : '**VIOLATED**',
    `answer vs refund objects: ${matches(cell.answer_matches_refund_objects)}`,
    `answer vs final money: ${matches(cell.answer_matches_final_money)}${cell.column === 'interlock' ? ` (receipt: ${String(cell.receipt_answer)})` : ''}`,
    timing(cell),
    `proof ${yes(cell.proof)} (tamper-evident ${yes(cell.tamper_evident)})`,
  ];
  if (cell.row.startsWith('gap_probe')) parts.push(exposureText(cell.exposure as Parameters<typeof exposureText>[0]));
  return parts.join('; ');
}

/**
 * The gap probe's exposure as its receipt states it: `cents`, what the refund and the chargeback returned twice, and the
 * charge it is weighed against as the dispute's facts read it. A receipt whose dispute facts did not carry the charge
 * (signed before they did) counts the refund and the chargeback whole, and the text says so.
 */
function exposureText(exposure: { cents: number; refundCents: number; chargebackCents: number; chargeCents?: number | null } | null | undefined): string {
  if (exposure === null || exposure === undefined) return 'exposure: nothing said';
  const charge = exposure.chargeCents ?? null;
  const weighed = charge === null ? `the ${dollars(exposure.refundCents)} refund and the ${dollars(exposure.chargebackCents)} chargeback counted whole: the dispute's facts did not carry its charge` : `the ${dollars(exposure.refundCents)} refund, then ${dollars(exposure.chargebackCents)} charged back on a ${dollars(charge)} charge`;
  return `**exposure flagged: ${dollars(exposure.cents)} returned twice** (${weighed})`;
}

function billingText(cell: Cell): string {
  const truth = cell.ground_truth as { case_credit_count: number; case_credit_cents: number };
  const want = cell.want as { case_credit_count: number; case_credit_cents: number };
  const via = typeof cell.via === 'string' ? ` via ${cell.via}` : '';
  return [
    `${cell.outcome}${via}`,
    `${truth.case_credit_count} case credit(s), ${dollars(truth.case_credit_cents)} (want ${want.case_credit_count}, ${dollars(want.case_credit_cents)})`,
    cell.held ? 'held' : '**VIOLATED**',
    `answer ${matches(cell.answer_matches_final_money)} Stripe`,
    `proof ${yes(cell.proof)}`,
    timing(cell),
  ].join('; ');
}

function median(values: number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] ?? null) : Math.round((((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2) * 10) / 10;
}

function capText(cells: Cell[]): string {
  const held = cells.filter((cell) => cell.held).length;
  const totals = new Map<string, number>();
  for (const cell of cells) {
    const key = `${dollars(Number(cell.total_cents))} in ${String(cell.count)}`;
    totals.set(key, (totals.get(key) ?? 0) + 1);
  }
  const crashes = cells.filter((cell) => cell.crashed_bot !== null).length;
  const outcomes = new Map<string, number>();
  for (const cell of cells) outcomes.set(cell.outcome, (outcomes.get(cell.outcome) ?? 0) + 1);
  return [
    `**held ${held}/${cells.length}**`,
    `Stripe: ${[...totals].map(([key, n]) => `${n}x ${key}`).join(', ')}`,
    `crash in ${crashes}/${cells.length}`,
    `median ${median(cells.flatMap((cell) => (cell.settle_s === null ? [] : [cell.settle_s]))) ?? '?'}s crash to settled (${median(cells.flatMap((cell) => (cell.settle_after_restart_s === null ? [] : [cell.settle_after_restart_s]))) ?? '?'}s after restart)`,
    `provable ${cells.filter((cell) => cell.proof).length}/${cells.length}`,
    [...outcomes].map(([outcome, n]) => `${n}x ${outcome}`).join('; '),
  ].join('; ');
}

function columnsOf(result: ScenarioResult): Column[] {
  const order: Column[] = ['no_check', 'hand_check', 'hand_lock', 'interlock'];
  return order.filter((column) => result.cells.some((cell) => cell.column === column));
}

function rowsOf(result: ScenarioResult): string[] {
  return [...new Set(result.cells.map((cell) => cell.row))];
}

/** The scenario's table: one row per seed row, one column per system, each cell as the seeds wrote theirs. */
export function table(result: ScenarioResult): string {
  const columns = columnsOf(result);
  const lines = [`| ${result.scenario === 'billing_credit' ? 'crash / outage' : result.scenario === 'shared_cap' ? 'crash point' : 'fault'} | ${columns.join(' | ')} |`, `|---|${columns.map(() => '---').join('|')}|`];
  for (const row of rowsOf(result)) {
    const texts = columns.map((column) => {
      const cells = result.cells.filter((cell) => cell.row === row && cell.column === column);
      if (cells.length === 0) return '—';
      const ran = cells.filter((cell) => !cellFailed(cell));
      const failed = cells.filter(cellFailed).map(failedText);
      if (result.scenario === 'shared_cap') return [...(ran.length === 0 ? [] : [capText(ran)]), ...failed].join('<br>');
      const render = result.scenario === 'stripe_dispute' ? disputeText : billingText;
      return cells.map((cell) => (cellFailed(cell) ? failedText(cell) : render(cell))).join('<br>');
    });
    lines.push(`| ${row} | ${texts.join(' | ')} |`);
  }
  return lines.join('\n');
}

/** One line per column, computed from its cells. */
export function verdictLines(result: ScenarioResult): string[] {
  return columnsOf(result).map((column) => {
    // Counted over the cells that ran: a failed cell was not judged, and is said apart.
    const cells = result.cells.filter((cell) => cell.column === column && !cellFailed(cell));
    const failed = result.cells.filter((cell) => cell.column === column && cellFailed(cell)).length;
    const n = cells.length;
    const count = (pick: (cell: Cell) => boolean) => cells.filter(pick).length;
    const after = median(cells.flatMap((cell) => (cell.settle_after_restart_s === null ? [] : [cell.settle_after_restart_s])));
    const parts = [`invariant held ${count((cell) => cell.held)}/${n}`, `answer matched Stripe's final money ${count((cell) => cell.answer_matches_final_money)}/${n}`, `can prove what happened ${count((cell) => cell.proof)}/${n}`, `tamper-evident ${count((cell) => cell.tamper_evident)}/${n}`];
    if (result.scenario === 'stripe_dispute') {
      const gap = cells.filter((cell) => cell.row.startsWith('gap_probe'));
      if (gap.length > 0) parts.push(`exposure flagged in the gap probe ${count((cell) => cell.row.startsWith('gap_probe') && (cell.exposure ?? null) !== null)}/${gap.length}`);
    }
    // A column none of whose cells restarted (a run of the gap probe alone) has no time after a restart to give.
    parts.push(after === null ? 'no restart' : `median ${after}s after restart`);
    if (failed > 0) parts.push(`**${failed} cell${failed === 1 ? '' : 's'} failed to run**`);
    return `- **${column}**: ${parts.join(', ')}`;
  });
}

function ids(result: ScenarioResult): string[] {
  return result.cells.map((cell) => `- ${cell.row} / ${cell.column}${result.reps > 1 ? ` #${cell.rep}` : ''}: ${Object.entries(cell.stripe).filter(([, value]) => typeof value === 'string').map(([key, value]) => `${key} ${String(value)}`).join('; ')}${typeof cell.effect_id === 'string' ? `; effect ${cell.effect_id.slice(0, 16)}…; journal ${((cell.journal as string[] | undefined) ?? []).join(' ')}` : ''}`);
}

function decisions(result: ScenarioResult): string[] {
  return result.cells.slice(0, 40).map((cell) => {
    const decision = (cell.decision ?? Object.values((cell.decisions ?? {}) as Record<string, unknown>)[0]) as { amount?: number; reason?: string; description?: string; text?: string; model?: string } | undefined;
    return `- ${cell.row} / ${cell.column}${result.reps > 1 ? ` #${cell.rep}` : ''}: ${String(decision?.amount ?? '?')} cents by ${String(decision?.model ?? '?')}, "${String(decision?.reason ?? decision?.description ?? decision?.text ?? '')}"`;
  });
}

const TITLES: Record<string, string> = {
  stripe_dispute: 'stripe_dispute: a chargeback opens while the worker is down',
  billing_credit: 'billing_credit: a goodwill credit against a Stripe Billing renewal',
  shared_cap: 'shared_cap: two agents, one $30 approval cap, one payment',
};

/** The command that reproduces a result: the one its run recorded, or (results written before it did) the plain one. */
function commandOf(result: ScenarioResult): string {
  if (typeof result.command === 'string') return result.command;
  return `npx interlock scenario ${result.scenario.replace('_', '-')}${result.reps > 1 ? ` --reps ${result.reps}` : ''} --delays ${result.delays}`;
}

/** The gate's section when no check failed: what that says depends on how many of its cells ran. */
function gateUnfailedText(result: ScenarioResult): string {
  const gate = result.cells.filter((cell) => cell.column === 'interlock');
  const failed = gate.filter(cellFailed).length;
  if (gate.length === 0) return 'No gate cell was asked for.';
  if (failed === gate.length) return `No gate cell ran (${failed} failed to run, listed below): nothing here shows what the gate does.`;
  const all = 'held its invariant, answered what Stripe finally holds, proved it with a tamper-evident receipt, and settled in time (1.5 s after the restart where the facts held, the settle margin where they changed; never a claim-TTL wait).';
  return failed === 0 ? `Every gate cell ${all}` : `Every gate cell that ran (${gate.length - failed} of ${gate.length}; the others are listed below) ${all}`;
}

/** The seeds' section when no baseline cell differs from the seed: what that says depends on how many of them ran. */
function seedsMatchedText(result: ScenarioResult): string {
  const baseline = result.cells.filter((cell) => cell.column !== 'interlock');
  const failed = baseline.filter(cellFailed).length;
  if (baseline.length === 0) return 'No baseline cell was asked for: nothing here is compared with the seeds.';
  if (failed === baseline.length) return `No baseline cell ran (${failed} failed to run, listed above): nothing here is compared with the seeds.`;
  const all = "reproduces the seed's outcome (the seeds' Stripe test-mode runs; rows the seed did not run are compared with its prediction).";
  return failed === 0 ? `Every baseline cell ${all}` : `Every baseline cell that ran (${baseline.length - failed} of ${baseline.length}; the others are listed above) ${all}`;
}

export function page(result: ScenarioResult): string {
  const differing = differingCells(result.scenario, result.cells);
  const differences = differing.map((difference) => difference.line);
  const problems = result.cells.flatMap((cell) => gateProblems(cell, Number(result.settle_margin_s ?? 10)));
  const backend = result.backend === 'sandbox' ? `the offline Stripe sandbox (\`--delays ${result.delays}\`)` : typeof result.stripe_api_base === 'string' ? `Stripe test mode through ${result.stripe_api_base} (STRIPE_API_BASE)` : 'Stripe test mode';
  const lines = [
    `# ${TITLES[result.scenario] ?? result.scenario}`,
    '',
    `Generated ${result.generated} by \`${commandOf(result)}\` against ${backend}; decisions by \`${result.model}\`; every crash a real SIGKILL of the worker process, every restart a new process.`,
    '',
    ...machineLine(result),
    ...(typeof result.world_error === 'string' ? [`**None of these cells ran**: the scenario's world (sandbox or test mode, the support API, the Redis stores) did not open: ${result.world_error}`, ''] : []),
    ...(typeof result.scenario_error === 'string' ? [`**No cell of this scenario could be judged**: it stopped outside its cells: ${result.scenario_error}`, ''] : []),
    table(result),
    '',
    ...verdictLines(result),
    '',
    '## The gate against issue 12 §3',
    '',
    problems.length === 0 ? gateUnfailedText(result) : problems.map((problem) => `- ${problem}`).join('\n'),
    '',
    ...(failedCellLines(result.cells).length === 0 ? [] : ['## Cells that failed to run', '', 'These cells threw before they could be judged; the run went on with the others and exited 1.', '', ...failedCellLines(result.cells).map((line) => `- ${line}`), '']),
    '## Against the seeds',
    '',
    differences.length === 0
      ? seedsMatchedText(result)
      : result.scenario === 'shared_cap' && differing.every((difference) => difference.column === 'hand_check')
        ? `These baseline cells differ from the seed, all of them hand_check's. hand_check is a race (check, then send, no shared state): whether both refunds land depends on when each bot re-reads, so its count is timing, not a rule (a bot process that is slow to start or restart, on a loaded machine, reads after the other bot committed); neither the sandbox nor the baseline is wrong. no_check never holding and hand_lock always holding are rules, and those cells match the seed.\n\n${differences.map((line) => `- ${line}`).join('\n')}`
        : `These baseline cells differ from the seed; the baselines follow the seed's code as described, so the difference is the sandbox's unless the note says otherwise:\n\n${differences.map((line) => `- ${line}`).join('\n')}`,
    '',
    '## Columns',
    '',
    ...columnsOf(result).map((column) => `- ${COLUMN_TEXT[column]}`),
    '',
    ...(Array.isArray(result.rows) ? ['## Rows', '', ...(result.rows as { row: string; description: string }[]).map((row) => `- **${row.row}**: ${row.description}`), ''] : []),
    ...(Array.isArray(result.skipped_rows) && result.skipped_rows.length > 0 ? ['Not run here: ' + (result.skipped_rows as { row: string; why: string }[]).map((row) => `${row.row} (${row.why})`).join('; ') + '.', ''] : []),
    ...(Array.isArray(result.premise_candidates) ? ['## Premise candidates', '', premiseTable(result.premise_candidates as Record<string, unknown>[]), ''] : []),
    '## Decisions',
    '',
    ...decisions(result),
    '',
    '## Ids',
    '',
    ...ids(result),
    '',
    `Every receipt is in \`${result.scenario}.json\` with the public key that checks it (\`public_key\`), re-verified from that file (\`receipt_reverified_from_results\`)${unverified(result)}.`,
    '',
  ];
  return lines.join('\n');
}

function machineLine(result: ScenarioResult): string[] {
  const machine = result.machine as { cores: number; load_average_at_start: number; load_average_at_end: number } | undefined;
  if (machine === undefined) return [];
  return [
    `Machine: ${machine.cores} cores, 1-minute load average ${machine.load_average_at_start} at the start and ${machine.load_average_at_end} at the end. Times after a restart count from the moment the restarted process was ready (the gate's worker: serving; its start itself is \`answer.worker_started_s\` in the JSON), so on a loaded machine they include the recovery's own waiting for CPU.`,
    '',
  ];
}

function premiseTable(rows: Record<string, unknown>[]): string {
  const names = ['customer_balance', 'compensation_by_others', 'incident_compensation'];
  const lines = [`| crash / outage | want | ${names.map((name) => `${name} decision -> crash -> restart`).join(' | ')} |`, `|---|---|${names.map(() => '---').join('|')}|`];
  for (const row of rows) {
    const cells = names.map((name) => {
      const c = row[name] as { values: number[] | null; refuses_at_restart: number; would_refuse_at_crash: number; of: number; right: boolean | null };
      // A row none of whose cells ran (not asked for, or every cell failed) judges no candidate.
      if (c.right === null || c.of === 0) return 'not run';
      const values = c.values === null ? '?' : c.values.join(' -> ');
      return `${values}; refuses at restart ${c.refuses_at_restart}/${c.of}${c.would_refuse_at_crash > 0 ? `, would refuse at crash ${c.would_refuse_at_crash}/${c.of}` : ''}; ${c.right ? 'right' : '**WRONG**'}`;
    });
    lines.push(`| ${String(row.row)} | ${String(row.want)} | ${cells.join(' | ')} |`);
  }
  return lines.join('\n');
}

/** What the page says of receipts that did not verify from the results file: nothing when all did. */
function unverified(result: ScenarioResult): string {
  const failed = result.cells.filter((cell) => cell.receipt_reverified_from_results === false);
  return failed.length === 0 ? '' : `: **${failed.length} cell${failed.length === 1 ? "'s receipts do" : "s' receipts do"} not verify from it** (${failed.map((cell) => `${cell.row} / ${cell.column} #${cell.rep}`).join(', ')})`;
}

/**
 * Writes `text` to `file` whole or not at all (writeFileWhole: a temporary file beside it, flushed, renamed over it),
 * so a full disk or a killed run leaves the previous file as it was, never half of the new one (the index parses every
 * JSON file in the folder, and one cut short would fail every later run and render). `write` is for a test's full disk.
 */
export function writeWhole(file: string, text: string, write?: WriteCall): void {
  try {
    writeFileWhole(file, text, { replace: true, ...(write === undefined ? {} : { write }) });
  } catch (error) {
    // The file system's own words (writeFileWhole says them of the file, which this sentence names already).
    const cause = (error as { cause?: unknown }).cause ?? error;
    const kept = existsSync(file) ? 'it keeps its previous results' : 'it was not created';
    throw new Error(`Could not write ${file} (${cause instanceof Error ? cause.message : String(cause)}): ${kept}.`, { cause: error });
  }
}

/** Parses a results file's text and verifies every receipt in it with the key it names, noting the answer in its cell. */
function reverified(text: string): ScenarioResult {
  // A scenario whose world did not open has no key, and no receipt to check with one.
  const written = JSON.parse(text) as ScenarioResult & { public_key?: string };
  const keys = publicKeySet(written.public_key === undefined ? [] : [written.public_key]);
  for (const cell of written.cells) {
    const receipts: unknown[] = [];
    if (cell.receipt !== undefined) receipts.push(cell.receipt);
    for (const entry of Object.values((cell.receipts ?? {}) as Record<string, { receipt?: unknown }>)) if (entry.receipt !== undefined) receipts.push(entry.receipt);
    if (receipts.length === 0) continue;
    cell.receipt_reverified_from_results = receipts.every((receipt) => verify(receipt, { publicKeys: keys }).valid === true);
  }
  return written;
}

/**
 * Writes a scenario's JSON file and its page, for a run and for a render alike: the receipts are re-verified from the
 * JSON text the file is made of first, so a receipt that does not survive it is one of the gate's problems (the run
 * exits 1 for it), not only a field of the file; then the verdict, the gate's problems and the seeds' differences are
 * computed from the cells so verified, and the JSON, which says what its page says, is written once, whole.
 * `result`'s cells get the answer too.
 */
function writeScenario(json: string, result: ScenarioResult): string[] {
  const reread = reverified(`${JSON.stringify(result, null, 2)}\n`).cells;
  result.cells.forEach((cell, index) => {
    const reverified = reread[index]?.receipt_reverified_from_results;
    if (typeof reverified === 'boolean') cell.receipt_reverified_from_results = reverified;
  });
  const enriched = { ...result, verdict: verdictLines(result), gate_problems: result.cells.flatMap((cell) => gateProblems(cell, Number(result.settle_margin_s ?? 10))), seed_differences: seedDifferences(result.scenario, result.cells) };
  const text = `${JSON.stringify(enriched, null, 2)}\n`;
  writeWhole(json, text);
  const md = json.replace(/\.json$/, '.md');
  writeWhole(md, page(JSON.parse(text) as ScenarioResult));
  return [json, md];
}

export function writeResults(out: string, results: ScenarioResult[]): string[] {
  const files: string[] = [];
  for (const result of results) {
    // A scenario none of whose rows or columns was asked for keeps the results it had.
    if (result.cells.length === 0) continue;
    const json = join(out, `${result.scenario}.json`);
    // So does one none of whose cells ran (Stripe unreachable, its world not opened): a page of failures would replace
    // results that stand, and the README's tables copied from them. The run still exits 1, listing the failures.
    if (result.cells.every(cellFailed) && existsSync(json)) {
      process.stderr.write(`${result.scenario}: none of its ${result.cells.length} cells ran, so ${json} and its page keep the results they had; the failures are listed below.\n`);
      continue;
    }
    files.push(...writeScenario(json, result));
  }
  // The index is left as it is when no scenario was written: it already says what the folder holds.
  if (files.length > 0 || !existsSync(join(out, 'README.md'))) files.push(writeIndex(out));
  return files;
}

/**
 * The line every results index carries: a folder whose README.md has it was written by a run, and a run may replace
 * its files (out-folder.ts); a README.md without it is someone's own, which a run never replaces.
 */
export const RESULTS_MARKER = '<!-- written by `npx interlock scenario`: this index, and a page and a JSON file per scenario beside it, are replaced by the next run into this folder -->';

/** The scenarios' keys, as their files are named (`<key>.json`, `<key>.md`). */
export const RESULT_KEYS: readonly string[] = Object.keys(TITLES);

/** The results page: a link and a summary table per scenario whose JSON is in the folder (running one keeps the others). */
export function writeIndex(out: string): string {
  const present = Object.keys(TITLES).filter((name) => existsSync(join(out, `${name}.json`))).map((name) => JSON.parse(readFileSync(join(out, `${name}.json`), 'utf8')) as ScenarioResult);
  const index = join(out, 'README.md');
  const lines = ['# Scenario results', '', RESULTS_MARKER, '', 'The latest run of `npx interlock scenario`, one page and one JSON file per scenario:', ''];
  for (const result of present) lines.push(`- [${TITLES[result.scenario] ?? result.scenario}](${result.scenario}.md) ([JSON](${result.scenario}.json)): ${result.backend}, \`--delays ${result.delays}\`, ${result.cells.length} cells, ${result.generated}`);
  for (const result of present) lines.push('', `## ${result.scenario}`, '', summaryTable(result), '', ...verdictLines(result));
  writeWhole(index, `${lines.join('\n')}\n`);
  return index;
}

/** A folder to render that holds no results: its message says so and how to produce them. */
export class NoResultsError extends Error {}

/**
 * Re-renders every page and the index from the JSON files in the folder (nothing is run, Stripe is not called), as a
 * run writes them: each JSON file's receipts re-verified and its verdict, gate problems and seed differences
 * recomputed, so the file a script reads never keeps saying what its new page no longer does. A
 * folder with none of them is refused, writing nothing: an index of no scenario is not a rendering, and a folder that
 * is not there would otherwise end in a refusal to write its index, as if writing were what went wrong.
 */
export function renderFromJson(out: string): string[] {
  if (!Object.keys(TITLES).some((name) => existsSync(join(out, `${name}.json`)))) {
    const what = existsSync(out) ? 'holds no scenario results' : 'does not exist';
    throw new NoResultsError(`${out} ${what}: render re-renders the pages from the JSON files a run writes there (${Object.keys(TITLES).map((name) => `${name}.json`).join(', ')}), and it has none. Run the scenarios first (\`npx interlock scenario all --out ${out}\`), or give --out the folder a run wrote (by default scenarios/results).`);
  }
  const files: string[] = [];
  for (const name of Object.keys(TITLES)) {
    const json = join(out, `${name}.json`);
    if (!existsSync(json)) continue;
    files.push(...writeScenario(json, JSON.parse(readFileSync(json, 'utf8')) as ScenarioResult));
  }
  files.push(writeIndex(out));
  return files;
}

/** The markers around the scenario tables in the project's README, which holds a copy of the results index. */
export const README_MARKERS = { start: '<!-- the scenario tables, copied from scenarios/results/README.md -->', end: '<!-- end of the scenario tables -->' } as const;

/**
 * The results index as the project's README carries it: from the list of scenarios on (no title, no intro), each
 * link pointing into scenarios/results/, each scenario's heading two levels down.
 */
export function readmeTables(index: string): string {
  const lines = index.split('\n');
  const first = lines.findIndex((line) => line.startsWith('- ['));
  if (first === -1) throw new Error('the results index lists no scenario');
  const body = lines
    .slice(first)
    .join('\n')
    .replace(/\]\((\w+\.(?:md|json))\)/g, '](scenarios/results/$1)')
    .replace(/^## /gm, '#### ');
  return `${body.trimEnd()}\n`;
}

/**
 * Copies the index in `out` into the README at `readme`, between README_MARKERS; answers whether the README changed.
 * A README without both markers, in that order, is left alone and refused. The README is written whole or not at all
 * (writeWhole): a disk that fills up keeps the previous one, never half of the project's README. `write` is for a test's
 * full disk.
 */
export function copyTablesToReadme(out: string, readme: string, write?: WriteCall): boolean {
  const text = readFileSync(readme, 'utf8');
  const start = text.indexOf(README_MARKERS.start);
  const end = text.indexOf(README_MARKERS.end);
  // No full stop at the end: the command's sentence goes on after it (". Run it from the project's root …").
  if (start === -1 || end === -1 || end < start) throw new Error(`${readme} has no place for the scenario tables: it needs the lines ${README_MARKERS.start} and ${README_MARKERS.end}, in that order`);
  const from = text.indexOf('\n', start) + 1;
  const updated = text.slice(0, from) + readmeTables(readFileSync(join(out, 'README.md'), 'utf8')) + text.slice(end);
  if (updated === text) return false;
  writeWhole(readme, updated, write);
  return true;
}

function shortCell(cell: Cell): string {
  if (cellFailed(cell)) return failedText(cell);
  const after = cell.settle_after_restart_s === null ? 'no crash' : `${cell.settle_after_restart_s} s after restart`;
  const extra = cell.row.startsWith('gap_probe') ? ((cell.exposure ?? null) !== null ? '; **exposure flagged**' : '; exposure not seen') : '';
  return `${cell.outcome}; ${cell.held ? 'held' : '**VIOLATED**'}; final money ${matches(cell.answer_matches_final_money)}; proof ${yes(cell.proof)}${cell.tamper_evident ? ' (tamper-evident)' : ''}; ${after}${extra}`;
}

/** The table in a line per cell: outcome, invariant, answer vs final money, proof, time after the restart. */
export function summaryTable(result: ScenarioResult): string {
  if (result.scenario === 'shared_cap') return table(result);
  const columns = columnsOf(result);
  const lines = [`| ${result.scenario === 'billing_credit' ? 'crash / outage' : 'fault'} | ${columns.join(' | ')} |`, `|---|${columns.map(() => '---').join('|')}|`];
  for (const row of rowsOf(result)) lines.push(`| ${row} | ${columns.map((column) => result.cells.filter((cell) => cell.row === row && cell.column === column).map(shortCell).join('<br>') || '—').join(' | ')} |`);
  return lines.join('\n');
}
