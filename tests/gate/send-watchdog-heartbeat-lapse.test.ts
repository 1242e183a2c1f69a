// Rule: a sender has no send in progress once its own heartbeat key could have lapsed (README "Recovery without the
// wait", steps 1 and 6). Recovery reads a heartbeat that is gone as a dead sender: it takes the effect over at once and
// trusts an empty lookup a settle margin after the death it proved, then sends again. But the key also lapses when a
// live worker merely lost Redis (a network split, a Redis stall) for longer than its TTL, its request still on the
// wire: on a target that is looked up but does not dedupe (tier 2) the effect then landed twice. A live worker aborts
// its sends in progress shortly before its key could lapse (their outcome unknown, their claims kept for recovery)
// and lives on; the send watchdog, told after every beat until when the key is certain to live, kills a process whose
// frozen event loop still has a send in progress a margin before then (a quarter of the TTL, at most 500 ms), so the
// key is still there when the process dies.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { createKeys } from '../../src/redis/keys.js';
import { REDIS_URL, removePrefixes } from '../support/harness.js';
import { startRedisCutProxy } from '../support/redis-cut-proxy.js';

const prefixes: string[] = [];
afterAll(() => removePrefixes(prefixes));

type Case = 'mid-send' | 'mid-send-frozen' | 'clean-stop' | 'idle' | 'stale-beat';

type Run = {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** The sender's boot nonce, as its heartbeat key holds it. */
  nonce: string | null;
  /** What the sender's heartbeat key held the moment the test saw the process end (null: gone). */
  keyAtExit: string | null;
  /** The key was seen gone while the sender still lived (mid-send-frozen: the test then killed it; mid-send: Redis healed). */
  lapsedWhileAlive: boolean;
};

/**
 * Runs tests/gate/heartbeat-lapse-sender.ts through a proxy to Redis. The proxy is cut once the sender's request is
 * on the wire (mid-send, mid-send-frozen) or once it is up (idle); from then on the key is watched until the sender
 * ends. In mid-send the proxy is healed once the key was seen gone, so its recovery can run.
 */
