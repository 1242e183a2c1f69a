// Rule: a --forward-to URL with a user and password (`http://user:pass@host/x`) is delivered to as Stripe delivers to
// such an endpoint, with `Authorization: Basic` and the credentials out of the URL (fetch refuses a URL holding them,
// so every delivery failed), and the password is shown nowhere: not in the logs, the printed start-up lines or the
// deliveries the control API lists, where the URL reads `http://user:…@host/x`.
import { spawn } from 'node:child_process';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox } from '../index.js';
import { eventually, startReceiver, stripeFor } from './helpers.js';
import type { Sandbox } from '../index.js';
import type { Receiver } from './helpers.js';

const root = new URL('../../', import.meta.url).pathname;
const PASSWORD = 'Hunter2 Secret:Pw';
const USER_INFO = `hook:${encodeURIComponent(PASSWORD)}@`;
let receiver: Receiver;
let sandbox: Sandbox;
const logged: string[] = [];

beforeAll(async () => {
  receiver = await startReceiver();
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logged.push(chunk.toString());
      done();
    },
  });
  const forwardTo = receiver.url.replace('http://', `http://${USER_INFO}`);
  sandbox = await startSandbox({ port: 0, delays: 'fast', forwardTo, webhookSecret: 'whsec_forward_credentials', logger: pino({ level: 'trace' }, sink) });
});
afterAll(async () => {
  await sandbox.close();
  await receiver.close();
});

describe('--forward-to with a user and password', () => {
  it('delivers with basic auth, and shows the URL with its password masked', async () => {
    await stripeFor(sandbox).customers.create({ email: 'a@example.org' });
    await eventually(async () => receiver.received.length, (count) => count > 0);
    const [first] = receiver.received;
    expect(first?.headers.authorization).toBe(`Basic ${Buffer.from(`hook:${PASSWORD}`).toString('base64')}`);
    const deliveries = await sandbox.control.deliveries();
    expect(deliveries.length).toBeGreaterThan(0);
    for (const delivery of deliveries) expect(delivery.url).toBe(receiver.url.replace('http://', 'http://hook:…@'));
    const text = logged.join('');
    expect(text).toContain('hook:…@');
    expect(text).not.toContain(encodeURIComponent(PASSWORD));
  });

  it('prints the URL with its password masked when `interlock sandbox` starts', async () => {
    const child = spawn(process.execPath, ['bin/interlock.js', 'sandbox', '--port', '0', '--delays', 'fast', '--forward-to', `http://${USER_INFO}127.0.0.1:9/x`], {
      cwd: root,
      env: { PATH: process.env['PATH'], HOME: process.env['HOME'], INTERLOCK_LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
    try {
      await eventually(async () => out, (text) => text.includes('Ready!') || child.exitCode !== null, 30_000);
    } finally {
      child.kill('SIGTERM');
    }
    expect(out).toContain('Ready! Forwarding events to http://hook:…@127.0.0.1:9/x.');
    expect(out).not.toContain(encodeURIComponent(PASSWORD));
  }, 40_000);
});
