// Receipt verification (issues 8 §2, 12 §5), in one process, interleaved, medians of REPS runs.
//
// One receipt at a time, its batches sealed alone (trees of one leaf): verify() against the raw Ed25519 checks of
// the same signatures, which must cost at least 0.9× of verify() (everything else verify() does, parsing,
// rehashing, the paths, the rules, is at most a tenth). Every run uses distinct receipts and a fresh key object,
// so no root is checked twice. Each timed section starts from a collected heap (settleHeap), so neither column pays
// for the garbage of building the other's input.
//
// Receipts as the gate makes them: the effects of a real gate run at concurrency 64 (Redis, the in-memory target),
// exported together (`interlock receipt export ... --dir`), verified one after another on one thread as an auditor
// verifies a day's receipts. Their batches share trees and their heads share a signature, so verify() checks each
// root once. Then all of them as files through `interlock receipt verify`'s own pool of threads, one per core: the
// entries/s target (≥ 50,000 on every core) is measured there.
import { verify as cryptoVerify } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { pino } from 'pino';
import { headText, buildReceipt, type Receipt } from '../src/core/receipt.js';
import { sealBatch, type AnyDraft, type Entry } from '../src/core/entries.js';
import { effectIdFor } from '../src/core/effect-id.js';
import { leafHash, parseSeal, rootFromPath, sealMessage } from '../src/core/seal.js';
import { publicKeySet, signingKeyFromPem } from '../src/core/signing.js';
import { verify } from '../src/core/verify.js';
import { loadConfig, type Config } from '../src/config.js';
import { createInterlock } from '../src/interlock.js';
import { generateSigningKeyPem } from '../src/keys/key-store.js';
import { createRedisClient } from '../src/redis/client.js';
import { createMemoryTarget } from '../src/targets/memory-target.js';
import { startVerifiers } from '../src/cli/verify-pool.js';
import { cutRatio, deleteKeys, finish, inParallel, markdownTable, median, progress, QUICK, round, settleHeap } from './support.js';

const { privatePem, publicPem } = generateSigningKeyPem();
const key = signingKeyFromPem(privatePem);
const REPS = QUICK ? 1 : 7;

/** A committed refund as the gate writes it, plus `observed` OBSERVED entries appended one by one, each batch sealed alone. */
function receiptWith(observed: number, name: string): Receipt {
  const effect = { kind: 'refund', paymentIntent: 'pi_verify', amount: 2_000, reason: 'requested_by_customer' };
  const effectId = effectIdFor({ requestId: `verify-${name}`, effect });
  const snapshot = { id: 'ap_verify', approver: 'dana@support', capCents: 5_000, expiresAt: 4e12, maxUses: 5, scope: 'payment:pi_verify', revoked: false, revokedAt: null, reservedCents: null, uses: null };
  const premises = { chargebacks: [], refunded_by_others: 0 };
  const checks = { approvalLive: true, approval: null, approvalProblems: [], violations: [], changes: [] };
  let at = 1_800_000_000_000;
  const entries: Entry[] = sealBatch(
    [
      { kind: 'PROPOSED', agent: 'support-bot', approval: 'ap_verify', premises, effect, request: null, decision: null },
      { kind: 'AUTHORIZED', approval: snapshot },
      { kind: 'DISPATCHED', subject: 'payment:pi_verify', approval: 'ap_verify', premises, checks, owner: 'w1', epoch: 1, sendDeadline: at + 30_000 },
    ],
    { effectId, at, prev: null },
    key,
  );
  const append = (draft: AnyDraft) => {
    at += 1;
    entries.push(...sealBatch([draft], { effectId, at, prev: entries.at(-1)?.hash ?? null }, key));
  };
  append({ kind: 'COMMITTED', via: 'send', result: { id: 're_verify', object: 'refund', status: 'succeeded', amount: 2_000, charge: 'ch_verify' }, found: 're_verify', rechecked: null, epoch: 1 });
  for (let i = 0; i < observed; i += 1) {
    append({ kind: 'OBSERVED', source: 'webhook', eventId: `evt_${i}`, eventType: 'refund.updated', objectType: 'refund', objectId: 're_verify', status: 'succeeded', failureReason: null, amount: 2_000, charge: 'ch_verify', disputeStatus: null, disputeReason: null, created: 1_800_000_000 + i });
  }
  return buildReceipt(effectId, entries, key, at + 1);
}

