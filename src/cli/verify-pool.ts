// Verifying many receipts at once (`interlock receipt verify FILE FILE ...`) on every core: signature checks are
// pure CPU, so the files are spread over worker threads, each reading and verifying its share with the same public
// keys and sending back, in batches, only what the command prints: one status and one JSON line per file (a whole
// Verification copied between threads per file cost about as much as verifying it).
import { closeSync, constants, fstatSync, openSync, readFileSync, readSync, type Stats } from 'node:fs';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { publicKeySet, type PublicKeySet } from '../core/signing.js';
import { verifyReceiptText } from '../core/receipt-text.js';
import type { Verification } from '../core/verify.js';
import { pathMeaning } from './path-problems.js';

export type FileVerdict = { file: string; readable: boolean; verification: Verification | null; error: string | null };

/** Why a file could not be read, in words: a file system refusal as every command says it, anything else as the system said it. */
export function whyUnreadable(error: unknown): string {
  return pathMeaning(error) ?? (error instanceof Error ? error.message : String(error));
}

/** whyUnreadable for a receipt file: a directory given instead is answered with the files to give. */
export function whyReceiptUnreadable(file: string, error: unknown): string {
  const why = whyUnreadable(error);
  return (error as { code?: unknown } | null)?.code === 'EISDIR' ? `${why}; give the receipt files in it (for example ${file.replace(/\/+$/, '')}/*.json)` : why;
}

/**
 * Largest receipt file verify reads, in bytes: a receipt of 204 entries (a refund and 200 facts) is about 170 KB
 * written with indentation, so 32 MiB is some 40,000 entries, far past any payment's facts; a bigger file is refused
 * before it is read, not parsed into a thread's memory.
 */
export const MAX_RECEIPT_BYTES = 32 * 1024 * 1024;

function kindOf(stats: Stats): string {
  if (stats.isFIFO()) return 'a FIFO (named pipe)';
  if (stats.isCharacterDevice()) return 'a character device';
  if (stats.isBlockDevice()) return 'a block device';
  if (stats.isSocket()) return 'a socket';
  return 'not a file';
}

function tooLarge(bytes: number): Error {
  return new Error(`it is ${(bytes / 1024 / 1024).toFixed(1)} MiB, more than the ${MAX_RECEIPT_BYTES / 1024 / 1024} MiB a receipt file may be`);
}

/** Standard input, up to the cap: a pipe has no size to check first, so it is read until it passes the cap. */
function readStandardInput(): string {
  const stats = fstatSync(0);
  if (stats.isFile() && stats.size > MAX_RECEIPT_BYTES) throw tooLarge(stats.size);
  const chunks: Buffer[] = [];
  let total = 0;
  for (;;) {
    const chunk = Buffer.allocUnsafe(64 * 1024);
    const read = readSync(0, chunk, 0, chunk.length, null);
    if (read === 0) break;
    total += read;
    if (total > MAX_RECEIPT_BYTES) throw tooLarge(total);
    chunks.push(chunk.subarray(0, read));
  }
  return Buffer.concat(chunks, total).toString('utf8');
}

/**
 * A receipt's text from a file, or standard input for `-`. Only a regular file of at most MAX_RECEIPT_BYTES is read:
 * it is opened without waiting (a FIFO would otherwise block the open, then the read, for ever) and checked on the
 * open descriptor, so what is read is what was checked. Anything else throws, saying why.
 */
