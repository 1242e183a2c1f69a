// A client's connection and the one a test proxy opened for it upstream, held as a pair: both in `sockets` (so the
// proxy can destroy every one), and both ended as soon as either errs or closes. Returns that end.
import type { Socket } from 'node:net';

export function pairSockets(client: Socket, upstream: Socket, sockets: Set<Socket>): () => void {
  sockets.add(client);
  sockets.add(upstream);
  const end = () => {
    client.destroy();
    upstream.destroy();
    sockets.delete(client);
    sockets.delete(upstream);
  };
  client.on('error', end);
  upstream.on('error', end);
  client.on('close', end);
  upstream.on('close', end);
  return end;
}
