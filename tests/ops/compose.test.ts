// The compose file cannot be run here (no Docker engine), so this reads it as YAML, resolves its variables as
// compose does, and runs each service's command as the file states it: Redis (accepted as durable), the api and
// the worker (`node bin/interlock.js` + the command, the service's environment with only the hosts swapped for
// local ones), the sandbox (it forwards a signed event that the api accepts) and the Stripe CLI against the sandbox
// (the official binary with the file's arguments, its sessions signed with the secret the api verifies).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import Stripe from 'stripe';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { SOURCE_FOLDERS } from '../../bin/compiled.js';
import { FACT_EVENTS, loadConfig, STOP_MARGIN_MS } from '../../src/interlock.js';
import { inspectDurability } from '../../src/redis/durability.js';
import { freePort, startPrivateRedis, type PrivateRedis } from '../support/private-redis.js';
import { cliEnvironment, stripeBinary, tempConfigDir } from '../../sandbox/tests/stripe-cli-driver.js';

type Service = {
  image?: string;
  build?: string;
  command?: string[];
  environment?: Record<string, string>;
  healthcheck?: { test?: string[] };
  profiles?: string[];
  depends_on?: Record<string, { condition: string }>;
  network_mode?: string;
  ports?: string[];
  volumes?: string[];
  stop_grace_period?: string;
  init?: boolean;
};
type Compose = { services: Record<string, Service> };

const REPO = new URL('../../', import.meta.url).pathname;
const text = readFileSync(join(REPO, 'docker-compose.yml'), 'utf8');
const sandboxEnv = Object.fromEntries(
  readFileSync(join(REPO, 'compose.sandbox.env'), 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.startsWith('#'))
    .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)] as const),
);

/** Compose's interpolation: ${VAR}, ${VAR:-default}, ${VAR:?error} (an unset required variable is an error), nested ones innermost first. */
function interpolate(source: string, vars: Record<string, string>): string {
  let text = source;
  for (let before = ''; before !== text; ) {
    before = text;
    text = text.replace(/\$\{([A-Z0-9_]+)(?:(:-|:\?)([^${}]*))?\}/g, (_match, name: string, op: string | undefined, arg: string | undefined) => {
      const value = vars[name];
      if (value !== undefined && value !== '') return value;
      if (op === ':?') throw new Error(`required variable ${name}: ${arg ?? ''}`);
      return op === ':-' ? (arg ?? '') : '';
    });
  }
  return text;
}

const load = (vars: Record<string, string>) => parse(interpolate(text, vars), { merge: true }) as Compose;

