// Rule: a printed command line works as printed, and does what the command was told. `interlock sandbox --forward-to
// URL` printed a `stripe listen` line forwarding to --listen-forward-to's default (http://127.0.0.1:3000/…), not to
// URL: under compose, 127.0.0.1:3000 inside the sandbox's container, where nothing listens. The line forwards to
// --listen-forward-to when it is given, else to --forward-to's URL, else to the default route of `npm start`.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { describe, expect, it } from 'vitest';
import { REPO } from './run-cli.js';

const PREFIX = 'Forward its events with the official Stripe CLI: ';

/** The `stripe listen` line `interlock sandbox <args>` prints, the sandbox then stopped. */
async function listenLine(args: readonly string[]): Promise<string> {
  const child = spawn(process.execPath, ['bin/interlock.js', 'sandbox', '--port', '0', '--delays', 'fast', ...args], { cwd: REPO, stdio: ['ignore', 'pipe', 'ignore'], env: { ...process.env, INTERLOCK_LOG_LEVEL: 'silent' } });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    if (child.stdout === null) throw new Error('no stdout');
    const lines = createInterface({ input: child.stdout });
    for await (const line of lines) if (line.startsWith(PREFIX)) return line.slice(PREFIX.length);
    throw new Error('the sandbox printed no stripe listen line');
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
}

/** The value of `option` in a command line. */
const valueOf = (line: string, option: string) => {
  const words = line.split(' ');
  return words[words.indexOf(option) + 1];
};

describe('the stripe listen line interlock sandbox prints', { timeout: 90_000 }, () => {
  const port = 30_000 + Math.floor(Math.random() * 10_000);
  const forward = `http://127.0.0.1:${port}/hooks/stripe`;

  it('forwards where --forward-to sends the events', async () => {
    expect(valueOf(await listenLine(['--forward-to', forward]), '--forward-to')).toBe(forward);
  });

  it('forwards to --listen-forward-to when it is given, --forward-to or not', async () => {
    const other = `http://127.0.0.1:${port + 1}/elsewhere`;
    expect(valueOf(await listenLine(['--forward-to', forward, '--listen-forward-to', other]), '--forward-to')).toBe(other);
    expect(valueOf(await listenLine(['--listen-forward-to', other]), '--forward-to')).toBe(other);
  });

  it('forwards to the route npm start serves by default when neither is given', async () => {
    expect(valueOf(await listenLine([]), '--forward-to')).toBe('http://127.0.0.1:3000/webhooks/stripe');
  });
});
