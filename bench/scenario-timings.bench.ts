// Scenario timings (issue 12 §5): runs the seeds' scenarios with `interlock scenario all --delays fast` (each cell:
// real worker processes, a real SIGKILL, the outage, a restart; see scenarios/README.md) into a temporary
// directory, and summarises each scenario's cells by column: crash → settled and restart → settled (median, max).
// `--quick` runs one stripe_dispute row for the gate only. BENCH_SCENARIOS_FROM=DIR summarises the JSON files a
// previous `interlock scenario` run wrote there instead of running it again (the page says which run it was).
// Targets (issue 12 §3): a gate cell whose facts held (resent under the key: COMMITTED_BY_RETRY) settles ≤ 1.5 s
// after the restart; every gate cell with a restart settles within the settle margin (+ the same 1.5 s) of it.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { finish, markdownTable, median, QUICK, ROOT } from './support.js';

type Cell = { row: string; column: string; rep: number; outcome: string | null; settle_s: number | null; settle_after_restart_s: number | null };
type Scenario = { scenario: string; generated: string; backend: string; delays?: string; settle_margin_s?: number; cells: Cell[] };

const from = process.env.BENCH_SCENARIOS_FROM;
const dir = from ?? mkdtempSync(join(tmpdir(), 'interlock-bench-scenarios-'));
try {
  if (from === undefined) {
    const args = QUICK ? ['scenario', 'stripe-dispute', '--delays', 'fast', '--columns', 'interlock', '--rows', 'crash_before_send_chargeback_during_outage'] : ['scenario', 'all', '--delays', 'fast'];
    // The command shows its own progress on stderr; its summary on stdout is not needed here.
    execFileSync(process.execPath, [join(ROOT, 'bin', 'interlock.js'), ...args, '--out', dir], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, INTERLOCK_LOG_LEVEL: 'warn' } });
  }
  if (!existsSync(dir)) throw new Error(`BENCH_SCENARIOS_FROM=${dir} does not exist`);
} catch (error) {
  if (from === undefined) rmSync(dir, { recursive: true, force: true });
  throw error;
}
const scenarios: Scenario[] = readdirSync(dir)
  .filter((name) => name.endsWith('.json'))
  .sort()
  .map((name) => JSON.parse(readFileSync(join(dir, name), 'utf8')) as Scenario)
  .filter((scenario) => Array.isArray(scenario.cells));
if (from === undefined) rmSync(dir, { recursive: true, force: true });
if (scenarios.length === 0) throw new Error(`no scenario JSON in ${dir}`);

const seconds = (values: (number | null)[]) => values.filter((value): value is number => typeof value === 'number');
const rows: { scenario: string; column: string; cells: number; settleMedian: number; settleMax: number; afterRestartMedian: number; afterRestartMax: number }[] = [];
for (const scenario of scenarios) {
  for (const column of [...new Set(scenario.cells.map((cell) => cell.column))]) {
    const cells = scenario.cells.filter((cell) => cell.column === column);
    const settle = seconds(cells.map((cell) => cell.settle_s));
    const after = seconds(cells.map((cell) => cell.settle_after_restart_s));
    rows.push({ scenario: scenario.scenario, column, cells: cells.length, settleMedian: median(settle), settleMax: settle.length === 0 ? NaN : Math.max(...settle), afterRestartMedian: median(after), afterRestartMax: after.length === 0 ? NaN : Math.max(...after) });
  }
}
const gateCells = scenarios.flatMap((scenario) => scenario.cells.filter((cell) => cell.column === 'interlock' && typeof cell.settle_after_restart_s === 'number').map((cell) => ({ ...cell, margin: scenario.settle_margin_s ?? 10 })));
const held = gateCells.filter((cell) => cell.outcome === 'COMMITTED_BY_RETRY');
const heldMax = held.length === 0 ? null : Math.max(...held.map((cell) => cell.settle_after_restart_s ?? Infinity));
const overMargin = gateCells.filter((cell) => (cell.settle_after_restart_s ?? Infinity) > cell.margin + 1.5);
const source = from === undefined ? `run by this benchmark (\`interlock scenario ${QUICK ? 'stripe-dispute, one row, the gate only' : 'all'} --delays fast\`)` : `read from ${from}, written by an earlier \`interlock scenario\` run`;
const runs = scenarios.map((scenario) => `${scenario.scenario}: ${scenario.backend}, delays ${scenario.delays ?? '?'}, generated ${scenario.generated}`).join('; ');
const table = markdownTable(
  ['scenario', 'column', 'cells', 'crash → settled, median s', 'max s', 'restart → settled, median s', 'max s'],
  rows.map((row) => [row.scenario, row.column, row.cells, row.settleMedian, row.settleMax, row.afterRestartMedian, row.afterRestartMax]),
);
const markdown = `Cells ${source} (${runs}). For the gate, "restart" is the moment the restarted worker serves (scenarios/README.md, Judging).\n\n${table}`;
console.log(`\n${markdown}`);
finish('scenarios', 'Scenario timings (issue 12 §3, §5)', markdown, { source: from ?? 'run', rows, gateCells: gateCells.length }, [
  { target: 'gate cells whose facts held (COMMITTED_BY_RETRY): settled ≤ 1.5 s after the restart (max)', value: heldMax, met: heldMax !== null && heldMax <= 1.5 },
  { target: 'every gate cell with a restart: settled within the settle margin + 1.5 s of it', value: `${gateCells.length - overMargin.length}/${gateCells.length}`, met: gateCells.length > 0 && overMargin.length === 0 },
]);
