// A stand-in for `npm start` holding its private redis-server (tests/redis/private-server.test.ts): starts one under
// the data directory in argv, prints its pid, then ignores SIGINT (as a service draining its sends does) until a line
// on standard input tells it to exit at once, without stopping Redis, as a second Ctrl-C makes the service do.
import { createInterface } from 'node:readline';
import { startPrivateRedis } from '../../src/redis/private-server.js';

const redis = await startPrivateRedis(process.argv[2] ?? '');
process.on('SIGINT', () => process.stdout.write('draining\n'));
process.stdout.write(`${redis.pid}\n`);
createInterface({ input: process.stdin }).once('line', () => process.exit(130));
