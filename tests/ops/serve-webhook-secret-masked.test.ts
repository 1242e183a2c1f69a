// Rule: the webhook route's signing secret (here the embedded sandbox's) is printed whole at start only to a terminal,
// as the API tokens are: on a stdout that is a pipe, a file or a container's log, the Webhook line shows it masked
// (`whsec_…` and its last four characters) and says the whole secret is `webhook_secret` in service.json (0600).
// Whoever reads a log could otherwise sign events the route takes as Stripe's.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { secretHint } from '../../src/core/redact.js';
import { removePrefixes, REDIS_URL } from '../support/harness.js';

const BIN = resolve(import.meta.dirname, '../../bin/interlock.js');
const started: { child: ChildProcess; dir: string; prefix: string }[] = [];

afterEach(async () => {
  for (const { child, dir, prefix } of started.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((done) => child.once('exit', done));
      child.kill('SIGTERM');
      await exited;
    }
    await removePrefixes([prefix]);
    rmSync(dir, { recursive: true, force: true });
  }
}, 60_000);

/** `serve` with the embedded sandbox (no STRIPE_SECRET_KEY) on the shared Redis; its stdout a pipe, or a terminal (`script`). */
async function serve(terminal: boolean): Promise<{ stdout: string; secret: string; file: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'whsec-masked-'));
  const prefix = `whm${randomBytes(4).toString('hex')}`;
  const port = 30_000 + Math.floor(Math.random() * 9_000);
  const env = { PATH: process.env.PATH ?? '', HOME: dir, REDIS_URL, INTERLOCK_KEY_PREFIX: prefix, INTERLOCK_UNSAFE_DURABILITY: '1', INTERLOCK_DATA_DIR: dir, INTERLOCK_PORT: String(port), INTERLOCK_LOG_LEVEL: 'warn' };
  const command = terminal ? 'script' : process.execPath;
  const args = terminal ? ['-qfec', `exec ${process.execPath} ${BIN} serve`, '/dev/null'] : [BIN, 'serve'];
  const child = spawn(command, args, { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
  started.push({ child, dir, prefix });
  let stdout = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on('data', () => undefined);
  const giveUp = Date.now() + 60_000;
  while (!stdout.includes('For scripts')) {
    if (Date.now() > giveUp || child.exitCode !== null) throw new Error(`serve did not start:\n${stdout}`);
    await new Promise((done) => setTimeout(done, 200));
  }
  const file = join(dir, 'service.json');
  const service = JSON.parse(readFileSync(file, 'utf8')) as { webhook_secret: string | null };
  return { stdout: stdout.replace(/\r/g, ''), secret: service.webhook_secret ?? '', file };
}

describe('the Webhook line at start', () => {
  it('masks the signing secret on a stdout that is not a terminal, and says where the whole one is', async () => {
    const { stdout, secret, file } = await serve(false);
    expect(secret).toMatch(/^whsec_.{16,}/);
    expect(stdout).toContain('Tokens    not printed');
    expect(stdout).not.toContain(secret);
    expect(stdout).toContain(`signed with ${secretHint(secret)} (the sandbox delivers here; the whole secret is webhook_secret in ${file})`);
  }, 90_000);

  it('prints it whole to a terminal, as it prints the tokens', async () => {
    const { stdout, secret } = await serve(true);
    expect(stdout).not.toContain('Tokens    not printed');
    expect(stdout).toContain(`signed with ${secret} (the sandbox delivers here)`);
  }, 90_000);
});
