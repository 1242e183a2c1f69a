// Rule: an effects job waiting out an outage (its premise reads, Redis, a refused durability check) says so once per
// job per outage, as the decisions worker says a case's: the first failure at warn, with what failed and when it is
// tried again; each retry after it at debug. An outage of the default window retries a job some 80 times, and one warn
// line per retry of every waiting job would bury whatever else the log says.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, expect, it } from 'vitest';
import { approvalTerms, refundProposal, testConfig } from '../support/harness.js';
import { startEffectsRig } from './effects-rig.js';

type Line = { level: number; msg: string; effectId?: string; code?: string; failures?: number; retryAt?: number; givesUpAt?: number };

const closers: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close().catch(() => undefined);
});

/** How many times each job is tried before the lines are counted. */
const RETRIES = 8;

it('logs the first failure of an outage for each job at warn, and each retry after it at debug', async () => {
  const lines: Line[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const text of chunk.toString('utf8').split('\n')) if (text.trim() !== '') lines.push(JSON.parse(text) as Line);
      done();
    },
  });
  const config = testConfig({ keyPrefix: `effoutagelog${Date.now().toString(36)}` });
  // A window far longer than the test: no job gives up while its tries are counted.
  const { target, stores, queue } = await startEffectsRig(closers, config, { logger: pino({ level: 'debug' }, sink), worker: { concurrency: 4, transientRetry: { firstDelayMs: 20, maxDelayMs: 50, forMs: 10 * 60_000 } } });
  const terms = approvalTerms({ maxUses: 10 });
  await stores.approvals.grant(terms);

  target.inject({ kind: 'premise-down' });
  const effectIds: string[] = [];
  for (let i = 0; i < 3; i += 1) effectIds.push((await queue.propose(refundProposal({ approval: terms.id, requestId: `outage-log-${i}`, amount: 100 }))).effectId);
  // A job's data counts a failure before that try is logged, and the job runs again only after: once every job's count
  // is past RETRIES, the lines of each job's first RETRIES tries are all written.
  await expect
    .poll(async () => Math.min(...(await Promise.all(effectIds.map(async (id) => (await queue.queue.getJob(id))?.data.transient?.failures ?? 0)))), { timeout: 30_000, interval: 20 })
    .toBeGreaterThanOrEqual(RETRIES + 1);

  for (const effectId of effectIds) {
    const tries = lines.filter((line) => line.effectId === effectId && line.msg.startsWith('effect job could not be judged yet'));
    const warned = tries.filter((line) => line.level >= 40);
    // One warning, the first failure's, saying what failed and when the job is tried again (and until when).
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatchObject({ failures: 1, code: expect.any(String), retryAt: expect.any(Number), givesUpAt: expect.any(Number) });
    // Every later try at debug, none of them lost.
    expect(tries.filter((line) => line.level < 40 && (line.failures ?? 0) <= RETRIES).map((line) => line.failures)).toEqual(Array.from({ length: RETRIES - 1 }, (_, i) => i + 2));
  }

  // The outage over, every job is judged: nothing of the above kept it from its answer.
  target.heal();
  const outcomes = await Promise.all(effectIds.map(async (effectId) => (await queue.waitFor(effectId, 20_000))?.outcome));
  expect(outcomes).toEqual(['COMMITTED', 'COMMITTED', 'COMMITTED']);
});
