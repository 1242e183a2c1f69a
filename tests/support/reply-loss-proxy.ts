// A TCP proxy in front of Redis that, once armed, lets the write a client makes of a command matching `trigger` reach
// Redis (so the command runs) and then cuts the connection at the first bytes Redis answers after it, passing none of
// them on: a Redis that died, or a network that dropped, after the command ran and before the client read its reply.
// The client reconnects through the same proxy, which passes everything from then on. (Redis reads what was sent before
// the cut ahead of the close that follows it, so the command runs even when the first answer is an earlier command's.)
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { pairSockets } from './socket-pair.js';

export type ReplyLossProxy = {
  url: string;
  /** Cuts the connection whose next write contains what `trigger` accepts, once its reply begins. */
  arm(trigger: (written: string) => boolean): void;
  /** How many writes a trigger accepted. */
  fired(): number;
  close(): Promise<void>;
};

export async function replyLossProxy(redisUrl: string): Promise<ReplyLossProxy> {
  const target = new URL(redisUrl);
  const sockets = new Set<Socket>();
  let trigger: ((written: string) => boolean) | null = null;
  let fired = 0;
  const server: Server = createServer((client) => {
    const upstream = connect(Number(target.port || 6379), target.hostname);
    const end = pairSockets(client, upstream, sockets);
    let cutting = false;
    client.on('data', (chunk: Buffer) => {
      if (trigger?.(chunk.toString('latin1')) === true) {
        trigger = null;
        fired += 1;
        cutting = true;
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (cutting) end();
      else client.write(chunk);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    url: `redis://127.0.0.1:${port}`,
    arm(next) {
      trigger = next;
    },
    fired: () => fired,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The SHA the gate runs one of its Lua scripts by (src/redis/scripts.ts: lib.lua, a newline, the script). */
export function scriptSha(name: string): string {
  const dir = fileURLToPath(new URL('../../src/redis/scripts/', import.meta.url));
  const source = `${readFileSync(`${dir}lib.lua`, 'utf8')}\n${readFileSync(`${dir}${name}.lua`, 'utf8')}`;
  return createHash('sha1').update(source).digest('hex');
}
