// Rule: an interlock, or stores, used after close() refuse every call with a registry code (not_available) and words
// that say they were closed and what to do, never the Redis client's "Connection is closed." (internal); nothing is
// sent. Closing twice closes once.
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createInterlock, createMemoryTarget, InterlockError, openStores } from '../../src/interlock.js';
import { approvalTerms, refundProposal, removePrefixes, testConfig, testKey } from '../support/harness.js';

const logger = pino({ level: 'silent' });
const settle = (work: () => unknown) => Promise.resolve().then(work).then(() => null, (error: unknown) => error);

function expectClosed(error: unknown, what: string): void {
  expect(error, what).toBeInstanceOf(InterlockError);
  expect(error, what).toMatchObject({ code: 'not_available', message: expect.stringMatching(/closed/) });
}

describe('after close()', () => {
  it('an interlock refuses a submit, a grant and a receipt saying it was closed, and sends nothing', async () => {
    const config = testConfig({ workerId: 'closed-interlock' });
    const target = createMemoryTarget({ tier: 1, sendTimeoutMs: config.sendTimeoutMs });
    target.world.set('payment:pi_1', { chargebacks: [], refunded_by_others: 0 });
    const interlock = await createInterlock({ config, target, signingKey: testKey().key, logger });
    const terms = approvalTerms();
    try {
      await interlock.approvals.grant(terms);
      await interlock.close();
      await interlock.close();
      const calls = {
        submit: () => interlock.gate.submit(refundProposal({ approval: terms.id })),
        grant: () => interlock.approvals.grant(approvalTerms()),
        receipt: () => interlock.gate.receipt('0'.repeat(64)),
        describe: () => interlock.stores.approvals.describe(terms.id),
        partitionOf: () => interlock.stores.journal.partitionOf('0'.repeat(64)),
      };
      for (const [what, call] of Object.entries(calls)) expectClosed(await settle(call), what);
      expect(target.landings).toHaveLength(0);
    } finally {
      await removePrefixes([config.keyPrefix]);
    }
  });

  it('stores refuse their reads and writes, and an async iteration, saying so; a second close is a no-op', async () => {
    const config = testConfig();
    const stores = await openStores(config, { logger, signingKey: testKey().key });
    try {
      await stores.close();
      await stores.close();
      const calls = {
        describe: () => stores.approvals.describe('ap_1'),
        casesGet: () => stores.cases.get('case-1'),
        inboxGet: () => stores.inbox.get('item-1'),
        // Declared async like every store method that reaches Redis: one that only returned a promise slipped past
        // the guard to the closed connection.
        propose: () => (stores.journal as unknown as { propose(request: unknown): Promise<unknown> }).propose({ place: { head: '' }, effectId: '0'.repeat(64), partition: 'payment:pi_1', sendTimeoutMs: 1_000, drafts: () => [] }),
        completeOpenIndex: () => stores.alerts.completeOpenIndex(),
        alertsOpen: async () => {
          for await (const alert of stores.alerts.openOf('exposure')) return alert;
          return null;
        },
      };
      for (const [what, call] of Object.entries(calls)) expectClosed(await settle(call), what);
    } finally {
      await removePrefixes([config.keyPrefix]);
    }
  });
});
