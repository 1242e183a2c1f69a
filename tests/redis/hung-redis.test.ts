// A Redis that hangs with its connections open (SIGSTOP: a stalled host, a swap storm) must not hang the service's
// callers: every command of the service's client fails after INTERLOCK_REDIS_COMMAND_TIMEOUT_MS, and the API's
// queueing is bounded the same way. A command that timed out may still run once Redis wakes, so the answer says the
// write may or may not be there, and the gate's own recovery still lands the effect at most once. A worker's
// heartbeat logs its failures sparingly meanwhile, and `serve` stops within a bound instead of for as long as it hangs.
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEffectsQueue } from '../../queues/effects.js';
import { createInterlock, effectIdFor, isRedisTimeout, RedisTimeout, STOP_MARGIN_MS, type Stores } from '../../src/interlock.js';
import { spawnWorker } from '../pipeline/pipeline-support.js';
import { boundedWaits, createRedisClient } from '../../src/redis/client.js';
import { createMemoryTarget } from '../../src/targets/memory-target.js';
import { approvalBody, bearer, refundBody, startRig, TOKENS, uid, type Rig } from '../http/rig.js';
import { runCli, tempDir } from '../cli/run-cli.js';
import { withStores } from '../../src/cli/stores.js';
import { CliFailure, EXIT_BAD_INPUT } from '../../src/cli/failure.js';
import { approvalTerms, refundProposal, startNode, testConfig, testKey, type TestNode } from '../support/harness.js';
import { startPrivateRedis, type PrivateRedis } from '../support/private-redis.js';

const TIMEOUT_MS = 1_000;

let redisServer: PrivateRedis;

beforeAll(async () => {
  redisServer = await startPrivateRedis(['--save', '', '--appendonly', 'no']);
});
afterAll(async () => {
  redisServer.process.kill('SIGCONT');
  await redisServer.stop();
});

async function hung<T>(work: () => Promise<T>): Promise<{ error: unknown; elapsedMs: number }> {
  redisServer.process.kill('SIGSTOP');
  const started = Date.now();
  try {
    await work();
    return { error: null, elapsedMs: Date.now() - started };
  } catch (error) {
    return { error, elapsedMs: Date.now() - started };
  } finally {
    redisServer.process.kill('SIGCONT');
  }
}

describe('the bound on a Redis answer', () => {
  it('times a command from when it is written to a connection that is up, never while it waits for a reconnect', { timeout: 60_000 }, async () => {
    const other = await startPrivateRedis(['--save', '', '--appendonly', 'no']);
    const client = boundedWaits(new Redis(other.url, { maxRetriesPerRequest: null, retryStrategy: () => 100 }), TIMEOUT_MS);
    client.on('error', () => undefined);
    try {
      await client.set('k', 'v');
      // Hung with the connection up: the command fails once the bound has passed.
      other.process.kill('SIGSTOP');
      const started = Date.now();
      await expect(client.get('k')).rejects.toThrow('Command timed out');
      expect(Date.now() - started).toBeLessThan(TIMEOUT_MS + 1_000);
      other.process.kill('SIGCONT');
      expect(await client.get('k')).toBe('v');
      // Down and back after longer than the bound: a command issued meanwhile waits for the reconnect and gets its
      // answer, instead of failing while it waits and being sent after all once Redis is back.
      await other.kill();
      while (client.status === 'ready') await new Promise((resolve) => setTimeout(resolve, 10));
      const waiting = client.set('k', 'after');
      await new Promise((resolve) => setTimeout(resolve, TIMEOUT_MS * 2));
      await other.restart();
      expect(await waiting).toBe('OK');
    } finally {
      other.process.kill('SIGCONT');
      client.disconnect();
      await other.stop();
    }
  });
  it('ends the commands waiting for a reconnect to a Redis that accepts the connection and never answers it, and never sends them', { timeout: 60_000 }, async () => {
    const other = await startPrivateRedis(['--save', '', '--appendonly', 'no']);
    const client = createRedisClient({ redisUrl: other.url, redisCluster: false, redisCommandTimeoutMs: TIMEOUT_MS }) as Redis;
    client.on('error', () => undefined);
    try {
      await client.set('k', 'before');
      // Redis stops, and the connection it had is lost: the kernel accepts the client's new one, and nothing answers.
      other.process.kill('SIGSTOP');
      client.stream.destroy();
      const started = Date.now();
      const waiting = client.set('k', 'during').then(
        () => 'answered',
        (error: unknown) => error,
      );
      const outcome = await Promise.race([waiting, new Promise((resolve) => setTimeout(() => resolve('still waiting'), 15_000))]);
      expect(outcome).toBeInstanceOf(Error);
      expect(isRedisTimeout(outcome)).toBe(true);
      expect(Date.now() - started).toBeLessThan(TIMEOUT_MS * 3 + 2_000);
      // Redis wakes: the client reconnects, and the command it gave up on was never sent.
      other.process.kill('SIGCONT');
      expect(await client.get('k')).toBe('before');
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(await client.get('k')).toBe('before');
    } finally {
      other.process.kill('SIGCONT');
      client.disconnect();
      await other.stop();
    }
  });
});

