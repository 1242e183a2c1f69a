// `interlock scenario stripe-dispute | billing-credit | shared-cap | all [--reps N] [--delays stripe|fast] [--out DIR]`:
// runs the seeds' scenarios, each against a sandbox of its own (or Stripe test mode with STRIPE_SECRET_KEY=sk_test_…),
// writes a Markdown page and a JSON file per scenario and one results page linking them.
import { existsSync, mkdtempSync, rmdirSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createDecider, flagValue, loadDeciderConfig, makeDirectory, publicKeyPem, readApiBase, shownSetting, startPrivateRedis, stripeSettingOf, type Decider } from '../src/interlock.js';
import { BILLING_COLUMNS, BILLING_DEFAULT_REPS, BILLING_ROWS, billingPlan, runBillingCredit } from './billing-credit.js';
import { COLUMNS, failedCell, type ScenarioResult, type Step } from './cells.js';
import { keepDir, leftovers, removeLeftovers, ROOT, stopChildren, type Delays } from './harness.js';
import { foreignFiles, foreignFolderProblem, lockOut } from './out-folder.js';
import { createProgressBar, type ProgressBar } from './progress.js';
import { writeResults } from './report.js';
import { CAP_COLUMNS, CAP_DEFAULT_REPS, CAP_ROWS, capPlan, runSharedCap } from './shared-cap.js';
import { DISPUTE_COLUMNS, DISPUTE_DEFAULT_REPS, DISPUTE_ROWS, disputePlan, runStripeDispute } from './stripe-dispute.js';
import { startWatchdog } from './watchdog.js';
import { openWorld, removeScenarioKeys } from './world.js';

export const SCENARIOS = ['stripe-dispute', 'billing-credit', 'shared-cap'] as const;
export type ScenarioName = (typeof SCENARIOS)[number];

export type ScenarioOptions = {
  scenarios: ScenarioName[];
  reps: number | null;
  delays: Delays;
  out: string;
  /** Only these rows (the seeds' row names) and columns; null runs them all. */
  rows?: string[] | null;
  columns?: string[] | null;
  env?: NodeJS.ProcessEnv;
  /** Leave each scenario's Redis keys (journals, queues) when it ends, for a look at them; they are removed otherwise. */
  keepJournals?: boolean;
  /** Opens a scenario's world; world.ts's openWorld unless a test gives another. */
  openWorld?: typeof openWorld;
  /**
   * The pid of the command that started the run, read as its process began (src/main.ts): read later, a parent that
   * died meanwhile would already be replaced by the process that adopted the run, which the run would watch instead and
   * never stop. This module's own first reading when not given.
   */
  startedBy?: number;
};

/** The plan filter every runner applies: the rows and columns asked for, or all. */
export type Selection = { row(name: string): boolean; column(name: string): boolean };

export class ScenarioUsageError extends Error {}

/**
 * Where a run's pages go when --out is not given: the committed results for a full run. In the checkout, whatever
 * folder the command runs from (a run from elsewhere would make a scenarios/results of its own there).
 */
export const RESULTS_DIR = join(ROOT, 'scenarios', 'results');

/**
 * The repetitions of a full run: the committed results were made by `npx interlock scenario all --reps 5 --delays
 * stripe` (each JSON file's `command`), so a run of another --reps, each scenario's default among them, is not theirs.
 */
export const FULL_RUN_REPS = 5;

/** The command that made the committed results, and that makes them again in place. */
export const FULL_RUN_COMMAND = `npx interlock scenario all --reps ${FULL_RUN_REPS} --delays stripe`;

/** What a run is, as far as where it writes goes: the scenarios, --reps (null: each one's default), --delays, the selection. */
export type RunShape = { scenarios: readonly ScenarioName[]; reps: number | null; delays: Delays; rows: readonly string[] | null; columns: readonly string[] | null };

/**
 * The options that make a run other than the committed results' (`--delays fast`, `--reps 1`, `--rows …`), as a
 * reader would name them; null for a full run: `--delays stripe`, `--reps` FULL_RUN_REPS, every row and column.
 */
