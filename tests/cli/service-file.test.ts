// `npx interlock` commands find the running service through <data dir>/service.json when REDIS_URL is unset: the
// Redis and the key prefix it serves, whether it started a private Redis or was given REDIS_URL and
// INTERLOCK_KEY_PREFIX. A command that went to another Redis (127.0.0.1:6379) or another prefix would record work
// no worker of the service ever takes, and the start-up lines' commands would not work as printed.
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { spawnWorker } from '../pipeline/pipeline-support.js';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis.js';
import { REPO, runCli, tempDir } from './run-cli.js';
import { lastEffect, serveGivenSandbox, shell } from './serve-given-sandbox.js';
import { removePrefixes } from '../support/harness.js';

const temp = tempDir('service-file');
let redis: PrivateRedis | null = null;
afterAll(async () => {
  await redis?.stop();
  temp.remove();
});

it('a command with only the data directory reaches the Redis and key prefix serve was given', async () => {
  redis = await startPrivateRedis(['--appendonly', 'yes', '--appendfsync', 'always', '--save', '']);
  const prefix = `tsf${randomBytes(5).toString('hex')}`;
  const given = { REDIS_URL: redis.url, INTERLOCK_KEY_PREFIX: prefix, INTERLOCK_DATA_DIR: temp.dir };
  const service = spawnWorker({ ...given, STRIPE_SECRET_KEY: 'sk_test_servicefile' }, ['serve', '--roles', 'api', '--port', '0']);
  try {
    await service.ready;
    const granted = await runCli(['approvals', 'grant', '--id', 'ap_service_file', '--approver', 'dana@support', '--cap-cents', '2000', '--scope', 'payment:pi_service_file'], given);
    expect(granted.code, granted.stderr).toBe(0);
    // As the start-up lines say: from this directory, in another terminal, nothing else set.
    const described = await runCli(['approvals', 'describe', 'ap_service_file'], { INTERLOCK_DATA_DIR: temp.dir, REDIS_URL: undefined, INTERLOCK_KEY_PREFIX: undefined, STRIPE_SECRET_KEY: undefined, STRIPE_API_BASE: undefined });
    expect(described.code, described.stderr).toBe(0);
    expect(JSON.parse(described.stdout)).toMatchObject({ id: 'ap_service_file', capCents: 2_000 });
  } finally {
    await service.stop();
  }
}, 120_000);

it('the start-up lines\' commands, run as printed from the same directory, reach a service whose data directory is not the default', async () => {
  redis ??= await startPrivateRedis(['--appendonly', 'yes', '--appendfsync', 'always', '--save', '']);
  const prefix = `tsf${randomBytes(5).toString('hex')}`;
  const dataDir = join(temp.dir, 'elsewhere');
  const service = spawnWorker({ REDIS_URL: redis.url, INTERLOCK_KEY_PREFIX: prefix, INTERLOCK_DATA_DIR: dataDir, STRIPE_SECRET_KEY: 'sk_test_servicefile' }, ['serve', '--roles', 'api', '--port', '0']);
  try {
    await service.ready;
    const printed = (JSON.parse(readFileSync(join(dataDir, 'service.json'), 'utf8')) as { try: string[] }).try;
    const grant = printed.find((command) => command.includes('approvals grant'));
    expect(grant).toBeDefined();
    // As printed, from the directory serve ran in, nothing of the service's set (the prefix only so that a command
    // that misses the service writes under this test's own keys of the shared Redis, removed below).
    const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', INTERLOCK_KEY_PREFIX: prefix, INTERLOCK_LOG_LEVEL: 'silent' };
    const ran = await new Promise<{ code: number; stderr: string }>((resolve) => {
      execFile('bash', ['-c', `PI=pi_try_line && ${grant ?? 'false'}`], { cwd: REPO, env, timeout: 60_000 }, (error, _stdout, stderr) => resolve({ code: error ? Number((error as { code?: unknown }).code ?? 1) : 0, stderr }));
    });
    expect(ran.code, ran.stderr).toBe(0);
    const described = await runCli(['approvals', 'describe', 'ap_pi_try_line'], { INTERLOCK_DATA_DIR: dataDir, REDIS_URL: undefined, INTERLOCK_KEY_PREFIX: undefined, STRIPE_SECRET_KEY: undefined, STRIPE_API_BASE: undefined });
    expect(described.code, described.stderr).toBe(0);
    expect(JSON.parse(described.stdout)).toMatchObject({ id: 'ap_pi_try_line', capCents: 2_000 });
  } finally {
    await service.stop();
    const shared = new Redis('redis://127.0.0.1:6379', { lazyConnect: true, maxRetriesPerRequest: 1 });
    try {
      await shared.connect();
      const stray = await shared.keys(`${prefix}:*`);
      if (stray.length > 0) await shared.del(...stray);
    } catch {
      // no shared Redis: nothing can have been written there
    } finally {
      shared.disconnect();
    }
  }
}, 120_000);

