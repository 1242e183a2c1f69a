// Replica acknowledgements asked of a master on a connection of their own.
//
// Redis WAIT blocks the connection it is sent on until the replicas acknowledge or its timeout passes. Sent on the
// connection the process uses for everything else (a single server's one connection, a cluster client's one per
// master), the sends' WAITs queued one behind another with a replica behind (the tenth held back after ten timeouts,
// past the command timeout from the fifth on) and every binding, index read, alert and inbox command of the process
// waited behind them.
//
// Here each master gets a connection for WAIT alone, and one round at a time: the sends that ask while a round is out
// share the next. WAIT counts the replicas that acknowledged this connection's own last write, so each round writes a
// mark first (a key on that master, kept a minute): Redis's replication offset is one stream per master, so replicas
// that acknowledged the mark acknowledged every write the master took before it, the process's own connection's
// included. That holds only on the server that took those writes: this connection is opened on its own, and an
// address can lead elsewhere after a failover (a moved DNS name or virtual IP, a sentinel's new master) while the
// process's connection still writes to the old one. So a round first reads, for each send it answers, a proof of that
// send's write (its DISPATCHED's epoch, its own open-dispatch entry); a send whose proof this server lacks is answered 0.
import { Cluster, Redis } from 'ioredis';
import type { RedisClient } from './client.js';
import { keySlot } from './key-slot.js';

/** How long the mark outlives its round: only its write matters, never its value. */
const MARK_TTL_MS = 60_000;
/** Beyond a WAIT's own timeout, how long a round may take before it counts as no replica acknowledging. */
const ROUND_MARGIN_MS = 1_000;

/**
 * What was written on that master (by a send, a revoke, the facts): a hash field and the value written (`HGET key field`
 * must answer it), a sorted-set member added (`ZSCORE key member` must find it), or a string key and the value set
 * (`GET key` must answer it).
 */
export type WriteProof = { key: string; field: string; value: string } | { key: string; member: string } | { key: string; value: string };

export type ReplicaWaits = {
  /**
   * Replicas of the master at `address` that acknowledged every write it took before this call; 0 when that master
   * does not hold `proof`. `mark` is a key that master serves (a cluster's: of a slot it holds); a round whose mark it
   * does not serve answers 0.
   */
  acknowledged(address: string, ask: { mark: string; proof: WriteProof; replicas: number; timeoutMs: number }): Promise<number>;
  /** Closes every connection made for WAIT; a later call opens them again. */
  close(): void;
};

type Asking = { mark: string; proof: WriteProof; replicas: number; timeoutMs: number; answer: (acknowledged: number) => void };
type Waiter = { connection: Redis; running: boolean; queued: Asking[] };

