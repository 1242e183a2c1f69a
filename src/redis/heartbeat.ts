// Worker liveness. A worker refreshes a short-lived key holding its boot nonce about once a second; a claim whose
// holder's key is gone, or holds another nonce (the holder restarted), belongs to a dead sender and may be taken
// over at once instead of waiting for it to lapse (DESIGN §7).
import { performance } from 'node:perf_hooks';
import { InterlockError } from '../core/errors.js';
import type { RedisClient } from './client.js';
import type { Keys } from './keys.js';
import { createScriptRunner } from './scripts.js';

export type Heartbeat = ReturnType<typeof createHeartbeat>;

/** This process is superseded under its worker id (heartbeat.supersededBy): it dispatches and sends nothing while it is. */
export class WorkerSupersededError extends InterlockError {
  constructor(workerId: string) {
    super('worker_superseded', `Another process beats under worker id ${workerId}, so this one sends nothing while it does: every worker needs its own INTERLOCK_WORKER_ID. Stop one of the two; the other goes on (this one takes the id back once the other has gone), and what this one held is taken over by recovery.`);
    this.name = 'WorkerSupersededError';
  }
}

export type Liveness = { alive: boolean; ttlMs: number; now: number };

/**
 * `onAliveUntil(at)`: until when (performance.now(), ms) this worker's own key is certain to live in Redis, told after
 * every beat that refreshed it (the instant the beat was sent plus the TTL), and with an instant already past once
 * the key may be gone: another process's nonce found there, or stop clearing it. The send watchdog kills the process
 * when a send is still in progress past that bound (send-watchdog.ts). A bound earlier than the one last told (the key
 * may be gone: superseded, or cleared by stop) is first told to the listeners of onBoundDropped, at once
 * and synchronously: they abort the sends in progress before the watchdog learns a bound those sends are already past.
 * So is a beat that found the key gone and wrote it anew (`kept: false`), before the bound it then tells.
 */
