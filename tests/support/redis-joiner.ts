// A stand-in for a `serve --roles worker` that joined `npm start` through service.json
// (tests/redis/private-server-shared-stop.test.ts): connects to the Redis whose address is in argv, prints `joined`,
// answers each line on standard input with that Redis's PING answer (or the error), and exits when its input closes.
import { createInterface } from 'node:readline';
import { Redis } from 'ioredis';

const redis = new Redis(process.argv[2] ?? '', { maxRetriesPerRequest: 0, retryStrategy: () => null });
redis.on('error', () => undefined);
await redis.ping();
process.stdout.write('joined\n');
const input = createInterface({ input: process.stdin });
input.on('line', () => {
  redis.ping().then(
    (answer) => process.stdout.write(`${answer}\n`),
    (error: unknown) => process.stdout.write(`${error instanceof Error ? error.message : String(error)}\n`),
  );
});
input.once('close', () => {
  redis.disconnect();
});
