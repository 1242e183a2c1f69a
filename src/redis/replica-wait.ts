// Replica acknowledgements asked of a master on a connection of their own.
//
// Redis WAIT blocks the connection it is sent on until the replicas acknowledge or its timeout passes. Sent on the
// connection the process uses for everything else (a single server's one connection, a cluster client's one per
// master), the sends' WAITs queued one behind another with a replica behind (the tenth held back after ten timeouts,
// past the command timeout from the fifth on) and every binding, index read, alert and inbox command of the process
// waited behind them.
//
// Here each master gets a connection for WAIT alone, and one WAIT at a time: a send that asks while one is out shares
// the next, which every send that asked before it was written shares too. WAIT counts the replicas that acknowledged
// this connection's own last write, so each round writes a mark first (a key on that master, kept a minute): Redis's
// replication offset is one stream per master, so replicas that acknowledged the mark acknowledged every write the
// master took before it, the process's own connection's included.
import type { Redis } from 'ioredis';

/** How long the mark outlives its round: only its write matters, never its value. */
const MARK_TTL_MS = 60_000;
/** Beyond a WAIT's own timeout, how long a round may take before it counts as no replica acknowledging. */
const ROUND_MARGIN_MS = 1_000;

export type ReplicaWaits = {
  /**
   * Replicas of the master at `address` that acknowledged every write it took before this call. `mark` is a key that
   * master serves (a cluster's: of a slot it holds); a round whose mark it does not serve answers 0.
   */
  acknowledged(address: string, mark: string, replicas: number, timeoutMs: number): Promise<number>;
  /** Closes every connection made for WAIT; a later call opens them again. */
  close(): void;
};

type Waiter = { connection: Redis; running: Promise<number> | null; next: Promise<number> | null };

/** `connect` opens a connection to the master at an address (its credentials and TLS as the process's own). */
export function createReplicaWaits(connect: (address: string) => Redis): ReplicaWaits {
  const waiters = new Map<string, Waiter>();

  function waiterFor(address: string): Waiter {
    const known = waiters.get(address);
    if (known !== undefined) return known;
    // A round that waits for the connection (the first, or one after a reconnect) is bounded by its own timer; what
    // it left queued is a mark and a WAIT, harmless whenever they run.
    const connection = connect(address);
    connection.on('error', () => undefined);
    const waiter: Waiter = { connection, running: null, next: null };
    waiters.set(address, waiter);
    return waiter;
  }

  async function round(connection: Redis, mark: string, replicas: number, timeoutMs: number): Promise<number> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<number>((resolve) => {
      timer = setTimeout(() => resolve(0), timeoutMs + ROUND_MARGIN_MS);
    });
    const asked = (async () => {
      const replies = await connection.pipeline().set(mark, String(Date.now()), 'PX', MARK_TTL_MS).wait(replicas, timeoutMs).exec();
      const [marked, waited] = replies ?? [];
      if (marked?.[0] || waited?.[0]) return 0;
      return Number(waited?.[1] ?? 0);
    })().catch(() => 0);
    try {
      return await Promise.race([asked, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  return {
    acknowledged(address, mark, replicas, timeoutMs) {
      const waiter = waiterFor(address);
      // A round already written may not cover this caller's writes; the one queued after it does, and is shared.
      if (waiter.next !== null) return waiter.next;
      const start = (): Promise<number> => {
        const running = round(waiter.connection, mark, replicas, timeoutMs);
        waiter.running = running;
        void running.then(() => {
          if (waiter.running === running) waiter.running = null;
        });
        return running;
      };
      if (waiter.running === null) return start();
      const next = waiter.running.then(() => {
        waiter.next = null;
        return start();
      });
      waiter.next = next;
      return next;
    },
    close() {
      for (const waiter of waiters.values()) waiter.connection.disconnect();
      waiters.clear();
    },
  };
}
