// RULE: a websocket upgrade the sandbox refuses never takes the process down, even when the peer resets the
// connection. stripe-cli.md §3.3 (line 95): a refused dial is answered `{"error":{"message":"Unknown WebSocket ID."}}`
// and the CLI simply tries again. Node takes its own 'error' listener off a socket it hands to an 'upgrade' listener,
// so `handleUpgrade` (webhooks/stripe-cli.ts) must add one: without it a reset after the 400 was an uncaught
// ECONNRESET that ended the sandbox, and under `npm start` the service that embeds it. The sandbox runs as its own
// process here so that a crash shows as an exit instead of failing the test runner.
import { spawn } from 'node:child_process';
import net from 'node:net';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChildProcess } from 'node:child_process';

const root = new URL('../../', import.meta.url).pathname;
let server: ChildProcess;
let url: URL;
let exited = false;

beforeAll(async () => {
  server = spawn(process.execPath, ['--import', 'tsx', 'sandbox/server-main.ts', '--port', '0', '--delays', 'fast'], { cwd: root, stdio: ['ignore', 'pipe', 'ignore'] });
  server.once('exit', () => (exited = true));
  const line = await new Promise<string>((resolve, reject) => {
    if (server.stdout === null) throw new Error('no stdout');
    createInterface({ input: server.stdout }).once('line', resolve);
    server.once('exit', (code) => reject(new Error(`exited with ${String(code)} before printing`)));
  });
  url = new URL((JSON.parse(line) as { url: string }).url);
});
afterAll(() => {
  if (!exited) server.kill('SIGTERM');
});

/** Sends an upgrade request, waits for the refusal, then resets the TCP connection (RST) instead of closing it. */
function upgradeThenReset(path: string, websocketId: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect(Number(url.port), url.hostname, () => {
      socket.write(`GET ${path} HTTP/1.1\r\nHost: ${url.host}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nWebsocket-Id: ${websocketId}\r\n\r\n`);
    });
    socket.once('data', (chunk: Buffer) => {
      socket.resetAndDestroy();
      resolve(chunk.toString('utf8').split('\r\n')[0] ?? '');
    });
    socket.on('error', () => resolve('error'));
  });
}

describe('sandbox: a websocket upgrade the sandbox refuses', () => {
  it('survives a peer that resets the connection after an unknown Websocket-Id or an upgrade on another path is refused', async () => {
    const first = await upgradeThenReset('/subscribe/acct_1SandboxInterlock', 'cliws_unknown');
    expect(first).toBe('HTTP/1.1 400 Bad Request');
    for (let i = 0; i < 10; i++) await upgradeThenReset('/v1/refunds', 'cliws_unknown');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(exited).toBe(false);
    const health = await fetch(`${url.origin}/_sandbox/health`).then(
      (response) => response.status,
      (error: unknown) => String(error),
    );
    expect(health).toBe(200);
  });
});
