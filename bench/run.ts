// Runs the benchmarks in this folder (files named *.bench.ts), one process each, in name order, then writes the
// one results page: bench/results/latest.md (from latest.json: every section's tables and targets, the machine,
// the date). `npm run bench -- --only NAME[,NAME]` runs the benchmarks whose file name contains a NAME;
// `--quick` runs each briefly (to check it still works) and writes quick.json and quick.md instead, so a quick run
// never replaces the figures of a full one. Progress goes to stderr; each benchmark's tables to stdout.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { Command } from 'commander';
import { RESULTS_DIR, TARGETS_MISSED, type Target } from './support.js';

const here = dirname(fileURLToPath(import.meta.url));
const tsxCli = createRequire(import.meta.url).resolve('tsx/cli');
const all = readdirSync(here)
  .filter((name) => name.endsWith('.bench.ts'))
  .sort();

const options = new Command('bench')
  .description('run the benchmarks and write bench/results/latest.json and latest.md')
  .option('--only <names>', `comma-separated parts of benchmark file names: ${all.map((name) => name.replace('.bench.ts', '')).join(', ')}`)
  .option('--quick', 'each benchmark briefly, to check it works (writes quick.json and quick.md)', false)
  .option('--page', 'run nothing: write the results page again from the results file', false)
  .parse(process.argv)
  .opts<{ only?: string; quick: boolean; page: boolean }>();

const wanted = options.only?.split(',').map((name) => name.trim()).filter((name) => name !== '') ?? [];
const files = options.page ? [] : all.filter((name) => wanted.length === 0 || wanted.some((part) => name.includes(part)));
if (files.length === 0 && !options.page) {
  console.error(`--only ${options.only ?? ''} matches no benchmark; there are ${all.join(', ')}.`);
  process.exit(2);
}

const resultsJson = join(RESULTS_DIR, options.quick ? 'quick.json' : 'latest.json');
const resultsMd = join(RESULTS_DIR, options.quick ? 'quick.md' : 'latest.md');

type Ran = { file: string; status: 'met' | 'missed' | 'failed'; seconds: number };
const ran: Ran[] = [];
for (const [index, file] of files.entries()) {
  process.stderr.write(`\n[${index + 1}/${files.length}] ${file}${options.quick ? ' (quick)' : ''}\n`);
  console.log(`\n== ${file}`);
  const started = Date.now();
  const run = spawnSync(process.execPath, [tsxCli, join(here, file)], { stdio: 'inherit', env: { ...process.env, NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --expose-gc`.trim(), ...(options.quick ? { BENCH_QUICK: '1' } : {}) } });
  const status = run.status === 0 ? 'met' : run.status === TARGETS_MISSED ? 'missed' : 'failed';
  ran.push({ file, status, seconds: Math.round((Date.now() - started) / 1000) });
  const said = status === 'failed' ? `failed (exit ${String(run.status ?? run.signal)})` : options.quick ? 'ran (quick: figures not judged)' : status === 'met' ? 'targets met' : 'a target missed';
  process.stderr.write(`[${index + 1}/${files.length}] ${file}: ${said} in ${ran.at(-1)?.seconds} s\n`);
}

function redisVersion(): string {
  try {
    return /v=([0-9.]+)/.exec(execFileSync('redis-server', ['--version'], { encoding: 'utf8' }))?.[1] ?? 'unknown';
  } catch {
    return 'not found';
  }
}

type Section = { title?: string; markdown?: string; targets?: Target[]; recordedAt?: string; quick?: boolean; machine?: { node?: string } };

/** The order sections appear in on the page (sections not listed follow, by name). */
const ORDER = ['gateThroughput', 'gateConstantCost', 'pipelineThroughput', 'crashSettle', 'webhookIngest', 'service', 'verify', 'sandboxThroughput', 'scenarios'];

function page(results: Record<string, Section>): string {
  const names = Object.keys(results).sort((a, b) => (ORDER.indexOf(a) === -1 ? 99 : ORDER.indexOf(a)) - (ORDER.indexOf(b) === -1 ? 99 : ORDER.indexOf(b)) || a.localeCompare(b));
  const lines = [
    `# Benchmark results${options.quick ? ' (quick run: brief, not figures to quote)' : ''}`,
    '',
    `Written by \`npm run bench\` on ${new Date().toISOString()}. Machine: ${cpus()[0]?.model ?? 'unknown CPU'}, ${cpus().length} cores, Node ${process.version}, redis-server ${redisVersion()}.`,
    'The machine is shared (other work runs on the same cores), so absolute figures are noisy; the ratios come from columns measured side by side, interleaved, in one run.',
    '',
    '## Targets',
    '',
    '| benchmark | target | measured | met |',
    '|---|---|---|---|',
  ];
  for (const name of names) for (const target of results[name]?.targets ?? []) lines.push(`| ${name} | ${target.target} | ${target.value === null ? 'n/a' : String(target.value)} | ${target.met ? 'yes' : '**no**'} |`);
  for (const name of names) {
    const section = results[name];
    if (section === undefined) continue;
    lines.push('', `## ${section.title ?? name}`, '', `\`${name}\`, recorded ${section.recordedAt ?? 'at an unknown time'}${section.quick ? ' (quick)' : ''}.`, '');
    lines.push(section.markdown ?? '(This section was recorded before benchmarks wrote their tables; see latest.json.)');
  }
  if (results.scenarios === undefined) {
    lines.push('', '## Scenario timings', '', 'Not recorded yet: `npm run bench -- --only scenario` runs `interlock scenario all --delays fast` and records its cell timings here.');
  }
  const failed = ran.filter((item) => item.status === 'failed');
  if (failed.length > 0) lines.push('', `Failed in this run (no new figures): ${failed.map((item) => item.file).join(', ')}.`);
  return `${lines.join('\n')}\n`;
}

const results = existsSync(resultsJson) ? (JSON.parse(readFileSync(resultsJson, 'utf8')) as Record<string, Section>) : {};
mkdirSync(RESULTS_DIR, { recursive: true });
writeFileSync(resultsMd, page(results));
const met = ran.filter((item) => item.status === 'met').length;
const missed = ran.filter((item) => item.status === 'missed').map((item) => item.file);
const failed = ran.filter((item) => item.status === 'failed').map((item) => item.file);
console.log(options.page ? `Wrote ${resultsMd} from ${resultsJson}.` : options.quick ? `\n${ran.length - failed.length} of ${ran.length} benchmarks ran${failed.length > 0 ? `; failed to run: ${failed.join(', ')}` : ''}. Results: ${resultsMd}` : `\n${met} of ${ran.length} benchmarks met their targets${missed.length > 0 ? `; missed a target: ${missed.join(', ')}` : ''}${failed.length > 0 ? `; failed to run: ${failed.join(', ')}` : ''}. Results: ${resultsMd}`);
process.exit(failed.length > 0 ? 2 : missed.length > 0 && !options.quick ? 1 : 0);
