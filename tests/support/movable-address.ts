// An address a Redis client is given that can be moved to another server, as a DNS name or a virtual IP is moved in a
// failover: connections made after the move reach the new server, connections made before keep the old one.
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { freePort } from './private-redis.js';

export type MovableAddress = { port: number; point(to: number): void; close(): Promise<void> };

/** A TCP forwarder on a free port of 127.0.0.1, to the server on port `to` until `point` names another. */
export async function movableAddress(to: number): Promise<MovableAddress> {
  let target = to;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = createConnection({ port: target, host: '127.0.0.1' });
    sockets.add(client);
    sockets.add(upstream);
    client.pipe(upstream);
    upstream.pipe(client);
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end);
    upstream.on('error', end);
    client.on('close', end);
    upstream.on('close', end);
  });
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', () => resolve()));
  return {
    port,
    point(next) {
      target = next;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Polls `check` every 100 ms until it holds, or throws naming `what` after `withinMs`. */
export async function until(check: () => Promise<boolean>, what: string, withinMs = 30_000): Promise<void> {
  const giveUp = Date.now() + withinMs;
  while (!(await check())) {
    if (Date.now() > giveUp) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
