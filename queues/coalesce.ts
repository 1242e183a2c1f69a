// Work that arrives during one turn of the event loop, run as one batch at the end of that turn (a producer many
// requests share, such as the webhook route's adds: the requests Node reads in one poll go to Redis together and
// are made durable by one fsync, where each used to cost its own commands, writes, replies and promise chains).
//
// The batch runs from setImmediate, after the turn's I/O callbacks and their microtasks, never later: a batch under
// way does not hold back the next one, so nothing waits for anything but its own batch.

export type Coalescer<T, R> = {
  /** Runs `item` with whatever else arrives this turn; settles with the item's own answer. */
  submit(item: T): Promise<R>;
};

/**
 * `run` gets the items of one turn in the order they were submitted and answers one value per item, in that
 * order. When it throws, or answers a value short, every item of its batch fails with that error.
 */
export function createCoalescer<T, R>(run: (items: readonly T[]) => Promise<readonly R[]>): Coalescer<T, R> {
  type Waiting = { item: T; resolve: (value: R) => void; reject: (error: unknown) => void };
  let waiting: Waiting[] = [];

  async function flush(): Promise<void> {
    const batch = waiting;
    waiting = [];
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
      });
    },
  };
}