it("a service.json left by a process that stopped cleanly, or by an earlier process with this one's pid (a container's pid 1), is not a running service: serve starts its own", async () => {
  const dataDir = join(temp.dir, 'same-pid');
  mkdirSync(dataDir, { recursive: true });
  // The file names a Redis nothing answers at, and the pid the serve below will have (exec keeps the shell's).
  const stale = '{"pid": %s, "redis_url": "redis://127.0.0.1:1", "key_prefix": "stale", "stripe_api_base": "http://127.0.0.1:1", "stripe_secret_key": "sk_test_stale"}';
  const script = `printf '${stale}' "$$" > ${join(dataDir, 'service.json')} && exec node bin/interlock.js serve --port 0`;
  const env = { ...process.env, INTERLOCK_DATA_DIR: dataDir, INTERLOCK_LOG_LEVEL: 'info', REDIS_URL: '', STRIPE_SECRET_KEY: '', STRIPE_API_BASE: '', INTERLOCK_KEY_PREFIX: '' };
  const child = spawn('sh', ['-c', script], { cwd: REPO, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  for (const stream of [child.stdout, child.stderr]) stream.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  try {
    for (let i = 0; i < 600 && !output.includes('interlock serving'); i += 1) {
      if (child.exitCode !== null) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(output, output).toContain('interlock serving');
    const facts = JSON.parse(readFileSync(join(dataDir, 'service.json'), 'utf8')) as { pid: number; redis_url: string; stopped_at?: string };
    expect(facts.pid).toBe(child.pid);
    expect(facts.redis_url).not.toBe('redis://127.0.0.1:1');
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    // Stopped cleanly: marked so, and a command no longer takes it for a running service.
    expect((JSON.parse(readFileSync(join(dataDir, 'service.json'), 'utf8')) as { stopped_at?: string }).stopped_at).toEqual(expect.any(String));
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
  }
}, 120_000);

it('a closed terminal (SIGHUP) stops serve as SIGTERM does: exit 0, its embedded redis-server stopped, service.json marked stopped', async () => {
  const dataDir = join(temp.dir, 'hangup');
  mkdirSync(dataDir, { recursive: true });
  const env = { ...process.env, INTERLOCK_DATA_DIR: dataDir, INTERLOCK_LOG_LEVEL: 'info', REDIS_URL: '', STRIPE_SECRET_KEY: '', STRIPE_API_BASE: '', INTERLOCK_KEY_PREFIX: '' };
  const child = spawn(process.execPath, ['bin/interlock.js', 'serve', '--port', '0'], { cwd: REPO, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  for (const stream of [child.stdout, child.stderr]) stream.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.once('exit', (code, signal) => resolve([code, signal])));
  let redisUrl = '';
  try {
    for (let i = 0; i < 600 && !output.includes('interlock serving'); i += 1) {
      if (child.exitCode !== null) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(output, output).toContain('interlock serving');
    ({ redis_url: redisUrl } = JSON.parse(readFileSync(join(dataDir, 'service.json'), 'utf8')) as { redis_url: string });
    child.kill('SIGHUP');
    expect(await exited, output.slice(-1500)).toEqual([0, null]);
    expect((JSON.parse(readFileSync(join(dataDir, 'service.json'), 'utf8')) as { stopped_at?: string }).stopped_at).toEqual(expect.any(String));
    // The embedded Redis went with it (Node's default for SIGHUP ended the process and left it running).
    const probe = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 1_000 });
    probe.on('error', () => undefined);
    await expect(probe.connect()).rejects.toThrow();
    probe.disconnect();
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    // A failed run must not leave the embedded Redis behind either.
    if (redisUrl !== '') {
      const left = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 1_000 });
      left.on('error', () => undefined);
      await left.connect().then(() => left.call('SHUTDOWN', 'NOSAVE')).catch(() => undefined);
      left.disconnect();
    }
  }
}, 120_000);

/** `serve` with embedded defaults (its own private Redis and sandbox) in `dataDir`, its output collected. */
function startServe(dataDir: string) {
  const env = { ...process.env, INTERLOCK_DATA_DIR: dataDir, INTERLOCK_LOG_LEVEL: 'info', REDIS_URL: '', STRIPE_SECRET_KEY: '', STRIPE_API_BASE: '', INTERLOCK_KEY_PREFIX: '' };
  const child = spawn(process.execPath, ['bin/interlock.js', 'serve', '--port', '0'], { cwd: REPO, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  for (const stream of [child.stdout, child.stderr]) stream.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.once('exit', (code, signal) => resolve([code, signal])));
  return { child, exited, output: () => output };
}

/** Whether a process runs, a zombie not counted (a container whose first process reaps nothing keeps exited children as zombies). */
function runs(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

it('Ctrl-C while serve starts, its private redis-server already up, stops that too (exit 130): the next start serves instead of finding it still running', async () => {
  const dataDir = join(temp.dir, 'interrupted');
  mkdirSync(dataDir, { recursive: true });
  const pidFile = join(dataDir, 'redis', 'redis.pid');
  const start = () => startServe(dataDir);
  const first = start();
  const second = { current: null as ReturnType<typeof start> | null };
  let redisPid = 0;
  try {
    // The private Redis writes its pid file once it runs; serve is still starting then (it announces itself later).
    for (let i = 0; i < 6_000 && !existsSync(pidFile) && first.child.exitCode === null; i += 1) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(existsSync(pidFile), first.output()).toBe(true);
    redisPid = Number(readFileSync(pidFile, 'utf8').trim());
    expect(first.output()).not.toContain('interlock serving');
    first.child.kill('SIGINT');
    expect(await first.exited, first.output().slice(-1500)).toEqual([130, null]);
    for (let i = 0; i < 100 && runs(redisPid); i += 1) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(runs(redisPid), `redis-server ${redisPid} still runs`).toBe(false);
    second.current = start();
    const next = second.current;
    for (let i = 0; i < 600 && !next.output().includes('interlock serving') && next.child.exitCode === null; i += 1) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(next.output(), next.output().slice(-1500)).toContain('interlock serving');
    next.child.kill('SIGTERM');
    expect(await next.exited).toEqual([0, null]);
  } finally {
    for (const run of [first, second.current]) if (run !== null && run.child.exitCode === null && run.child.signalCode === null) run.child.kill('SIGKILL');
    if (redisPid > 0 && runs(redisPid)) process.kill(redisPid, 'SIGKILL');
    const left = existsSync(pidFile) ? Number(readFileSync(pidFile, 'utf8').trim()) : 0;
    if (left > 0 && runs(left)) process.kill(left, 'SIGKILL');
  }
}, 150_000);

it('with a live key allowed, the start-up lines say live mode (real money), not test mode, and suggest no test-card payment to try', async () => {
  const prefix = `tsflive${randomBytes(4).toString('hex')}`;
  // A durable Redis of its own: the durability opt-out is refused with a live key.
  const durable = await startPrivateRedis(['--appendonly', 'yes', '--appendfsync', 'always', '--save', '']);
  const service = spawnWorker(
    { INTERLOCK_DATA_DIR: join(temp.dir, 'live'), REDIS_URL: durable.url, INTERLOCK_KEY_PREFIX: prefix, INTERLOCK_ALLOW_LIVE: '1', STRIPE_SECRET_KEY: 'sk_live_serviceFileNotARealKey01234', STRIPE_WEBHOOK_SECRET: 'whsec_serviceFileLiveSecret0123', STRIPE_API_BASE: '' },
    ['serve', '--roles', 'api,webhooks', '--port', '0'],
  );
  try {
    await service.ready;
    for (let i = 0; i < 200 && !service.logs().includes('For scripts:'); i += 1) await new Promise((resolve) => setTimeout(resolve, 50));
    const stripeLine = service.logs().split('\n').find((line) => line.startsWith('  Stripe ')) ?? '';
    expect(stripeLine, service.logs().slice(-1500)).toContain('Stripe LIVE mode');
    expect(service.logs()).not.toContain('test mode');
    expect(service.logs()).not.toContain('Try it');
  } finally {
    await service.stop();
    await durable.stop();
  }
}, 120_000);

it('a refund after npm start was killed (its private Redis left up, its sandbox gone) says the service is not running, exit 2, instead of a connection error', async () => {
  const dataDir = join(temp.dir, 'killed');
  mkdirSync(dataDir, { recursive: true });
  const { child, exited, output } = startServe(dataDir);
  const pidFile = join(dataDir, 'redis', 'redis.pid');
  let redisPid = 0;
  try {
    for (let i = 0; i < 600 && !output().includes('For scripts:') && child.exitCode === null; i += 1) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(output(), output().slice(-1500)).toContain('For scripts:');
    redisPid = Number(readFileSync(pidFile, 'utf8').trim());
    child.kill('SIGKILL');
    await exited;
    const cli = { INTERLOCK_DATA_DIR: dataDir, REDIS_URL: '', STRIPE_SECRET_KEY: '', STRIPE_API_BASE: '', INTERLOCK_KEY_PREFIX: '' };
    const granted = await runCli(['approvals', 'grant', '--id', 'ap_killed', '--approver', 'dana@support', '--cap-cents', '2000', '--scope', 'payment:pi_killed'], cli);
    expect(granted.code, granted.stderr).toBe(0);
    const refund = await runCli(['refund', '--request', 'case-killed', '--payment-intent', 'pi_killed', '--amount', '2000', '--approval', 'ap_killed'], cli);
    expect(refund.code, refund.stderr).toBe(2);
    // Under another data dir the advice names it: `npm start` alone would start the default's service.
    expect(refund.stderr).toContain(`which is not running. Start it again (\`INTERLOCK_DATA_DIR=${dataDir} npm start\`)`);
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    if (redisPid > 0 && runs(redisPid)) process.kill(redisPid, 'SIGKILL');
  }
}, 150_000);

// Rule: the start-up lines' commands work as printed from another terminal. Pointed at a sandbox of its own
// (`npx interlock sandbox`, then STRIPE_API_BASE with the sandbox's key), serve prints that key in the payment line
// and writes it into service.json, as for the embedded sandbox: the other terminal has no STRIPE_SECRET_KEY, and the
// line used to pay with none (PI=undefined). Any other key is printed nowhere: the lines say it must be exported there,
// the payment line stops saying so when it is not (no stack trace under it), and `refund` without it names STRIPE_SECRET_KEY to export, not the
// `npm start` that is running.
describe('serve given STRIPE_API_BASE at a local sandbox', { timeout: 150_000 }, () => {
  it("with the sandbox's key: the printed lines carry it and commit a refund from another terminal", async () => {
    const running = await serveGivenSandbox(join(temp.dir, 'given-sandbox'));
    try {
      expect(running.facts.stripe_secret_key).toBe('sk_test_sandbox');
      expect(running.facts.sandbox_embedded).toBe(false);
      expect(running.facts.try[0]).toContain('-u sk_test_sandbox:');
      const ran = await shell(running.facts.try.join(' && '));
      expect(ran.code, ran.stderr).toBe(0);
      expect(lastEffect(ran.stdout).outcome).toBe('COMMITTED');
    } finally {
      await running.stop();
    }
    // Both stopped: the sandbox ran on its own, so the refusal says to start it again, not that it ran inside serve.
    const cli = { INTERLOCK_DATA_DIR: running.dataDir, REDIS_URL: undefined, INTERLOCK_KEY_PREFIX: undefined, STRIPE_SECRET_KEY: undefined, STRIPE_API_BASE: undefined };
    const granted = await runCli(['approvals', 'grant', '--id', 'ap_given_gone', '--approver', 'dana@support', '--cap-cents', '100', '--scope', 'payment:pi_given_gone'], cli);
    expect(granted.code, granted.stderr).toBe(0);
    const refund = await runCli(['refund', '--request', 'case-given-gone', '--payment-intent', 'pi_given_gone', '--amount', '100', '--approval', 'ap_given_gone'], cli);
    expect(refund.code, refund.stderr).toBe(2);
    expect(refund.stderr).toContain(`Could not reach the Stripe sandbox at ${running.sandbox.url}:`);
    expect(refund.stderr).toContain(`the sandbox, started on its own, does not answer either. Start the sandbox again (\`npx interlock sandbox --port ${new URL(running.sandbox.url).port}\``);
    expect(refund.stderr).not.toContain('it ran inside');
    await removePrefixes([running.facts.key_prefix]);
  });

  it('with another test key: the lines say it must be exported, the payment line stops without it, and refund and recover name STRIPE_SECRET_KEY, not npm start', async () => {
    const dataDir = join(temp.dir, 'given-key');
    const running = await serveGivenSandbox(dataDir, { STRIPE_SECRET_KEY: 'sk_test_givenServiceFileKey01' });
    try {
      expect(running.facts.stripe_secret_key).toBeNull();
      expect(running.service.logs()).toContain(`Try it, from this directory in another terminal (with STRIPE_SECRET_KEY and STRIPE_API_BASE=${running.sandbox.url} exported there`);
      const pay = await shell(running.facts.try[0] ?? 'false');
      expect(pay.code).not.toBe(0);
      expect(pay.stderr).toContain('export STRIPE_SECRET_KEY');
      // Stopped with the shell's sentence and one of its own, not a stack trace under them (the shell gave it no answer).
      expect(pay.stderr).toContain('No payment made.');
      expect(pay.stderr).not.toContain('SyntaxError');
      const refund = await runCli(['refund', '--request', 'case-given-key', '--payment-intent', 'pi_given_key', '--amount', '100', '--approval', 'ap_given_key'], { INTERLOCK_DATA_DIR: dataDir, REDIS_URL: undefined, INTERLOCK_KEY_PREFIX: undefined, STRIPE_SECRET_KEY: undefined, STRIPE_API_BASE: undefined });
      expect(refund.code, refund.stderr).toBe(2);
      expect(refund.stderr).toContain('STRIPE_SECRET_KEY is not set');
      expect(refund.stderr).not.toContain('npm start');
      // So do the other commands that read Stripe.
      const recover = await runCli(['recover'], { INTERLOCK_DATA_DIR: dataDir, REDIS_URL: undefined, INTERLOCK_KEY_PREFIX: undefined, STRIPE_SECRET_KEY: undefined, STRIPE_API_BASE: undefined });
      expect({ code: recover.code, named: recover.stderr.includes('STRIPE_SECRET_KEY is not set'), npmStart: recover.stderr.includes('npm start') }, recover.stderr).toEqual({ code: 2, named: true, npmStart: false });
      // Exported, the same lines commit the refund.
      const ran = await shell(running.facts.try.join(' && '), { STRIPE_SECRET_KEY: 'sk_test_givenServiceFileKey01', STRIPE_API_BASE: running.sandbox.url });
      expect(ran.code, ran.stderr).toBe(0);
      expect(lastEffect(ran.stdout).outcome).toBe('COMMITTED');
    } finally {
      await running.stop();
    }
  });
});
