// Rule: an effects job never binds its effect (I5: the FIRST PROPOSED fixes the payload, and a job is no PROPOSED). A
// job whose effect has no proposal recorded is refused (invalid_proposal, queues/README.md) and leaves no trace: after a
// job added with only the queue's keys for a request id nobody has used yet (case ids are predictable), carrying
// another payment, is refused, the real request under that id is recorded and commits once. Also when the job carries
// an `onlyEntry` made up to match it (one server's fast path binds in its dispatch step, bind-propose-10), when its
// approval refuses it first (the refusal's binding, bindFirst), on a Redis Cluster (the binding is in the index's slot,
// the chain in the payment's), and while a producer holds the binding it made before recording: the job is refused,
// the producer's binding stands, and its proposal is recorded and runs. Found (commit 147778a): submitLatest bound the
// effect to the job's payment before finding nothing recorded, and the refusal left the binding, so the real request
// was refused as a conflict ("this request id is bound to payment:pi_2, not payment:pi_1; the recorded payload
// stands") though no payload was ever recorded.
import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Queue } from 'bullmq';
import { Cluster, Redis } from 'ioredis';
import { effectIdFor } from '../../src/core/effect-id.js';
import { entryHash, ENTRY_VERSION } from '../../src/core/entries.js';
import { parseProposalAndEffect } from '../../src/core/proposal.js';
import { isOnlyEntryOf, proposedDraft } from '../../src/gate/record.js';
import { createMemoryTarget, createProposalRecorder, type MemoryTarget } from '../../src/interlock.js';
import { approvalTerms, refundProposal, removePrefixes, startNode, testConfig, testKey, type TestNode } from '../support/harness.js';
import { startCluster } from '../support/private-cluster.js';
import type { PrivateRedis } from '../support/private-redis.js';
import { startEffectsRig } from './effects-rig.js';

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

type Proposed = ReturnType<typeof refundProposal>;

/** The request a case will make, and a forged copy of it on payment pi_2 under `approval` (the same effect id). */
function requestAndForgery(legitApproval: string, forgedApproval: string): { legit: Proposed; forged: Proposed; effectId: string } {
  const requestId = `case-${randomBytes(4).toString('hex')}`;
  const legit = refundProposal({ requestId, approval: legitApproval, amount: 500 });
  const forged = refundProposal({ requestId, approval: forgedApproval, amount: 500, paymentIntent: 'pi_2' });
  return { legit, forged, effectId: effectIdFor({ requestId, effect: legit.effect }) };
}

/** An `onlyEntry` made up to match `proposal`: any kid passes isOnlyEntryOf, which only recomputes the hash. */
function madeUpOnlyEntry(proposal: Proposed, effectId: string) {
  const parsed = parseProposalAndEffect(proposal).proposal;
  const at = Date.now();
  const kid = 'made-up';
  const onlyEntry = { hash: entryHash(Object.assign({}, proposedDraft(parsed), { v: ENTRY_VERSION, effectId, at, prev: null, kid })), v: ENTRY_VERSION, at, kid };
  expect(isOnlyEntryOf(onlyEntry, effectId, parsed)).toBe(true);
  return onlyEntry;
}

describe('an effects job refused because nothing is recorded for its effect (one server, through the queue)', () => {
  async function rig() {
    const prefix = `ujb${randomBytes(5).toString('hex')}`;
    closers.push(() => removePrefixes([prefix]));
    const made = await startEffectsRig(closers, testConfig({ keyPrefix: prefix }));
    made.target.world.set('payment:pi_2', { chargebacks: [], refunded_by_others: 0 });
    const mine = approvalTerms({ capCents: 5_000 });
    const theirs = approvalTerms({ capCents: 5_000, scope: 'payment:pi_2' });
    await made.stores.approvals.grant(mine);
    await made.stores.approvals.grant(theirs);
    const conn = new Redis(made.config.redisUrl, { maxRetriesPerRequest: null });
    const forger = new Queue(made.stores.queues.effects, { connection: conn, ...made.stores.bullmq });
    closers.push(async () => {
      await forger.close();
      conn.disconnect();
    });
    return { ...made, mine: mine.id, theirs: theirs.id, forger };
  }

  const cases = [
    { name: 'a plain copy on another payment', onlyEntry: false, ownApproval: true },
    { name: 'a copy carrying a made-up onlyEntry (the dispatch step binds, bind-propose-10)', onlyEntry: true, ownApproval: true },
    { name: 'a copy carrying a made-up onlyEntry whose approval refuses it first (the refusal binds, bindFirst)', onlyEntry: true, ownApproval: false },
  ];
  for (const { name, onlyEntry, ownApproval } of cases) {
    it(`${name}: refused, unbound, and the real request is then recorded and commits once`, async () => {
      const made = await rig();
      const { legit, forged, effectId } = requestAndForgery(made.mine, ownApproval ? made.theirs : made.mine);
      const data = onlyEntry ? { proposal: forged, recordedAt: Date.now(), onlyEntry: madeUpOnlyEntry(forged, effectId) } : { proposal: forged, recordedAt: Date.now() };
      await made.forger.add('effect', data, { jobId: effectId });
      await expect.poll(async () => (await made.queue.queue.getJob(effectId))?.getState(), { timeout: 20_000 }).toBe('failed');
      expect((await made.queue.queue.getJob(effectId))?.failedReason).toMatch(/^invalid_proposal: /);
      expect(await made.stores.journal.partitionOf(effectId)).toBeNull();
      await (await made.queue.queue.getJob(effectId))?.remove();

      const proposed = await made.queue.propose(legit);
      expect(proposed).toMatchObject({ status: 'recorded', effectId });
      await expect.poll(async () => (await made.stores.journal.receipt(effectId))?.entries.map((entry) => entry.kind) ?? [], { timeout: 20_000 }).toContain('COMMITTED');
      expect(made.target.landings.map((landing) => landing.effect)).toEqual([expect.objectContaining({ paymentIntent: 'pi_1', amount: 500 })]);
    }, 60_000);
  }
});