export function partialRun(run: RunShape): string | null {
  const why: string[] = [];
  if (run.delays !== 'stripe') why.push(`--delays ${run.delays}`);
  if (run.reps === null) why.push(`each scenario's default --reps, not --reps ${FULL_RUN_REPS}`);
  else if (run.reps !== FULL_RUN_REPS) why.push(`--reps ${run.reps}`);
  if (run.rows !== null) why.push('--rows');
  if (run.columns !== null) why.push('--columns');
  return why.length === 0 ? null : why.join(', ');
}

/**
 * Where a run writes without --out: a full run into the committed results (RESULTS_DIR, the README's tables come
 * from there); any other (a try-out with --delays fast or --reps 1, some rows or columns) into a folder of its own
 * under the data directory, since its pages would replace the committed ones (and the README would no longer match
 * its tables).
 */
export function defaultOut(run: RunShape, dataDir: string, now: Date): string {
  if (partialRun(run) === null) return RESULTS_DIR;
  return `${dataDir.replace(/\/+$/, '')}/scenario-runs/${now.toISOString().replace(/[:.]/g, '-')}`;
}

/** The patterns of every key a scenario's world writes: its own and its BullMQ queues'. */
function keyPatterns(world: { config: { keyPrefix: string }; stores: { bullmq: { prefix: string } } }): string {
  return `${world.config.keyPrefix}:* and ${world.stores.bullmq.prefix}:*`;
}

/** How long an interrupted run may spend removing its Redis keys before it exits anyway (ms). */
const INTERRUPT_REMOVE_MS = 10_000;
/**
 * How long an interrupted run waits for its cells to stop before it removes their keys (ms): what a cell does in this
 * process (granting an approval, recording a proposal) goes on until it fails on the stopped processes.
 */
const INTERRUPT_SETTLE_MS = 5_000;
/** How long an interrupt waits for a private Redis it stopped while it started to exit, before it exits anyway (ms). */
const INTERRUPT_REDIS_START_MS = 2_000;
/** The signals that end a run the way Ctrl-C does: a closed terminal (SIGHUP) too, whose default would skip every exit hook. */
const INTERRUPTS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
/**
 * How often the run checks that the process that started it is still there (ms). `npx` stopped with SIGTERM exits
 * at once without passing the signal on, and the run would go on unseen and write into --out a minute later.
 */
const PARENT_POLL_MS = 1_000;
/** The process that started this one, as this module loads (ScenarioOptions.startedBy says it from earlier). */
const STARTED_BY = process.ppid;

/** Stripe test mode when STRIPE_SECRET_KEY is a test key; a live key is refused, whatever else is set. */
function testModeKey(env: NodeJS.ProcessEnv): string | null {
  const key = (env.STRIPE_SECRET_KEY ?? '').trim();
  if (key === '') return null;
  if (/^(sk|rk)_live_/.test(key)) throw new ScenarioUsageError('STRIPE_SECRET_KEY is a live key: the scenarios SIGKILL workers mid-refund and run only against the sandbox or Stripe test mode. Unset it, or set a test key (sk_test_…).');
  if (!/^(sk|rk)_test_[A-Za-z0-9]+$/.test(key)) throw new ScenarioUsageError('STRIPE_SECRET_KEY is not a Stripe test key (sk_test_… or rk_test_…). Unset it to run against the sandbox.');
  return key;
}

/**
 * Where test mode's requests go: STRIPE_API_BASE when set (a proxy, a recording gateway in front of Stripe), else
 * Stripe itself, for the harness, the baselines and the gate's workers alike. The sandbox runs ignore it (each
 * scenario starts a sandbox of its own), and say so, since a base set for a sandbox elsewhere then goes unused.
 */
