// A connection that lets a test act while a listing is between its reads of an index, as a concurrent writer would.
import type { Redis } from 'ioredis';

/**
 * `redis`, except that `between` runs once, right before its second ZREVRANGEBYSCORE (the second batch of a page);
 * `reads` counts the listing's reads, so a test can check the hook was reached.
 */
export function writerBetweenReads(redis: Redis, between: () => Promise<unknown>): { redis: Redis; reads(): number } {
  let reads = 0;
  const hooked = new Proxy(redis, {
    get(target, name, receiver) {
      if (name !== 'zrevrangebyscore') return Reflect.get(target, name, receiver) as unknown;
      return async (...args: Parameters<Redis['zrevrangebyscore']>) => {
        reads += 1;
        if (reads === 2) await between();
        return target.zrevrangebyscore(...args);
      };
    },
  });
  return { redis: hooked, reads: () => reads };
}
