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
parentPort.postMessage({ ready: true });
`;

type Pending = { texts: string[]; waiters: { resolve(sig: string): void; reject(error: Error): void }[] };

export type ThreadSigner = Signer & { close(): Promise<void> };

export function createThreadSigner(key: SigningKey): ThreadSigner {
  const inFlight = new Map<number, Pending['waiters']>();
  let nextId = 0;
  let batch: Pending | null = null;
  let failure: Error | null = null;
  let closed = false;

  // The first reason stands: a thread that was closed also exits, and "closed" is what a caller should hear.
  const failAll = (error: Error) => {
    failure ??= error;
    for (const waiters of inFlight.values()) for (const waiter of waiters) waiter.reject(failure);
    inFlight.clear();
    // Requests still waiting for the thread to come back are answered too: it never will.
    for (const waiter of batch?.waiters ?? []) waiter.reject(failure);
    batch = null;
  };

  /**
   * A thread, and what to do when it ends. One that dies after it started (out of memory, an abort) is replaced:
   * the process's heartbeat lives on, so no other worker takes its effects over, and without a signer it could seal
   * nothing (no commit of a refund already sent) until restarted. Only the requests it held fail; those waiting go
   * to the new thread. One that dies before it is ready would die again: then every request is refused, with why.
   */
  function start(): Worker {
    const thread = new Worker(SIGNER_SOURCE, { eval: true, workerData: { privateKey: key.privateKey } });
    thread.unref();
    let ready = false;
    let crash: Error | null = null;
    thread.on('message', (message: { id: number; sigs?: string[]; error?: string; ready?: true }) => {
      if (message.ready) {
        ready = true;
        return;
      }
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
    thread.on('error', (error) => {
      crash ??= error;
    });
    thread.on('exit', (code) => {
      const why = crash ?? new Error(`the signing thread exited (${code})`);
      if (closed || !ready) {
        failAll(why);
        return;
      }
      const lost = new Error(`${why.message}; a new signing thread signs what is asked from now on`, { cause: why });
      for (const waiters of inFlight.values()) for (const waiter of waiters) waiter.reject(lost);
      inFlight.clear();
      worker = start();
      flush();
    });
    return thread;
  }
  let worker = start();

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
      closed = true;
      failAll(new Error('the signing thread was closed'));
      await worker.terminate();
    },
  };
}