async function runSender(which: Case): Promise<Run> {
  const redisAddress = new URL(REDIS_URL);
  const proxy = await startRedisCutProxy({ host: redisAddress.hostname, port: Number(redisAddress.port || '6379') });
  const prefix = `cut${randomBytes(4).toString('hex')}`;
  prefixes.push(prefix);
  const workerId = 'cut-sender';
  const key = createKeys(prefix).heartbeat(workerId);
  const redis = new Redis(REDIS_URL);
  const child = spawn(process.execPath, ['--import', 'tsx', 'tests/gate/heartbeat-lapse-sender.ts'], {
    env: { ...process.env, CUT_CASE: which, CUT_REDIS_URL: proxy.url, CUT_PREFIX: prefix, CUT_WORKER_ID: workerId, INTERLOCK_LOG_LEVEL: 'silent' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const run: Run = { code: null, signal: null, stdout: '', stderr: '', nonce: null, keyAtExit: null, lapsedWhileAlive: false };
  let alive = true;
  let watch: NodeJS.Timeout | undefined;
  const cutAndWatch = () => {
    proxy.cut();
    watch = setInterval(() => {
      void redis.get(key).then((held) => {
        if (held !== null || !alive) return;
        run.lapsedWhileAlive = true;
        // A frozen sender whose request is on the wire with its key gone: the defect, seen; no need to wait for it.
        if (which === 'mid-send-frozen') child.kill('SIGKILL');
        if (which === 'mid-send') proxy.heal();
      });
    }, 10);
  };
  child.stdout.on('data', (chunk: Buffer) => {
    run.stdout += chunk.toString();
    run.nonce ??= /^ready (\w+)$/m.exec(run.stdout)?.[1] ?? null;
    if (watch !== undefined) return;
    if ((which === 'idle' && run.nonce !== null) || ((which === 'mid-send' || which === 'mid-send-frozen') && run.stdout.includes('sending\n'))) cutAndWatch();
  });
  child.stderr.on('data', (chunk: Buffer) => (run.stderr += chunk.toString()));
  const ended = new Promise<void>((resolve) => {
    child.once('exit', (code, signal) => {
      alive = false;
      clearInterval(watch);
      Object.assign(run, { code, signal });
      void redis.get(key).then((held) => {
        run.keyAtExit = held;
        resolve();
      });
    });
  });
  await Promise.all([ended, new Promise((resolve) => child.once('close', resolve))]);
  redis.disconnect();
  await proxy.close();
  return run;
}

describe('the send watchdog and the heartbeat', () => {
  it('kills a sender whose event loop froze while its request is on the wire, before its heartbeat key can lapse; one cut off with nothing in flight, or stopped cleanly mid-send, lives on', async () => {
    const [frozen, idle, cleanStop] = await Promise.all([runSender('mid-send-frozen'), runSender('idle'), runSender('clean-stop')]);

    expect(frozen.stdout).toContain('frozen');
    expect(frozen.lapsedWhileAlive, 'the heartbeat key lapsed while the sender, its request on the wire, still lived').toBe(false);
    expect(frozen.signal).toBe('SIGKILL');
    expect(frozen.stderr).toContain('the heartbeat lapsed with a send in progress');
    // Killed while the key still held its nonce: no other worker could have read it as dead and taken the effect over.
    expect(frozen.nonce).not.toBeNull();
    expect(frozen.keyAtExit).toBe(frozen.nonce);
    expect(frozen.stdout).not.toContain('survived');

    // Its heartbeat lapsed too, but no send was in progress: it lives on.
    expect(idle).toMatchObject({ code: 0, signal: null, lapsedWhileAlive: true });
    expect(idle.stdout).toContain('survived');

    // A send longer than the TTL under a beating heartbeat, and a close that waits for it and then clears the key.
    expect(cleanStop).toMatchObject({ code: 0, signal: null });
    expect(cleanStop.stdout).toContain('answer COMMITTED');
    expect(cleanStop.stdout).toContain('closed');
    expect(cleanStop.stdout).toContain('survived');
    expect(cleanStop.stderr).not.toContain('killing the process');
  }, 40_000);

  // Rule: a live worker whose heartbeat cannot be renewed (Redis cut off longer than most of its TTL) while a send is
  // in progress aborts that send before its key could lapse, as at the send's deadline (outcome unknown, claim kept,
  // never answered as refused or not sent), and lives on: the watchdog leaves it alone, and once Redis is back recovery
  // settles the effect by its lookup, landed once. Before, the watchdog SIGKILLed the whole process (API, webhooks,
  // facts with it), which without a supervisor never came back.
  it('aborts the send in progress of a live sender cut off from Redis, and lives on; recovery settles the effect, landed once', async () => {
    const live = await runSender('mid-send');
    expect(live.stdout).toContain('sending');
    expect(live.stderr).not.toContain('killing the process');
    expect(live, live.stderr).toMatchObject({ code: 0, signal: null });
    // Its key lapsed while it lived: by then its send had been aborted (the watchdog would have killed it otherwise).
    expect(live.lapsedWhileAlive).toBe(true);
    expect(live.stdout).toMatch(/^answer IN_FLIGHT$/m);
    expect(live.stdout).toMatch(/^recovered COMMITTED\w*$/m);
    expect(live.stdout).toContain('landings 1\n');
    // The gate asked the target to close the aborted send's requests (Target.abortSends), once.
    expect(live.stdout).toContain('send aborts 1\n');
    expect(live.stdout).not.toContain('answered late');
  }, 40_000);

  // Rule: a send does not begin on a heartbeat bound that has passed or is about to (the beats failed while Redis was
  // away, and the dispatch step just proved it back): the sender renews its heartbeat first. It began the send, and
  // the watchdog killed the process for a lapse that a beat would have ended.
  it('renews a stale heartbeat before a send begins, rather than begin a send the watchdog kills', async () => {
    const stale = await runSender('stale-beat');
    expect(stale.stderr).not.toContain('killing the process');
    expect(stale).toMatchObject({ code: 0, signal: null });
    expect(stale.stdout).toContain('answer COMMITTED');
    expect(stale.stdout).toContain('survived');
  }, 40_000);
});
