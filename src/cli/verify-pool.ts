// Verifying many receipts at once (`interlock receipt verify FILE FILE ...`) on every core: signature checks are
// pure CPU, so the files are spread over worker threads, each reading and verifying its share with the same public
// keys and handing back, through a pipe in shared memory, only what the command prints: one status and one JSON line
// per file (a whole Verification copied between threads per file cost about as much as verifying it).
import { isUtf8 } from 'node:buffer';
import { closeSync, fstatSync, readSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { publicKeySet, type PublicKeySet } from '../core/signing.js';
import { firstByteNotUtf8 } from '../core/text.js';
import { verifyReceiptText } from '../core/receipt-text.js';
import type { Verification } from '../core/verify.js';
import { bytesAtMost, fileTooLarge, openRegularFile } from '../files.js';
import { pathMeaning } from './path-problems.js';

export type FileVerdict = { file: string; readable: boolean; verification: Verification | null; error: string | null };

/** Why a file could not be read, in words: a file system refusal as every command says it, anything else as the system said it. */
export function whyUnreadable(error: unknown): string {
  return pathMeaning(error) ?? (error instanceof Error ? error.message : String(error));
}

/** whyUnreadable for a receipt file: a directory given instead is answered with the files to give. */
export function whyReceiptUnreadable(file: string, error: unknown): string {
  const why = whyUnreadable(error);
  if ((error as { code?: unknown } | null)?.code !== 'EISDIR') return why;
  // Standard input redirected from a directory (`< receipts/`) has no path to name: its files are given as arguments.
  if (file === '-') return `standard input is a directory; give the receipt files in it as arguments (for example receipts/*.json), not on standard input`;
  return `${why}; give the receipt files in it (for example ${file.replace(/\/+$/, '')}/*.json)`;
}

/**
 * Largest receipt file verify reads, in bytes: a receipt of 204 entries (a refund and 200 facts) is about 170 KB
 * written with indentation, so 32 MiB is some 40,000 entries, far past any payment's facts; a bigger file is refused
 * before it is read, not parsed into a thread's memory.
 */
export const MAX_RECEIPT_BYTES = 32 * 1024 * 1024;

function tooLarge(bytes: number): Error {
  return fileTooLarge(bytes, MAX_RECEIPT_BYTES, 'a receipt file');
}

/**
 * `bytes` as text, when they are UTF-8. Decoding other bytes leniently turns each bad one into U+FFFD, so a file whose
 * bytes C0 80 stood where the signed text held U+FFFD verified as what was signed while other readers see something
 * else: such a file is refused, saying where. A byte order mark is kept, as it always was (receipt-text.ts passes over it).
 */
function utf8Text(bytes: Buffer): string {
  if (isUtf8(bytes)) return bytes.toString('utf8');
  const at = firstByteNotUtf8(bytes);
  const shown = [...bytes.subarray(at, at + 4)].map((byte) => byte.toString(16).toUpperCase().padStart(2, '0')).join(' ');
  throw new Error(`it is not UTF-8 text: the bytes from offset ${at} (${shown}) do not read as UTF-8, and a receipt as exported is UTF-8 throughout, so this file was edited or re-encoded since; export the receipt again`);
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
  return utf8Text(Buffer.concat(chunks, total));
}

// Receipt files are read into one buffer per thread when they fit (a receipt of 204 entries is ~170 KB): one read
// call and no buffer of their own, where readFileSync stats the file again, allocates, and reads until a second read
// finds the end. Verifying 14,000 small files, that was a tenth of each file's time.
const READ_BUFFER_BYTES = 256 * 1024;
let readBuffer: Buffer | null = null;

/**
 * A receipt's text from a file, or standard input for `-`. Only a regular file of at most MAX_RECEIPT_BYTES is read:
 * it is opened without waiting (a FIFO would otherwise block the open, then the read, for ever) and checked on the
 * open descriptor, so what is read is what was checked. Anything else, and bytes that are not UTF-8, throws, saying why.
 */
export function readReceiptText(file: string): string {
  if (file === '-') return readStandardInput();
  const { fd, size } = openRegularFile(file, MAX_RECEIPT_BYTES, 'a receipt file');
  try {
    if (size < READ_BUFFER_BYTES) {
      readBuffer ??= Buffer.allocUnsafeSlow(READ_BUFFER_BYTES);
      // One byte more than the size asked for: a file that grew since it was checked reads past it, and is read below,
      // up to the cap.
      const read = readSync(fd, readBuffer, 0, size + 1, 0);
      if (read <= size) return utf8Text(readBuffer.subarray(0, read));
    }
    return utf8Text(bytesAtMost(fd, size, MAX_RECEIPT_BYTES, 'a receipt file'));
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
    : { file: verdict.file, status, effectId: result.effectId, signedAt: result.signedAt, outcome: result.outcome, happened: result.happened, finalMoney: result.finalMoney.status, answerMatchesFinalMoney: result.answerMatchesFinalMoney, exposure: result.exposure, problems: result.problems };
  try {
    return { status, line: JSON.stringify(line) };
  } catch (error) {
    // What a hostile file made verify() say could not be written (too long, too deep): that file alone is reported
    // so, and the run goes on to the others.
    return { status: 'unreadable', line: JSON.stringify({ file: verdict.file, status: 'unreadable', error: `its verification could not be written out (${error instanceof Error ? error.message : String(error)})` }) };
  }
}

// One key set per list of PEMs, kept: verify() remembers the seal roots it checked per key object, so receipts
// sealed in the same tree (an export of many) cost one signature check between them, not one per file.
let lastKeys: { pems: string; keys: PublicKeySet | undefined } | null = null;

function keySetOf(publicKeyPems: readonly string[]): PublicKeySet | undefined {
  const pems = publicKeyPems.join('\n');
  if (lastKeys?.pems !== pems) lastKeys = { pems, keys: publicKeyPems.length > 0 ? publicKeySet(publicKeyPems) : undefined };
  return lastKeys.keys;
}

/** Longest a finished file's line waits before the command prints it, whatever its thread is verifying next. */
const REPORT_WAIT_MS = 100;

/** Verifies a share of files in order, handing each file's report to `onReport` as soon as it is verified. */
export function verifyShare(files: readonly string[], publicKeyPems: readonly string[], onReport: (report: FileReport) => void): void {
  for (const file of files) onReport(reportOf(verifyFile(file, publicKeyPems)));
}

// A verifying thread hands its reports back through a pipe in shared memory, not one message per file (a message
// cost about as much as verifying a small receipt) nor batches of them (a batch waits on the file after it, however
// long that takes): the thread writes each report into the pipe as its file finishes, and the main thread reads
// every pipe every REPORT_WAIT_MS / 2, when a thread says its pipe is full, and when a share is done.

/** Bytes in a pipe, a power of two (positions are kept modulo 2^32 and masked). A larger report goes in pieces. */
const PIPE_BYTES = 1 << 20;
/** Counters: bytes written and bytes read since the pipe was made, each modulo 2^32. */
const WRITTEN = 0;
const READ = 1;
/** Each report: its line's length in UTF-8 bytes (uint32, little-endian), its status (one byte), then the line. */
const FRAME_HEAD = 5;
const STATUSES = ['valid', 'invalid', 'unauthenticated', 'unreadable'] as const satisfies readonly FileStatus[];

export type ReportPipe = { counters: SharedArrayBuffer; bytes: SharedArrayBuffer };

export function createReportPipe(): ReportPipe {
  return { counters: new SharedArrayBuffer(2 * Int32Array.BYTES_PER_ELEMENT), bytes: new SharedArrayBuffer(PIPE_BYTES) };
}

/** The verifying thread's end: writes each report whole, waiting while the pipe is full (after calling `full`). */
export function pipeWriter(pipe: ReportPipe, full: () => void): (report: FileReport) => void {
  const counters = new Int32Array(pipe.counters);
  const ring = new Uint8Array(pipe.bytes);
  const write = (data: Uint8Array) => {
    let done = 0;
    while (done < data.length) {
      const written = Atomics.load(counters, WRITTEN);
      const read = Atomics.load(counters, READ);
      const room = PIPE_BYTES - ((written - read) | 0);
      if (room === 0) {
        full();
        Atomics.wait(counters, READ, read, REPORT_WAIT_MS);
        continue;
      }
      const length = Math.min(room, data.length - done);
      const at = written & (PIPE_BYTES - 1);
      const first = Math.min(length, PIPE_BYTES - at);
      ring.set(data.subarray(done, done + first), at);
      ring.set(data.subarray(done + first, done + length), 0);
      Atomics.store(counters, WRITTEN, (written + length) | 0);
      done += length;
    }
  };
  return (report) => {
    const line = Buffer.from(report.line, 'utf8');
    const head = Buffer.allocUnsafe(FRAME_HEAD);
    head.writeUInt32LE(line.length, 0);
    head.writeUInt8(STATUSES.indexOf(report.status), 4);
    write(head);
    write(line);
  };
}

/** The main thread's end: `read` takes what is in the pipe and returns the reports it completes, in order. */
export function pipeReader(pipe: ReportPipe): { read(): FileReport[] } {
  const counters = new Int32Array(pipe.counters);
  const ring = new Uint8Array(pipe.bytes);
  // Bytes read but not yet a whole report, in pieces: a report larger than the pipe is joined once, when complete.
  let held: Buffer[] = [];
  let heldBytes = 0;
  const join = (): Buffer => {
    const whole = held.length === 1 ? (held[0] as Buffer) : Buffer.concat(held, heldBytes);
    held = [whole];
    return whole;
  };
  return {
    read() {
      const read = Atomics.load(counters, READ);
      const length = (Atomics.load(counters, WRITTEN) - read) | 0;
      if (length > 0) {
        const at = read & (PIPE_BYTES - 1);
        const first = Math.min(length, PIPE_BYTES - at);
        const taken = Buffer.allocUnsafe(length);
        taken.set(ring.subarray(at, at + first), 0);
        taken.set(ring.subarray(0, length - first), first);
        Atomics.store(counters, READ, (read + length) | 0);
        Atomics.notify(counters, READ);
        held.push(taken);
        heldBytes += length;
      }
      const reports: FileReport[] = [];
      let offset = 0;
      let bytes: Buffer | null = null;
      for (;;) {
        if (heldBytes - offset < FRAME_HEAD) break;
        // Until a report is taken, offset is 0: the head is read from the first piece when it holds one.
        const first = held[0] as Buffer;
        const head = bytes ?? (first.length >= FRAME_HEAD ? first : join());
        const end = offset + FRAME_HEAD + head.readUInt32LE(offset);
        if (heldBytes < end) break;
        bytes ??= join();
        reports.push({ status: STATUSES[bytes.readUInt8(offset + 4)] ?? 'unreadable', line: bytes.toString('utf8', offset + FRAME_HEAD, end) });
        offset = end;
      }
      if (bytes !== null && offset > 0) {
        held = offset === heldBytes ? [] : [bytes.subarray(offset)];
        heldBytes -= offset;
      }
      return reports;
    },
  };
}

/** What a verifying thread runs for each share: its reports go into `pipe` as its files finish. */
export function threadShare(files: readonly string[], publicKeyPems: readonly string[], pipe: ReportPipe, full: () => void): void {
  verifyShare(files, publicKeyPems, pipeWriter(pipe, full));
}

// The worker loads the thread module (this one, unless a test gives its own) through tsx (the CLI runs from
// TypeScript sources) and runs threadShare on each share it is sent.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
(async () => {
  const { register } = await import(workerData.tsx);
  register();
  const { threadShare } = await import(workerData.module);
  parentPort.on('message', (files) => {
    try {
      threadShare(files, workerData.pems, workerData.pipe, () => parentPort.postMessage({ full: true }));
      parentPort.postMessage({ done: true });
    } catch (error) {
      parentPort.postMessage({ fatal: String(error && error.stack || error) });
    }
  });
  parentPort.postMessage({ ready: true });
})().catch((error) => parentPort.postMessage({ fatal: String(error && error.stack || error) }));
`;

type FromThread = { ready: true } | { fatal: string } | { full: true } | { done: true };

/** Verifying threads, loaded and waiting: `verify` spreads files over them, one call at a time. */
export type VerifierPool = {
  threads: number;
  /** Verifies every file, calling `onReport` in the order files finish on their threads. */
  verify(files: readonly string[], onReport: (report: FileReport) => void): Promise<void>;
  close(): Promise<void>;
};

/** What the pool's threads load: `threadModule` is the module whose threadShare they run (a test may give its own). */
/** `signal`: aborting it while the threads load stops them and fails the call (verifyMany, once it needs none). */
export type VerifierOptions = { threadModule?: string; signal?: AbortSignal };

/** A loaded verifying thread and the reading end of its pipe; `on` says where its messages and its end go now. */
type Thread = {
  worker: Worker;
  reader: ReturnType<typeof pipeReader>;
  on: { message(message: FromThread): void; ended(why: string): void };
  ended: boolean;
};

const IDLE: Thread['on'] = { message: () => undefined, ended: () => undefined };

/**
 * Starts `threads` verifying threads (default: one per core) and waits until each has loaded the verifier. A thread
 * that dies while verifying (out of memory on a hostile file, say) costs only the file it was on: that file is
 * reported unreadable, saying why, and a new thread takes the rest of its share. A thread that fails (its verifier
 * threw) fails the call and leaves the pool broken: the shares still running elsewhere would report into a call that
 * has already failed.
 */
export async function startVerifiers(publicKeyPems: readonly string[], threads = availableParallelism(), options: VerifierOptions = {}): Promise<VerifierPool> {
  if (threads <= 1) {
    return {
      threads: 1,
      verify: async (files, onReport) => verifyShare(files, publicKeyPems, onReport),
      close: async () => undefined,
    };
  }
  const tsx = import.meta.resolve('tsx/esm/api');
  const module = options.threadModule ?? import.meta.url;
  let broken: Error | null = null;
  let closing = false;
  const live = new Set<Thread>();

  const startThread = async (): Promise<Thread> => {
    const pipe = createReportPipe();
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { tsx, module, pems: publicKeyPems, pipe } });
    const thread: Thread = { worker, reader: pipeReader(pipe), on: IDLE, ended: false };
    live.add(thread);
    let failure: Error | null = null;
    worker.on('message', (message: FromThread) => thread.on.message(message));
    // 'error' (an uncaught exception, the heap limit) comes before 'exit'.
    worker.on('error', (error) => {
      failure ??= error;
    });
    worker.on('exit', (code) => {
      thread.ended = true;
      live.delete(thread);
      if (!closing) thread.on.ended(failure?.message ?? `it exited with code ${code}`);
    });
    try {
      await new Promise<void>((resolve, reject) => {
        thread.on = {
          message: (message) => ('ready' in message ? resolve() : 'fatal' in message ? reject(new Error(`a verifying thread failed: ${message.fatal}`)) : undefined),
          ended: (why) => reject(new Error(`a verifying thread stopped while loading: ${why}`)),
        };
      });
    } catch (error) {
      await worker.terminate();
      throw error;
    } finally {
      thread.on = IDLE;
    }
    return thread;
  };

  const close = async () => {
    closing = true;
    await Promise.all([...live].map((thread) => thread.worker.terminate()));
  };
  const slots: Thread[] = [];
  // Aborted while loading: every thread is stopped, and the call fails at once rather than wait for threads nobody needs.
  const aborted = new Promise<'aborted'>((resolve) => {
    if (options.signal?.aborted === true) resolve('aborted');
    options.signal?.addEventListener('abort', () => resolve('aborted'), { once: true });
  });
  const loading = Promise.allSettled(Array.from({ length: threads }, () => startThread()));
  const first = await Promise.race([loading, aborted]);
  if (first === 'aborted') {
    await close();
    throw new Error('the verifying threads were stopped while they loaded: the call that wanted them no longer does');
  }
  const started = first;
  for (const result of started) {
    if (result.status === 'rejected') {
      await close();
      throw result.reason;
    }
    slots.push(result.value);
  }

  /** Runs a share on slot `index`, on a new thread for the rest of it whenever the one running it dies. */
  const runShare = async (index: number, share: readonly string[], onReport: (report: FileReport) => void, running: Set<() => void>): Promise<void> => {
    let rest = share;
    while (rest.length > 0) {
      if (broken !== null) throw broken;
      let thread = slots[index];
      if (thread === undefined || thread.ended) {
        try {
          thread = await startThread();
        } catch (error) {
          broken ??= error instanceof Error ? error : new Error(String(error));
          throw broken;
        }
        slots[index] = thread;
      }
      const { reader, worker } = thread;
      let reported = 0;
      const read = () => {
        if (broken !== null) return;
        for (const report of reader.read()) {
          reported += 1;
          onReport(report);
        }
      };
      running.add(read);
      let died: string | null;
      try {
        died = await new Promise<string | null>((resolve, reject) => {
          thread.on = {
            message: (message) => {
              if ('fatal' in message) {
                broken ??= new Error(`a verifying thread failed: ${message.fatal}`);
                reject(broken);
              } else if ('full' in message) {
                read();
              } else if ('done' in message) {
                read();
                resolve(null);
              }
            },
            // What it finished before it died is in its pipe: the next file is the one it died on.
            ended: (why) => {
              read();
              resolve(why);
            },
          };
          worker.postMessage(rest);
        });
      } finally {
        running.delete(read);
        thread.on = IDLE;
      }
      if (died === null) return;
      const file = rest[reported];
      if (file !== undefined && broken === null) {
        onReport(reportOf({ file, readable: false, verification: null, error: `cannot verify ${file}: the thread verifying it stopped (${died})` }));
      }
      rest = rest.slice(reported + 1);
    }
  };

  let busy = false;
  return {
    threads,
    async verify(files, onReport) {
      if (busy) throw new Error('this pool is already verifying files: wait for the call before');
      if (broken !== null) throw new Error(`these verifying threads cannot be used again: ${broken.message}`);
      busy = true;
      const running = new Set<() => void>();
      const reading = setInterval(() => running.forEach((read) => read()), REPORT_WAIT_MS / 2);
      try {
        // Standard input (`-`) is read and verified on this thread: the verifying threads are given paths only.
        for (const file of files) if (file === '-') onReport(reportOf(verifyFile(file, publicKeyPems)));
        const paths = files.filter((file) => file !== '-');
        // Neighbouring files to the same thread: receipts exported together sit side by side and share their seals.
        const size = Math.ceil(paths.length / threads);
        await Promise.all(Array.from({ length: threads }, (_, index) => runShare(index, paths.slice(index * size, (index + 1) * size), onReport, running)));
      } finally {
        clearInterval(reading);
        busy = false;
      }
    },
    close,
  };
}

/** How long this thread verifies files in one go while the threads load, before it looks whether they are ready. */
const INLINE_SLICE_MS = 20;

/** `inline`: what verifies files on this thread (verifyShare; a test gives a slower one). */
export type VerifyManyOptions = VerifierOptions & { inline?: typeof verifyShare };

/**
 * Verifies every file on `threads` threads (default: one per core), calling `onReport` in the order files finish.
 * Threads take a while to load the verifier (about 0.8 s for two here, while this thread verifies some 7,000 small
 * receipts), so this thread verifies files, in order, while they load: a few files are done before any thread is
 * ready, and the threads are stopped unused; the files left once they are ready are spread over them.
 */
export async function verifyMany(files: readonly string[], publicKeyPems: readonly string[], onReport: (report: FileReport) => void, threads = availableParallelism(), options: VerifyManyOptions = {}): Promise<void> {
  const inline = options.inline ?? verifyShare;
  const count = Math.max(1, Math.min(threads, files.length));
  if (count <= 1) {
    inline(files, publicKeyPems, onReport);
    return;
  }
  const loading = new AbortController();
  let pool: VerifierPool | null = null;
  let failure: unknown = null;
  const starting = startVerifiers(publicKeyPems, count, { ...options, signal: loading.signal }).then(
    (started) => {
      pool = started;
    },
    (error: unknown) => {
      failure = error;
    },
  );
  let next = 0;
  try {
    while (next < files.length && pool === null && failure === null) {
      const until = performance.now() + INLINE_SLICE_MS;
      do {
        inline(files.slice(next, next + 1), publicKeyPems, onReport);
        next += 1;
      } while (next < files.length && performance.now() < until);
      // The threads' messages (ready, or failed) come in between slices.
      await new Promise((resolve) => setImmediate(resolve));
    }
    if (next === files.length) return;
    await starting;
    const ready = pool as VerifierPool | null;
    if (ready === null) throw failure instanceof Error ? failure : new Error(String(failure));
    await ready.verify(files.slice(next), onReport);
  } finally {
    loading.abort();
    await starting;
    await (pool as VerifierPool | null)?.close();
  }
}