describe('the CLI while Redis hangs', () => {
  it('gives up with one line and exit 2 instead of waiting for as long as Redis hangs', { timeout: 90_000 }, async () => {
    const data = tempDir('hung-cli');
    try {
      const env = { REDIS_URL: redisServer.url, INTERLOCK_DATA_DIR: data.dir, INTERLOCK_REDIS_COMMAND_TIMEOUT_MS: String(TIMEOUT_MS) };
      expect((await runCli(['approvals', 'describe', 'ap_none'], env)).stderr).toContain('No approval ap_none');
      redisServer.process.kill('SIGSTOP');
      const started = Date.now();
      // A new connection to a stopped Redis is accepted by the kernel and never answered: its commands wait in the
      // client's offline queue, and only the one-shot client's bound ends the wait.
      const run = await runCli(['approvals', 'describe', 'ap_none'], env, { timeoutMs: 60_000 }).finally(() => redisServer.process.kill('SIGCONT'));
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr).toContain(`Cannot reach Redis at ${redisServer.url}`);
      expect(Date.now() - started).toBeLessThan(30_000);
    } finally {
      redisServer.process.kill('SIGCONT');
      data.remove();
    }
  });

  it('a command Redis took and did not answer ends saying it may or may not have been done, never "nothing was changed"', { timeout: 60_000 }, async () => {
    const data = tempDir('hung-cli-run');
    const saved = { ...process.env };
    Object.assign(process.env, { REDIS_URL: redisServer.url, INTERLOCK_DATA_DIR: data.dir, INTERLOCK_REDIS_COMMAND_TIMEOUT_MS: String(TIMEOUT_MS), INTERLOCK_SIGNING_KEY_FILE: '' });
    try {
      const failure = await withStores(async ({ approvals }) => {
        // Redis hangs after the command reached it and checked the connection, in the middle of its work.
        redisServer.process.kill('SIGSTOP');
        await approvals.grant(approvalTerms({ scope: 'payment:pi_cli_hang' }));
      }).then(() => null, (error: unknown) => error);
      expect(failure).toBeInstanceOf(CliFailure);
      expect((failure as CliFailure).exitCode).toBe(EXIT_BAD_INPUT);
      expect((failure as Error).message).toContain('may or may not have been done');
      expect((failure as Error).message).not.toContain('nothing was changed');
    } finally {
      redisServer.process.kill('SIGCONT');
      process.env = saved;
      data.remove();
    }
  });
});