type Check = { data: Buffer; sig: Buffer };

/**
 * The distinct Ed25519 checks verify() makes for these receipts, verified in order: each tree's root once, entries'
 * and heads'. Listed per receipt: the checks it is the first to need (a root shared with earlier receipts is
 * remembered by then).
 */
function checksOf(receipts: readonly Receipt[]): Check[][] {
  const seen = new Set<string>();
  return receipts.map((receipt) => {
    const checks: Check[] = [];
    const add = (domain: 'entries' | 'heads', text: string, sealText: string) => {
      const seal = parseSeal(sealText);
      const root = seal && rootFromPath(leafHash(text), seal.index, seal.size, seal.path);
      if (!seal || !root) throw new Error('a receipt holds something other than a seal');
      const message = sealMessage(domain, seal.size, root);
      if (seen.has(`${seal.signature} ${message}`)) return;
      seen.add(`${seal.signature} ${message}`);
      checks.push({ data: Buffer.from(message, 'utf8'), sig: Buffer.from(seal.signature, 'base64url') });
    };
    for (const entry of receipt.entries) if (entry.sig !== null) add('entries', entry.hash, entry.sig);
    add('heads', headText(receipt.head), receipt.head.sig);
    return checks;
  });
}

type Measured = { receiptsPerSecond: number; entriesPerSecond: number; signaturesPerReceipt: number; rawReceiptsPerSecond: number; ratio: number };

/**
 * verify() of every receipt once, and the raw checks of the same signatures, REPS times; `fresh` makes each run's
 * receipts. Within a run the columns take turns slice by slice, each slice `perSlice` receipts (a few milliseconds
 * of work): the slice verified, then the raw checks its receipts were the first to need. Each column's time is the
 * sum of its slices, so a slow moment of this shared machine hits both alike.
 */
function measure(name: string, fresh: (rep: number) => Receipt[], perSlice: number): Measured {
  const verifyTimes: number[] = [];
  const rawTimes: number[] = [];
  let counted = { receipts: 0, entries: 0, signatures: 0 };
  for (let rep = 0; rep < REPS; rep += 1) {
    progress(`verify: ${name}, run ${rep + 1}/${REPS}`);
    const receipts = fresh(rep);
    const inputs = receipts.map((receipt) => JSON.parse(JSON.stringify(receipt)) as unknown);
    const checks = checksOf(receipts);
    counted = { receipts: receipts.length, entries: receipts.reduce((sum, receipt) => sum + receipt.entries.length, 0), signatures: checks.reduce((sum, list) => sum + list.length, 0) };
    // A fresh key object: verify() remembers checked roots per key, as a new process would start without any.
    const keys = publicKeySet([publicPem]);
    const publicKey = keys.values().next().value;
    if (!publicKey) throw new Error('no public key');
    settleHeap();
    let verifyMs = 0;
    let rawMs = 0;
    for (let from = 0; from < inputs.length; from += perSlice) {
      const to = Math.min(from + perSlice, inputs.length);
      let started = performance.now();
      for (let index = from; index < to; index += 1) {
        const result = verify(inputs[index], { publicKeys: keys });
        if (result.valid !== true) throw new Error(`${name} does not verify: ${result.problems.join('; ')}`);
      }
      verifyMs += performance.now() - started;
      started = performance.now();
      for (let index = from; index < to; index += 1) for (const { data, sig } of checks[index] ?? []) cryptoVerify(null, data, publicKey, sig);
      rawMs += performance.now() - started;
    }
    verifyTimes.push(verifyMs);
    rawTimes.push(rawMs);
  }
  const verifyMs = median(verifyTimes);
  const rawMs = median(rawTimes);
  return {
    receiptsPerSecond: Math.round((counted.receipts * 1000) / verifyMs),
    entriesPerSecond: Math.round((counted.entries * 1000) / verifyMs),
    signaturesPerReceipt: round(counted.signatures / counted.receipts, 2),
    rawReceiptsPerSecond: Math.round((counted.receipts * 1000) / rawMs),
    ratio: cutRatio(rawMs, verifyMs),
  };
}

