// The gate's own cost per effect (issue 8 §3), side by side in one run against one Redis, over the in-memory tier-1
// target, so only what each column does itself is measured:
//   no_check          apply with the key, nothing else
//   hand_check        lookup, premise read, approval read, apply, one RPUSH log line (DESIGN §9)
//   hand_check_fsync  the same with the log in a file, fsynced before and after the send (group commit)
//   floor             only what no gate can avoid: two durable Redis writes (intent before the send, result
//                     after), hashing the entries, and sealing their two batches as the receipt format needs (one
//                     signature per tree of the batches sealed in the same turn, src/keys/sealer.ts)
//   gate              gate.submit, the whole thing
// Each column runs REPS times, interleaved (a b c d e a b c d e …) so a noisy moment hits them alike; medians are
// reported, with ratios. On the machine's Redis and on a private Redis with appendfsync always.
import { open, type FileHandle } from 'node:fs/promises';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { loadConfig, type Config } from '../src/config.js';
import { comparePremises } from '../src/core/decisions.js';
import { effectIdFor } from '../src/core/effect-id.js';
import { completeBatch, prepareBatch, type AnyDraft } from '../src/core/entries.js';
import type { Effect } from '../src/core/effects.js';
import type { JsonObject } from '../src/core/json.js';
import { inlineSigner, signingKeyFromPem, type SigningKey } from '../src/core/signing.js';
import { createSealer } from '../src/keys/sealer.js';
import { createInterlock } from '../src/interlock.js';
import { generateSigningKeyPem } from '../src/keys/key-store.js';
import { createMemoryTarget, type MemoryTarget } from '../src/targets/memory-target.js';
import { startPrivateRedis } from '../tests/support/private-redis.js';
import { createRedisClient } from '../src/redis/client.js';
import { countCommands, cutRatio, finish, measure, median, progress, QUICK, type Measured } from './support.js';

const EFFECTS = Number(process.env.BENCH_EFFECTS ?? (QUICK ? 300 : 5_000));
const REPS = Number(process.env.BENCH_REPS ?? (QUICK ? 1 : 5));
const CONCURRENCY = [64, 1] as const;
const COLUMNS = ['no_check', 'hand_check', 'hand_check_fsync', 'floor', 'gate'] as const;
type Column = (typeof COLUMNS)[number];

const SUBJECT = 'payment:pi_bench';
const PREMISES = { chargebacks: [], refunded_by_others: 0 };
const key: SigningKey = signingKeyFromPem(generateSigningKeyPem().privatePem);

function effectFor(): Effect {
  return { kind: 'refund', paymentIntent: 'pi_bench', amount: 1, reason: 'requested_by_customer' };
}

function target(): MemoryTarget {
  const memory = createMemoryTarget({ tier: 1, sendTimeoutMs: 30_000 });
  memory.world.set(SUBJECT, { ...PREMISES });
  return memory;
}

const SEND = { requestId: null, timeLeftMs: () => 30_000, beforeWrite: async () => undefined };
const READ = { timeoutMs: 30_000 };

/** A file log whose appends are fsynced in groups: each caller waits for the fsync that covers its line. */
async function fsyncedLog(path: string): Promise<{ append(line: string): Promise<void>; close(): Promise<void> }> {
  const file: FileHandle = await open(path, 'a');
  let pending: { line: string; done: () => void }[] = [];
  let running: Promise<void> | null = null;
  const drain = async (): Promise<void> => {
    while (pending.length > 0) {
      const batch = pending;
      pending = [];
      await file.write(batch.map((item) => `${item.line}\n`).join(''));
      await file.sync();
      for (const item of batch) item.done();
    }
    running = null;
  };
  return {
    append(line) {
      return new Promise<void>((resolve) => {
        pending.push({ line, done: resolve });
        running ??= drain();
      });
    },
    close: () => file.close(),
  };
}

/** The drafts a gated effect signs, as the gate writes them, so the floor hashes and signs the same bytes. */
function drafts(typed: Effect, index: number): { dispatch: AnyDraft[]; commit: AnyDraft } {
  const effect = typed as unknown as JsonObject;
  const snapshot = { id: 'ap_bench', approver: 'bench', capCents: 1e12, expiresAt: 4e12, maxUses: 1e9, scope: SUBJECT, revoked: false, revokedAt: null, reservedCents: null, uses: null };
  const checks = { approvalLive: true, approval: snapshot, approvalProblems: [], violations: [], changes: [] };
  return {
    dispatch: [
      { kind: 'PROPOSED', agent: 'bench', approval: 'ap_bench', premises: PREMISES, effect, request: null, decision: null },
      { kind: 'AUTHORIZED', approval: snapshot },
      { kind: 'DISPATCHED', subject: SUBJECT, approval: 'ap_bench', premises: PREMISES, checks: { ...checks, approval: null }, owner: 'bench', epoch: 1, sendDeadline: 4e12 },
    ],
    commit: { kind: 'COMMITTED', via: 'send', result: { id: `obj_${index}`, object: 'refund', status: 'succeeded', amount: 1, effectId: 'x' }, found: `obj_${index}`, rechecked: null, epoch: 1 },
  };
}

