// Rule: the service's HTTP listeners give a client a bounded time to send a whole request (src/main.ts httpServer,
// REQUEST_READ_TIMEOUT_MS): a body still trickling in past it is answered 408 and the connection closed, so nobody can
// hold connections open on the tokenless webhook route one byte at a time (Node's default waited 300 s). The time is
// for receiving the request only: an answer that takes longer to make (a `?wait=` request) is not cut.
import { connect, type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { httpServer } from '../../src/main.js';
import type { Server } from 'node:http';

const READ_MS = 1_500;
let server: Server | null = null;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  server = null;
});

/** A server that reads the whole body, then answers after `answerMs`. */
async function started(answerMs: number): Promise<number> {
  server = httpServer((req, res) => {
    req.resume();
    req.on('end', () => setTimeout(() => res.end('done'), answerMs));
  }, READ_MS);
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** Sends a request whose body comes one byte every `everyMs`; resolves with what the server said and when the connection ended. */
function trickle(port: number, everyMs: number, bytes: number): Promise<{ said: string; afterMs: number }> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const began = performance.now();
    let said = '';
    let timer: NodeJS.Timeout | undefined;
    socket.on('connect', () => {
      socket.write(`POST /webhooks/stripe HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${bytes}\r\n\r\n`);
      let sent = 0;
      timer = setInterval(() => {
        if (sent < bytes && !socket.destroyed) socket.write('x');
        sent += 1;
      }, everyMs);
    });
    socket.on('data', (chunk) => (said += chunk.toString()));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearInterval(timer);
      resolve({ said, afterMs: performance.now() - began });
    });
  });
}

describe('the service HTTP server', () => {
  it('answers a body still trickling in past the read time 408 and closes the connection', async () => {
    const port = await started(0);
    const { said, afterMs } = await trickle(port, 200, 100);
    expect(said).toMatch(/^HTTP\/1\.1 408/);
    expect(afterMs).toBeLessThan(READ_MS * 4);
  });

  it('does not cut an answer that takes longer than the read time to make, once the request is in', async () => {
    const port = await started(READ_MS * 2);
    const answer = await fetch(`http://127.0.0.1:${port}/v1/refunds?wait=10`, { method: 'POST', body: '{}' });
    expect([answer.status, await answer.text()]).toEqual([200, 'done']);
  });
});
