// Rule: a REDIS_URL that reaches a server other than Redis (a web server on the port, an SSH daemon) is said so, with
// what it looked like and what to check (the URL's host and port), exit 2; never the client's "Unknown RESP type 72
// "H". Please report this.", which asks for a bug report where the address is wrong. The URL's password is not shown.
// `serve` says it the same way at start (it used to pass the client's text on).
import { createServer as createHttpServer } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, tempDir } from './run-cli.js';

const temp = tempDir('redis-url-not-redis');
const servers: Server[] = [];
const sockets = new Set<Socket>();
let httpPort = 0;
let sshPort = 0;

const listening = async (server: Server): Promise<number> => {
  servers.push(server);
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
};

beforeAll(async () => {
  httpPort = await listening(createHttpServer((_request, response) => response.end('hello')));
  // An SSH daemon greets first, before the client says anything.
  sshPort = await listening(createTcpServer((socket) => socket.write('SSH-2.0-OpenSSH_9.6\r\n')));
});

afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  temp.remove();
});

describe.concurrent('a REDIS_URL that reaches something other than Redis', { timeout: 60_000 }, () => {
  it.each([
    ['an HTTP server', () => httpPort, '(its reply began with "H", as an HTTP server\'s does)'],
    ['an SSH daemon', () => sshPort, '(its reply began with "S", as an SSH server\'s does)'],
  ])('%s: says the server does not speak the Redis protocol, and to check the host and port', async (_name, port, looked) => {
    const url = `redis://reader:hunter2secret@127.0.0.1:${port()}`;
    const run = await runCli(['approvals', 'describe', 'ap_1'], { INTERLOCK_DATA_DIR: join(temp.dir, 'data'), REDIS_URL: url });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr.trim()).toBe(`Cannot reach Redis at redis://…@127.0.0.1:${port()}: the server there does not speak the Redis protocol ${looked}; nothing was changed. Check the host and port of REDIS_URL: they should name the port Redis listens on (6379 unless it was set otherwise).`);
    expect(run.stderr).not.toContain('Please report this');
    expect(run.stderr).not.toContain('hunter2secret');
  });
});

it('serve says so too, at start, and starts nothing', { timeout: 60_000 }, async () => {
  const url = `redis://reader:hunter2secret@127.0.0.1:${httpPort}`;
  const run = await runCli(['serve', '--roles', 'api', '--port', '0'], { INTERLOCK_DATA_DIR: join(temp.dir, 'serve-data'), REDIS_URL: url, STRIPE_SECRET_KEY: 'sk_test_notRedis', INTERLOCK_API_TOKENS: 'ops:operator:itk_notredisnotredisnotredis0001' });
  expect(run.code, run.stderr).toBe(2);
  expect(run.stderr).toContain(`Cannot reach Redis at redis://…@127.0.0.1:${httpPort}: the server there does not speak the Redis protocol (its reply began with "H", as an HTTP server's does). Check the host and port of REDIS_URL`);
  expect(run.stderr).not.toContain('Please report this');
  expect(run.stderr).not.toContain('hunter2secret');
});
