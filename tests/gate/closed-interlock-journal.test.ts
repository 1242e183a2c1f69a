// Rule: after close(), every store an Interlock hands out refuses calls with not_available saying it was closed
// (as interlock.approvals, interlock.stores.journal and gate.receipt do): interlock.journal, the full journal with its
// write scripts, too.
import { pino } from 'pino';
import { expect, it } from 'vitest';
import { createInterlock } from '../../src/interlock.js';
import { createMemoryTarget } from '../../src/targets/memory-target.js';
import { removePrefixes, testConfig, testKey } from '../support/harness.js';

it('interlock.journal after close() refuses with not_available, like interlock.stores.journal', async () => {
  const config = testConfig({ workerId: 'closed-journal', keyPrefix: `library-${Math.random().toString(36).slice(2, 10)}` });
  const target = createMemoryTarget({ tier: 1, sendTimeoutMs: config.sendTimeoutMs });
  const interlock = await createInterlock({ config, target, signingKey: testKey().key, logger: pino({ level: 'silent' }) });
  try {
    await interlock.close();
    const viaStores = await interlock.stores.journal.partitionOf('0'.repeat(64)).then(() => 'answered', (error: unknown) => error);
    const direct = await interlock.journal.partitionOf('0'.repeat(64)).then(() => 'answered', (error: unknown) => error);
    expect(viaStores).toMatchObject({ code: 'not_available' });
    expect(direct).toMatchObject({ code: 'not_available' });
  } finally {
    await removePrefixes([config.keyPrefix]);
  }
});