export function createHeartbeat(deps: { redis: RedisClient; keys: Keys; workerId: string; nonce: string; intervalMs?: number; ttlMs?: number; onError?: (error: unknown) => void; onSuperseded?: (by: string) => void; onReclaimed?: (by: string) => void; onAliveUntil?: (at: number) => void }) {
  const { redis, keys, workerId, nonce } = deps;
  const intervalMs = deps.intervalMs ?? 1_000;
  const ttlMs = deps.ttlMs ?? 4_000;
  const run = createScriptRunner(redis);
  let timer: NodeJS.Timeout | null = null;
  /** Local time the last successful beat was sent: the key lives at least ttlMs from then. */
  let lastSentAt = -Infinity;
  /** The nonce of the process that took this worker id over, once one has: this one must send nothing more. */
  let superseded: string | null = null;
  /** How many times stop ran: a beat answered after a stop that began after it was sent refreshes nothing. */
  let stops = 0;
  /** The bound last told onAliveUntil (performance.now(), ms). */
  let toldUntil = -Infinity;
  const boundDropped = new Set<() => void>();

  /** Tells onBoundDropped's listeners that the key may be gone (aliveFor() answers so before this is called). */
  function tellBoundDropped(): void {
    for (const listener of [...boundDropped]) {
      try {
        listener();
      } catch (error) {
        deps.onError?.(error);
      }
    }
  }

  /** Tells the watchdog until when the key lives; a bound that dropped goes to onBoundDropped's listeners first. */
  function tellAliveUntil(at: number): void {
    const dropped = at < toldUntil;
    toldUntil = at;
    if (dropped) tellBoundDropped();
    deps.onAliveUntil?.(at);
  }

  async function beat(): Promise<void> {
    const sentAt = performance.now();
    const stopsAtSend = stops;
    const mode = superseded !== null ? 'reclaim' : lastSentAt === -Infinity ? '1' : '0';
    const reply = await run<{ status: 'OK'; kept: boolean } | { status: 'SUPERSEDED'; by: string }>('beat-1', [keys.heartbeat(workerId)], [nonce, ttlMs, mode]);
    if (reply.status === 'SUPERSEDED') {
      // Replaced by another process under this worker id: nothing is sent (the gate's guard) while its nonce is there.
      // The beats go on asking, so this worker takes its id back once that process has gone.
      if (superseded === null) deps.onSuperseded?.(reply.by);
      superseded = reply.by;
      // Another nonce may have stood there since any instant after the last beat: other workers read this one's claims
      // as a restarted worker's, taken over at once.
      tellAliveUntil(sentAt);
      return;
    }
    if (superseded !== null) {
      const by = superseded;
      superseded = null;
      deps.onReclaimed?.(by);
    }
    // Stop's word stands over a beat it overtook: a key it cleared is gone, whatever this beat had set before.
    if (stops !== stopsAtSend) return;
    if (reply.kept !== true && mode === '0') {
      // The key was gone when this beat wrote it anew: it lapsed while the beats failed, or it vanished while they
      // succeeded (Redis failed over to a replica without it, a lagging replica expired it). Another worker may have
      // read this one as dead meanwhile and taken its claims over, so the sends in progress are aborted at once (their
      // outcome unknown, their claims kept), before the new bound is told, with aliveFor() answering 0 meanwhile.
      // The watchdog is not told the instant already past: the gate aborted those sends, and the sends that begin
      // after this beat go on.
      const sentBefore = lastSentAt;
      lastSentAt = -Infinity;
      tellBoundDropped();
      lastSentAt = sentBefore;
    }
    // A beat sent earlier and answered later (its script sent again after NOSCRIPT) set the key no shorter than the
    // later one did: it ran after it. The bound only moves forward.
    lastSentAt = Math.max(lastSentAt, sentAt);
    tellAliveUntil(lastSentAt + ttlMs);
  }

  return {
    workerId,
    nonce,
    ttlMs,
    intervalMs,
    beat,
    async start(): Promise<void> {
      await beat();
      timer ??= setInterval(() => {
        beat().catch((error: unknown) => deps.onError?.(error));
      }, intervalMs);
      timer.unref();
    },
    async stop(options: { clear?: boolean } = {}): Promise<void> {
      if (timer) clearInterval(timer);
      timer = null;
      stops += 1;
      lastSentAt = -Infinity;
      // Not cleared, the key lives out its TTL, and the bound last told stands: a send still in progress (close did
      // not wait for it, Redis being away) is killed before the key lapses. Cleared, it is gone from the moment the
      // command leaves.
      if (!options.clear) return;
      tellAliveUntil(performance.now());
      // Only its own key: a replaced worker leaves the heartbeat of the process that replaced it (clear-heartbeat-1).
      await run('clear-heartbeat-1', [keys.heartbeat(workerId)], [nonce]);
    },
    /**
     * Calls `listener` synchronously whenever the bound told onAliveUntil drops below the one told before, right before
     * it is told (aliveFor() already answers the new bound), and when a beat found the key gone, before the bound it
     * refreshed is told (aliveFor() answers 0 meanwhile). Returns the function that removes it.
     */
    onBoundDropped(listener: () => void): () => void {
      boundDropped.add(listener);
      return () => boundDropped.delete(listener);
    },
    /** The boot nonce of the process that now beats under this worker id, or null while this one holds it. */
    supersededBy(): string | null {
      return superseded;
    },
    /** How many ms this worker's own heartbeat key is certain to stay alive, by the local clock; 0 when unsure. */
    aliveFor(): number {
      if (superseded !== null) return 0;
      return Math.max(0, lastSentAt + ttlMs - performance.now());
    },
    /** True while `owner` is alive with the same boot nonce it held when it took the claim. */
    async isAlive(owner: string, ownerNonce: string): Promise<boolean> {
      return (await redis.get(keys.heartbeat(owner))) === ownerNonce;
    },
    /** Whether `owner` is alive with `ownerNonce`, and for how long its heartbeat has left to live if it stops beating. */
    async probe(owner: string, ownerNonce: string): Promise<Liveness> {
      const reply = await run<{ nonce: string; ttlMs: number; now: number }>('probe-heartbeat-1', [keys.heartbeat(owner)], []);
      const alive = reply.nonce === ownerNonce;
      return { alive, ttlMs: alive ? Math.max(0, reply.ttlMs) : 0, now: reply.now };
    },
  };
}
