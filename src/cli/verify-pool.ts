// Verifying many receipts at once (`interlock receipt verify FILE FILE ...`) on every core: signature checks are
// pure CPU, so the files are spread over worker threads, each verifying its share with the same public keys.
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { publicKeySet, type PublicKeySet } from '../core/signing.js';
import { verify, type Verification } from '../core/verify.js';

export type FileVerdict = { file: string; readable: boolean; verification: Verification | null; error: string | null };

/** Why a file could not be read, in words: the common causes by name, anything else as the system said it. */
export function whyUnreadable(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (code === 'ENOENT') return 'there is no such file';
  if (code === 'EISDIR') return 'it is a directory';
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied';
  return error instanceof Error ? error.message : String(error);
}

/** whyUnreadable for a receipt file: a directory given instead is answered with the files to give. */
export function whyReceiptUnreadable(file: string, error: unknown): string {
  const why = whyUnreadable(error);
  return (error as { code?: unknown } | null)?.code === 'EISDIR' ? `${why}; give the receipt files in it (for example ${file.replace(/\/+$/, '')}/*.json)` : why;
}

/** One file: read, parse, verify. Unreadable input is a verdict too, never an exception. */
export function verifyFile(file: string, publicKeyPems: readonly string[]): FileVerdict {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    return { file, readable: false, verification: null, error: `cannot read ${file}: ${whyReceiptUnreadable(file, error)}` };
  }
  let input: unknown;
  try {
    input = JSON.parse(text);
  } catch (error) {
    return { file, readable: false, verification: null, error: `cannot read ${file} as JSON: ${error instanceof Error ? error.message : String(error)}` };
  }
  const keys = keySetOf(publicKeyPems);
  return { file, readable: true, verification: verify(input, keys ? { publicKeys: keys } : {}), error: null };
}

// One key set per list of PEMs, kept: verify() remembers the seal roots it checked per key object, so receipts
// sealed in the same tree (an export of many) cost one signature check between them, not one per file.
let lastKeys: { pems: string; keys: PublicKeySet | undefined } | null = null;

function keySetOf(publicKeyPems: readonly string[]): PublicKeySet | undefined {
  const pems = publicKeyPems.join('\n');
  if (lastKeys?.pems !== pems) lastKeys = { pems, keys: publicKeyPems.length > 0 ? publicKeySet(publicKeyPems) : undefined };
  return lastKeys.keys;
}

// The worker loads this module through tsx (the CLI runs from TypeScript sources) and verifies its share.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
(async () => {
  const { register } = await import(workerData.tsx);
  register();
  const { verifyFile } = await import(workerData.module);
  for (const file of workerData.files) parentPort.postMessage(verifyFile(file, workerData.pems));
})().catch((error) => parentPort.postMessage({ fatal: String(error && error.stack || error) }));
`;

/** Verifies every file, `threads` at a time (default: one per core), calling `onVerdict` in the order files finish. */
export async function verifyMany(files: readonly string[], publicKeyPems: readonly string[], onVerdict: (verdict: FileVerdict) => void, threads = availableParallelism()): Promise<void> {
  const count = Math.max(1, Math.min(threads, files.length));
  if (count === 1) {
    for (const file of files) onVerdict(verifyFile(file, publicKeyPems));
    return;
  }
  const tsx = import.meta.resolve('tsx/esm/api');
  // Neighbouring files to the same thread: receipts exported together sit side by side and share their seals.
  const size = Math.ceil(files.length / count);
  const shares: string[][] = Array.from({ length: count }, (_, index) => files.slice(index * size, (index + 1) * size)).filter((share) => share.length > 0);
  await Promise.all(
    shares.map(
      (share) =>
        new Promise<void>((resolve, reject) => {
          const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { tsx, module: import.meta.url, files: share, pems: publicKeyPems } });
          let left = share.length;
          worker.on('message', (message: FileVerdict | { fatal: string }) => {
            if ('fatal' in message) {
              reject(new Error(`a verifying thread failed: ${message.fatal}`));
              void worker.terminate();
              return;
            }
            onVerdict(message);
            left -= 1;
            if (left === 0) void worker.terminate().then(() => resolve());
          });
          worker.on('error', reject);
          worker.on('exit', () => (left === 0 ? resolve() : reject(new Error('a verifying thread stopped early'))));
        }),
    ),
  );
}