function testModeApiBase(env: NodeJS.ProcessEnv, key: string | null): string | null {
  const apiBase = stripeSettingOf(env.STRIPE_API_BASE);
  if (apiBase === null) return null;
  if (key === null) {
    // Quoted as `serve` quotes it (shownSetting): a gateway URL's password, or a key put there by a swapped line of
    // an env file, is not printed; this line goes to stderr as it is, without the CLI's masking of failures.
    process.stderr.write(`STRIPE_API_BASE (${shownSetting(apiBase)}) is not used: without STRIPE_SECRET_KEY each scenario runs against a sandbox of its own. To send through it, set a test key (sk_test_…) too; to silence this, unset STRIPE_API_BASE.\n`);
    return null;
  }
  const read = readApiBase(apiBase);
  if ('problem' in read) throw new ScenarioUsageError(read.problem);
  // The origin, as the service reads it (scheme, host and port): the harness and the baselines append paths to this
  // string, so a trailing "/", an empty "?" or "#" the check lets through would send them somewhere else.
  return new URL(apiBase).origin;
}

/**
 * Creates the output folder and writes a file into it (removed again), so an --out that cannot be written (a path
 * through a file, a folder of another user's) is refused before any cell runs, not after the whole run, which would
 * discard every result of it.
 */
function probeOut(out: string): void {
  const probe = join(out, `.write-probe-${process.pid}`);
  try {
    makeDirectory(out);
    writeFileSync(probe, '', { flag: 'wx' });
    unlinkSync(probe);
  } catch (error) {
    throw new ScenarioUsageError(`--out ${out} cannot be written (${error instanceof Error ? error.message : String(error)}); nothing was run. Give --out a folder this user can create and write.`);
  }
}

/** The cells a scenario runs for these repetitions (null: its default) and this selection, in its order. */
export type Planner<R extends string = string> = (reps: number | null, only: Selection) => (Step & { row: R })[];

export type Runner = (context: { world: Awaited<ReturnType<typeof openWorld>>; decider: Decider; model: string; reps: number | null; bar: ProgressBar; only: Selection }) => Promise<ScenarioResult>;

/** `defaultReps`: the repetitions the runner makes without --reps; `plan`: the cells it runs (those a failed world records). */
const RUNNERS: Record<ScenarioName, { key: string; run: Runner; plan: Planner; rows: readonly string[]; columns: readonly string[]; defaultReps: number }> = {
  'stripe-dispute': { key: 'stripe_dispute', run: runStripeDispute, plan: disputePlan, rows: DISPUTE_ROWS, columns: DISPUTE_COLUMNS, defaultReps: DISPUTE_DEFAULT_REPS },
  'billing-credit': { key: 'billing_credit', run: runBillingCredit, plan: billingPlan, rows: Object.keys(BILLING_ROWS), columns: BILLING_COLUMNS, defaultReps: BILLING_DEFAULT_REPS },
  'shared-cap': { key: 'shared_cap', run: runSharedCap, plan: capPlan, rows: CAP_ROWS, columns: CAP_COLUMNS, defaultReps: CAP_DEFAULT_REPS },
};

/**
 * The command that runs this scenario's cells again as this run did: its rows and columns (those of the ones asked
 * for that it has), its repetitions where they are not its default, its delays. A page of three cells that named
 * the plain command would send a reader to run them all.
 */
export function reproducingCommand(name: ScenarioName, run: { reps: number; defaultReps: number; delays: Delays; rows: readonly string[] | null; columns: readonly string[] | null }): string {
  const { rows, columns } = RUNNERS[name];
  const parts = ['npx interlock scenario', name];
  if (run.reps !== run.defaultReps) parts.push(`--reps ${run.reps}`);
  parts.push(`--delays ${run.delays}`);
  if (run.rows !== null) parts.push(`--rows ${run.rows.filter((row) => rows.includes(row)).join(',')}`);
  if (run.columns !== null) parts.push(`--columns ${run.columns.filter((column) => columns.includes(column)).join(',')}`);
  return parts.join(' ');
}

/**
 * A row or column the scenarios asked for do not have would run nothing of it and still exit 0: name the scenario it
 * belongs to. So would rows and columns that never meet in one scenario. A list that names nothing (`--rows ""`, an
 * unset shell variable, `--rows ,`) is refused as such, with the names it could give.
 */