async function runColumn(column: Column, redisUrl: string, unsafe: boolean, concurrency: number, rep: number): Promise<Measured> {
  // Every column talks to Redis through the client the service builds, and is measured through another.
  const redis = createRedisClient({ redisUrl, redisCluster: false, redisCommandTimeoutMs: loadConfig({}).redisCommandTimeoutMs }) as Redis;
  const observer = new Redis(redisUrl);
  const sent = countCommands(redis);
  const run = (work: (index: number) => Promise<void>) => measure(observer, sent, EFFECTS, concurrency, work);
  const prefix = `bench${rep}${column}${Math.random().toString(36).slice(2, 8)}`;
  const memory = target();
  const dir = mkdtempSync(join(tmpdir(), 'interlock-bench-'));
  try {
    switch (column) {
      case 'no_check':
        return await run(async (index) => {
          await memory.apply(effectIdFor({ requestId: `r${index}`, effect: {} }), effectFor(), SEND);
        });
      case 'hand_check':
      case 'hand_check_fsync': {
        await redis.hset(`${prefix}:approval`, 'capCents', 1e12, 'revoked', '0', 'expiresAt', 4e12);
        const log = column === 'hand_check_fsync' ? await fsyncedLog(join(dir, 'hand_check.log')) : null;
        try {
          return await run(async (index) => {
            const effectId = effectIdFor({ requestId: `r${index}`, effect: {} });
            const effect = effectFor();
            if ((await memory.query(effectId, effect, READ)) !== null) return;
            const facts = await memory.readFacts(effectId, effect, Object.keys(PREMISES), READ);
            if (comparePremises(PREMISES, facts).violations.length > 0) return;
            const approval = await redis.hgetall(`${prefix}:approval`);
            if (approval.revoked === '1' || Number(approval.expiresAt) <= Date.now()) return;
            if (log) await log.append(JSON.stringify({ effectId, step: 'send', facts }));
            const landed = await memory.apply(effectId, effect, SEND);
            if (log) await log.append(JSON.stringify({ effectId, step: 'landed', id: landed.id }));
            else await redis.rpush(`${prefix}:log`, JSON.stringify({ effectId, facts, landed: landed.id }));
          });
        } finally {
          await log?.close();
        }
      }
      case 'floor': {
        const sealer = createSealer(inlineSigner(key), { domain: 'entries' });
        return await run(async (index) => {
          const effectId = effectIdFor({ requestId: `r${index}`, effect: {} });
          const effect = effectFor();
          const { dispatch, commit } = drafts(effect, index);
          const first = prepareBatch(dispatch, { effectId, at: 1, prev: null }, key.kid);
          const sealed = completeBatch(first, await sealer.seal(first.lastHash));
          await redis.rpush(`${prefix}:e:${effectId}`, ...sealed.stored);
          const landed = await memory.apply(effectId, effect, SEND);
          const second = prepareBatch([{ ...commit, result: { ...landed } } as AnyDraft], { effectId, at: 2, prev: first.lastHash }, key.kid);
          await redis.rpush(`${prefix}:e:${effectId}`, ...completeBatch(second, await sealer.seal(second.lastHash)).stored);
        });
      }
      case 'gate': {
        const config: Config = { ...loadConfig({}), redisUrl, keyPrefix: prefix, unsafeDurability: unsafe, sendWatchdog: false, logLevel: 'silent', workerId: `bench-${rep}` };
        const interlock = await createInterlock({ config, target: memory, signingKey: key, logger: pino({ level: 'silent' }), redis });
        try {
          await interlock.approvals.grant({ id: 'ap_bench', approver: 'bench', capCents: 1e12, expiresAt: Date.now() + 3_600_000, maxUses: 1e9, scope: SUBJECT });
          return await run(async (index) => {
            const answer = await interlock.gate.submit({ requestId: `r${index}`, agent: 'bench', approval: 'ap_bench', premises: PREMISES, effect: effectFor() });
            if (answer.outcome !== 'COMMITTED') throw new Error(`effect ${index}: ${answer.outcome} ${answer.reason ?? ''}`);
          });
        } finally {
          await interlock.close();
        }
      }
      default: {
        const never: never = column;
        return never;
      }
    }
  } finally {
    const stale = await redis.keys(`${prefix}*`);
    for (let i = 0; i < stale.length; i += 1_000) await redis.del(...stale.slice(i, i + 1_000));
    await redis.quit();
    await observer.quit();
    rmSync(dir, { recursive: true, force: true });
  }
}

type Row = { column: Column; concurrency: number } & Measured;

