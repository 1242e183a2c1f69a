// Counts the commands a client sends, for tests and benchmarks that state what something costs in Redis commands.
import type { Command, Redis } from 'ioredis';

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

/** Records the commands `redis` sends from now on and names those that carry `needle` in an argument (an effect id, so a heartbeat in between is not counted). */
export function commandsNaming(redis: Redis): { naming(needle: string): string[] } {
  const sent: Command[] = [];
  const send = redis.sendCommand.bind(redis);
  redis.sendCommand = ((command: Command, ...rest: unknown[]) => {
    sent.push(command);
    return (send as (...args: unknown[]) => unknown)(command, ...rest);
  }) as Redis['sendCommand'];
  return { naming: (needle) => sent.filter((command) => command.args.some((arg) => String(arg).includes(needle))).map((command) => command.name) };
}
