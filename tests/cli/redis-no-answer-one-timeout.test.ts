// Rule: a one-shot command against a Redis that accepts the connection and never answers (a stuck server, a TCP proxy
// with no backend, rediss:// aimed at a plain Redis whose TLS handshake never ends) fails after one
// INTERLOCK_REDIS_COMMAND_TIMEOUT_MS, on one connection, exit 2, with the "Cannot reach Redis at … (Command timed out);
// nothing was changed." sentence it said before the cluster_enabled check existed. That check (withStores) waited the
// whole timeout, took the silence for "cannot tell", and the command's own client then waited it again on a second
// connection. The connection count, not the clock, is what this test holds to.
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, tempDir } from './run-cli.js';

const temp = tempDir('redis-no-answer');
const TIMEOUT_MS = 2_000;
let server: Server;
let port = 0;
let connections = 0;
const sockets: Socket[] = [];

beforeAll(async () => {
  server = createServer((socket) => {
    connections += 1;
    sockets.push(socket);
    socket.on('data', () => undefined);
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  port = typeof address === 'object' && address !== null ? address.port : 0;
});

afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  temp.remove();
});

const env = (scheme: string) => ({ REDIS_URL: `${scheme}://127.0.0.1:${port}`, INTERLOCK_KEY_PREFIX: 'redisnoanswer', INTERLOCK_DATA_DIR: join(temp.dir, 'data'), INTERLOCK_REDIS_COMMAND_TIMEOUT_MS: String(TIMEOUT_MS) });

describe('a one-shot command against a server that accepts the connection and never answers', { timeout: 60_000 }, () => {
  it.each(['redis', 'rediss'])('%s://: gives up on its first connection with "Cannot reach Redis … (Command timed out)", exit 2', async (scheme) => {
    const before = connections;
    const run = await runCli(['approvals', 'describe', 'ap_no_answer'], env(scheme), { timeoutMs: 40_000 });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr.trim()).toBe(`Cannot reach Redis at ${scheme}://127.0.0.1:${port} (Command timed out); nothing was changed. Start Redis or set REDIS_URL (its address, user and password; for rediss://, a certificate Node trusts, e.g. with NODE_EXTRA_CA_CERTS).`);
    expect(connections - before).toBe(1);
  });
});
