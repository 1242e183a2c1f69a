// A stopping service must stop even while a client holds a request open: a webhook sender that stalls mid-body, a
// keep-alive pool that never goes idle. server.close() alone waits for every such connection (up to Node's
// 300 s request timeout); the service drains for a few seconds, then cuts what is still open. A webhook cut this
// way was never answered, so Stripe delivers it again.
// Ctrl-C on `npm start` reaches the service twice (the terminal's group, then npm forwarding it): one stop.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { spawnWorker } from '../pipeline/pipeline-support.js';
import { removePrefixes } from '../support/harness.js';

const REPO = new URL('../../', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'interlock-shutdown-'));
const prefix = `shutdown-${randomBytes(4).toString('hex')}`;
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await removePrefixes([prefix]);
});

it('SIGTERM ends serve within seconds while a client holds a webhook request open mid-body', async () => {
  const worker = spawnWorker({
    REDIS_URL: 'redis://127.0.0.1:6379',
    INTERLOCK_KEY_PREFIX: prefix,
    INTERLOCK_UNSAFE_DURABILITY: '1',
    INTERLOCK_DATA_DIR: dir,
    STRIPE_SECRET_KEY: 'sk_test_shutdown',
    STRIPE_WEBHOOK_SECRET: 'whsec_shutdownTestSecret0123456789',
  }, ['serve', '--roles', 'webhooks', '--port', '0']);
  try {
    await worker.ready;
    const line = worker.logs().split('\n').find((text) => text.includes('"msg":"interlock serving"')) ?? '';
    const url = new URL((JSON.parse(line) as { url: string }).url);
    // Headers and half the body, then nothing: the request is in progress for as long as the socket stays open.
    const socket = connect(Number(url.port), url.hostname);
    socket.on('error', () => undefined);
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.write(`POST /webhooks/stripe HTTP/1.1\r\nHost: ${url.host}\r\ncontent-type: application/json\r\nstripe-signature: t=1,v1=00\r\ncontent-length: 100\r\n\r\n{"id":"evt_`);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const stoppedAt = Date.now();
    worker.child.kill('SIGTERM');
    const exit = await Promise.race([worker.exited, new Promise<'still running'>((resolve) => setTimeout(() => resolve('still running'), 15_000))]);
    socket.destroy();
    expect(exit).toEqual({ code: 0, signal: null });
    expect(Date.now() - stoppedAt).toBeLessThan(15_000);
  } finally {
    await worker.stop(1_000);
  }
}, 90_000);

it('Ctrl-C on npm start (SIGINT to the whole process group, which npm forwards again) is one stop, not a second signal', async () => {
  const data = mkdtempSync(join(tmpdir(), 'interlock-ctrl-c-'));
  let out = '';
  // Its own process group, as a terminal's foreground job: Ctrl-C signals npm, the service and its redis-server.
  const npm = spawn('npm', ['start'], { cwd: REPO, env: { PATH: process.env.PATH ?? '', HOME: data, INTERLOCK_DATA_DIR: data, INTERLOCK_PORT: '0' }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  npm.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  npm.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => npm.once('exit', (code) => resolve(code)));
  try {
    const giveUp = Date.now() + 60_000;
    while (!out.includes('is running') && npm.exitCode === null && Date.now() < giveUp) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(out).toContain('is running');
    process.kill(-(npm.pid ?? 0), 'SIGINT');
    const code = await Promise.race([exited, new Promise<'still running'>((resolve) => setTimeout(() => resolve('still running'), 20_000))]);
    expect(out).not.toContain('second signal');
    expect(out).toContain('"msg":"stopped"');
    expect(code).toBe(0);
  } finally {
    if (npm.exitCode === null && npm.pid !== undefined) process.kill(-npm.pid, 'SIGKILL');
    const pidFile = join(data, 'redis', 'redis.pid');
    if (existsSync(pidFile)) process.kill(Number(readFileSync(pidFile, 'utf8')), 'SIGKILL');
    rmSync(data, { recursive: true, force: true });
  }
}, 90_000);
