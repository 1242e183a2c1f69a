// Metrics as the composition root wires them, in two real processes (issue 13 §1): one serves the API and the
// webhook route, the other runs the effects and facts workers with INTERLOCK_METRICS_ADDR, the only way a process
// without the api role can be scraped. A refund proposed through the first is sent by the second; each process
// counts what it did itself (the worker the effect, the API process the sandbox's webhook deliveries), while both
// read the same queue depths from Redis. The page answers on the API process.
// Rule: a support case the worker process records failed (nothing proposed) is counted in
// interlock_cases_failed_total by its error code, so an operator can alert on cases that need submitting again (before,
// only a log line and the case's state said so).
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../sandbox/index.js';
import { freePort } from '../support/private-redis.js';
import { REDIS_URL } from '../support/harness.js';

const ROOT = join(import.meta.dirname, '..', '..');
const TOKENS = { support: 'svc_support_0123456789abcdef', approver: 'svc_approver_0123456789abcde', operator: 'svc_operator_0123456789abcde' };

function sample(text: string, name: string, labels = ''): number | undefined {
  const line = text.split('\n').find((item) => item.startsWith(`${name}${labels === '' ? ' ' : `{${labels}} `}`));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('metrics of an API process and a worker process', () => {
  const prefix = `sm${randomBytes(5).toString('hex')}`;
  const children: ChildProcess[] = [];
  const logs: string[] = [];
  let dir: string;
  let sandbox: Sandbox;
  let api: string;
  let workerMetrics: string;
  // A Messages API that refuses the worker's key (401): a case it is asked to decide fails at once, invalid_config.
  let messages: Server;

  async function ready(url: string, headers: Record<string, string> = {}): Promise<void> {
    const giveUp = Date.now() + 60_000;
    for (;;) {
      const answer = await fetch(url, { headers }).catch(() => null);
      if (answer?.ok) return;
      if (Date.now() > giveUp) throw new Error(`${url} did not answer within 60 s:\n${logs.join('')}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'interlock-metrics-'));
    const [apiPort, metricsPort] = [await freePort(), await freePort()];
    api = `http://127.0.0.1:${apiPort}`;
    workerMetrics = `http://127.0.0.1:${metricsPort}/metrics`;
    sandbox = await startSandbox({ port: 0, delays: 'fast', forwardTo: `${api}/webhooks/stripe` });
    messages = createServer((_req, res) => {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } }));
    });
    await new Promise<void>((resolve) => messages.listen(0, '127.0.0.1', resolve));
    const messagesPort = (messages.address() as { port: number }).port;
    const env = {
      PATH: process.env.PATH ?? '',
      HOME: dir,
      REDIS_URL,
      INTERLOCK_KEY_PREFIX: prefix,
      INTERLOCK_UNSAFE_DURABILITY: '1',
      INTERLOCK_DATA_DIR: dir,
      INTERLOCK_LOG_LEVEL: 'warn',
      STRIPE_SECRET_KEY: 'sk_test_serviceMetrics01',
      STRIPE_API_BASE: sandbox.url,
      STRIPE_WEBHOOK_SECRET: sandbox.webhookSecret ?? '',
      INTERLOCK_API_TOKENS: `sam:support:${TOKENS.support},alex:approver:${TOKENS.approver},ops:operator:${TOKENS.operator}`,
    };
    const start = (roles: string, extra: Record<string, string>) => {
      const child = spawn(process.execPath, [join(ROOT, 'bin', 'interlock.js'), 'serve', '--roles', roles], { cwd: dir, env: { ...env, ...extra }, stdio: ['ignore', 'pipe', 'pipe'] });
      child.stdout?.on('data', (chunk: Buffer) => logs.push(chunk.toString()));
      child.stderr?.on('data', (chunk: Buffer) => logs.push(chunk.toString()));
      children.push(child);
    };
    start('api,webhooks', { INTERLOCK_PORT: String(apiPort) });
    start('worker,facts', { INTERLOCK_METRICS_ADDR: `127.0.0.1:${metricsPort}`, ANTHROPIC_API_KEY: 'sk-ant-refused-by-the-local-api', ANTHROPIC_BASE_URL: `http://127.0.0.1:${messagesPort}` });
    await Promise.all([ready(`${api}/healthz`), ready(workerMetrics)]);
  }, 90_000);

  afterAll(async () => {
    for (const child of children) if (child.exitCode === null) child.kill('SIGTERM');
    await Promise.all(children.map((child) => (child.exitCode === null ? new Promise((resolve) => child.once('exit', resolve)) : null)));
    await sandbox?.close();
    await new Promise((resolve) => messages?.close(resolve));
    const redis = new Redis(REDIS_URL);
    for (const pattern of [`${prefix}:*`, `{${prefix}-queues}:*`]) {
      const stale = await redis.keys(pattern);
      for (let i = 0; i < stale.length; i += 500) await redis.del(...stale.slice(i, i + 500));
    }
    await redis.quit();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 30_000);

  /** A confirmed $50 card payment at the sandbox. */
  async function confirmedPayment(): Promise<{ id: string }> {
    const answer = await fetch(`${sandbox.url}/v1/payment_intents`, {
      method: 'POST',
      headers: { authorization: `Basic ${Buffer.from('sk_test_setup:').toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'amount=5000&currency=usd&payment_method=pm_card_visa&confirm=true',
    });
    return (await answer.json()) as { id: string };
  }
  const json = (token: string) => ({ authorization: `Bearer ${token}`, 'content-type': 'application/json' });

  it('counts the refund in the worker process and the webhook deliveries in the API process', async () => {
    const intent = await confirmedPayment();
    const granted = await fetch(`${api}/v1/approvals`, { method: 'POST', headers: json(TOKENS.approver), body: JSON.stringify({ id: `ap_${intent.id}`, approver: 'alex', cap_cents: 2_000, scope: `payment:${intent.id}` }) });
    expect(granted.status).toBe(201);
    const refund = await fetch(`${api}/v1/refunds?wait=20`, { method: 'POST', headers: json(TOKENS.support), body: JSON.stringify({ request_id: `case-${intent.id}`, payment_intent: intent.id, amount: 2_000, approval: `ap_${intent.id}` }) });
    expect(((await refund.json()) as { outcome: string }).outcome).toBe('COMMITTED');

    const worker = await (await fetch(workerMetrics)).text();
    expect(sample(worker, 'interlock_effects_total', 'kind="refund",outcome="COMMITTED"')).toBe(1);
    expect(sample(worker, 'interlock_dispatch_to_settle_seconds_count', 'kind="refund"')).toBe(1);
    // The worker's recovery ran its pass at start.
    expect(sample(worker, 'interlock_recovery_passes_total')).toBeGreaterThanOrEqual(1);
    expect(sample(worker, 'interlock_webhook_events_received_total')).toBe(0);

    // The sandbox delivers refund.created to the API process's webhook route.
    const giveUp = Date.now() + 20_000;
    let served = '';
    while (Date.now() < giveUp) {
      served = await (await fetch(`${api}/metrics`, { headers: { authorization: `Bearer ${TOKENS.operator}` } })).text();
      if ((sample(served, 'interlock_webhook_events_verified_total', 'result="queued"') ?? 0) >= 1) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(sample(served, 'interlock_webhook_events_verified_total', 'result="queued"')).toBeGreaterThanOrEqual(1);
    expect(sample(served, 'interlock_webhook_events_rejected_total', 'reason="bad_signature"')).toBeUndefined();
    expect(sample(served, 'interlock_effects_total', 'kind="refund",outcome="COMMITTED"')).toBeUndefined();
    expect(sample(served, 'interlock_queue_jobs', 'queue="effects",state="failed"')).toBe(0);
    expect(sample(worker, 'interlock_queue_jobs', 'queue="effects",state="failed"')).toBe(0);

    expect((await fetch(`${api}/metrics`)).status).toBe(401);
    expect((await fetch(`${api}/metrics`, { headers: { authorization: `Bearer ${TOKENS.support}` } })).status).toBe(403);
    // Signed in as a browser is: the cookie holds a session of the API process, never the token.
    const signedIn = await fetch(`${api}/ui/sign-in`, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' }, body: new URLSearchParams({ token: TOKENS.operator }) });
    expect(signedIn.status).toBe(303);
    const session = (signedIn.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
    expect(session).toMatch(/^interlock_session=v1\./);
    const page = await fetch(`${api}/ui`, { headers: { cookie: session } });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain(`case-${intent.id}`);
  }, 60_000);

  it('counts a case the worker process failed by its error code', async () => {
    const intent = await confirmedPayment();
    const granted = await fetch(`${api}/v1/approvals`, { method: 'POST', headers: json(TOKENS.approver), body: JSON.stringify({ id: `ap_case_${intent.id}`, approver: 'alex', cap_cents: 2_000, scope: `payment:${intent.id}` }) });
    expect(granted.status).toBe(201);
    const submitted = await fetch(`${api}/v1/cases`, { method: 'POST', headers: json(TOKENS.support), body: JSON.stringify({ case_id: `case-failed-${intent.id}`, payment_intent: intent.id, story: 'The jar arrived cracked; support approved a goodwill refund.', approval: `ap_case_${intent.id}` }) });
    expect(submitted.status).toBe(202);
    const giveUp = Date.now() + 30_000;
    let worker = '';
    while (Date.now() < giveUp) {
      worker = await (await fetch(workerMetrics)).text();
      if (sample(worker, 'interlock_cases_failed_total', 'code="invalid_config"') !== undefined) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(sample(worker, 'interlock_cases_failed_total', 'code="invalid_config"'), logs.join('')).toBe(1);
    expect(sample(worker, 'interlock_cases_deviated_total')).toBe(0);
  }, 60_000);
});