/** Receipts of a real gate run at concurrency 64, exported together, as `receipt export ... --dir` writes them. */
async function gateReceipts(count: number, rep: number): Promise<Receipt[]> {
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const prefix = `bv${rep}${Math.random().toString(36).slice(2, 8)}`;
  const redis = createRedisClient({ redisUrl, redisCluster: false }) as Redis;
  const memory = createMemoryTarget({ tier: 1, sendTimeoutMs: 30_000 });
  memory.world.set('payment:pi_bench', { chargebacks: [], refunded_by_others: 0 });
  const config: Config = { ...loadConfig({}), redisUrl, keyPrefix: prefix, unsafeDurability: true, sendWatchdog: false, logLevel: 'silent', workerId: `verify-${rep}` };
  const interlock = await createInterlock({ config, target: memory, signingKey: key, logger: pino({ level: 'silent' }), redis });
  try {
    await interlock.approvals.grant({ id: 'ap_bench', approver: 'bench', capCents: 1e12, expiresAt: Date.now() + 3_600_000, maxUses: 1e9, scope: 'payment:pi_bench' });
    const effectIds: string[] = [];
    await inParallel(count, 64, async (index) => {
      const answer = await interlock.gate.submit({ requestId: `r${index}`, agent: 'bench', approval: 'ap_bench', premises: { chargebacks: [], refunded_by_others: 0 }, effect: { kind: 'refund', paymentIntent: 'pi_bench', amount: 1, reason: 'requested_by_customer' } });
      if (answer.outcome !== 'COMMITTED') throw new Error(`effect ${index}: ${answer.outcome}`);
      effectIds.push(answer.effectId);
    });
    return (await interlock.journal.receipts(effectIds)).filter((receipt): receipt is Receipt => receipt !== null);
  } finally {
    await interlock.close();
    await deleteKeys(redis, [`${prefix}:*`]);
    await redis.quit();
  }
}

/**
 * Receipt files verified on every core as `interlock receipt verify FILE ...` verifies them (src/cli/verify-pool.ts):
 * fresh threads, loaded before the clock starts (each with its own memo of roots), each reading, parsing and verifying
 * its share and sending back the lines the command prints. The time from handing out the files to the last line.
 */
async function onEveryCore(files: readonly string[], threads: number): Promise<number> {
  const pool = await startVerifiers([publicPem], threads);
  try {
    let valid = 0;
    const started = performance.now();
    await pool.verify(files, (report) => {
      if (report.status === 'valid') valid += 1;
    });
    const elapsed = performance.now() - started;
    if (valid !== files.length) throw new Error(`${files.length - valid} receipt files did not verify on the verifying threads`);
    return elapsed;
  } finally {
    await pool.close();
  }
}

const ALONE = QUICK ? 50 : 1_000;
const LONG = QUICK ? 2 : 10;
const EXPORTED = QUICK ? 200 : 2_000;
// The receipts checked alone first, while the process holds nothing else: the gate runs' 14,000 receipts, kept for
// the export cases, would make every collection inside verify()'s measured time walk them too.
const alone = [
  { name: 'a committed refund, sealed alone (4 entries; 2 seals + head)', role: 'alone', perSlice: 20, fresh: (rep: number) => Array.from({ length: ALONE }, (_, index) => receiptWith(0, `a${rep}-${index}`)) },
  { name: 'a refund with 200 facts appended one by one, each sealed alone (204 entries)', role: 'alone', perSlice: 1, fresh: (rep: number) => Array.from({ length: LONG }, (_, index) => receiptWith(200, `l${rep}-${index}`)) },
] as const;
const rows: ({ case: string; role: 'alone' | 'exported' } & Measured)[] = alone.map((test) => ({ case: test.name, role: test.role, ...measure(test.name, test.fresh, test.perSlice) }));