export function readReceiptText(file: string): string {
  if (file === '-') return readStandardInput();
  const fd = openSync(file, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
  try {
    const stats = fstatSync(fd);
    if (stats.isDirectory()) throw Object.assign(new Error(`EISDIR: ${file}`), { code: 'EISDIR' });
    if (!stats.isFile()) throw new Error(`it is ${kindOf(stats)}, not a regular file`);
    if (stats.size > MAX_RECEIPT_BYTES) throw tooLarge(stats.size);
    return readFileSync(fd, 'utf8');
  } finally {
    closeSync(fd);
  }
}

/** One file: read, parse, verify. Unreadable input is a verdict too, never an exception. */
export function verifyFile(file: string, publicKeyPems: readonly string[]): FileVerdict {
  let text: string;
  try {
    text = readReceiptText(file);
  } catch (error) {
    return { file, readable: false, verification: null, error: `cannot read ${file}: ${whyReceiptUnreadable(file, error)}` };
  }
  const keys = keySetOf(publicKeyPems);
  const read = verifyReceiptText(text, keys ? { publicKeys: keys } : {});
  if (!read.json) return { file, readable: false, verification: null, error: `cannot read ${file} as JSON: ${read.error}` };
  return { file, readable: true, verification: read.verification, error: null };
}

/** How one of several files verified, as `receipt verify` counts it. */
export type FileStatus = 'valid' | 'invalid' | 'unauthenticated' | 'unreadable';

/** What `receipt verify` prints for one of several files: its status, and its JSON line (without the newline). */
export type FileReport = { status: FileStatus; line: string };

export function reportOf(verdict: FileVerdict): FileReport {
  const result = verdict.verification;
  const status: FileStatus = result === null ? 'unreadable' : result.valid === true ? 'valid' : result.valid === null ? 'unauthenticated' : 'invalid';
  const line = result === null
    ? { file: verdict.file, status, error: verdict.error }
    : { file: verdict.file, status, effectId: result.effectId, outcome: result.outcome, happened: result.happened, finalMoney: result.finalMoney.status, answerMatchesFinalMoney: result.answerMatchesFinalMoney, exposure: result.exposure, problems: result.problems };
  return { status, line: JSON.stringify(line) };
}

// One key set per list of PEMs, kept: verify() remembers the seal roots it checked per key object, so receipts
// sealed in the same tree (an export of many) cost one signature check between them, not one per file.
let lastKeys: { pems: string; keys: PublicKeySet | undefined } | null = null;

function keySetOf(publicKeyPems: readonly string[]): PublicKeySet | undefined {
  const pems = publicKeyPems.join('\n');
  if (lastKeys?.pems !== pems) lastKeys = { pems, keys: publicKeyPems.length > 0 ? publicKeySet(publicKeyPems) : undefined };
  return lastKeys.keys;
}

/** Reports per message from a verifying thread: one message per file cost more than the line it carries. */
const REPORTS_PER_MESSAGE = 64;
/** Longest a finished file's line waits on its thread, so large receipts still print as they finish. */
const REPORT_WAIT_MS = 100;

/**
 * A share of files verified on this thread, its reports handed to `send` in batches (the last one marked): every
 * REPORTS_PER_MESSAGE files, or sooner once the oldest report held has waited REPORT_WAIT_MS (`now` is the clock).
 */
export function verifyShare(files: readonly string[], publicKeyPems: readonly string[], send: (reports: FileReport[], last: boolean) => void, now: () => number = performance.now.bind(performance)): void {
  let batch: FileReport[] = [];
  let since = 0;
  for (const file of files) {
    const report = reportOf(verifyFile(file, publicKeyPems));
    const at = now();
    if (batch.length === 0) since = at;
    batch.push(report);
    if (batch.length === REPORTS_PER_MESSAGE || at - since >= REPORT_WAIT_MS) {
      send(batch, false);
      batch = [];
    }
  }
  send(batch, true);
}

// The worker loads this module through tsx (the CLI runs from TypeScript sources) and verifies each share it is sent.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
(async () => {
  const { register } = await import(workerData.tsx);
  register();
  const { verifyShare } = await import(workerData.module);
  parentPort.on('message', (files) => {
    try {
      verifyShare(files, workerData.pems, (reports, last) => parentPort.postMessage({ reports, last }));
    } catch (error) {
      parentPort.postMessage({ fatal: String(error && error.stack || error) });
    }
  });
  parentPort.postMessage({ ready: true });
})().catch((error) => parentPort.postMessage({ fatal: String(error && error.stack || error) }));
`;

type FromThread = { ready: true } | { fatal: string } | { reports: FileReport[]; last: boolean };

/** Verifying threads, loaded and waiting: `verify` spreads files over them, one call at a time. */
export type VerifierPool = {
  threads: number;
  /** Verifies every file, calling `onReport` in the order files finish on their threads. */
  verify(files: readonly string[], onReport: (report: FileReport) => void): Promise<void>;
  close(): Promise<void>;
};

/** Starts `threads` verifying threads (default: one per core) and waits until each has loaded the verifier. */
export async function startVerifiers(publicKeyPems: readonly string[], threads = availableParallelism()): Promise<VerifierPool> {
  if (threads <= 1) {
    return {
      threads: 1,
      verify: async (files, onReport) => verifyShare(files, publicKeyPems, (reports) => reports.forEach(onReport)),
      close: async () => undefined,
    };
  }
  const tsx = import.meta.resolve('tsx/esm/api');
  const workers = Array.from({ length: threads }, () => new Worker(WORKER_SOURCE, { eval: true, workerData: { tsx, module: import.meta.url, pems: publicKeyPems } }));
  // Whatever a thread says or does next goes to the share it is working on, or fails the start. A thread that failed
  // leaves the pool broken: the shares still running elsewhere would report into a call that has already failed.
  const listeners = workers.map(() => ({ message: (_message: FromThread) => undefined as void, failed: (_error: Error) => undefined as void }));
  let broken: Error | null = null;
  let closing = false;
  workers.forEach((worker, index) => {
    const listener = listeners[index] as (typeof listeners)[number];
    const fail = (error: Error) => {
      if (closing) return;
      broken ??= error;
      listener.failed(error);
    };
    worker.on('message', (message: FromThread) => ('fatal' in message ? fail(new Error(`a verifying thread failed: ${message.fatal}`)) : broken === null && listener.message(message)));
    worker.on('error', fail);
    worker.on('exit', () => fail(new Error('a verifying thread stopped early')));
  });
  const close = async () => {
    closing = true;
    await Promise.all(workers.map((worker) => worker.terminate()));
  };
  try {
    await Promise.all(listeners.map((listener) => new Promise<void>((resolve, reject) => {
      listener.message = () => resolve();
      listener.failed = reject;
    })));
  } catch (error) {
    await close();
    throw error;
  }
  let busy = false;
  return {
    threads,
    async verify(files, onReport) {
      if (busy) throw new Error('this pool is already verifying files: wait for the call before');
      if (broken !== null) throw new Error(`these verifying threads cannot be used again: ${broken.message}`);
      busy = true;
      try {
        // Standard input (`-`) is read and verified on this thread: the verifying threads are given paths only.
        for (const file of files) if (file === '-') onReport(reportOf(verifyFile(file, publicKeyPems)));
        const paths = files.filter((file) => file !== '-');
        // Neighbouring files to the same thread: receipts exported together sit side by side and share their seals.
        const size = Math.ceil(paths.length / threads);
        await Promise.all(workers.map((worker, index) => {
          const share = paths.slice(index * size, (index + 1) * size);
          if (share.length === 0) return Promise.resolve();
          const listener = listeners[index] as (typeof listeners)[number];
          return new Promise<void>((resolve, reject) => {
            listener.failed = reject;
            listener.message = (message) => {
              if (!('reports' in message)) return;
              message.reports.forEach(onReport);
              if (message.last) resolve();
            };
            worker.postMessage(share);
          });
        }));
      } finally {
        busy = false;
      }
    },
    close,
  };
}

/** Verifies every file on `threads` threads (default: one per core), calling `onReport` in the order files finish. */
export async function verifyMany(files: readonly string[], publicKeyPems: readonly string[], onReport: (report: FileReport) => void, threads = availableParallelism()): Promise<void> {
  const pool = await startVerifiers(publicKeyPems, Math.max(1, Math.min(threads, files.length)));
  try {
    await pool.verify(files, onReport);
  } finally {
    await pool.close();
  }
}