/**
 * The same through the gate's submitLatest (what an effects job runs), on one server and on a three-master cluster:
 * a forged copy before anything is bound, and while a producer holds the binding it made before recording.
 */
for (const where of ['one server', 'a cluster'] as const) {
  describe(`submitLatest on ${where} binds nothing for an effect with no proposal recorded`, () => {
    const servers: PrivateRedis[] = [];
    beforeAll(async () => {
      if (where === 'a cluster') servers.push(...(await startCluster([['--appendonly', 'no'], ['--appendonly', 'no'], ['--appendonly', 'no']])));
    }, 60_000);
    afterAll(async () => {
      await Promise.all(servers.map((server) => server.stop()));
    });

    async function node(): Promise<{ node: TestNode; target: MemoryTarget; mine: string; theirs: string }> {
      const config = where === 'a cluster' ? testConfig({ redisUrl: servers[0]?.url ?? '', redisCluster: true }) : testConfig();
      const target = createMemoryTarget({ tier: 1, sendTimeoutMs: config.sendTimeoutMs });
      target.world.set('payment:pi_1', { chargebacks: [], refunded_by_others: 0 });
      target.world.set('payment:pi_2', { chargebacks: [], refunded_by_others: 0 });
      const redis = where === 'a cluster' ? new Cluster([{ host: '127.0.0.1', port: servers[0]?.port ?? 0 }], { redisOptions: { maxRetriesPerRequest: 2 } }) : undefined;
      const started = await startNode({ config, target, key: testKey().key, ...(redis === undefined ? {} : { redis }) });
      closers.push(() => started.close());
      if (where === 'one server') closers.push(() => removePrefixes([config.keyPrefix]));
      expect(started.journal.bindsWithDispatch).toBe(where === 'one server');
      const mine = approvalTerms({ capCents: 5_000 });
      const theirs = approvalTerms({ capCents: 5_000, scope: 'payment:pi_2' });
      await started.approvals.grant(mine);
      await started.approvals.grant(theirs);
      return { node: started, target, mine: mine.id, theirs: theirs.id };
    }

    for (const onlyEntry of [false, true]) {
      it(`a forged copy on another payment${onlyEntry ? ' with a made-up onlyEntry' : ''}: refused and unbound; the real request is recorded and its job commits once`, async () => {
        const { node: n, target, mine, theirs } = await node();
        const { legit, forged, effectId } = requestAndForgery(mine, theirs);
        await expect(n.gate.submitLatest(effectId, forged, onlyEntry ? madeUpOnlyEntry(forged, effectId) : null)).rejects.toMatchObject({ code: 'invalid_proposal' });
        expect(await n.journal.partitionOf(effectId)).toBeNull();
        expect(await createProposalRecorder(n.stores)(legit)).toMatchObject({ status: 'recorded', effectId });
        expect((await n.gate.submitLatest(effectId, legit)).answer.outcome).toBe('COMMITTED');
        expect(target.landings.map((landing) => landing.effect)).toEqual([expect.objectContaining({ paymentIntent: 'pi_1', amount: 500 })]);
      }, 60_000);
    }

    it('a forged copy while a producer holds the binding it made before recording: refused, the binding stands, and the producer records and its job commits once', async () => {
      const { node: n, target, mine, theirs } = await node();
      const { legit, forged, effectId } = requestAndForgery(mine, theirs);
      // The producer's first step (record.ts binds, then writes the PROPOSED); its write comes after the forged job ran.
      expect(await n.journal.bind(effectId, 'payment:pi_1', { outbox: true })).toMatchObject({ status: 'NEW' });
      await expect(n.gate.submitLatest(effectId, forged)).rejects.toMatchObject({ code: 'invalid_proposal' });
      // A copy on the producer's own payment, with another amount: refused too, and nothing written under the binding.
      const sameSubject = { ...legit, effect: { ...legit.effect, amount: 4_000 } };
      await expect(n.gate.submitLatest(effectId, sameSubject)).rejects.toMatchObject({ code: 'invalid_proposal' });
      expect(await n.journal.partitionOf(effectId)).toBe('payment:pi_1');
      expect(await n.journal.entries('payment:pi_1', effectId)).toEqual([]);
      expect(await createProposalRecorder(n.stores)(legit)).toMatchObject({ status: 'recorded', effectId });
      expect((await n.gate.submitLatest(effectId, legit)).answer.outcome).toBe('COMMITTED');
      expect(target.landings.map((landing) => landing.effect)).toEqual([expect.objectContaining({ paymentIntent: 'pi_1', amount: 500 })]);
    }, 60_000);
  });
}
