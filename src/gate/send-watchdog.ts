// A watchdog for stalled senders. Every send is aborted at its deadline, but an abort needs the event loop: a
// main thread frozen by a long GC pause or a runaway computation could still write a request after the deadline
// plus the settle margin, when another worker already trusts a lookup that found nothing. The watchdog runs on
// its own thread and SIGKILLs the process when a send it was told about outlives its deadline by `graceMs`,
// turning a stall into the crash that recovery already handles. (A whole-process freeze, e.g. SIGSTOP, stops the
// watchdog too; the settle margin must cover those.)
//
// It also fences this process by its heartbeat. Recovery reads a heartbeat key that is gone as a dead sender, takes
// its effects over at once and trusts an empty lookup a settle margin after that (decisions.ts, absenceTrustedAt);
// but the key also lapses when a live process merely lost Redis (a network split, a Redis stall) for longer than its
// TTL, its request still on the wire. So no send of this process may be in progress once its own key could have
// lapsed: the main thread tells the watchdog, after every beat, until when the key is certain to live
// (heartbeatUntil), and the watchdog kills the process when a send is in progress past that instant less a margin.
// A live process never gets there: a little earlier (heartbeatAbortMs) the gate aborts every send in progress
// (sendOnce), which frees their slots, and the process lives on. Aborting a send needs the event loop, as at its
// deadline; the kill stays for a main thread that did not act in time (frozen, or stalled longer than the lead), as
// the kill at a send's deadline plus grace does. Either way no request leaves after that instant, and one already
// on the wire is the settle margin's to cover.
//
// The two threads share memory instead of exchanging messages: each send in progress holds a slot whose value is
// the instant it must be over by, written and cleared with Atomics, and the watchdog looks at the slots in use
// every 20 ms. Arming and disarming cost no message (two messages per send were about 2% of a refund's CPU), nor
// does a beat (the heartbeat's bound is one shared value). Slots come in blocks of SLOTS_PER_BLOCK; a block is
// added, and handed to the watchdog once, when every slot is taken.
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';

export type SendWatchdog = {
  /** Watches one send; returns the function that stops watching it. `deadlineAt` is on performance.now(). */
  arm(deadlineAt: number): () => void;
  /**
   * Until when (performance.now()) this process's heartbeat key is certain to live in Redis: told after every beat
   * that refreshed it, and with an instant already past once the key may be gone (cleared, or another process's).
   * Until the first call (or with 0) no send is killed for the heartbeat.
   */
  heartbeatUntil(aliveUntil: number): void;
  close(): Promise<void>;
};

/** The most the watchdog takes off the heartbeat's bound: its 20 ms ticks, the kill, and Redis's clock running ahead of this one. */
const HEARTBEAT_MARGIN_CAP_MS = 500;

/** How long before its heartbeat key could lapse a process still having a send in progress is killed: a quarter of the TTL, at most 500 ms. */
function heartbeatMarginMs(heartbeatTtlMs: number): number {
  return Math.min(Math.floor(heartbeatTtlMs / 4), HEARTBEAT_MARGIN_CAP_MS);
}

/**
 * How long before its heartbeat key could lapse a live process aborts its sends in progress (sendOnce): the watchdog's
 * margin, plus a lead that gives the event loop time to act before the kill (an eighth of the TTL, at most 200 ms).
 */
export function heartbeatAbortMs(heartbeatTtlMs: number): number {
  return heartbeatMarginMs(heartbeatTtlMs) + Math.min(Math.floor(heartbeatTtlMs / 8), HEARTBEAT_ABORT_LEAD_CAP_MS);
}

const HEARTBEAT_ABORT_LEAD_CAP_MS = 200;

/** How many sends every watchdog of this process was ever armed for: see watchdogArms. */
let armsSoFar = 0;

/**
 * How many sends a watchdog thread of this process was ever armed for. The gate reads it around its own arm
 * (sendOnce) to learn whether a watchdog thread watches that send: the arm it is handed (startSender's) arms one
 * synchronously when INTERLOCK_SEND_WATCHDOG is on, and none when it is off.
 */
export function watchdogArms(): number {
  return armsSoFar;
}

/** Sends one block watches: more than a worker sends at once at any concurrency it is run with. */
export const SLOTS_PER_BLOCK = 1_024;

/** A block: an Int32 header (how many slots from the start have ever been used), then the slots (0 = free). */
function newBlock(): SharedArrayBuffer {
  return new SharedArrayBuffer(8 + SLOTS_PER_BLOCK * 8);
}

