// Rule (facts/apply.ts recordDeletion, redis/scripts/share-deletion-1.lua; README `customer.deleted`): however a
// `customer.deleted` being applied and the re-read of a credit that committed after it (foldDeletion, run by the
// sender's settle, possibly in another process) interleave, the parts of the customer's balance given out across its
// credits never add up to more than the balance held, and each credit gets one deletion part, for good: a second write
// of it, by the other process or a retry, is the same fact (a duplicate), never a second part.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { journalOf, type StripeEvent } from '../../src/interlock.js';
import type { Draft } from '../../src/core/entries.js';
import { betweenLandingAndAnswer, invoiceTen, sharedFactsRig, waitFor } from './facts-rig.js';

const rig = sharedFactsRig();

async function settled(): Promise<void> {
  await rig.sandbox.control.idle();
  await rig.drained();
}

const incident = () => `INC-${randomBytes(3).toString('hex')}`;

/** A promise and the function that settles it. */
function signal(): { done: Promise<void>; fire: () => void } {
  let fire = () => {};
  const done = new Promise<void>((resolve) => (fire = resolve));
  return { done, fire };
}

describe('a customer.deleted applied while a credit that landed before it commits and re-reads', () => {
  it('gives out no more than the balance held, and one deletion part per credit, whichever write lands first', async () => {
    const customer = await rig.stripe.customers.create({ name: `race-${randomBytes(3).toString('hex')}` });
    const older = await rig.commit({ kind: 'credit', customer: customer.id, amount: 1_000, incident: incident() });
    await settled();
    await rig.stopFactsWorker();
    const journal = journalOf(rig.stores);
    const observe = journal.observe.bind(journal);
    const olderMade = (await rig.observed(older)).find((fact) => fact.objectId.startsWith('cbtxn'))?.objectId;
    expect(olderMade).toBeDefined();
    // The deletion's applier has read the chains and reaches its write on the older credit first (call 1); the newer
    // credit's re-read, started by its settle since the subject is marked, has read them too when it reaches its own
    // write there (call 2). The applier's write lands first, then the re-read's: two Redis round trips may land so.
    const applyReached = signal();
    const foldReached = signal();
    const applyWritten = signal();
    let calls = 0;
    journal.observe = async (partition: string, effectId: string, draft: Draft<'OBSERVED'>, key: string) => {
      if (draft.status !== 'customer_deleted' || draft.objectId !== olderMade) return observe(partition, effectId, draft, key);
      calls += 1;
      if (calls === 1) {
        applyReached.fire();
        await foldReached.done;
        const result = await observe(partition, effectId, draft, key);
        applyWritten.fire();
        return result;
      }
      if (calls === 2) {
        foldReached.fire();
        await applyWritten.done;
      }
      return observe(partition, effectId, draft, key);
    };
    let applying: Promise<unknown> = Promise.resolve();
    // The newer credit lands, a $10 invoice uses $10 of the $20 balance, the customer is deleted, and its event is
    // applied (as the facts worker would) before the newer credit's answer comes back: only the older is committed then.
    const newer = await betweenLandingAndAnswer(rig, async () => {
      await invoiceTen(rig, customer.id);
      await rig.stripe.customers.del(customer.id);
      await rig.sandbox.control.idle();
      const jobs = await rig.factsQueue.queue.getJobs(['waiting', 'prioritized', 'delayed']);
      const deletion = jobs.map((job) => job.data as StripeEvent).find((event) => event.type === 'customer.deleted' && event.data.object.id === customer.id);
      if (deletion === undefined) throw new Error('no customer.deleted queued');
      applying = rig.facts.applyEvent(deletion);
      await applyReached.done;
    }, () => rig.commit({ kind: 'credit', customer: customer.id, amount: 1_000, incident: incident() }));
    await applying;
    await waitFor('the deletion on the newer credit', async () => ((await rig.observed(newer)).some((fact) => fact.status === 'customer_deleted') ? true : null), 10_000);
    journal.observe = observe;
    await rig.factsQueue.queue.drain(true);
    rig.startFactsWorker();
    await settled();

    expect(calls).toBe(2);
    const [a, b] = [await rig.receipt(older), await rig.receipt(newer)];
    const lost = [a, b].reduce((sum, verification) => sum + (verification.finalMoney.status === 'not_returned' ? (verification.finalMoney.customerDeleted?.cents ?? 0) : 0), 0);
    const atStake = (await rig.stores.alerts.list()).filter((alert) => [older, newer].includes(alert.effectId) && alert.kind === 'failed_after_landed').reduce((sum, alert) => sum + alert.centsAtStake, 0);
    // The balance held $10 of credit: no more than $10 can have been lost with it.
    expect({ lost, atStake }).toEqual({ lost: 1_000, atStake: 1_000 });
    for (const effectId of [older, newer]) expect((await rig.observed(effectId)).filter((fact) => fact.status === 'customer_deleted')).toHaveLength(1);
  }, 60_000);

  it('hands each credit its part once: asked again, or by another process, the part given stands and the sum stays within the balance', async () => {
    const journal = journalOf(rig.stores);
    const subject = `customer:cus_parts${randomBytes(4).toString('hex')}`;
    // $15 of credit in the balance; a $10 credit and a $10 one, newest first.
    const first = await journal.shareDeletion(subject, 1_500, [{ made: 'cbtxn_newer', unused: 1_000, recorded: null }]);
    expect([...first]).toEqual([['cbtxn_newer', 1_000]]);
    // Another process, which read the chains before the first part was given, asks for both: the newer keeps its part.
    const second = await journal.shareDeletion(subject, 1_500, [{ made: 'cbtxn_newer', unused: 1_000, recorded: null }, { made: 'cbtxn_older', unused: 1_000, recorded: null }]);
    expect([...second]).toEqual([['cbtxn_newer', 1_000], ['cbtxn_older', 500]]);
    // A retry, with what the chains say now (the older credit used meanwhile): the parts given stand.
    const retry = await journal.shareDeletion(subject, 1_500, [{ made: 'cbtxn_older', unused: 0, recorded: null }, { made: 'cbtxn_newer', unused: 1_000, recorded: null }]);
    expect([...retry]).toEqual([['cbtxn_older', 500], ['cbtxn_newer', 1_000]]);
    // A credit given nothing (another currency) takes 0; a part its chain's fact says already is taken as it stands.
    const more = await journal.shareDeletion(subject, 1_500, [{ made: 'cbtxn_eur', unused: 0, recorded: null }, { made: 'cbtxn_before', unused: 1_000, recorded: 0 }, { made: 'cbtxn_late', unused: 1_000, recorded: null }]);
    expect([...more]).toEqual([['cbtxn_eur', 0], ['cbtxn_before', 0], ['cbtxn_late', 0]]);
  });

  // Rule: a balance that is no finite number (nothing known of it) gives nothing out, never each credit its whole part.
  it('gives nothing out of a balance that is not a number', async () => {
    const journal = journalOf(rig.stores);
    const parts = await journal.shareDeletion(`customer:cus_nan${randomBytes(4).toString('hex')}`, Number.NaN, [{ made: 'cbtxn_a', unused: 500, recorded: null }, { made: 'cbtxn_b', unused: 500, recorded: null }]);
    expect([...parts.values()]).toEqual([0, 0]);
  });
});
