// A private redis-server on a free port in a temp dir, for tests that need persistence or must kill and restart
// Redis. Always stop it in afterAll.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export type PrivateRedis = { url: string; port: number; dir: string; process: ChildProcess; kill(signal?: NodeJS.Signals): Promise<void>; restart(): Promise<void>; stop(): Promise<void> };

async function waitForPing(url: string, timeoutMs = 10_000): Promise<void> {
  const giveUp = Date.now() + timeoutMs;
  for (;;) {
    const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    client.on('error', () => undefined);
    try {
      await client.connect();
      if ((await client.ping()) === 'PONG') {
        client.disconnect();
        return;
      }
    } catch {
      client.disconnect();
    }
    if (Date.now() > giveUp) throw new Error(`redis-server at ${url} did not answer within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Starts redis-server with `args` (besides port, dir and bind) and waits for it to answer. */
export async function startPrivateRedis(args: readonly string[]): Promise<PrivateRedis> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'interlock-redis-'));
  const url = `redis://127.0.0.1:${port}`;
  const launch = () => spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, ...args], { stdio: 'ignore' });
  const handle: PrivateRedis = {
    url,
    port,
    dir,
    process: launch(),
    async kill(signal = 'SIGKILL') {
      const child = handle.process;
      if (child.exitCode !== null || child.signalCode !== null) return;
      await new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill(signal);
      });
    },
    async restart() {
      handle.process = launch();
      await waitForPing(url);
    },
    async stop() {
      await handle.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
  // One that never answers (a bad argument, a password its ping does not give) is stopped, not left running.
  await waitForPing(url).catch(async (error: unknown) => {
    await handle.stop();
    throw error;
  });
  return handle;
}
