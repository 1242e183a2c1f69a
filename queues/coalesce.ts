// Work that arrives during one turn of the event loop, run as one batch at the end of that turn (a producer many
// requests share, such as the webhook route's adds: the requests Node reads in one poll go to Redis in one write
// and are made durable by one fsync, where each used to cost its own writes, replies and promise chains).
//
// The batch runs from setImmediate, after the turn's I/O callbacks and their microtasks, never later: a batch under
// way does not hold back the next one, so nothing waits for anything but its own batch.

/** One item's outcome in its batch: its own value, or its own failure. */
export type Settled<R> = { ok: true; value: R } | { ok: false; error: unknown };

export type Coalescer<T, R> = {
  /** Runs `item` with whatever else arrives this turn; settles with the item's own outcome. */
  submit(item: T): Promise<R>;
};

/**
 * `run` gets the items of one turn in the order they were submitted and answers one outcome per item, in that
 * order. An item whose outcome is missing, and every item of a batch whose `run` throws, fails with that error.
 */
export function createCoalescer<T, R>(run: (items: readonly T[]) => Promise<readonly Settled<R>[]>): Coalescer<T, R> {
  type Waiting = { item: T; resolve: (value: R) => void; reject: (error: unknown) => void };
  let waiting: Waiting[] = [];

  async function flush(): Promise<void> {
    const batch = waiting;
    waiting = [];
    let outcomes: readonly Settled<R>[];
    try {
      outcomes = await run(batch.map((entry) => entry.item));
    } catch (error) {
      for (const entry of batch) entry.reject(error);
      return;
    }
    batch.forEach((entry, index) => {
      const outcome = outcomes[index];
      if (outcome === undefined) entry.reject(new Error(`The batch answered ${outcomes.length} outcomes for ${batch.length} items.`));
      else if (outcome.ok) entry.resolve(outcome.value);
      else entry.reject(outcome.error);
    });
  }

  return {
    submit(item) {
      return new Promise<R>((resolve, reject) => {
        waiting.push({ item, resolve, reject });
        if (waiting.length === 1) setImmediate(() => void flush());
      });
    },
  };
}
