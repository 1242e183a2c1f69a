// The Redis connections the service opens from REDIS_URL: what the URL asks for (TLS with rediss://) holds on a
// Redis Cluster (INTERLOCK_REDIS_CLUSTER=1) as on one server, for the gate's client and for the queues' connections.
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { createQueueConnection, createRedisClient, type RedisClient } from '../../src/redis/client.js';
import { loadConfig, openStores } from '../../src/interlock.js';
import { testKey } from '../support/harness.js';

/** The first bytes a client opened on `url` sends to a listener that answers nothing. */
async function firstBytes(open: (url: string) => RedisClient): Promise<Buffer> {
  let client: RedisClient | undefined;
  const server = createServer();
  try {
    return await new Promise<Buffer>((resolve, reject) => {
      server.on('connection', (socket) => socket.once('data', (data: Buffer) => resolve(data)));
      server.on('error', reject);
      server.listen(0, '127.0.0.1', () => {
        const address = server.address();
        const port = typeof address === 'object' && address ? address.port : 0;
        client = open(`rediss://default:s3cret@127.0.0.1:${port}`);
        client.on('error', () => undefined);
      });
    });
  } finally {
    client?.disconnect();
    server.close();
  }
}

const TLS_HANDSHAKE = 0x16;

describe('rediss:// URLs', () => {
  it('a rediss:// URL opens TLS to one server, and the password never leaves in clear', async () => {
    const sent = await firstBytes((url) => createRedisClient({ redisUrl: url, redisCluster: false }));
    expect(sent[0]).toBe(TLS_HANDSHAKE);
  });

  it('a rediss:// URL opens TLS to a Redis Cluster too (the gate client): the password never leaves in clear', async () => {
    const sent = await firstBytes((url) => createRedisClient({ redisUrl: url, redisCluster: true }));
    expect(sent.toString('latin1')).not.toContain('s3cret');
    expect(sent[0]).toBe(TLS_HANDSHAKE);
  });

  it('a rediss:// URL opens TLS to a Redis Cluster too (the queue connections): the password never leaves in clear', async () => {
    const sent = await firstBytes((url) => createQueueConnection({ redisUrl: url, redisCluster: true }));
    expect(sent.toString('latin1')).not.toContain('s3cret');
    expect(sent[0]).toBe(TLS_HANDSHAKE);
  });
});

describe('closing while Redis is away', () => {
  it('a process whose Redis dropped its connections exits once they are closed, not held 2 s per connection by ioredis', async () => {
    // The child opens both kinds of connection to a listener that drops them (Redis gone), closes them the way a
    // stopping service does, and reports how long its event loop stayed alive after that. ioredis arms a
    // disconnect timer (2 s by default) for a socket whose close already happened and never comes again.
    const script = `
      import { createServer } from 'node:net';
      import { createQueueConnection, createRedisClient } from './src/redis/client.ts';
      const server = createServer((socket) => socket.destroy());
      await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
      const url = 'redis://127.0.0.1:' + server.address().port;
      const clients = [createRedisClient({ redisUrl: url, redisCluster: false }), createQueueConnection({ redisUrl: url, redisCluster: false })];
      for (const client of clients) client.on('error', () => undefined);
      await new Promise((resolve) => setTimeout(resolve, 300));
      server.close();
      const closedAt = performance.now();
      for (const client of clients) client.disconnect();
      process.on('exit', () => process.stdout.write(String(Math.round(performance.now() - closedAt))));
    `;
    const { execFileSync } = await import('node:child_process');
    const lingered = Number(execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 20_000 }));
    expect(lingered).toBeLessThan(1_000);
  });
});

describe('the database REDIS_URL names', () => {
  it('a number Redis refuses to select makes the store unreachable, naming it: the client would go on in database 0, another deployment\'s data', async () => {
    const stores = await openStores({ ...loadConfig({}), redisUrl: 'redis://127.0.0.1:6379/99', keyPrefix: `dbcheck${process.pid}`, unsafeDurability: true, logLevel: 'silent' }, { signingKey: testKey().key });
    const selected = await openStores({ ...loadConfig({}), redisUrl: 'redis://127.0.0.1:6379/1', keyPrefix: `dbcheck${process.pid}`, unsafeDurability: true, logLevel: 'silent' }, { signingKey: testKey().key });
    try {
      expect(await stores.unreachable()).toBe('REDIS_URL names database 99, which Redis refused to select (it has fewer: its `databases` setting), and the connection is on database 0');
      expect(await selected.unreachable()).toBeNull();
    } finally {
      await stores.close();
      await selected.close();
    }
  });
});