function checkSelection(names: readonly ScenarioName[], rows: readonly string[] | null, columns: readonly string[] | null): void {
  const asked = names.map((name) => ({ name, ...RUNNERS[name] }));
  for (const kind of ['rows', 'columns'] as const) {
    if ((kind === 'rows' ? rows : columns)?.length !== 0) continue;
    const one = kind === 'rows' ? 'row' : 'column';
    const known = [...new Set(asked.flatMap((scenario) => scenario[kind]))];
    throw new ScenarioUsageError(`--${kind} names no ${one} (it is empty, or only commas): give one or more of the ${kind} of ${names.join(', ')}, comma-separated (${known.join(', ')}), or leave out --${kind} to run them all.`);
  }
  const others = SCENARIOS.filter((name) => !names.includes(name));
  const where = (kind: 'rows' | 'columns', item: string) => {
    const owners = others.filter((name) => RUNNERS[name][kind].includes(item));
    return owners.length === 0 ? `${item} is no ${kind === 'rows' ? 'row' : 'column'} of any scenario` : `${item} is a ${kind === 'rows' ? 'row' : 'column'} of ${owners.join(' and ')}`;
  };
  for (const kind of ['rows', 'columns'] as const) {
    const items = kind === 'rows' ? rows : columns;
    const stray = (items ?? []).filter((item) => !asked.some((scenario) => scenario[kind].includes(item)));
    if (stray.length > 0) {
      const known = [...new Set(asked.flatMap((scenario) => scenario[kind]))];
      throw new ScenarioUsageError(`${stray.map((item) => where(kind, item)).join('; ')}, not of ${names.join(', ')}: name that scenario (or all), or one of its ${kind}: ${known.join(', ')}.`);
    }
  }
  const cells = asked.some((scenario) => scenario.rows.some((row) => rows === null || rows.includes(row)) && scenario.columns.some((column) => columns === null || columns.includes(column)));
  if (!cells) throw new ScenarioUsageError(`No cell to run: no scenario of ${names.join(', ')} has both one of the rows ${(rows ?? []).join(', ')} and one of the columns ${(columns ?? []).join(', ')}.`);
}