describe('the gate while its Redis hangs', () => {
  let node: TestNode;
  const target = createMemoryTarget({ tier: 1, sendTimeoutMs: 1_000 });
  const config = () => testConfig({ redisCommandTimeoutMs: TIMEOUT_MS });

  afterAll(async () => {
    await node?.close();
  });

  it('fails a submit whose dispatch step gets no answer within the timeout; the step runs when Redis wakes, and recovery lands the effect once', { timeout: 60_000 }, async () => {
    const settings = { ...config(), redisUrl: redisServer.url };
    node = await startNode({ config: settings, target, key: testKey().key, redis: createRedisClient(settings) });
    target.world.set('payment:pi_hang', { chargebacks: [], refunded_by_others: 0 });
    const terms = approvalTerms({ scope: 'payment:pi_hang', capCents: 100_000, maxUses: 10 });
    await node.approvals.grant(terms);
    // A first effect reads the approval's terms into the worker, so the next submit's first command is its dispatch step.
    expect((await node.gate.submit(refundProposal({ approval: terms.id, paymentIntent: 'pi_hang' }))).outcome).toBe('COMMITTED');

    const proposal = refundProposal({ requestId: `hang-${uid()}`, approval: terms.id, paymentIntent: 'pi_hang' });
    const effectId = effectIdFor({ requestId: proposal.requestId, effect: proposal.effect });
    const { error, elapsedMs } = await hung(() => node.gate.submit(proposal));
    expect(isRedisTimeout(error), String(error)).toBe(true);
    expect(elapsedMs).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
    expect(elapsedMs).toBeLessThan(TIMEOUT_MS + 2_000);
    expect(target.landedCount(effectId)).toBe(0);
    expect(await node.journal.partitionOf(effectId)).toBe('payment:pi_hang');

    // Redis ran the dispatch step when it woke: the effect is open under this worker's claim, and nothing was sent.
    // Recovery settles it once the claim lapses, as after a crash between the step and the send.
    const giveUp = Date.now() + 30_000;
    let outcome: string | null = null;
    while (outcome === null && Date.now() < giveUp) {
      const report = await node.gate.recover({ only: [effectId] });
      outcome = report.settled.find((settled) => settled.effectId === effectId)?.outcome ?? null;
      if (outcome === null) await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(['COMMITTED_BY_RETRY', 'REAPPLIED_AFTER_QUERY']).toContain(outcome);
    expect(target.landedCount(effectId)).toBe(1);
    expect((await node.gate.submit(proposal)).outcome).toBe('DUPLICATE_IGNORED');
    expect(target.landedCount(effectId)).toBe(1);
  });
});

describe("a worker's heartbeat while Redis hangs", () => {
  it('logs its first failure at once and no more within the next 10 s, where it used to log one a beat', { timeout: 60_000 }, async () => {
    const lines: { msg: string }[] = [];
    const logger = pino({ level: 'error' }, { write: (line: string) => void lines.push(JSON.parse(line) as { msg: string }) });
    const settings = { ...testConfig({ redisCommandTimeoutMs: 300, heartbeatMs: 200 }), redisUrl: redisServer.url };
    const redis = createRedisClient(settings);
    const interlock = await createInterlock({ config: settings, target: createMemoryTarget({ tier: 1, sendTimeoutMs: 1_000 }), signingKey: testKey().key, logger, redis });
    try {
      redisServer.process.kill('SIGSTOP');
      // A beat every 200 ms, each failing 300 ms after it is sent: about a dozen failures in these 3 s.
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      const failures = lines.filter((line) => line.msg.startsWith('heartbeat failed'));
      expect(failures.map((line) => line.msg)).toEqual(['heartbeat failed']);
    } finally {
      redisServer.process.kill('SIGCONT');
      await interlock.close();
      await (redis as Redis).quit();
    }
  });
});

describe('the API while Redis hangs', () => {
  let rig: Rig;

  beforeAll(async () => {
    rig = await startRig({ worker: true, config: { redisUrl: redisServer.url, redisCommandTimeoutMs: TIMEOUT_MS } });
  });
  afterAll(async () => {
    await rig?.close();
  });

  it('answers 503 redis_unavailable within the timeout, saying the request may or may not be recorded; the same request later lands once', { timeout: 60_000 }, async () => {
    const pi = `pi_${uid()}`;
    rig.target.world.set(`payment:${pi}`, { chargebacks: [], refunded_by_others: 0 });
    const approval = approvalBody({ scope: `payment:${pi}` });
    expect((await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(approval)).status).toBe(201);
    const body = refundBody({ payment_intent: pi, approval: approval.id });

    let answer: request.Response | null = null;
    const { elapsedMs } = await hung(async () => {
      answer = await request(rig.app).post('/v1/refunds').set(bearer(TOKENS.support)).send(body);
    });
    const first = answer as request.Response | null;
    expect(first?.status).toBe(503);
    expect(first?.body.error.code).toBe('redis_unavailable');
    expect(first?.body.error.message).toContain('may or may not have been recorded');
    expect(first?.headers['retry-after']).toBeDefined();
    expect(elapsedMs).toBeLessThan(TIMEOUT_MS + 2_000);

    const again = await request(rig.app).post('/v1/refunds?wait=10').set(bearer(TOKENS.support)).send(body);
    expect([200, 202]).toContain(again.status);
    expect(again.body.outcome).toBe('COMMITTED');
    expect(rig.target.landedCount(again.body.effect_id)).toBe(1);
  });

  it('a proposal recorded while the queue\'s Redis hangs is answered after the timeout as recorded but maybe not queued; sent again, it is queued and lands once', { timeout: 60_000 }, async () => {
    const pi = `pi_${uid()}`;
    rig.target.world.set(`payment:${pi}`, { chargebacks: [], refunded_by_others: 0 });
    const terms = approvalTerms({ scope: `payment:${pi}`, capCents: 100_000, maxUses: 10 });
    await rig.stores.approvals.grant(terms);
    const proposal = refundProposal({ requestId: `queue-hang-${uid()}`, approval: terms.id, paymentIntent: pi });
    const effectId = effectIdFor({ requestId: proposal.requestId, effect: proposal.effect });
    // The journal on a Redis that answers, the queue on one that hangs: recording succeeds, queueing cannot.
    const stuckRedis = await startPrivateRedis(['--save', '', '--appendonly', 'no']);
    const stores = rig.stores as { queueConnection: Stores['queueConnection'] };
    const own = stores.queueConnection;
    stores.queueConnection = () => new Redis(stuckRedis.url, { maxRetriesPerRequest: null });
    const effects = createEffectsQueue(rig.stores);
    stores.queueConnection = own;
    await effects.queue.waitUntilReady();
    try {
      stuckRedis.process.kill('SIGSTOP');
      const started = Date.now();
      const refused = await effects.propose(proposal).then(() => null, (error: unknown) => error);
      expect(refused).toBeInstanceOf(RedisTimeout);
      expect(String((refused as Error).message)).toContain(`Effect ${effectId} was recorded`);
      expect(Date.now() - started).toBeLessThan(TIMEOUT_MS + 2_000);
      expect(await rig.hasEffect(effectId)).toBe(true);
    } finally {
      stuckRedis.process.kill('SIGCONT');
      await effects.close();
      await stuckRedis.stop();
    }
    // Sent again through the service's own queue: the journal knows it, it is queued now, and it lands once.
    expect((await rig.queue.propose(proposal)).queued).toBe(true);
    const answer = await rig.queue.waitFor(effectId, 10_000);
    expect(answer?.outcome).toBe('COMMITTED');
    expect(rig.target.landedCount(effectId)).toBe(1);
  });
});

// `serve` stopping while Redis hangs: every close that needs Redis waits, and a SIGTERM used to leave the service
// running for as long as Redis hung. A stop still running past the send deadline plus STOP_MARGIN_MS exits with 1,
// naming what it was closing; recovery settles whatever was in flight, as after a second signal.
describe('serve, stopped while Redis hangs', () => {
  const SEND_TIMEOUT_MS = 1_000;

  it(`exits with 1 once the send deadline plus ${STOP_MARGIN_MS} ms have passed, naming the part it was closing`, async () => {
    const data = tempDir('serve-stop');
    const service = spawnWorker(
      { REDIS_URL: redisServer.url, INTERLOCK_UNSAFE_DURABILITY: '1', INTERLOCK_SEND_TIMEOUT_MS: String(SEND_TIMEOUT_MS), INTERLOCK_DATA_DIR: join(data.dir, 'data'), INTERLOCK_HOST: '127.0.0.1', INTERLOCK_KEY_PREFIX: `servestop${process.pid}` },
      ['serve', '--roles', 'api', '--port', '0'],
    );
    try {
      await service.ready;
      while (!service.logs().includes('Interlock for Stripe is running')) await new Promise((resolve) => setTimeout(resolve, 50));
      redisServer.process.kill('SIGSTOP');
      const signalled = Date.now();
      service.child.kill('SIGTERM');
      const exit = await service.exited;
      const tookMs = Date.now() - signalled;
      expect(exit, service.logs().slice(-2000)).toEqual({ code: 1, signal: null });
      expect(tookMs).toBeGreaterThanOrEqual(SEND_TIMEOUT_MS + STOP_MARGIN_MS);
      expect(service.logs()).toMatch(new RegExp(`"msg":"stopping took longer than ${SEND_TIMEOUT_MS + STOP_MARGIN_MS} ms, waiting on [^"]+ \\(is Redis answering\\?\\): exiting now; recovery settles what was in flight"`));
    } finally {
      redisServer.process.kill('SIGCONT');
      service.child.kill('SIGKILL');
      data.remove();
    }
  }, 90_000);
});
