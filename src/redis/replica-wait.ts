// Replica acknowledgements asked of a cluster master on a connection of their own.
//
// Redis WAIT blocks the connection it is sent on until the replicas acknowledge or its timeout passes, and a cluster
// client has one connection per master. The index's master holds every effect's binding and open-dispatch entry, so
// every send of a process asks it (journal.ts replicated): on the client's own connection, with that master's replica
// behind, the sends' WAITs queued one behind another (the tenth held back after ten timeouts) and every binding, index
// read, alert and inbox command of the process waited behind them.
//
// Here each master gets a connection for WAIT alone, and one WAIT at a time: a send that asks while one is out shares
// the next, which every send that asked before it was written shares too. WAIT counts the replicas that acknowledged
// this connection's own last write, so each round writes a mark first (a key of the index's hash tag, kept a minute):
// Redis's replication offset is one stream per master, so replicas that acknowledged the mark acknowledged every
// write the master took before it, the client connection's bindings and index entries included.
import { Redis, type Cluster } from 'ioredis';

/** How long the mark outlives its round: only its write matters, never its value. */
const MARK_TTL_MS = 60_000;
/** Beyond a WAIT's own timeout, how long a round may take before it counts as no replica acknowledging. */
const ROUND_MARGIN_MS = 1_000;

export type ReplicaWaits = {
  /** Replicas of the master at `address` (host:port) that acknowledged every write it took before this call. */
  acknowledged(address: string, replicas: number, timeoutMs: number): Promise<number>;
};

type Waiter = { connection: Redis; running: Promise<number> | null; next: Promise<number> | null };

export function createReplicaWaits(cluster: Cluster, markKey: string): ReplicaWaits {
  const waiters = new Map<string, Waiter>();
  // The connections close with the cluster client: every way the service closes its Redis ends it.
  cluster.once('end', () => {
    for (const waiter of waiters.values()) waiter.connection.disconnect();
    waiters.clear();
  });

  function waiterFor(address: string): Waiter {
    const known = waiters.get(address);
    if (known !== undefined) return known;
    const at = address.lastIndexOf(':');
    // The cluster's node credentials and TLS. A round that waits for the connection (the first, or one after a
    // reconnect) is bounded by its own timer; what it left queued is a mark and a WAIT, harmless whenever they run.
    const { password, username, tls } = cluster.options.redisOptions ?? {};
    const connection = new Redis(Number(address.slice(at + 1)), address.slice(0, at), {
      ...(password === undefined ? {} : { password }),
      ...(username === undefined ? {} : { username }),
      ...(tls === undefined ? {} : { tls }),
      maxRetriesPerRequest: 1,
    });
    connection.on('error', () => undefined);
    const waiter: Waiter = { connection, running: null, next: null };
    waiters.set(address, waiter);
    return waiter;
  }

  async function round(connection: Redis, replicas: number, timeoutMs: number): Promise<number> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<number>((resolve) => {
      timer = setTimeout(() => resolve(0), timeoutMs + ROUND_MARGIN_MS);
    });
    const asked = (async () => {
      const replies = await connection.pipeline().set(markKey, String(Date.now()), 'PX', MARK_TTL_MS).wait(replicas, timeoutMs).exec();
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
    acknowledged(address, replicas, timeoutMs) {
      const waiter = waiterFor(address);
      // A round already written may not cover this caller's writes; the one queued after it does, and is shared.
      if (waiter.next !== null) return waiter.next;
      const start = (): Promise<number> => {
        const running = round(waiter.connection, replicas, timeoutMs);
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
  };
}
