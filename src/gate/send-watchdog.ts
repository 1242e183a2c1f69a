// A watchdog for stalled senders. Every send is aborted at its deadline, but an abort needs the event loop: a
// main thread frozen by a long GC pause or a runaway computation could still write a request after the deadline
// plus the settle margin, when another worker already trusts a lookup that found nothing. The watchdog runs on
// its own thread and SIGKILLs the process when a send it was told about outlives its deadline by `graceMs`,
// turning a stall into the crash that recovery already handles. (A whole-process freeze, e.g. SIGSTOP, stops the
// watchdog too; the settle margin must cover those.)
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';

export type SendWatchdog = {
  /** Watches one send; returns the function that stops watching it. `deadlineAt` is on performance.now(). */
  arm(deadlineAt: number): () => void;
  close(): Promise<void>;
};

const WATCHDOG_SOURCE = `
const { parentPort } = require('node:worker_threads');
const { performance } = require('node:perf_hooks');
const { writeSync } = require('node:fs');
const armed = new Map();
parentPort.on('message', (message) => {
  if (message.type === 'arm') armed.set(message.id, message.killAt);
  else armed.delete(message.id);
});
setInterval(() => {
  const now = performance.timeOrigin + performance.now();
  for (const killAt of armed.values()) {
    if (now > killAt) {
      // A worker's process.stderr goes through the main thread, which is the one frozen: write to fd 2 directly.
      writeSync(2, '{"level":50,"name":"interlock","msg":"a send outlived its deadline and grace while the process was stalled; killing the process so recovery takes over"}\\n');
      process.kill(process.pid, 'SIGKILL');
    }
  }
}, 20);
`;

export function createSendWatchdog(options: { graceMs: number }): SendWatchdog {
  const worker = new Worker(WATCHDOG_SOURCE, { eval: true });
  worker.unref();
  let next = 0;
  return {
    arm(deadlineAt) {
      next += 1;
      const id = next;
      // Both threads read the same clock as timeOrigin + now(); each thread's own now() starts at zero.
      worker.postMessage({ type: 'arm', id, killAt: performance.timeOrigin + deadlineAt + options.graceMs });
      return () => worker.postMessage({ type: 'disarm', id });
    },
    async close() {
      await worker.terminate();
    },
  };
}
