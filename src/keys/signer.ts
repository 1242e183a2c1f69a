// Signing off the main thread. Ed25519 is the largest cost a committed effect carries (two signatures, tens of
// microseconds each), and it needs no I/O, so a worker thread does it while the main thread goes on with Redis and
// the target. Requests made during one turn of the event loop go to the thread as one message and come back as one,
// so the messaging costs little per signature. The signatures are exactly those inlineSigner would make.
import { Worker } from 'node:worker_threads';
import type { Signer, SigningKey } from '../core/signing.js';

const SIGNER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { sign } = require('node:crypto');
const key = workerData.privateKey;
parentPort.on('message', ({ id, texts }) => {
  try {
    parentPort.postMessage({ id, sigs: texts.map((text) => sign(null, Buffer.from(text, 'utf8'), key).toString('base64url')) });
  } catch (error) {
    parentPort.postMessage({ id, error: String(error && error.message || error) });
  }
});
`;

type Pending = { texts: string[]; waiters: { resolve(sig: string): void; reject(error: Error): void }[] };

export type ThreadSigner = Signer & { close(): Promise<void> };

export function createThreadSigner(key: SigningKey): ThreadSigner {
  const worker = new Worker(SIGNER_SOURCE, { eval: true, workerData: { privateKey: key.privateKey } });
  worker.unref();
  const inFlight = new Map<number, Pending['waiters']>();
  let nextId = 0;
  let batch: Pending | null = null;
  let failure: Error | null = null;

  // The first reason stands: a thread that was closed also exits, and "closed" is what a caller should hear.
  const failAll = (error: Error) => {
    failure ??= error;
    for (const waiters of inFlight.values()) for (const waiter of waiters) waiter.reject(failure);
    inFlight.clear();
    // Requests still waiting for the thread to come back are answered too: it never will.
    for (const waiter of batch?.waiters ?? []) waiter.reject(failure);
    batch = null;
  };
  worker.on('message', (message: { id: number; sigs?: string[]; error?: string }) => {
    const waiters = inFlight.get(message.id);
    inFlight.delete(message.id);
    if (batch && inFlight.size === 0) flush();
    if (!waiters) return;
    if (message.sigs === undefined) {
      for (const waiter of waiters) waiter.reject(new Error(`signing failed: ${message.error ?? 'unknown error'}`));
      return;
    }
    waiters.forEach((waiter, index) => waiter.resolve(message.sigs?.[index] ?? ''));
  });
  worker.on('error', (error) => failAll(error));
  worker.on('exit', (code) => failAll(new Error(`the signing thread exited (${code})`)));

  function flush(): void {
    // While a batch is out, the thread is busy: the next one goes when it is back, so batches grow with load
    // instead of queueing one message per signature.
    if (inFlight.size > 0) return;
    const sending = batch;
    batch = null;
    if (!sending) return;
    const id = nextId;
    nextId += 1;
    inFlight.set(id, sending.waiters);
    worker.postMessage({ id, texts: sending.texts });
  }

  return {
    kid: key.kid,
    sign(text) {
      if (failure) return Promise.reject(failure);
      return new Promise<string>((resolve, reject) => {
        batch ??= { texts: [], waiters: [] };
        batch.texts.push(text);
        batch.waiters.push({ resolve, reject });
        // An idle thread gets the request at once; a busy one gets everything asked meanwhile when it is back.
        if (inFlight.size === 0) flush();
      });
    },
    async close() {
      failAll(new Error('the signing thread was closed'));
      await worker.terminate();
    },
  };
}