const exportRuns: Receipt[][] = [];
for (let rep = 0; rep < REPS; rep += 1) {
  progress(`verify: a gate run of ${EXPORTED} refunds for run ${rep + 1}/${REPS}`);
  exportRuns.push(await gateReceipts(EXPORTED, rep));
}
const exportedName = `committed refunds of a gate run at concurrency 64, exported together (${EXPORTED} receipts of 4 entries)`;
rows.push({ case: exportedName, role: 'exported', ...measure(exportedName, (rep) => exportRuns[rep] ?? [], 60) });
// Every export at once, as the files `receipt export ... --dir` writes, on fresh threads each run.
const threads = availableParallelism();
const exportDir = mkdtempSync(join(tmpdir(), 'interlock-verify-bench-'));
const exportedFiles = exportRuns.flat().map((receipt, index) => {
  const file = join(exportDir, `${String(index).padStart(5, '0')}-${receipt.effectId}.json`);
  writeFileSync(file, `${JSON.stringify(receipt, null, 2)}\n`);
  return file;
});
const allEntries = exportRuns.flat().reduce((sum, receipt) => sum + receipt.entries.length, 0);
const everyCoreMs: number[] = [];
try {
  for (let rep = 0; rep < REPS; rep += 1) {
    progress(`verify: ${exportedFiles.length} exported receipt files on ${threads} threads, run ${rep + 1}/${REPS}`);
    everyCoreMs.push(await onEveryCore(exportedFiles, threads));
  }
} finally {
  rmSync(exportDir, { recursive: true, force: true });
}
const everyCore = { threads, receipts: exportedFiles.length, entriesPerSecond: Math.round((allEntries * 1000) / median(everyCoreMs)), receiptsPerSecond: Math.round((exportedFiles.length * 1000) / median(everyCoreMs)) };
progress('');
const table = markdownTable(
  ['receipts', 'Ed25519 checks per receipt', 'verify() receipts/s', 'raw Ed25519 for the same checks, receipts/s', 'verify / raw', 'entries/s'],
  rows.map((row) => [row.case, row.signaturesPerReceipt, row.receiptsPerSecond, row.rawReceiptsPerSecond, row.ratio, row.entriesPerSecond]),
);
const long = rows[1];
const usPerSignature = long === undefined ? NaN : round(1e6 / (long.rawReceiptsPerSecond * long.signaturesPerReceipt), 1);
const markdown = [
  `One process, medians of ${REPS} runs, verify() and the raw node:crypto Ed25519 checks of the same signatures interleaved; every run verifies receipts it has not seen, with a fresh key object.`,
  '',
  table,
  '',
  `All ${everyCore.receipts.toLocaleString('en-US')} exported receipts of those runs, as files, on every core (${threads} fresh threads of \`interlock receipt verify FILE ...\`, each reading, parsing and verifying its share and sending back the lines the command prints; the threads are loaded before the clock starts): ${everyCore.receiptsPerSecond.toLocaleString('en-US')} receipts/s, **${everyCore.entriesPerSecond.toLocaleString('en-US')} entries/s**.`,
  '',
  `One Ed25519 verification costs ${usPerSignature} µs here. A receipt checked alone needs one per sealed batch and one for its head, so its entries/s is bounded by that; receipts exported together share their trees' signatures (a gate run seals up to 8 batches and an export 64 heads under one), and verify() checks each root once.`,
].join('\n');
console.log(`\n${markdown}`);
const exported = rows[2];
const targets = [
  ...rows.filter((row) => row.role === 'alone').map((row) => ({ target: `verify() ≥ 0.9× raw Ed25519 for the same signatures: ${row.case}`, value: row.ratio, met: row.ratio >= 0.9 })),
  { target: `verify ≥ 50,000 entries/s on every core (${threads} threads): ${exported?.case ?? ''}`, value: everyCore.entriesPerSecond, met: everyCore.entriesPerSecond >= 50_000 },
];
finish('verify', 'Receipt verification (issues 8 §2, 12 §5)', markdown, { rows, usPerSignature, everyCore }, targets);
