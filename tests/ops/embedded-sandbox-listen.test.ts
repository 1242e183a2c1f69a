// RULE: under `npm start`'s embedded sandbox, the webhook route takes events signed with the sandbox's secret and with
// every STRIPE_WEBHOOK_SECRET given (added, never replaced); `stripe listen` sessions at that sandbox sign with the
// route's secret, so the README's sandbox line forwards events the route takes (200); and the `stripe listen` line
// `serve` logs and prints carries the sandbox's public key unmasked, so it runs as printed.
//
// README, "Post-send facts and `stripe listen`", followed literally on `npm start`'s embedded sandbox:
//
//   "Forward them with the official CLI. `serve` logs (and prints) the webhook URL and the exact line:
//    # Stripe test mode; set STRIPE_WEBHOOK_SECRET to the whsec_… it prints
//    # the sandbox: the same, with a loopback IP as --api-base (never localhost) and any test key
//    stripe listen --api-base http://127.0.0.1:12111 --api-key sk_test_sandbox --skip-update --forward-to http://127.0.0.1:3000/webhooks/stripe --events …"
//
// and the Configuration table: `STRIPE_WEBHOOK_SECRET` | (the embedded sandbox's, …) | the endpoint's whsec_… signing
// secret (`stripe listen` prints its own).
//
// What happens with `npm start` (no REDIS_URL, no STRIPE_SECRET_KEY):
//  1. STRIPE_WEBHOOK_SECRET is silently replaced by the embedded sandbox's own secret (src/main.ts embeddedDefaults:
//     `stripeWebhookSecrets: [sandbox.webhookSecret]`), so an event signed with the secret the operator set is 400.
//  2. The embedded sandbox gives every `stripe listen` session a fresh random secret (startSandbox is called without
//     `listenSecret`), which is not the route's secret and changes at every start; so the README's sandbox line,
//     run against npm start's sandbox, forwards every event to a 400 and there is no way to set the right secret.
//  3. The line `serve` logs for the real CLI has its key masked by the log redactor (`--api-key sk_test_…`): run as
//     logged, the CLI refuses it ("the API key provided is too short"); and nothing is printed on stdout.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import Stripe from 'stripe';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '../../src/redis/private-server.js';
import { runStripe, startListen, stripeBinary, type Listener } from '../../sandbox/tests/stripe-cli-driver.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const EVENTS = 'refund.created,refund.updated,refund.failed,charge.refund.updated,charge.refunded,charge.dispute.created,charge.dispute.updated,charge.dispute.closed,charge.dispute.funds_withdrawn,charge.dispute.funds_reinstated,customer.updated,credit_note.created,credit_note.updated,credit_note.voided';

type Served = { child: ChildProcess; lines: string[]; dataDir: string; exited: Promise<number | null> };
const cleanups: Array<() => Promise<void> | void> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** `npm start` as the README gives it (`exec node bin/interlock.js serve`), with a private data dir and port. */
async function npmStart(extra: Record<string, string>): Promise<Served & { service: { api_url: string; webhook_url: string; stripe_api_base: string } }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'rv-readme-'));
  const port = await freePort();
  // Nothing configured: no REDIS_URL, no STRIPE_SECRET_KEY (an empty value is unset, README "Configuration").
  const env = { ...process.env, REDIS_URL: '', STRIPE_SECRET_KEY: '', STRIPE_API_BASE: '', STRIPE_WEBHOOK_SECRET: '', INTERLOCK_KEY_PREFIX: '', INTERLOCK_LOG_LEVEL: 'info', INTERLOCK_DATA_DIR: dataDir, INTERLOCK_PORT: String(port), ...extra };
  const child = spawn(process.execPath, ['bin/interlock.js', 'serve'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  cleanups.push(async () => {
    if (child.exitCode === null) {
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 15_000))]);
    }
    const pidFile = join(dataDir, 'redis', 'redis.pid');
    if (existsSync(pidFile)) {
      try {
        process.kill(Number(readFileSync(pidFile, 'utf8')), 'SIGKILL');
      } catch {
        // gone
      }
    }
    rmSync(dataDir, { recursive: true, force: true });
  });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not start:\n${lines.join('\n')}`)), 40_000);
    for (const stream of [child.stdout, child.stderr]) {
      if (stream === null) continue;
      createInterface({ input: stream }).on('line', (line) => {
        lines.push(line);
        if (line.includes('Try it')) {
          clearTimeout(timer);
          resolve();
        }
      });
    }
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited (${code}):\n${lines.join('\n')}`));
    });
  });
  const service = JSON.parse(readFileSync(join(dataDir, 'service.json'), 'utf8')) as { api_url: string; webhook_url: string; stripe_api_base: string };
  return { child, lines, dataDir, exited, service };
}

function cliEnv(configDir: string): NodeJS.ProcessEnv {
  // The README's line carries the key as --api-key; an inherited STRIPE_API_KEY would beat it.
  const env: NodeJS.ProcessEnv = { ...process.env, XDG_CONFIG_HOME: configDir, HOME: configDir, STRIPE_CLI_TELEMETRY_OPTOUT: '1' };
  delete env['STRIPE_API_KEY'];
  delete env['STRIPE_DEVICE_NAME'];
  return env;
}

function cliConfigDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'rv-readme-cli-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A $50 payment and a $10 refund made straight at the sandbox: refund.created and charge.refunded follow. */
async function refundAtSandbox(apiBase: string): Promise<string> {
  const url = new URL(apiBase);
  const stripe = new Stripe('sk_test_sandbox', { host: url.hostname, port: Number(url.port), protocol: 'http', maxNetworkRetries: 0 });
  const intent = await stripe.paymentIntents.create({ amount: 5_000, currency: 'usd', payment_method: 'pm_card_visa', confirm: true });
  const refund = await stripe.refunds.create({ payment_intent: intent.id, amount: 1_000 });
  return refund.id;
}

describe('README: stripe listen against `npm start` (the embedded sandbox)', () => {
  it('STRIPE_WEBHOOK_SECRET set on `npm start` is the secret the webhook route checks (an event signed with it is taken, 200)', async () => {
    const given = 'whsec_readmeReviewGivenSecret0123456789ab';
    const started = await npmStart({ STRIPE_WEBHOOK_SECRET: given });
    const payload = JSON.stringify({ id: 'evt_readme_review_1', object: 'event', type: 'payment_intent.created', api_version: '2025-01-27.acacia', created: Math.floor(Date.now() / 1000), livemode: false, pending_webhooks: 1, request: { id: null, idempotency_key: null }, data: { object: { id: 'pi_readme_review', object: 'payment_intent' } } });
    const signature = Stripe.webhooks.generateTestHeaderString({ payload, secret: given });
    const answer = await fetch(started.service.webhook_url, { method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': signature }, body: payload });
    const body = await answer.text();
    // Today: 400 bad signature; the route checks only the embedded sandbox's own secret, and nothing said so at start.
    expect(answer.status, `${body}\nstart-up:\n${started.lines.filter((line) => !line.includes('"level":30') || line.includes('webhook')).join('\n')}`).toBe(200);
  }, 90_000);

  it("the README's sandbox `stripe listen` line, run against npm start's sandbox, gets the forwarded events taken (200), not 400", async () => {
    const started = await npmStart({});
    const configDir = cliConfigDir();
    const listener: Listener = startListen(['--api-base', started.service.stripe_api_base, '--api-key', 'sk_test_sandbox', '--skip-update', '--forward-to', started.service.webhook_url, '--events', EVENTS], cliEnv(configDir));
    cleanups.push(() => listener.stop());
    await listener.waitFor(/Ready!/);
    const refund = await refundAtSandbox(started.service.stripe_api_base);
    // The CLI prints `<--  [STATUS] POST <url> [evt_…]` for every forwarded event.
    const giveUp = Date.now() + 20_000;
    while (listener.stdout.filter((line) => line.includes('<--')).length < 2 && Date.now() < giveUp) await new Promise((resolve) => setTimeout(resolve, 100));
    const answers = listener.stdout.filter((line) => line.includes('<--'));
    expect(answers.length, `no forwarded event for ${refund}:\n${listener.stdout.join('\n')}`).toBeGreaterThan(0);
    const secretLine = listener.stderr.find((line) => line.includes('signing secret')) ?? '';
    const routeSecret = started.lines.find((line) => line.includes('signed with whsec_')) ?? '';
    expect(answers.map((line) => /\[(\d{3})\]/.exec(line)?.[1]), `CLI: ${secretLine}\nservice: ${routeSecret}`).toEqual(answers.map(() => '200'));
  }, 90_000);

  it('the `stripe listen` line serve logs for the real CLI runs as logged (its key is not masked into `sk_test_…`)', async () => {
    const started = await npmStart({});
    const giveUp = Date.now() + 10_000;
    while (!started.lines.some((line) => line.includes('"listen":')) && Date.now() < giveUp) await new Promise((resolve) => setTimeout(resolve, 100));
    const ready = started.lines.map((line) => (line.startsWith('{') ? (JSON.parse(line) as { listen?: string }) : {})).find((record) => typeof record.listen === 'string');
    const logged = ready?.listen ?? '';
    expect(logged).toMatch(/^npx stripe listen --api-base /);
    // Printed on stdout too, as the README says ("`serve` logs (and prints) the webhook URL and the exact line").
    expect(started.lines.filter((line) => !line.startsWith('{')).some((line) => line.endsWith(logged))).toBe(true);
    // Run it as logged (words split as the shell would: the line has no quoting; `npx stripe` is the CLI npm ci
    // installed), asking only for its secret.
    const words = logged.split(' ').slice(2);
    const run = await runStripe([...words, '--print-secret'], cliEnv(cliConfigDir()), 20_000);
    expect(run.code, `${logged}\n${run.stdout}${run.stderr}`).toBe(0);
    expect(run.stdout).toMatch(/^whsec_/);
    expect(stripeBinary()).toBeTruthy();
  }, 90_000);
});
