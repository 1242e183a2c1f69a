// Rule: a job only asks a worker to run the effect's latest recorded proposal, so editing a job's data in Redis never
// changes what is sent and never keeps the recorded refund from being sent. A job whose proposal was edited (another
// approval, or another payment) with an `onlyEntry` recomputed for the edited proposal (entryHash is an unkeyed
// sha256; the kid is public) passed the producer's-chain check, and the dispatch step's conflict (another payload,
// another subject) was answered as the caller's: REFUSED:conflicting_payload, the job completed, and the recorded
// refund was never sent, nobody told. On a guessed chain a conflict proves the guess wrong: the recorded proposal runs.
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createEffectsQueue, startEffectsWorker, type EffectsQueue } from '../../queues/effects.js';
import { createMemoryTarget, openStores, settledOutcome, startSender, type MemoryTarget, type Sender, type Stores } from '../../src/interlock.js';
import { entryHash } from '../../src/core/entries.js';
import { proposedDraft } from '../../src/gate/record.js';
import { parseProposalAndEffect } from '../../src/core/proposal.js';
import { approvalTerms, refundProposal, removePrefixes, sleep, testConfig, testKey } from '../support/harness.js';

const keyPair = testKey();
const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});
type Rig = { stores: Stores; sender: Sender; target: MemoryTarget; queue: EffectsQueue };
async function rig(): Promise<Rig> {
  const config = testConfig({ keyPrefix: `qe${randomBytes(6).toString('hex')}` });
  const target = createMemoryTarget({ tier: 3, sendTimeoutMs: config.sendTimeoutMs });
  for (const pi of ['pi_1', 'pi_2']) target.world.set(`payment:${pi}`, { chargebacks: [], refunded_by_others: 0 });
  const stores = await openStores(config, { logger: pino({ level: 'silent' }), signingKey: keyPair.key });
  const sender = await startSender(stores, target);
  const queue = createEffectsQueue(stores);
  closers.push(async () => {
    await queue.close();
    await sender.close();
    await stores.close();
    await removePrefixes([config.keyPrefix, `{${config.keyPrefix}-queues}`]);
  });
  return { stores, sender, target, queue };
}

/** The onlyEntry a producer would have carried had it recorded `edited`: computable by anyone with Redis and the code. */
function onlyEntryFor(edited: unknown, effectId: string, kid: string) {
  const { proposal } = parseProposalAndEffect(edited);
  const at = Date.now();
  return { hash: entryHash(Object.assign({}, proposedDraft(proposal), { v: 1, effectId, at, prev: null, kid })), v: 1, at, kid };
}

describe('an effects job whose data was edited in Redis', () => {
  for (const edit of ['approval', 'payment'] as const) {
    it(`(${edit} changed, onlyEntry made to match) sends the recorded refund, once`, async () => {
      const made = await rig();
      const terms = approvalTerms({ capCents: 2_000 });
      const other = approvalTerms({ capCents: 50_000, scope: edit === 'payment' ? 'payment:pi_2' : 'payment:pi_1' });
      await made.stores.approvals.grant(terms);
      await made.stores.approvals.grant(other);
      const proposed = await made.queue.propose(refundProposal({ approval: terms.id, amount: 2_000 }));
      const job = await made.queue.queue.getJob(proposed.effectId);
      const data = job!.data as { proposal: ReturnType<typeof refundProposal>; onlyEntry?: { kid: string } };
      const edited = structuredClone(data.proposal);
      edited.approval = other.id;
      edited.effect.amount = 40_000;
      if (edit === 'payment') edited.effect.paymentIntent = 'pi_2';
      await job!.updateData({ ...job!.data, proposal: edited, onlyEntry: onlyEntryFor(edited, proposed.effectId, data.onlyEntry?.kid ?? '') });

      const waiting = made.queue.waitFor(proposed.effectId, 8_000);
      const worker = startEffectsWorker(made.stores, made.sender, { concurrency: 2 });
      closers.push(() => worker.close(true));
      const heard = await waiting;
      await made.sender.gate.recover({ requeue: (id) => made.queue.requeue(id) });
      await sleep(1_500);
      const outcome = await settledOutcome(made.stores, proposed.effectId);
      const alerts = (await made.stores.alerts.list({ all: true })).filter((alert) => alert.effectId === proposed.effectId);
      const chain = (await made.stores.journal.receipt(proposed.effectId))?.entries.map((entry) => entry.kind === 'REFUSED' ? `REFUSED(${(entry as { code?: string }).code})` : entry.kind);
      // Nothing but the recorded refund was ever sent (this holds).
      expect(made.target.landings.filter((landing) => landing.effect.amount !== 2_000)).toEqual([]);
      // The recorded refund was sent, once, and the one waiting on the request heard so.
      expect({ outcome, landed: made.target.landings.map((landing) => landing.effect.amount), heard: heard?.outcome, alerts: alerts.length }, `chain ${JSON.stringify(chain)}`).toEqual({ outcome: 'COMMITTED', landed: [2_000], heard: 'COMMITTED', alerts: 0 });
    });
  }
});
