// Counts the commands a client sends, for tests and benchmarks that state what something costs in Redis commands.
import type { Redis } from 'ioredis';

/**
 * Counts the commands `redis` sends from now on (a script call is one command, whatever it does inside; Redis's own
 * commandstats would count every call a script makes too, and every other client's).
 */
export function countCommands(redis: Redis): { read(): number } {
  let sent = 0;
  const send = redis.sendCommand.bind(redis);
  redis.sendCommand = ((...args: Parameters<Redis['sendCommand']>) => {
    sent += 1;
    return send(...args);
  }) as Redis['sendCommand'];
  return { read: () => sent };
}