async function bench(label: string, redisUrl: string, unsafe: boolean): Promise<Row[]> {
  const rows: Row[] = [];
  for (const concurrency of CONCURRENCY) {
    const runs = new Map<Column, Measured[]>(COLUMNS.map((column) => [column, []]));
    // Fewer effects at concurrency 1: each waits for the one before.
    for (let rep = 0; rep < REPS; rep += 1) {
      for (const column of COLUMNS) {
        progress(`${label}: concurrency ${concurrency}, run ${rep + 1}/${REPS}, ${column}`);
        runs.get(column)?.push(await runColumn(column, redisUrl, unsafe, concurrency, rep));
      }
    }
    for (const column of COLUMNS) {
      const all = runs.get(column) ?? [];
      const pick = (field: keyof Measured) => median(all.map((run) => run[field]));
      rows.push({ column, concurrency, perSecond: pick('perSecond'), commandsPerEffect: pick('commandsPerEffect'), nodeCpuUsPerEffect: pick('nodeCpuUsPerEffect'), redisCpuUsPerEffect: pick('redisCpuUsPerEffect'), mainThreadBusy: pick('mainThreadBusy') });
    }
  }
  progress('');
  return rows;
}

function table(label: string, rows: readonly Row[]): string {
  const lines = [`\n${label}`, '', '| column | concurrency | effects/s (median) | Redis commands/effect | Node CPU µs/effect | Redis CPU µs/effect |', '|---|---|---|---|---|---|'];
  for (const row of rows) lines.push(`| ${row.column} | ${row.concurrency} | ${row.perSecond} | ${row.commandsPerEffect} | ${row.nodeCpuUsPerEffect} | ${row.redisCpuUsPerEffect} |`);
  return lines.join('\n');
}

function ratios(rows: readonly Row[], concurrency: number) {
  const at = (column: Column) => rows.find((row) => row.column === column && row.concurrency === concurrency)?.perSecond ?? 0;
  return { gate: at('gate'), gateVsFloor: cutRatio(at('gate'), at('floor')), gateVsHandCheckFsync: cutRatio(at('gate'), at('hand_check_fsync')), gateVsHandCheck: cutRatio(at('gate'), at('hand_check')) };
}

const machineRedis = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const machineRows = await bench("machine's Redis", machineRedis, true);
console.log(table(`machine's Redis (${machineRedis}), ${EFFECTS} effects per run at concurrency 64, ${REPS} runs each`, machineRows));
const durable = await startPrivateRedis(['--appendonly', 'yes', '--appendfsync', 'always', '--maxmemory-policy', 'noeviction', '--save', '']);
let durableRows: Row[];
try {
  durableRows = await bench('private Redis, appendfsync always', durable.url, false);
} finally {
  await durable.stop();
}
console.log(table('private Redis with appendfsync always', durableRows));

const onMachine = ratios(machineRows, 64);
const onDurable = ratios(durableRows, 64);
const gateCommands = machineRows.find((row) => row.column === 'gate' && row.concurrency === 64)?.commandsPerEffect ?? Infinity;
const targets = [
  { target: 'gate ≥ 5,000 effects/s per process on the machine\'s Redis (concurrency 64)', value: onMachine.gate, met: onMachine.gate >= 5_000 },
  { target: 'gate ≥ 0.7× floor, machine\'s Redis', value: onMachine.gateVsFloor, met: onMachine.gateVsFloor >= 0.7 },
  { target: 'gate ≥ 0.7× floor, appendfsync always', value: onDurable.gateVsFloor, met: onDurable.gateVsFloor >= 0.7 },
  { target: 'gate ≥ 0.3× hand_check with an fsynced log, machine\'s Redis', value: onMachine.gateVsHandCheckFsync, met: onMachine.gateVsHandCheckFsync >= 0.3 },
  { target: 'gate ≥ 0.3× hand_check with an fsynced log, appendfsync always', value: onDurable.gateVsHandCheckFsync, met: onDurable.gateVsHandCheckFsync >= 0.3 },
  { target: 'gate ≤ 4 Redis commands per committed effect', value: gateCommands, met: gateCommands <= 4 },
];
const markdown = `One process, concurrency 64 and 1, in-memory tier-1 target (only each column's own work counts), ${EFFECTS} effects per run, medians of ${REPS} interleaved runs.\n${table("On the machine's Redis (no AOF)", machineRows)}\n${table('On a private Redis with appendfsync always', durableRows)}\n\ngate / floor: ${onMachine.gateVsFloor}× (machine's Redis), ${onDurable.gateVsFloor}× (appendfsync always); gate / hand_check with an fsynced log: ${onMachine.gateVsHandCheckFsync}×, ${onDurable.gateVsHandCheckFsync}×.`;
finish('gateThroughput', "The gate's own cost per effect (issue 8 §3)", markdown, { effectsPerRun: EFFECTS, reps: REPS, machineRedis: machineRows, durableRedis: durableRows, ratios: { machineRedis: onMachine, durableRedis: onDurable } }, targets);