const children: ChildProcess[] = [];
const cleanups: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/** Runs a service's command the way its image does (`node bin/interlock.js` + command) and collects its output. */
function run(command: readonly string[], env: Record<string, string>): { child: ChildProcess; output: () => string } {
  let output = '';
  const child = spawn(process.execPath, ['bin/interlock.js', ...command], { cwd: REPO, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  children.push(child);
  return { child, output: () => output };
}

async function until(check: () => Promise<boolean> | boolean, what: string, output: () => string, timeoutMs = 20_000): Promise<void> {
  const giveUp = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > giveUp) throw new Error(`${what} did not happen within ${timeoutMs} ms; output:\n${output().slice(-3000)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const answers = async (url: string) => fetch(url).then((response) => response.status, () => 0);

/** The status of the sandbox's payment list on this machine's `port`, the request addressed (Host) to `host`, as fetch cannot. */
const statusAddressedTo = (port: number, host: string, key: string) =>
  new Promise<number>((resolve) => {
    request({ host: '127.0.0.1', port, path: '/v1/payment_intents', headers: { Host: host, Authorization: `Bearer ${key}` } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    })
      .on('error', () => resolve(0))
      .end();
  });

describe('docker-compose.yml', () => {
  it('refuses to start without a Stripe key, and names the sandbox env file', () => {
    expect(() => load({})).toThrow(/STRIPE_SECRET_KEY.*compose\.sandbox\.env/);
  });

  it('states the services the README documents: redis, api, a scalable worker, the sandbox and the Stripe CLI profiles', () => {
    const { services } = load(sandboxEnv);
    expect(services.redis?.image).toMatch(/^redis:7/);
    expect(services.redis?.healthcheck?.test).toEqual(['CMD', 'redis-cli', '-e', 'ping']);
    expect(services.api?.command).toEqual(['serve', '--roles', 'api,webhooks']);
    expect(services.worker?.command).toEqual(['serve', '--roles', 'worker,facts']);
    // Scalable: no fixed container name, no published port.
    expect(services.worker).not.toHaveProperty('container_name');
    expect(services.worker?.ports).toBeUndefined();
    // What a worker counts exists only where a registry is made: in a process with the api role, or one with a
    // metrics listener (src/main.ts). The worker's is on the compose network, unpublished.
    const workerEnv = Object.fromEntries(Object.entries(services.worker?.environment ?? {}).filter((pair): pair is [string, string] => typeof pair[1] === 'string'));
    const workerConfig = loadConfig({ ...workerEnv, STRIPE_SECRET_KEY: 'sk_test_compose' });
    expect(workerConfig.metricsAddr).not.toBeNull();
    expect(services.worker?.environment?.INTERLOCK_DATA_DIR).toBe('/data');
    expect(services.worker?.depends_on).toMatchObject({ redis: { condition: 'service_healthy' }, api: { condition: 'service_healthy' } });
    // Redis publishes no port: the journal and approvals are reached through the service's tokens only.
    expect(services.redis?.ports).toBeUndefined();
    // The model decider can be switched on without editing the file; blank (unset) leaves the rules decider.
    expect(services.worker?.environment).toMatchObject({ ANTHROPIC_API_KEY: '', ANTHROPIC_BASE_URL: '', INTERLOCK_MODEL: '' });
    expect(load({ ...sandboxEnv, ANTHROPIC_API_KEY: 'sk-ant-compose' }).services.worker?.environment?.ANTHROPIC_API_KEY).toBe('sk-ant-compose');
    expect(services.sandbox?.profiles).toEqual(['sandbox']);
    expect(services['stripe-cli']?.profiles).toEqual(['stripe-cli']);
    expect(services['stripe-cli-sandbox']?.network_mode).toBe('service:sandbox');
    // Both CLIs forward exactly the events the facts worker acts on.
    for (const cli of [services['stripe-cli'], services['stripe-cli-sandbox']]) {
      const command = cli?.command ?? [];
      expect(command[command.indexOf('--events') + 1]?.split(',')).toEqual(FACT_EVENTS);
    }
    // A worker's own stop bound (the send deadline plus STOP_MARGIN_MS) ends it, with its log line, before compose's
    // grace period runs out and it is killed without one.
    // The api's too: its stop is bounded the same way, and the line saying what it waited on is the diagnosis.
    for (const name of ['worker', 'api'] as const) {
      const grace = /^(\d+)s$/.exec(services[name]?.stop_grace_period ?? '');
      const sendTimeoutMs = Number(services[name]?.environment?.INTERLOCK_SEND_TIMEOUT_MS ?? loadConfig({}).sendTimeoutMs);
      expect(Number(grace?.[1] ?? 0) * 1_000, `${name}'s stop_grace_period`).toBeGreaterThan(sendTimeoutMs + STOP_MARGIN_MS);
    }
    // The api and the workers share one data volume: one signing key, one token file.
    expect(services.api?.volumes).toEqual(services.worker?.volumes);
    expect(services.api?.environment?.INTERLOCK_DATA_DIR).toBe('/data');
  });

  it('runs the README\'s compose lines as written: every service they start has the settings it needs', () => {
    const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
    const block = readme.slice(readme.indexOf('```sh\n', readme.indexOf('**Compose.**')) + 6);
    const lines = block.slice(0, block.indexOf('```')).split('\n').filter((line) => line.includes('docker compose'));
    expect(lines.length).toBeGreaterThanOrEqual(3);
    for (const line of lines) {
      const words = line.replace(/#.*$/, '').trim().split(/\s+/);
      const vars: Record<string, string> = {};
      for (const word of words) {
        const assignment = /^([A-Z_]+)=(.*)$/.exec(word);
        if (assignment === null) break;
        vars[assignment[1] ?? ''] = assignment[2] ?? '';
      }
      const envFile = words.indexOf('--env-file');
      if (envFile >= 0) expect(words[envFile + 1]).toBe('compose.sandbox.env');
      const profiles = words.flatMap((word, index) => (words[index - 1] === '--profile' ? [word] : []));
      const compose = load({ ...(envFile >= 0 ? sandboxEnv : {}), ...vars });
      const running = Object.entries(compose.services).filter(([, service]) => service.profiles === undefined || service.profiles.some((profile) => profiles.includes(profile)));
      for (const [name, service] of running) {
        const env = service.environment ?? {};
        if (name === 'api' || name === 'worker') {
          expect(env.STRIPE_SECRET_KEY, `${line}: ${name}`).toMatch(/^sk_test_/);
          // Against Stripe (no API base) the webhook route needs the endpoint's secret.
          if ((env.STRIPE_API_BASE ?? '') === '') expect(env.STRIPE_WEBHOOK_SECRET, `${line}: ${name}`).toMatch(/^whsec_/);
        }
        if (name === 'stripe-cli') expect(env.STRIPE_API_KEY, `${line}: ${name}`).toMatch(/^sk_test_/);
      }
    }
  });

  // Rule: every service that runs the image (api, worker, the sandbox's own) runs under an init, so node is not PID 1:
  // the kernel ignores the SIGKILL a PID 1 sends itself, which is how the send watchdog ends a sender frozen mid-send
  // (and a worker refuses to start as PID 1: tests/gate/send-watchdog-pid-one.test.ts).
  it('runs every service of the image under an init (init: true), so node is never PID 1', () => {
    const { services } = load(sandboxEnv);
    const ofImage = Object.entries(services).filter(([, service]) => service.image === 'interlock-stripe:local');
    expect(ofImage.map(([name]) => name)).toEqual(expect.arrayContaining(['api', 'worker']));
    expect(ofImage.filter(([, service]) => service.init !== true).map(([name]) => name)).toEqual([]);
  });

  it('the Dockerfile runs as an unprivileged user with runtime dependencies only', () => {
    const dockerfile = readFileSync(join(REPO, 'Dockerfile'), 'utf8');
    expect(dockerfile).toMatch(/^FROM node:22\S* AS deps$/m);
    expect(dockerfile).toMatch(/npm ci --omit=dev/);
    expect(dockerfile).toMatch(/^USER node$/m);
    expect(dockerfile).toMatch(/^ENTRYPOINT \["node", "bin\/interlock.js"\]$/m);
  });

  it('the image makes the compiled copy of the sources while it can still write (after they are all copied, before USER node)', () => {
    const dockerfile = readFileSync(join(REPO, 'Dockerfile'), 'utf8');
    const runtime = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
    const compile = runtime.search(/^RUN node bin\/interlock\.js --version$/m);
    expect(compile).toBeGreaterThan(0);
    expect(compile).toBeLessThan(runtime.search(/^USER node$/m));
    // Every file the copy's fingerprint reads (the source folders and tsconfig.json) is in place before it is made.
    for (const copied of [...SOURCE_FOLDERS.map((folder) => `${folder} ./${folder}`), 'tsconfig.json']) {
      const line = runtime.split('\n').findIndex((text) => text.startsWith('COPY ') && text.includes(copied));
      expect(line, `COPY of ${copied}`).toBeGreaterThan(0);
      expect(runtime.split('\n').slice(0, line).join('\n').length).toBeLessThan(compile);
    }
  });

  let redis: PrivateRedis | null = null;
  afterAll(async () => {
    await redis?.stop();
  });

  it('runs a Redis the gate accepts as durable: fsynced append-only file and no eviction', async () => {
    const command = load(sandboxEnv).services.redis?.command ?? [];
    expect(command[0]).toBe('redis-server');
    redis = await startPrivateRedis(command.slice(1));
    const client = new Redis(redis.url);
    try {
      const durability = await inspectDurability(client, false);
      expect(durability).toMatchObject({ durable: true, appendonly: 'yes', appendfsync: 'always' });
      expect(await client.config('GET', 'maxmemory-policy')).toEqual(['maxmemory-policy', 'noeviction']);
    } finally {
      await client.quit();
    }
  });

  it("the redis healthcheck fails while Redis replays its append-only file (it answers LOADING), so the api and workers start on a Redis that serves", async () => {
    const command = load(sandboxEnv).services.redis?.command ?? [];
    const test = load(sandboxEnv).services.redis?.healthcheck?.test ?? [];
    const replayed = await startPrivateRedis(command.slice(1));
    let loading: ChildProcess | null = null;
    try {
      const client = new Redis(replayed.url);
      for (let index = 0; index < 40; index += 1) await client.set(`compose-loading-${index}`, 'x');
      // Rewritten into the file's base, which a restart replays key by key (what key-load-delay stretches).
      await client.bgrewriteaof();
      while (/aof_rewrite_in_progress:1|aof_rewrite_scheduled:1/.test(await client.info('persistence'))) await new Promise((resolve) => setTimeout(resolve, 50));
      await client.quit();
      await replayed.kill('SIGTERM');
      // The same Redis on the same directory, its replay stretched (key-load-delay) to last as a large journal's would.
      loading = spawn('redis-server', ['--port', String(replayed.port), '--bind', '127.0.0.1', '--dir', replayed.dir, ...command.slice(1), '--key-load-delay', '50000'], { stdio: 'ignore' });
      children.push(loading);
      const probe = () => spawnSync(test[1] ?? '', ['-p', String(replayed.port), ...test.slice(2)], { encoding: 'utf8' });
      const said = (answer: ReturnType<typeof probe>) => answer.stdout + answer.stderr;
      let answer = probe();
      for (let tries = 0; !said(answer).includes('LOADING') && tries < 100; tries += 1) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        answer = probe();
      }
      expect(said(answer)).toContain('LOADING');
      expect(answer.status, 'the healthcheck while Redis answers LOADING').not.toBe(0);
    } finally {
      loading?.kill('SIGKILL');
      await replayed.stop();
    }
  }, 60_000);

  it('runs the sandbox, api, worker and Stripe CLI commands as stated: an event the CLI forwards is accepted by the api', async () => {
    if (redis === null) redis = await startPrivateRedis((load(sandboxEnv).services.redis?.command ?? []).slice(1));
    const { services } = load(sandboxEnv);
    const data = mkdtempSync(join(tmpdir(), 'interlock-compose-'));
    cleanups.push(() => rmSync(data, { recursive: true, force: true }));
    const [sandboxPort, apiPort] = [await freePort(), await freePort()];
    // The hosts of the compose network (redis, sandbox, api) become local addresses; nothing else changes. The sandbox
    // (on 0.0.0.0, as the file runs it) is reached through this machine's own address when it has one, a name that is
    // not loopback, as compose's `sandbox` is not.
    const sandboxHost = Object.values(networkInterfaces()).flat().find((address) => address?.family === 'IPv4' && !address.internal)?.address ?? '127.0.0.1';
    const local = (value: string) => value.replace('redis://redis:6379', redis?.url ?? '').replace('http://sandbox:12111', `http://${sandboxHost}:${sandboxPort}`).replace('http://api:3000', `http://127.0.0.1:${apiPort}`);
    const envOf = (service: Service) => ({ ...Object.fromEntries(Object.entries(service.environment ?? {}).map(([key, value]) => [key, local(value === null || value === undefined ? '' : String(value))])), INTERLOCK_DATA_DIR: data, INTERLOCK_LOG_LEVEL: 'info', INTERLOCK_KEY_PREFIX: `compose${apiPort}` });

    const sandboxCommand = (services.sandbox?.command ?? []).map(local).map((arg) => (arg === '12111' ? String(sandboxPort) : arg));
    const sandbox = run(sandboxCommand, { INTERLOCK_LOG_LEVEL: 'warn' });
    await until(async () => (await answers(`http://127.0.0.1:${sandboxPort}/v1/balance`)) !== 0, 'the sandbox listening', sandbox.output);
    // The api addresses the sandbox by its service name (compose.sandbox.env's STRIPE_API_BASE), which the file's
    // command admits (--allowed-host); any other name, such as a web page's own rebound to the published port, is 421.
    const apiBase = new URL(sandboxEnv.STRIPE_API_BASE ?? '');
    expect(await statusAddressedTo(sandboxPort, apiBase.host, sandboxEnv.STRIPE_SECRET_KEY ?? '')).toBe(200);
    expect(await statusAddressedTo(sandboxPort, `evil.example:${apiBase.port}`, sandboxEnv.STRIPE_SECRET_KEY ?? '')).toBe(421);

    const api = run(services.api?.command ?? [], { ...envOf(services.api ?? {}), INTERLOCK_HOST: '127.0.0.1', INTERLOCK_PORT: String(apiPort) });
    await until(async () => (await answers(`http://127.0.0.1:${apiPort}/readyz`)) === 200, 'the api ready', api.output);
    const worker = run(services.worker?.command ?? [], envOf(services.worker ?? {}));
    await until(() => /interlock serving/.test(worker.output()), 'the worker serving', worker.output);
    // Each healthcheck as the file states it (node -e with its URL; the api's and the sandbox's ports are this run's)
    // passes: the worker's asks its metrics listener, the only address a process without the api role has; the
    // sandbox's asks its health route and wants a 2xx (a 404 from a route it does not serve is no health).
    for (const name of ['api', 'worker', 'sandbox'] as const) {
      const test = services[name]?.healthcheck?.test ?? [];
      expect(test.slice(0, 3), `${name}'s healthcheck`).toEqual(['CMD', 'node', '-e']);
      const probe = (test[3] ?? '').replace('127.0.0.1:3000', `127.0.0.1:${apiPort}`).replace('127.0.0.1:12111', `127.0.0.1:${sandboxPort}`);
      if (name === 'sandbox') expect(probe).toContain('r.ok');
      const passes = async () => new Promise<boolean>((resolve) => spawn(process.execPath, ['-e', probe], { stdio: 'ignore' }).on('exit', (code) => resolve(code === 0)));
      await until(passes, `the ${name}'s healthcheck passing`, name === 'api' ? api.output : name === 'worker' ? worker.output : sandbox.output);
    }
    // The api's `stripe listen` line is the sandbox's (it was test mode's: forwarded events signed with another secret),
    // and the steps to try are the README's compose steps, not ones naming an address only this network knows.
    expect(api.output()).toContain(`npx stripe listen --api-base http://127.0.0.1:${sandboxPort} --api-key sk_test_sandbox --skip-update`);
    if (sandboxHost !== '127.0.0.1') {
      expect(api.output()).not.toContain('Try it, from this directory');
      expect(api.output()).toContain("the README's Compose section has the steps");
    }
    // Those steps, as the README states them, with the published port this run's and `docker compose exec api` run as
    // that container runs them (the api's environment): the refund is committed.
    const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
    const steps = readme.slice(readme.indexOf('```sh\n', readme.indexOf('The steps `npm start` prints, under compose')) + 6);
    const script = steps.slice(0, steps.indexOf('```')).replaceAll('127.0.0.1:12111', `127.0.0.1:${sandboxPort}`).replaceAll('docker compose exec api node bin/interlock.js', `${process.execPath} bin/interlock.js`);
    expect(script.split('\n').filter((line) => line.trim() !== '')).toHaveLength(3);
    const tried = await new Promise<{ code: number | null; output: string }>((resolve) => {
      let output = '';
      const shell = spawn('bash', ['-euo', 'pipefail', '-c', script], { cwd: REPO, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...envOf(services.api ?? {}) }, stdio: ['ignore', 'pipe', 'pipe'] });
      shell.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      shell.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
      shell.on('close', (code) => resolve({ code, output }));
    });
    expect(tried.code, tried.output).toBe(0);
    expect(tried.output).toMatch(/"outcome": "COMMITTED"/);

    // The Stripe CLI with the file's arguments (its --api-base is the sandbox, a loopback address as in the file).
    const cliArgs = (services['stripe-cli-sandbox']?.command ?? []).map(local).map((arg) => arg.replace(':12111', `:${sandboxPort}`));
    expect(cliArgs.slice(0, 3)).toEqual(['listen', '--api-base', `http://127.0.0.1:${sandboxPort}`]);
    const config = tempConfigDir();
    cleanups.push(() => config.remove());
    let cliOutput = '';
    const cli = spawn(stripeBinary(), cliArgs, { env: cliEnvironment(config.path), stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(cli);
    cli.stdout.on('data', (chunk: Buffer) => (cliOutput += chunk.toString()));
    cli.stderr.on('data', (chunk: Buffer) => (cliOutput += chunk.toString()));
    await until(() => /Ready!/.test(cliOutput), 'stripe listen ready', () => cliOutput);
    // Its sessions sign with the secret the api verifies (--listen-secret = STRIPE_WEBHOOK_SECRET).
    expect(cliOutput).toContain(sandboxEnv.STRIPE_WEBHOOK_SECRET);

    const stripe = new Stripe('sk_test_sandbox', { host: '127.0.0.1', port: sandboxPort, protocol: 'http' });
    const paid = await stripe.paymentIntents.create({ amount: 5_000, currency: 'usd', payment_method: 'pm_card_visa', confirm: true });
    await stripe.refunds.create({ payment_intent: paid.id, amount: 1_000 });
    // The CLI forwards the refund's events (the file's --events) and the api accepts them; so does the sandbox's own forwarding.
    await until(() => /refund\.created.*\n?.*\[200\] POST/.test(cliOutput) || /\[200\] POST http:\/\/127\.0\.0\.1:\d+\/webhooks\/stripe/.test(cliOutput), 'the CLI forwarding an event the api accepts', () => cliOutput);
    await until(() => (api.output().match(/POST \/webhooks\/stripe 200/g) ?? []).length >= 2, 'events accepted by the api', api.output);
    expect(cliOutput).not.toMatch(/\[4\d\d\] POST/);
    expect(api.output()).not.toMatch(/POST \/webhooks\/stripe 4\d\d/);
    for (const child of [api.child, worker.child]) child.kill('SIGTERM');
    await until(() => api.child.exitCode !== null && worker.child.exitCode !== null, 'the api and worker stopping on SIGTERM', () => api.output() + worker.output());
    expect([api.child.exitCode, worker.child.exitCode]).toEqual([0, 0]);
  }, 90_000);
});
