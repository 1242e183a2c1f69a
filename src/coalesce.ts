// Work that arrives during one turn of the event loop, run in batches: the webhook route's adds (the requests Node
// reads in one poll go to Redis together and are made durable by one fsync, where each used to cost its own
// commands, writes, replies and promise chains), and the gate's seals (the batches sealed in one turn share one
// signature, src/keys/sealer.ts).
//
// A batch leaves at the end of the turn (setImmediate: after the turn's I/O callbacks and their microtasks), or as
// soon as it holds `maxBatch` items, so that Redis works on the first part of a burst while Node still reads the
// rest (a whole burst in one batch leaves Redis idle while it is read, then Node idle while Redis answers it). A
// batch under way never holds back the next one: nothing waits for anything but its own batch.

export type Coalescer<T, R> = {
  /** Runs `item` with whatever else arrives this turn; settles with the item's own answer. */
  submit(item: T): Promise<R>;
};

export type CoalescerOptions = {
  /** Most items in one batch; more in one turn go in further batches. Unbounded when not given. */
  maxBatch?: number;
};

/**
 * `run` gets the items of one batch in the order they were submitted and answers one value per item, in that
 * order. When it throws, or answers a value short, every item of its batch fails with that error.
 */
export function createCoalescer<T, R>(run: (items: readonly T[]) => Promise<readonly R[]>, options: CoalescerOptions = {}): Coalescer<T, R> {
  type Waiting = { item: T; resolve: (value: R) => void; reject: (error: unknown) => void };
  const maxBatch = options.maxBatch ?? Infinity;
  let waiting: Waiting[] = [];

  async function flush(): Promise<void> {
    const batch = waiting;
    waiting = [];
    // A batch that left early, at maxBatch, leaves nothing for the end of its turn.
    if (batch.length === 0) return;
    let answers: readonly R[];
    try {
      answers = await run(batch.map((entry) => entry.item));
      if (answers.length !== batch.length) throw new Error(`The batch answered ${answers.length} values for ${batch.length} items.`);
    } catch (error) {
      for (const entry of batch) entry.reject(error);
      return;
    }
    answers.forEach((answer, index) => batch[index]?.resolve(answer));
  }

  return {
    submit(item) {
      return new Promise<R>((resolve, reject) => {
        waiting.push({ item, resolve, reject });
        if (waiting.length === 1) setImmediate(() => void flush());
        if (waiting.length >= maxBatch) void flush();
      });
    },
  };
}
