// Issue 3, point 9: the sandbox runs as its own process, so a client SIGKILLed mid-work loses nothing;
// POST /_sandbox/reset clears the state. Also covers the CLI entry points.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { Command, InvalidArgumentError } from 'commander';
import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addSandboxCommand, sandboxOptionsFromFlags } from '../cli.js';
import { expectStripeError } from './helpers.js';
import type { ChildProcess } from 'node:child_process';

const root = new URL('../../', import.meta.url).pathname;
let server: ChildProcess;
let url: URL;

function firstLine(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    if (child.stdout === null) throw new Error('no stdout');
    createInterface({ input: child.stdout }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`exited with ${String(code)} before printing`)));
  });
}

beforeAll(async () => {
  server = spawn(process.execPath, ['--import', 'tsx', 'sandbox/server-main.ts', '--port', '0', '--delays', 'fast'], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
  const announced = JSON.parse(await firstLine(server)) as { url: string; webhookSecret: string | null };
  expect(announced.webhookSecret).toBeNull();
  url = new URL(announced.url);
});
afterAll(() => {
  server.kill('SIGTERM');
});

const stripe = (): Stripe => new Stripe('sk_test_survivor', { host: url.hostname, port: url.port, protocol: 'http' });

// A separate client process: pays, refunds with an idempotency key, reports, then waits to be killed.
const clientScript = `
import Stripe from 'stripe';
const [host, port] = process.argv.slice(1);
const stripe = new Stripe('sk_test_doomed', { host, port, protocol: 'http' });
const intent = await stripe.paymentIntents.create({ amount: 10000, currency: 'usd', payment_method: 'pm_card_visa', confirm: true });
const refund = await stripe.refunds.create({ payment_intent: intent.id, amount: 2000, metadata: { case: 'crash' } }, { idempotencyKey: 'crash-key' });
console.log(JSON.stringify({ intent: intent.id, refund: refund.id }));
setInterval(() => {}, 1000);
`;

describe('9. state survives a client crash', () => {
  it('keeps a SIGKILLed client’s payment and refund, and replays its idempotency key to the restarted client', async () => {
    const client = spawn(process.execPath, ['--input-type=module', '-e', clientScript, url.hostname, url.port], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
    const made = JSON.parse(await firstLine(client)) as { intent: string; refund: string };
    client.kill('SIGKILL');
    const restarted = stripe();
    expect((await restarted.paymentIntents.retrieve(made.intent)).status).toBe('succeeded');
    const listed = await restarted.refunds.list({ payment_intent: made.intent });
    expect(listed.data.map((r) => r.id)).toEqual([made.refund]);
    const replay = await restarted.refunds.create({ payment_intent: made.intent, amount: 2000, metadata: { case: 'crash' } }, { idempotencyKey: 'crash-key' });
    expect(replay.id).toBe(made.refund);
    expect(replay.lastResponse.headers['idempotent-replayed']).toBe('true');
  });

  it('POST /_sandbox/reset clears every object and key', async () => {
    const intent = await stripe().paymentIntents.create({ amount: 500, currency: 'usd' });
    const reset = await fetch(`${url.origin}/_sandbox/reset`, { method: 'POST' });
    expect(reset.status).toBe(200);
    expect((await expectStripeError(stripe().paymentIntents.retrieve(intent.id))).statusCode).toBe(404);
    expect((await stripe().events.list()).data).toEqual([]);
  });

  it('stops cleanly on SIGTERM', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'sandbox/server-main.ts', '--port', '0'], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
    await firstLine(child);
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });
});

describe('CLI', () => {
  it('addSandboxCommand registers `sandbox` with --port, --forward-to, --webhook-secret and --delays', () => {
    const program = new Command('interlock');
    addSandboxCommand(program);
    const command = program.commands.find((c) => c.name() === 'sandbox');
    expect(command?.options.map((o) => o.long)).toEqual(expect.arrayContaining(['--port', '--forward-to', '--webhook-secret', '--delays']));
    expect(command?.options.find((o) => o.long === '--port')?.defaultValue).toBe('12111');
  });

  it('a --port another program holds ends the command with one line naming it (a usage error: exit 2), not a bare EADDRINUSE', async () => {
    const program = new Command('interlock').exitOverride();
    addSandboxCommand(program);
    await expect(program.parseAsync(['node', 'interlock', 'sandbox', '--port', url.port, '--delays', 'fast'])).rejects.toThrow(
      new InvalidArgumentError(`127.0.0.1:${url.port} is in use by another program, so the sandbox did not start. Choose another port with --port (0 picks a free one).`),
    );
  });

  it('validates its flags', () => {
    expect(sandboxOptionsFromFlags({ port: '0', host: '127.0.0.1', delays: 'fast', forwardTo: 'http://x/y', webhookSecret: 'whsec_a' })).toEqual({
      port: 0,
      host: '127.0.0.1',
      delays: 'fast',
      forwardTo: 'http://x/y',
      webhookSecret: 'whsec_a',
    });
    expect(() => sandboxOptionsFromFlags({ port: '0', host: '127.0.0.1', delays: 'slow' })).toThrow(/--delays/);
    expect(() => sandboxOptionsFromFlags({ port: 'abc', host: '127.0.0.1', delays: 'fast' })).toThrow(/--port/);
    expect(() => sandboxOptionsFromFlags({ port: '1', host: '127.0.0.1', delays: 'fast', webhookSecret: 'nope' })).toThrow(/whsec_/);
  });
});
