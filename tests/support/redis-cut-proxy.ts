// A TCP proxy in front of Redis that can cut a process off from it: every connection through it dropped and new ones
// refused at once, as a network split between a worker and Redis would (the worker and Redis both live on).
import { connect, createServer, type Server, type Socket } from 'node:net';
import { pairSockets } from './socket-pair.js';

export type RedisCutProxy = { url: string; cut(): void; heal(): void; close(): Promise<void> };

export async function startRedisCutProxy(target: { host: string; port: number }): Promise<RedisCutProxy> {
  const sockets = new Set<Socket>();
  let cutOff = false;
  const server: Server = createServer((client) => {
    if (cutOff) {
      client.destroy();
      return;
    }
    const upstream = connect(target.port, target.host);
    pairSockets(client, upstream, sockets);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    url: `redis://127.0.0.1:${port}`,
    cut() {
      cutOff = true;
      for (const socket of sockets) socket.destroy();
    },
    heal() {
      cutOff = false;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