const WATCHDOG_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { performance } = require('node:perf_hooks');
const { writeSync } = require('node:fs');
const blocks = [];
const add = (buffer) => blocks.push({ used: new Int32Array(buffer, 0, 1), killAt: new BigInt64Array(buffer, 8) });
add(workerData.block);
const heartbeatUntil = new BigInt64Array(workerData.heartbeat);
parentPort.on('message', (message) => add(message.block));
// A worker's process.stderr goes through the main thread, which may be the one frozen: write to fd 2 directly.
const kill = (why) => {
  writeSync(2, '{"level":50,"name":"interlock","msg":"' + why + '"}\\n');
  process.kill(process.pid, 'SIGKILL');
};
setInterval(() => {
  const now = BigInt(Math.floor(performance.timeOrigin + performance.now()));
  const until = Atomics.load(heartbeatUntil, 0);
  const lapsed = until !== 0n && now > until;
  for (const block of blocks) {
    const used = Atomics.load(block.used, 0);
    for (let slot = 0; slot < used; slot += 1) {
      const killAt = Atomics.load(block.killAt, slot);
      if (killAt === 0n) continue;
      if (now > killAt) kill('a send outlived its deadline and grace while the process was stalled; killing the process so recovery takes over');
      if (lapsed) kill('the heartbeat lapsed with a send in progress (no beat reached Redis for most of its TTL, or another process holds the key) and it was not aborted in time (the event loop stalled, or the target cannot close its requests); killing the process before another worker may read it as dead and take the effect over while this send can still land');
    }
  }
}, 20);
`;

type Block = { used: Int32Array; killAt: BigInt64Array };

/**
 * Why the watchdog cannot work in a process with this pid, or null when it can. The kernel delivers to the first
 * process of a pid namespace (PID 1: a container's entrypoint when the container has no init) only the signals it
 * has a handler for, so the SIGKILL the watchdog sends its own process is dropped, and a sender frozen mid-send would
 * live on to write after recovery took its effect over.
 */
export function watchdogProblem(pid: number): string | null {
  if (pid !== 1) return null;
  return 'This process is PID 1 (the first process of a container that has no init), and the kernel ignores the SIGKILL such a process sends itself: the send watchdog could not end a sender frozen mid-send, which could then write after recovery took its effect over. Run it under an init: `docker run --init`, `init: true` in compose (docker-compose.yml sets it), an init such as tini as the entrypoint, or shareProcessNamespace in a Kubernetes pod. INTERLOCK_SEND_WATCHDOG=0 runs it without the watchdog instead (not advised).';
}

/**
 * `graceMs`: how long a send may outlive its deadline. `heartbeatTtlMs`: the heartbeat key's TTL, which sets the margin
 * taken off heartbeatUntil's bound (heartbeatMarginMs; without it, HEARTBEAT_MARGIN_CAP_MS).
 */
export function createSendWatchdog(options: { graceMs: number; heartbeatTtlMs?: number }): SendWatchdog {
  const first = newBlock();
  // One Int64: the instant (timeOrigin + now(), ms) past which no send may be in progress; 0 while no beat told one.
  const heartbeat = new SharedArrayBuffer(8);
  const heartbeatUntil = new BigInt64Array(heartbeat);
  const marginMs = options.heartbeatTtlMs === undefined ? HEARTBEAT_MARGIN_CAP_MS : heartbeatMarginMs(options.heartbeatTtlMs);
  const worker = new Worker(WATCHDOG_SOURCE, { eval: true, workerData: { block: first, heartbeat } });
  worker.unref();
  const blocks: Block[] = [];
  // Free slots, as block * SLOTS_PER_BLOCK + slot; the most recently freed is reused first, so the slots in use stay
  // at the start of the first block and the watchdog looks at few.
  const free: number[] = [];
  let used = 0;
  const open = (buffer: SharedArrayBuffer) => blocks.push({ used: new Int32Array(buffer, 0, 1), killAt: new BigInt64Array(buffer, 8) });
  open(first);

  function take(): number {
    const reused = free.pop();
    if (reused !== undefined) return reused;
    const index = used;
    used += 1;
    const blockIndex = Math.floor(index / SLOTS_PER_BLOCK);
    if (blockIndex === blocks.length) {
      const buffer = newBlock();
      open(buffer);
      worker.postMessage({ block: buffer });
    }
    const block = blocks[blockIndex] as Block;
    Atomics.store(block.used, 0, (index % SLOTS_PER_BLOCK) + 1);
    return index;
  }

  return {
    arm(deadlineAt) {
      armsSoFar += 1;
      const index = take();
      const block = blocks[Math.floor(index / SLOTS_PER_BLOCK)] as Block;
      const slot = index % SLOTS_PER_BLOCK;
      // Both threads read the same clock as timeOrigin + now(); each thread's own now() starts at zero.
      Atomics.store(block.killAt, slot, BigInt(Math.ceil(performance.timeOrigin + deadlineAt + options.graceMs)));
      let armed = true;
      return () => {
        // Once only: a slot freed twice would be handed to two sends, and one's disarm would unwatch the other.
        if (!armed) return;
        armed = false;
        Atomics.store(block.killAt, slot, 0n);
        free.push(index);
      };
    },
    heartbeatUntil(aliveUntil) {
      // Floored and at least 1: earlier is safe, and 0 would read as "no beat yet".
      Atomics.store(heartbeatUntil, 0, BigInt(Math.max(1, Math.floor(performance.timeOrigin + aliveUntil - marginMs))));
    },
    async close() {
      await worker.terminate();
    },
  };
}
