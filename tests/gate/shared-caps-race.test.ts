// Shared caps (I6) under real concurrency: several OS processes, each its own gate, start together on one Redis
// and submit different effects under one approval cap and under one subject cap, where only some fit. The cap is
// reserved inside the dispatch script, so exactly the fitting amount is spent and never a cent more.
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterEach, expect, it } from 'vitest';
import { verify } from '../../src/core/verify.js';
import { refundProposal, type World } from '../support/harness.js';
import { createRedisTarget } from '../support/redis-target.js';
import type { CapRacerJob, CapRacerReport } from './fixtures/cap-racer.js';
import { FACTS, FAST, gateWorld, grant } from './gate-support.js';

const RACER = join(dirname(fileURLToPath(import.meta.url)), 'fixtures', 'cap-racer.ts');
const PROCESSES = 5;

let world: World;
afterEach(async () => {
  await world.close();
});

/** Starts one racer process; `ready` resolves once its gate is up, `done` with its report when it exits. */
function spawnRacer(job: CapRacerJob): { ready: Promise<void>; done: Promise<CapRacerReport> } {
  const child = spawn(process.execPath, ['--import', 'tsx', RACER], { env: { ...process.env, CAP_RACER_JOB: JSON.stringify(job) }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  let markReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => {
    markReady = resolve;
  });
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString('utf8');
    if (stdout.startsWith('ready\n')) markReady();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  const done = new Promise<CapRacerReport>((resolve, reject) => {
    child.on('exit', (code) => {
      const last = stdout.trim().split('\n').at(-1) ?? '';
      if (code === 0 && last.startsWith('{')) resolve(JSON.parse(last) as CapRacerReport);
      else reject(new Error(`racer exited with ${String(code)}: ${stderr || stdout}`));
    });
  });
  // A racer that dies before it is ready must fail the test, not leave it waiting.
  return { ready: Promise.race([ready, done.then(() => undefined)]), done };
}

it('racing processes never spend past an approval cap or a subject cap, and spend exactly what fits', { timeout: 45_000 }, async () => {
  world = await gateWorld();
  const admin = await world.node('admin');
  const prefix = world.config.keyPrefix;
  const redis = new Redis(world.config.redisUrl);
  try {
    const target = createRedisTarget({ redis, prefix, tier: 1 });
    await target.setFacts('payment:pi_race_a', FACTS);
    await target.setFacts('payment:pi_race_b', FACTS);
    // Scenario A: one approval of 5000 cents, two refunds of 1000 from every process. Scenario B: a 3000-cent cap
    // on the payment, shared by one approval of 5000 per process, each sending one refund of 1000.
    const shared = await grant(admin, { scope: 'payment:pi_race_a', capCents: 5_000, maxUses: 20 });
    await admin.approvals.setSubjectCap('payment:pi_race_b', 3_000);
    const jobs: CapRacerJob[] = [];
    for (let i = 0; i < PROCESSES; i += 1) {
      const own = await grant(admin, { scope: 'payment:pi_race_b', capCents: 5_000, approver: `agent-${i}@support` });
      jobs.push({
        redisUrl: world.config.redisUrl,
        prefix,
        privatePem: world.key.privatePem,
        timing: FAST,
        proposals: [
          refundProposal({ requestId: `a-${i}-0`, approval: shared.id, paymentIntent: 'pi_race_a', amount: 1_000 }),
          refundProposal({ requestId: `a-${i}-1`, approval: shared.id, paymentIntent: 'pi_race_a', amount: 1_000 }),
          refundProposal({ requestId: `b-${i}`, approval: own.id, paymentIntent: 'pi_race_b', amount: 1_000 }),
        ],
      });
    }
    const racers = jobs.map(spawnRacer);
    await Promise.all(racers.map((racer) => racer.ready));
    await redis.rpush(`${prefix}:race:go`, ...jobs.map(() => 'go'));
    const results = (await Promise.all(racers.map((racer) => racer.done))).flatMap((report) => report.results);

    const applications = await target.applications();
    const tally = (scenario: 'a' | 'b') => {
      const mine = results.filter((result) => result.requestId.startsWith(`${scenario}-`));
      return {
        committed: mine.filter((result) => result.outcome === 'COMMITTED').length,
        overCap: mine.filter((result) => result.outcome === 'REFUSED:over_cap').length,
        landedCents: mine.reduce((sum, result) => sum + 1_000 * (applications.get(result.effectId) ?? 0), 0),
      };
    };
    expect(tally('a')).toEqual({ committed: 5, overCap: 2 * PROCESSES - 5, landedCents: 5_000 });
    expect(tally('b')).toEqual({ committed: 3, overCap: PROCESSES - 3, landedCents: 3_000 });
    expect([...applications.values()].every((count) => count === 1)).toBe(true);
    expect((await admin.approvals.describe(shared.id)).snapshot).toMatchObject({ reservedCents: 5_000, uses: 5 });

    for (const result of results) {
      const verification = verify(JSON.parse(JSON.stringify(await admin.gate.receipt(result.effectId))), { publicKeys: world.key.publicKeys });
      expect(verification).toMatchObject({ valid: true, outcome: result.outcome, happened: result.outcome === 'COMMITTED' });
    }
  } finally {
    await redis.quit();
  }
});