/** `connect` opens a connection to the master at an address (its credentials and TLS as the process's own). */
export function createReplicaWaits(connect: (address: string) => Redis): ReplicaWaits {
  const waiters = new Map<string, Waiter>();

  function waiterFor(address: string): Waiter {
    const known = waiters.get(address);
    if (known !== undefined) return known;
    // A round that waits for the connection (the first, or one after a reconnect) is bounded by its own timer; what
    // it left queued is reads, a mark and a WAIT, harmless whenever they run.
    const connection = connect(address);
    connection.on('error', () => undefined);
    const waiter: Waiter = { connection, running: false, queued: [] };
    waiters.set(address, waiter);
    return waiter;
  }

  /** One round for `asking`: their proofs read, the mark written, one WAIT; each send's count, 0 when not held here. */
  async function round(connection: Redis, asking: readonly Asking[]): Promise<number[]> {
    const none = asking.map(() => 0);
    const [first] = asking;
    if (first === undefined) return none;
    const replicas = Math.max(...asking.map((ask) => ask.replicas));
    const timeoutMs = Math.max(...asking.map((ask) => ask.timeoutMs));
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<number[]>((resolve) => {
      timer = setTimeout(() => resolve(none), timeoutMs + ROUND_MARGIN_MS);
    });
    const asked = (async () => {
      const pipeline = connection.pipeline();
      for (const { proof } of asking) {
        if ('member' in proof) pipeline.zscore(proof.key, proof.member);
        else if ('field' in proof) pipeline.hget(proof.key, proof.field);
        else pipeline.get(proof.key);
      }
      pipeline.set(first.mark, String(Date.now()), 'PX', MARK_TTL_MS).wait(replicas, timeoutMs);
      const replies = (await pipeline.exec()) ?? [];
      const [marked, waited] = replies.slice(asking.length);
      if (marked === undefined || waited === undefined || marked[0] || waited[0]) return none;
      const acknowledged = Number(waited[1] ?? 0);
      return asking.map((ask, index) => {
        const [error, value] = replies[index] ?? [new Error('no reply'), null];
        const held = 'member' in ask.proof ? value !== null : value === ask.proof.value;
        return error === null && held ? acknowledged : 0;
      });
    })().catch(() => none);
    try {
      return await Promise.race([asked, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Rounds one after another while sends are queued: those that asked while one was out share the next. */
  async function drain(waiter: Waiter): Promise<void> {
    waiter.running = true;
    try {
      while (waiter.queued.length > 0) {
        const asking = waiter.queued.splice(0);
        const answers = await round(waiter.connection, asking);
        asking.forEach((ask, index) => ask.answer(answers[index] ?? 0));
      }
    } finally {
      waiter.running = false;
    }
  }

  return {
    acknowledged(address, ask) {
      const waiter = waiterFor(address);
      return new Promise<number>((answer) => {
        waiter.queued.push({ ...ask, answer });
        if (!waiter.running) void drain(waiter);
      });
    },
    close() {
      for (const waiter of waiters.values()) {
        waiter.connection.disconnect();
        for (const ask of waiter.queued.splice(0)) ask.answer(0);
      }
      waiters.clear();
    },
  };
}

/**
 * Opens, for `redis`'s writes, a connection for WAIT alone to the master at `address` (createReplicaWaits' `connect`):
 * a single server's is its own connection duplicated (the address is not read), a cluster's is to host:port, each with
 * the client's credentials and TLS.
 */
export function masterConnector(redis: RedisClient): (address: string) => Redis {
  return (address) => {
    if (!(redis instanceof Cluster)) return redis.duplicate({ maxRetriesPerRequest: 1 });
    const at = address.lastIndexOf(':');
    const { password, username, tls } = redis.options.redisOptions ?? {};
    return new Redis(Number(address.slice(at + 1)), address.slice(0, at), { ...(password === undefined ? {} : { password }), ...(username === undefined ? {} : { username }), ...(tls === undefined ? {} : { tls }), maxRetriesPerRequest: 1 });
  };
}

/**
 * The master that serves `key` for `redis`, by the address createReplicaWaits knows it by ('server' for a single
 * server); null when the client holds no ready connection to it on a cluster (whatever took a write there may be gone).
 */
export function masterServing(redis: RedisClient, key: string): string | null {
  if (!(redis instanceof Cluster)) return 'server';
  const master = redis.slots[keySlot(key)]?.[0];
  const live = redis.nodes('master').some((node) => `${node.options.host ?? ''}:${node.options.port ?? ''}` === master && node.status === 'ready');
  return master !== undefined && live ? master : null;
}

/**
 * Replicas of the master serving `ask.proof.key` that acknowledged every write it took, `proof`'s included (0 when it
 * does not hold it), asked in one round on a connection opened for it and closed after. For writes far rarer than
 * sends (an operator's revoke or cap), which keep no connection open between them, and so none to close at shutdown.
 */
export async function acknowledgedOnce(redis: RedisClient, ask: { mark: string; proof: WriteProof; replicas: number; timeoutMs: number }): Promise<number> {
  const address = masterServing(redis, ask.proof.key);
  if (address === null) return 0;
  const waits = createReplicaWaits(masterConnector(redis));
  try {
    return await waits.acknowledged(address, ask);
  } finally {
    waits.close();
  }
}
