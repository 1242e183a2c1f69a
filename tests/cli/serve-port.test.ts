// `serve` on a port the operator chose (--port or INTERLOCK_PORT) that another program holds: the start fails with
// exit 2 and says which port and how to choose another, rather than serving somewhere the operator did not ask for
// (only the default port, taken, is swapped for a free one, and the start-up lines name it).
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, tempDir } from './run-cli.js';

const temp = tempDir('serve-port');
let holder: Server;
let port = 0;

beforeAll(async () => {
  holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  port = (holder.address() as { port: number }).port;
});

afterAll(async () => {
  await new Promise<void>((resolve) => holder.close(() => resolve()));
  temp.remove();
});

// The shared Redis keeps nothing on disk: the opt-out lets the api role start far enough to meet the port.
const env = (extra: Record<string, string>) => ({ INTERLOCK_DATA_DIR: join(temp.dir, 'data'), REDIS_URL: 'redis://127.0.0.1:6379', INTERLOCK_KEY_PREFIX: `serveport${process.pid}:`, INTERLOCK_HOST: '127.0.0.1', INTERLOCK_UNSAFE_DURABILITY: '1', ...extra });

describe.concurrent('serve on a port another program holds', { timeout: 60_000 }, () => {
  it('--port P: exits 2 naming the port and how to choose another', async () => {
    const run = await runCli(['serve', '--roles', 'api', '--port', String(port)], env({}), { timeoutMs: 40_000 });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(`127.0.0.1:${port} is in use by another program, so the service did not start. Choose another port with --port or INTERLOCK_PORT`);
  });

  it('INTERLOCK_PORT=P: the same', async () => {
    const run = await runCli(['serve', '--roles', 'api'], env({ INTERLOCK_PORT: String(port) }), { timeoutMs: 40_000 });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(`127.0.0.1:${port} is in use by another program`);
  });
});
