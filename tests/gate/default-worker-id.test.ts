// Rule: two senders of one process given no worker id (INTERLOCK_WORKER_ID unset) beat under different ids. The
// first keeps `host:pid` (a restarted container, pid 1 again, is the same worker restarted); one started while it
// holds that id gets `host:pid:2`. Under one shared id, with different boot nonces, the second gate's recovery reads
// the first's live claim as a restarted worker's ("owner-dead"), takes it over at once and, on a tier-2 target, finds
// nothing while the first gate's request is still being processed and sends again: the refund lands twice.
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { afterEach, expect, it } from 'vitest';
import { createInterlock, defaultWorkerId, type Interlock } from '../../src/interlock.js';
import { createMemoryTarget } from '../../src/targets/memory-target.js';
import { approvalTerms, refundProposal, removePrefixes, sleep, testConfig, testKey } from '../support/harness.js';

const opened: Interlock[] = [];
const prefix = `t-default-id-${randomBytes(4).toString('hex')}`;
afterEach(async () => {
  for (const interlock of opened.splice(0)) await interlock.close().catch(() => undefined);
  await removePrefixes([prefix]);
});

it('a second gate in the same process with no worker id gets its own: it does not take over the first one\'s live tier-2 send and land it again', async () => {
  const config = { ...testConfig({ keyPrefix: prefix, sendTimeoutMs: 1_000, settleMarginMs: 150, claimTtlMs: 3_000, heartbeatMs: 100, heartbeatTtlMs: 500 }), workerId: null };
  const target = createMemoryTarget({ tier: 2, sendTimeoutMs: 1_000 });
  target.world.set('payment:pi_1', { chargebacks: [], refunded_by_others: 0 });
  const signingKey = testKey().key;
  const first = await createInterlock({ config, target, signingKey, logger: pino({ level: 'silent' }) });
  opened.push(first);
  const terms = approvalTerms({ scope: 'payment:pi_1' });
  await first.approvals.grant(terms);
  // The target takes 700 ms to process the request, well inside the 1 s send deadline.
  target.inject({ kind: 'slow-send', delayMs: 700, landsAfterAbort: true });
  const sending = first.gate.submit(refundProposal({ approval: terms.id }));
  await sleep(50);
  const second = await createInterlock({ config, target, signingKey, logger: pino({ level: 'silent' }) });
  opened.push(second);
  expect(first.gate.owner).toBe(defaultWorkerId());
  expect(second.gate.owner).toBe(`${defaultWorkerId()}:2`);
  for (let pass = 0; pass < 8; pass += 1) {
    const report = await second.gate.recover();
    if (report.settled.length > 0) break;
    await sleep(100);
  }
  await sending;
  await sleep(800);
  expect(target.landings).toHaveLength(1);
});

it('a default worker id goes back to the process once its sender closes: the next sender is `host:pid` again', async () => {
  const config = { ...testConfig({ keyPrefix: prefix }), workerId: null };
  const target = createMemoryTarget({ tier: 1, sendTimeoutMs: config.sendTimeoutMs });
  const signingKey = testKey().key;
  const first = await createInterlock({ config, target, signingKey, logger: pino({ level: 'silent' }) });
  expect(first.gate.owner).toBe(defaultWorkerId());
  await first.close();
  const next = await createInterlock({ config, target, signingKey, logger: pino({ level: 'silent' }) });
  opened.push(next);
  expect(next.gate.owner).toBe(defaultWorkerId());
});

it('an id given explicitly stays the operator\'s choice: two senders under one given id both start under it', async () => {
  const config = { ...testConfig({ keyPrefix: prefix }), workerId: 'shared-by-choice' };
  const target = createMemoryTarget({ tier: 1, sendTimeoutMs: config.sendTimeoutMs });
  const signingKey = testKey().key;
  const first = await createInterlock({ config, target, signingKey, logger: pino({ level: 'silent' }) });
  opened.push(first);
  const second = await createInterlock({ config, target, signingKey, logger: pino({ level: 'silent' }) });
  opened.push(second);
  expect([first.gate.owner, second.gate.owner]).toEqual(['shared-by-choice', 'shared-by-choice']);
});
