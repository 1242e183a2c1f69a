// Rule: a refund stopped by a signal once it may be recorded says so on stderr as the signal comes, once, and a second
// signal exits 4 at once: while the command closes its Redis connections (a Redis that stopped answering, the very
// moment an operator presses Ctrl-C twice) the second Ctrl-C never kills it silently, nor says the line twice, while
// the refund is recorded, queued, and goes out.
import { randomBytes } from 'node:crypto';
import { createServer, Socket, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './run-cli.js';
import { paymentWithApproval, refundsAt, spawnCli, startMoneyRig, until, type MoneyRig } from './money-rig.js';

/** A TCP proxy to the shared Redis that can stop passing bytes (a Redis that stopped answering). */
function freezableProxy(): Promise<{ port: number; freeze(): void; close(): void; server: Server }> {
  let frozen = false;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = new Socket();
    sockets.add(client).add(upstream);
    upstream.connect(6379, '127.0.0.1');
    client.on('data', (chunk) => { if (!frozen) upstream.write(chunk); });
    upstream.on('data', (chunk) => { if (!frozen) client.write(chunk); });
    const end = () => { client.destroy(); upstream.destroy(); };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ port: (server.address() as { port: number }).port, freeze: () => (frozen = true), close: () => { for (const s of sockets) s.destroy(); server.close(); }, server }),
    ),
  );
}

let rig: MoneyRig;
beforeAll(async () => {
  rig = await startMoneyRig('second-stop-signal');
}, 90_000);
afterAll(async () => {
  await rig?.stop();
});

describe('refund --wait: a second Ctrl-C while the command closes its connections', { timeout: 120_000 }, () => {
  it('still says the effect is recorded and exits 4 (not killed silently by SIGINT)', async () => {
    const { pi, approval } = await paymentWithApproval(rig);
    await rig.running.sandbox.control.slowDown({ path: '/v1/refunds', method: 'POST', ms: 8000, count: 1 });
    const proxy = await freezableProxy();
    const request = `second-stop-${randomBytes(3).toString('hex')}`;
    try {
      const cliEnv = { ...rig.env, REDIS_URL: `redis://127.0.0.1:${proxy.port}`, INTERLOCK_REDIS_COMMAND_TIMEOUT_MS: '4000' };
      const run = await spawnCli(['refund', '--request', request, '--payment-intent', pi, '--amount', '1500', '--approval', approval, '--wait', '60'], cliEnv, {
        during: (child) => {
          void until('the refund is recorded', async () => /"PROPOSED"/.test((await runCli(['effect', 'show', '--request', request], rig.env)).stdout)).then(async () => {
            proxy.freeze();
            child.kill('SIGINT');
            await new Promise((resolve) => setTimeout(resolve, 1500));
            child.kill('SIGINT');
          });
        },
      });
      await until('the refund reaches Stripe', async () => (await refundsAt(rig, pi)).length > 0);
      expect(await refundsAt(rig, pi)).toEqual([1500]);
      expect(run.signal, `stderr: ${JSON.stringify(run.stderr)}`).toBeNull();
      expect(run.code).toBe(4);
      expect(run.stderr.trimEnd().split('\n'), run.stderr).toHaveLength(1);
      expect(run.stderr).toContain('Stopped by SIGINT');
      expect(run.stderr).toContain(`interlock effect show --request ${request}`);
    } finally {
      proxy.close();
    }
  });
});
