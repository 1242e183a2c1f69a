// Rule: the effects jobs a superseded worker takes wait (no attempt used) and are sent once the other process under
// its worker id has gone and the worker took the id back: never failed for good with a not_judged alert each.
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { afterEach, expect, it } from 'vitest';
import { openStores, startSender } from '../../src/interlock.js';
import { approvalTerms, refundProposal, sleep, testConfig, testKey } from '../support/harness.js';
import { startEffectsRig } from './effects-rig.js';

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

it("the service's effects jobs are sent, not failed for good with not_judged alerts, once a one-off sender under its worker id stopped", async () => {
  const config = testConfig({ keyPrefix: `rv-queues41-${randomBytes(5).toString('hex')}`, heartbeatMs: 100, heartbeatTtlMs: 500 });
  const key = testKey().key;
  const { target, stores, sender, queue } = await startEffectsRig(closers, config, { signingKey: key, workerId: 'svc-worker', worker: { concurrency: 2, transientRetry: { firstDelayMs: 100, maxDelayMs: 200, forMs: 2_000 } } });
  const terms = approvalTerms();
  await stores.approvals.grant(terms);

  // `interlock recover` with the service's INTERLOCK_WORKER_ID: one pass, then it closes (clearing its heartbeat).
  const cliStores = await openStores(config, { logger: pino({ level: 'silent' }), signingKey: key });
  const cli = await startSender(cliStores, target, { workerId: 'svc-worker' });
  await cli.gate.recover();
  for (let waited = 0; sender.heartbeat.supersededBy() === null && waited < 5_000; waited += 50) await sleep(50);
  await cli.close();
  await cliStores.close();
  await sleep(1_000);

  const proposed = await queue.propose(refundProposal({ approval: terms.id }));
  await queue.waitFor(proposed.effectId, 6_000);
  await sleep(300);
  const alert = await stores.alerts.get(`not_judged:${proposed.effectId}`);
  expect(alert).toBeNull();
  expect(target.landedCount(proposed.effectId)).toBe(1);
});