export async function runScenarios(options: ScenarioOptions): Promise<{ results: ScenarioResult[]; files: string[] }> {
  const env = options.env ?? process.env;
  const key = testModeKey(env);
  const stripeApiBase = testModeApiBase(env, key);
  const deciderConfig = loadDeciderConfig(env);
  const decider = createDecider(deciderConfig);
  const model = decider.name === 'rules' ? 'rules' : deciderConfig.model;
  // Every usage error before the private Redis starts: a refusal after it would leave it running.
  const rows = options.rows ?? null;
  const columns = options.columns ?? null;
  const knownRows = [...DISPUTE_ROWS, ...Object.keys(BILLING_ROWS), ...CAP_ROWS];
  const unknownRows = (rows ?? []).filter((row) => !knownRows.includes(row));
  if (unknownRows.length > 0) throw new ScenarioUsageError(`Unknown row(s) ${unknownRows.join(', ')}; the rows are ${knownRows.join(', ')}.`);
  const unknownColumns = (columns ?? []).filter((column) => !(COLUMNS as readonly string[]).includes(column));
  if (unknownColumns.length > 0) throw new ScenarioUsageError(`Unknown column(s) ${unknownColumns.join(', ')}; the columns are ${COLUMNS.join(', ')}.`);
  checkSelection(options.scenarios, rows, columns);
  let redisUrl = (env.REDIS_URL ?? '').trim();
  // Without REDIS_URL the journals live in a private redis-server that is stopped and removed when the run ends:
  // there is nothing to keep, and a run that said it kept them would send the reader to keys that are gone.
  if (options.keepJournals === true && redisUrl === '') {
    throw new ScenarioUsageError('--keep-journals keeps the keys a run writes to the Redis of REDIS_URL, and REDIS_URL is not set: without it the run uses a private Redis that is removed when the run ends. Set REDIS_URL (e.g. redis://127.0.0.1:6379) to a Redis that stays, or leave out --keep-journals.');
  }
  // A folder of the user's own (`--out .` at the project's root) would lose its README.md to the results index.
  const foreign = foreignFiles(resolve(options.out));
  if (foreign !== null) throw new ScenarioUsageError(foreignFolderProblem(options.out, foreign, 'a run'));
  const made = firstMissing(resolve(options.out));
  probeOut(resolve(options.out));
  // A run that ends before it wrote anything (no redis-server to start, one that exits at start, an interrupt) leaves
  // no empty folder of its own making behind: after the lock's release, so an exit hook after it.
  const removeEmptyOut = () => removeEmptyFolders(resolve(options.out), made);
  let stopRedis = async () => {};
  const privateRedis = redisUrl === '';
  // Aborted by an interrupt: a private Redis still starting is killed, and its start fails once it has exited.
  const redisStart = new AbortController();
  let redisStarting: Promise<unknown> = Promise.resolve();
  // Read as the service reads a flag (flagValue): a spelling it takes for yes is yes here too.
  const unsafeDurability = flagValue(env.INTERLOCK_UNSAFE_DURABILITY ?? '') === true;
  const only: Selection = { row: (name) => rows === null || rows.includes(name), column: (name) => columns === null || columns.includes(name) };
  const bar = createProgressBar();
  const open = options.openWorld ?? openWorld;
  // The worlds open now, by scenario key: an interrupt removes their keys.
  const opened = new Map<string, Awaited<ReturnType<typeof openWorld>>>();
  // The scenarios' cells running now: an interrupt lets them stop before it removes what they wrote.
  const running = new Set<Promise<unknown>>();
  // Set by an interrupt, and never settled: the handler ends the process. Awaited before a world closes, before the
  // pages are written and before the run tidies up, so nothing of the run's own ending races the interrupt's.
  let interruption: Promise<never> | null = null;
  // Ctrl-C, SIGTERM or a closed terminal (SIGHUP) in the middle: the private redis-server runs in a process group of its own (no terminal signal
  // reaches it) and no cell's finally runs, so the exit stops it (its own exit hook) and removes what the run left.
  // On a REDIS_URL the run's keys would stay there for good: the processes are stopped first (nothing writes under
  // the prefixes after that), then the keys are removed, within INTERRUPT_REMOVE_MS; a second signal exits at once.
  const interrupted = (signal: NodeJS.Signals) => {
    const code = signal === 'SIGINT' ? 130 : signal === 'SIGHUP' ? 129 : 143;
    const again = signal === 'SIGINT' ? 'Ctrl-C' : signal;
    const worlds = [...opened];
    const remove = !privateRedis && options.keepJournals !== true && worlds.length > 0;
    const exitNow = (second: NodeJS.Signals) => {
      process.stderr.write(`${second} again: exiting now.${remove ? ` Redis keys of this run may remain under ${worlds.map(([, world]) => keyPatterns(world)).join(', ')}.` : ''}\n`);
      process.exit(code);
    };
    for (const name of INTERRUPTS) process.once(name, exitNow);
    bar.finish();
    leftovers.stopping = true;
    stopChildren();
    redisStart.abort();
    const stopped = `${signal}: stopped; the cells under way are not written, and ${options.out} keeps the results it had.`;
    interruption = (async () => {
      // Its directory is removed on the way out, once the server in it has gone.
      await Promise.race([redisStarting, sleep(INTERRUPT_REDIS_START_MS)]);
      if (remove) {
        process.stderr.write(`${stopped} Removing the Redis keys this run wrote to REDIS_URL (at most ${(INTERRUPT_SETTLE_MS + INTERRUPT_REMOVE_MS) / 1000} s; ${again} again exits at once)…\n`);
        // A cell still running here would write after the removal (its approvals, its proposals).
        await Promise.race([Promise.allSettled(running), sleep(INTERRUPT_SETTLE_MS)]);
        const lines = worlds.map(async ([scenario, world]) =>
          Promise.race([
            removeScenarioKeys(world.stores, world.config.keyPrefix).then(
              (count) => `Removed ${count} Redis key${count === 1 ? '' : 's'} of ${scenario} (${keyPatterns(world)}).`,
              (error: unknown) => `Could not remove the Redis keys of ${scenario} (${error instanceof Error ? error.message : String(error)}); they are under ${keyPatterns(world)}.`,
            ),
            sleep(INTERRUPT_REMOVE_MS).then(() => `The Redis keys of ${scenario} were not all removed within ${INTERRUPT_REMOVE_MS / 1000} s; what remains is under ${keyPatterns(world)}.`),
          ]),
        );
        process.stderr.write(`${(await Promise.all(lines)).join('\n')}\nRun the command again to start over.\n`);
      } else {
        if (!privateRedis && options.keepJournals === true) for (const [scenario, world] of worlds) process.stderr.write(`Kept the Redis keys of ${scenario} (--keep-journals): ${keyPatterns(world)}\n`);
        process.stderr.write(`${stopped} Run the command again to start over.\n`);
      }
      process.exit(code);
    })();
  };
  // One run at a time per folder, from here to the end (an interrupt's exit too): two at once would each replace the
  // other's pages, and the index would present the mix as one run.
  const lock = lockOut(resolve(options.out));
  if ('heldBy' in lock) {
    throw new ScenarioUsageError(`Another scenario run${lock.heldBy === null ? '' : ` (pid ${lock.heldBy})`} is writing into --out ${options.out} now: two runs into one folder would replace each other's pages, and its index would mix them. Nothing was run. Wait for it to end, or give --out another folder; if no run is writing there, remove its lock ${lock.file}.`);
  }
  process.once('exit', lock.release);
  process.once('exit', removeEmptyOut);
  for (const name of INTERRUPTS) process.once(name, interrupted);
  process.once('exit', removeLeftovers);
  // The command that started the run gone (an npx stopped with SIGTERM, which passes it on to no one): as SIGHUP.
  const parent = options.startedBy ?? STARTED_BY;
  const parentWatch = setInterval(() => {
    if (process.ppid === parent || interruption !== null) return;
    clearInterval(parentWatch);
    // Its terminal or pipe may be gone with it: a write there must not end the run before it has stopped its processes.
    for (const stream of [process.stdout, process.stderr]) stream.on('error', () => undefined);
    process.stderr.write(`The command that started this run (pid ${parent}) has gone: stopping as for SIGHUP.\n`);
    for (const name of INTERRUPTS) process.removeListener(name, interrupted);
    interrupted('SIGHUP');
  }, PARENT_POLL_MS);
  parentWatch.unref();
  /** A scenario none of whose cells can be judged: each recorded as failed with `why`, noted on the progress bar. */
  const notRun = (name: ScenarioName, error: unknown, what: string, cellWhy: string, field: 'world_error' | 'scenario_error'): ScenarioResult => {
    const runner = RUNNERS[name];
    // A process's stderr ends with a line break, and often a full stop: the note goes on after it as one sentence.
    const why = (error instanceof Error ? error.message : String(error)).trim();
    const plan = runner.plan(options.reps, only);
    bar.note(`${runner.key}: ${what}: ${why.replace(/\.$/, '')}. Its ${plan.length} cell${plan.length === 1 ? ' is' : 's are'} recorded as failed; the other scenarios go on.`);
    const reps = options.reps ?? runner.defaultReps;
    const cells = plan.map((step) => failedCell(step, `${cellWhy}: ${why}`));
    return { scenario: runner.key, generated: new Date().toISOString(), model, backend: key === null ? 'sandbox' : 'test_mode', delays: options.delays, reps, cells, command: reproducingCommand(name, { reps, defaultReps: runner.defaultReps, delays: options.delays, rows, columns }), [field]: why };
  };
  try {
    // Should the run be killed outright (SIGKILL), it stops the processes and removes the directories the run leaves.
    leftovers.watchdog = startWatchdog();
    if (leftovers.watchdog !== null) leftovers.dirs.add(leftovers.watchdog.home);
    if (privateRedis) {
      // No Redis given: a private, durable redis-server for this run (append-only, fsync always), removed after, as
      // its directory is when it cannot start (no redis-server, one that exits at start). Started once the interrupt
      // handlers are in place: its process group gets no Ctrl-C, so only they can stop it while it starts.
      const dir = mkdtempSync(join(tmpdir(), 'interlock-scenario-redis-'));
      keepDir(dir);
      const starting = startPrivateRedis(dir, { signal: redisStart.signal });
      redisStarting = starting.catch(() => undefined);
      const redis = await starting;
      leftovers.watchdog?.process(redis.pid);
      redisUrl = redis.url;
      stopRedis = async () => {
        await redis.stop();
        rmSync(dir, { recursive: true, force: true });
      };
    }
    const results = await Promise.all(
      options.scenarios.map(async (name) => {
        const runner = RUNNERS[name];
        const command = (reps: number) => reproducingCommand(name, { reps, defaultReps: runner.defaultReps, delays: options.delays, rows, columns });
        let world: Awaited<ReturnType<typeof openWorld>>;
        try {
          world = await open({ scenario: runner.key, delays: options.delays, redisUrl, unsafeDurability, testModeKey: key, stripeApiBase, keepKeys: options.keepJournals === true });
        } catch (error) {
          // As a cell that throws: this scenario's cells are recorded as failed, with the reason, and the others go on.
          return notRun(name, error, 'its world (sandbox or test mode, the support API, the Redis stores) did not open', "the scenario's world did not open", 'world_error');
        }
        opened.set(runner.key, world);
        // On a Redis others use, where to look (or what to remove, should the run be killed outright).
        if (!privateRedis) bar.note(`${runner.key}: its Redis keys are under ${keyPatterns(world)} on REDIS_URL, ${options.keepJournals === true ? 'kept (--keep-journals)' : 'removed'} when the run ends.`);
        try {
          const loadAtStart = loadavg()[0] ?? 0;
          const ran = runner.run({ world, decider, model, reps: options.reps, bar, only });
          running.add(ran);
          const result = await ran.finally(() => running.delete(ran));
          const machine = { cores: cpus().length, load_average_at_start: Math.round(loadAtStart * 10) / 10, load_average_at_end: Math.round((loadavg()[0] ?? 0) * 10) / 10 };
          return { ...result, command: command(result.reps), redis_prefix: world.config.keyPrefix, machine, public_key: publicKeyPem(world.stores.signingKey), settle_margin_s: world.config.settleMarginMs / 1000, claim_ttl_s: world.config.claimTtlMs / 1000, ...(stripeApiBase === null ? {} : { stripe_api_base: stripeApiBase }) };
        } catch (error) {
          // Work of the scenario outside its cells failed (a price it creates, a fixture it reads): its cells are
          // recorded as failed, and the run goes on with the others and cleans up only once they have ended.
          return notRun(name, error, 'it stopped outside its cells', 'the scenario stopped outside its cells', 'scenario_error');
        } finally {
          await interruption;
          opened.delete(runner.key);
          await world.close();
        }
      }),
    );
    await interruption;
    bar.finish();
    const out = resolve(options.out);
    makeDirectory(out);
    const files = writeResults(out, results);
    return { results, files };
  } finally {
    await interruption;
    bar.finish();
    await stopRedis();
    clearInterval(parentWatch);
    for (const name of INTERRUPTS) process.removeListener(name, interrupted);
    process.removeListener('exit', removeLeftovers);
    // A run that failed (a world that could not open, a cell that threw) leaves no directory or process behind either.
    removeLeftovers();
    leftovers.watchdog?.close();
    leftovers.watchdog = null;
    process.removeListener('exit', lock.release);
    lock.release();
    process.removeListener('exit', removeEmptyOut);
    removeEmptyOut();
  }
}

/** The outermost folder on the way to `path` that does not exist yet (`path` itself, or one above it); null when it exists. */
function firstMissing(path: string): string | null {
  let missing: string | null = null;
  for (let at = path; !existsSync(at); at = dirname(at)) {
    missing = at;
    if (dirname(at) === at) break;
  }
  return missing;
}

/** `path` and the folders above it up to `top`, each removed while it is empty; nothing when `top` is null. */
function removeEmptyFolders(path: string, top: string | null): void {
  if (top === null) return;
  for (let at = path; ; at = dirname(at)) {
    try {
      rmdirSync(at);
    } catch {
      return;
    }
    if (at === top) return;
  }
}
