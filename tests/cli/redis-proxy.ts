// A TCP proxy in front of Redis for CLI tests: it passes everything through until a client command holding `trigger`
// has been sent and answered; the next command any client sends then finds Redis gone (every connection cut, the
// port closed), as when Redis dies between two writes of one CLI command.
import { createServer, connect, type Server, type Socket } from 'node:net';

export type CutProxy = { url: string; cut(): boolean; close(): Promise<void> };

export async function cutAfter(trigger: string, target = { host: '127.0.0.1', port: 6379 }): Promise<CutProxy> {
  const sockets = new Set<Socket>();
  let seen = false;
  let answered = false;
  let cut = false;
  const holder: { server: Server | null } = { server: null };
  const cutAll = () => {
    if (cut) return;
    cut = true;
    holder.server?.close();
    for (const socket of sockets) socket.destroy();
  };
  const server: Server = createServer((client) => {
    if (cut) return client.destroy();
    const upstream = connect(target.port, target.host);
    sockets.add(client);
    sockets.add(upstream);
    let armedHere = false;
    client.on('data', (chunk: Buffer) => {
      if (cut) return;
      if (answered) {
        cutAll();
        return;
      }
      if (!seen && chunk.toString('latin1').includes(trigger)) {
        seen = true;
        armedHere = true;
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (cut) return;
      client.write(chunk);
      if (armedHere) answered = true;
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end);
    upstream.on('error', end);
    client.on('close', end);
    upstream.on('close', end);
  });
  holder.server = server;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    url: `redis://127.0.0.1:${port}`,
    cut: () => cut,
    close: async () => {
      cutAll();
    },
  };
}
