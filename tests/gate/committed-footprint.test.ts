// Rule: what a committed effect leaves in Redis (issue 8 §1, Redis memory per effect). Its state keeps only what later
// steps read. And where the reconciler finds it: a commit within RECENT_COMMIT_MS of the binding that put its effect
// in the effects-by-time index is found through that index and costs the watch list nothing, whichever process made
// the binding (the service's own path: the API binds and records, the effects worker sends); any later commit goes on
// the watch list, placed by the binding's time as that index holds it, never by an estimate: by recovery, or under a
// binding made long before its effect's first PROPOSED by a caller that failed before recording, its request retried
// hours later (recorded by the API, committed by the effects worker at once). Either way the reconciler's list of
// effects settled after a send since a time holds it (committed, or refused by the target, or AMBIGUOUS: a late
// landing of those is what a missed webhook leaves unrecorded), and holds nothing that was never sent. Reading the
// list with a short window never drops what a longer one needs.
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { createProposalRecorder, effectIdFor, watchedEffects, type WatchPosition } from '../../src/interlock.js';
import { RECENT_COMMIT_MS } from '../../src/redis/journal.js';
import { refundProposal, type TestNode, type World } from '../support/harness.js';
import { crashedBeforeSend, gateWorld, grant } from './gate-support.js';

let world: World;
let redis: Redis | null = null;
afterEach(async () => {
  await redis?.quit();
  redis = null;
  await world.close();
});

async function watchList(node: TestNode): Promise<string[]> {
  await node.journal.flushIndex();
  redis ??= new Redis(world.config.redisUrl);
  return redis.zrange(node.stores.keys.watch, '0', '-1');
}

/** Makes the binding of `effectId` in the effects-by-time index `ago` ms old (as if made then). */
async function bindingMadeAgo(node: TestNode, effectId: string, ago: number): Promise<void> {
  redis ??= new Redis(world.config.redisUrl);
  const now = await node.journal.serverTime();
  expect(await redis.zadd(node.stores.keys.effectsByTime, 'XX', 'CH', String(now - ago), effectId)).toBe(1);
}

describe('a settled effect’s state', () => {
  it('committed, it keeps its chain head and count, its payload and that it committed: no claim, epoch or reservation', async () => {
    world = await gateWorld();
    const node = await world.node('a');
    const { id } = await grant(node);
    const { effectId, outcome } = await node.gate.submit(refundProposal({ approval: id }));
    expect(outcome).toBe('COMMITTED');
    redis ??= new Redis(world.config.redisUrl);
    const state = await redis.hgetall(node.stores.keys.state('payment:pi_1', effectId));
    expect(Object.keys(state).sort()).toEqual(['committed', 'count', 'head', 'lastAt', 'payloadHash']);
  });

  it('refused by the target, it keeps the approval and the amount a landing reported late gives back (late-5)', async () => {
    world = await gateWorld();
    const node = await world.node('a');
    const { id } = await grant(node);
    world.target.inject({ kind: 'reject', code: 'charge_already_refunded' });
    const { effectId, outcome } = await node.gate.submit(refundProposal({ approval: id, amount: 1_500 }));
    expect(outcome).toBe('REFUSED:target_error');
    redis ??= new Redis(world.config.redisUrl);
    expect(await redis.hmget(node.stores.keys.state('payment:pi_1', effectId), 'approvalId', 'amount', 'epoch')).toEqual([id, '1500', '1']);
  });
});

describe('the reconciler’s list of committed effects', () => {
  it('a submit that binds and commits at once stays off the watch list and is still listed; a refused effect is not listed', async () => {
    world = await gateWorld();
    const node = await world.node('a');
    const { id } = await grant(node);
    const committed = await node.gate.submit(refundProposal({ approval: id }));
    const refused = await node.gate.submit(refundProposal({ approval: 'ap_nobody_granted' }));
    expect([committed.outcome, refused.outcome]).toEqual(['COMMITTED', 'REFUSED:lease']);
    expect(await watchList(node)).toEqual([]);
    const now = await node.journal.serverTime();
    expect(await watchedEffects(node.stores, now - 60_000)).toEqual({ effectIds: [committed.effectId], next: null });
    // Committed before the window: not listed (its binding is older than the window and it is on no watch list).
    redis ??= new Redis(world.config.redisUrl);
    await redis.zadd(node.stores.keys.effectsByTime, 'XX', now - 60_000 - RECENT_COMMIT_MS - 1, committed.effectId);
    expect(await watchedEffects(node.stores, now - 60_000)).toEqual({ effectIds: [], next: null });
  });

  it('reads the effects-by-time index page by page: a commit behind more than a page of other bindings is listed', async () => {
    world = await gateWorld();
    const node = await world.node('a');
    const { id } = await grant(node);
    const now = await node.journal.serverTime();
    redis ??= new Redis(world.config.redisUrl);
    // 1,500 bindings older than the commit, none of them committed (bound, then nothing written: no state).
    const others = Array.from({ length: 1_500 }, (_, index) => index.toString(16).padStart(64, '0'));
    await redis.zadd(node.stores.keys.effectsByTime, ...others.flatMap((effectId, index) => [String(now - 30_000 + index), effectId]));
    await redis.hset(node.stores.keys.effectPartitions, ...others.flatMap((effectId) => [effectId, 'payment:pi_1']));
    const committed = await node.gate.submit(refundProposal({ approval: id }));
    expect(committed.outcome).toBe('COMMITTED');
    expect(await watchedEffects(node.stores, now - 60_000)).toEqual({ effectIds: [committed.effectId], next: null });
    expect((await watchedEffects(node.stores, now - 60_000, 0)).effectIds).toEqual([]);
  });

  it('a commit by a submit that did not bind, soon after the producer bound and recorded it, stays off the watch list and is listed', async () => {
    world = await gateWorld();
    const node = await world.node('a');
    const { id } = await grant(node, { maxUses: 10 });
    const record = createProposalRecorder(node.stores);
    // The API's part: bind and record, the PROPOSED beginning the chain. Then the effects worker's: send what is recorded,
    // once guessing the chain from the job's copy of that PROPOSED (its first run), once reading it.
    const guessed = refundProposal({ approval: id, amount: 100 });
    const first = await record(guessed);
    expect(first).toMatchObject({ status: 'recorded', onlyEntry: expect.objectContaining({ hash: expect.any(String) }) });
    const read = refundProposal({ approval: id, amount: 100 });
    expect(await record(read)).toMatchObject({ status: 'recorded' });
    const answers = [
      (await node.gate.submitLatest(first.effectId, guessed, first.status === 'recorded' ? first.onlyEntry : null)).answer,
      (await node.gate.submitLatest(effectIdFor({ requestId: read.requestId, effect: read.effect }), read)).answer,
    ];
    expect(answers.map((answer) => answer.outcome)).toEqual(['COMMITTED', 'COMMITTED']);
    expect(await watchList(node)).toEqual([]);
    const now = await node.journal.serverTime();
    expect(new Set((await watchedEffects(node.stores, now - 60_000)).effectIds)).toEqual(new Set(answers.map((answer) => answer.effectId)));
  });

  it('a commit whose first PROPOSED came under a binding another caller made long before goes on the watch list; one made moments before, not', async () => {
    world = await gateWorld();
    const node = await world.node('a');
    const { id } = await grant(node, { maxUses: 10 });
    const [early, moments] = [refundProposal({ approval: id, amount: 100 }), refundProposal({ approval: id, amount: 100 })];
    const earlyId = effectIdFor({ requestId: early.requestId, effect: early.effect });
    const momentsId = effectIdFor({ requestId: moments.requestId, effect: moments.effect });
    // Producers that bound, then failed before recording: the submit that records did not make the binding.
    for (const effectId of [earlyId, momentsId]) {
      const bound = await node.journal.bind(effectId, 'payment:pi_1');
      if (bound.status !== 'OTHER_SUBJECT') node.journal.unindex(effectId, bound.token);
    }
    await bindingMadeAgo(node, earlyId, RECENT_COMMIT_MS + 1_000);
    expect([(await node.gate.submit(early)).outcome, (await node.gate.submit(moments)).outcome]).toEqual(['COMMITTED', 'COMMITTED']);
    expect(await watchList(node)).toEqual([earlyId]);
    const now = await node.journal.serverTime();
    expect(new Set((await watchedEffects(node.stores, now - 60_000)).effectIds)).toEqual(new Set([earlyId, momentsId]));
  });

  it('a request whose first producer bound and failed before recording, retried hours later, recorded by the API and committed by the effects worker at once, goes on the watch list and is listed', async () => {
    world = await gateWorld();
    const node = await world.node('a');
    const { id } = await grant(node);
    const proposal = refundProposal({ approval: id });
    const effectId = effectIdFor({ requestId: proposal.requestId, effect: proposal.effect });
    const bound = await node.journal.bind(effectId, 'payment:pi_1');
    if (bound.status !== 'OTHER_SUBJECT') node.journal.unindex(effectId, bound.token);
    await bindingMadeAgo(node, effectId, 3 * 3_600_000);
    // The retry: the API records the first PROPOSED now, the effects worker sends it right after.
    const recorded = await createProposalRecorder(node.stores)(proposal);
    expect(recorded).toMatchObject({ status: 'recorded', effectId });
    const { answer } = await node.gate.submitLatest(effectId, proposal, recorded.status === 'recorded' ? recorded.onlyEntry : null);
    expect(answer.outcome).toBe('COMMITTED');
    expect(await watchList(node)).toEqual([effectId]);
    const now = await node.journal.serverTime();
    expect((await watchedEffects(node.stores, now - 60_000)).effectIds).toEqual([effectId]);
  });

  it('a commit by recovery long after its binding goes on the watch list, so it is listed however long ago its effect was bound', async () => {
    world = await gateWorld();
    const { b, effectId } = await crashedBeforeSend(world);
    await bindingMadeAgo(b, effectId, 86_400_000);
    expect((await b.gate.recover()).settled).toEqual([expect.objectContaining({ effectId, outcome: 'COMMITTED_BY_RETRY' })]);
    expect(await watchList(b)).toEqual([effectId]);
    const now = await b.journal.serverTime();
    expect(await watchedEffects(b.stores, now - 60_000)).toEqual({ effectIds: [effectId], next: null });
  });

  it('a commit by recovery soon after its binding is found through the index instead', async () => {
    world = await gateWorld();
    const { b, effectId } = await crashedBeforeSend(world);
    expect((await b.gate.recover()).settled).toEqual([expect.objectContaining({ effectId, outcome: 'COMMITTED_BY_RETRY' })]);
    expect(await watchList(b)).toEqual([]);
    const now = await b.journal.serverTime();
    expect(await watchedEffects(b.stores, now - 60_000)).toEqual({ effectIds: [effectId], next: null });
  });

  it('read in passes of a few, from where the last stopped, covers every committed effect once, then starts over', async () => {
    world = await gateWorld();
    const node = await world.node('a');
    const { id } = await grant(node, { maxUses: 10 });
    const ids: string[] = [];
    for (let index = 0; index < 5; index += 1) {
      const committed = await node.gate.submit(refundProposal({ approval: id, amount: 100 }));
      const refused = await node.gate.submit(refundProposal({ approval: 'ap_nobody_granted' }));
      expect([committed.outcome, refused.outcome]).toEqual(['COMMITTED', 'REFUSED:lease']);
      ids.push(committed.effectId);
    }
    // Two of them committed late as well (bound more than RECENT_COMMIT_MS before): on the watch list, they come first.
    const now = await node.journal.serverTime();
    for (const effectId of [ids[3], ids[1]]) await bindingMadeAgo(node, effectId ?? '', RECENT_COMMIT_MS + 1_000);
    node.journal.settledAfterSend(ids[3] ?? '', now, undefined);
    node.journal.settledAfterSend(ids[1] ?? '', now + 1, undefined);
    await node.journal.flushIndex();
    const since = now - 60_000;
    const passes: string[][] = [];
    let after: WatchPosition | null = null;
    do {
      const { effectIds, next } = await watchedEffects(node.stores, since, 2, after);
      passes.push(effectIds);
      after = next;
    } while (after !== null && passes.length < 10);
    expect(passes.flat().slice(0, 2)).toEqual([ids[3], ids[1]]);
    expect(new Set(passes.flat())).toEqual(new Set(ids));
    expect(passes.every((pass) => pass.length <= 2)).toBe(true);
    // The ones read from the watch list are read again from the index only once more at most (read twice, never skipped).
    expect(passes.flat().length).toBeLessThanOrEqual(ids.length + 2);
    expect((await watchedEffects(node.stores, since, 2, null)).effectIds).toEqual(passes[0]);
  });

  it('a commit long after its binding goes on the watch list, whoever made the binding, placed by the binding’s time in the index', async () => {
    world = await gateWorld();
    const node = await world.node('a');
    const now = await node.journal.serverTime();
    const [soon, late, unbound, boundLongBefore, boundJustInTime] = ['a'.repeat(64), 'b'.repeat(64), 'c'.repeat(64), 'e'.repeat(64), 'f'.repeat(64)] as const;
    node.journal.settledAfterSend(soon, now, now - RECENT_COMMIT_MS);
    node.journal.settledAfterSend(late, now, now - RECENT_COMMIT_MS - 1);
    // Never bound, so not in the index: watched.
    node.journal.settledAfterSend(unbound, now, undefined);
    // Bound by another process (its time not known to the settle): the index's time places it.
    redis ??= new Redis(world.config.redisUrl);
    await redis.zadd(node.stores.keys.effectsByTime, String(now - RECENT_COMMIT_MS - 1), boundLongBefore, String(now - RECENT_COMMIT_MS), boundJustInTime);
    node.journal.settledAfterSend(boundLongBefore, now, undefined);
    node.journal.settledAfterSend(boundJustInTime, now, undefined);
    expect((await watchList(node)).sort()).toEqual([late, unbound, boundLongBefore]);
  });

  it('lists effects refused by the target after their send too, and never those refused before any send', async () => {
    world = await gateWorld();
    const node = await world.node('a');
    const { id } = await grant(node, { maxUses: 10 });
    world.target.inject({ kind: 'reject' });
    const targetRefused = await node.gate.submit(refundProposal({ approval: id, amount: 100 }));
    const neverSent = await node.gate.submit(refundProposal({ approval: 'ap_nobody_granted' }));
    const committed = await node.gate.submit(refundProposal({ approval: id, amount: 100 }));
    expect([targetRefused.outcome, neverSent.outcome, committed.outcome]).toEqual(['REFUSED:target_error', 'REFUSED:lease', 'COMMITTED']);
    const since = (await node.journal.serverTime()) - 60_000;
    expect(new Set((await watchedEffects(node.stores, since, 10, null)).effectIds)).toEqual(new Set([targetRefused.effectId, committed.effectId]));
    // Both settled soon after their own bindings: found through the index, they cost the watch list nothing.
    expect(await watchList(node)).toEqual([]);
  });

  it('a pass over a short window leaves the watch list whole for a longer one', async () => {
    world = await gateWorld();
    const node = await world.node('a');
    const day = 24 * 3_600_000;
    const now = await node.journal.serverTime();
    const settledLongAgo = 'd'.repeat(64);
    node.journal.settledAfterSend(settledLongAgo, now - 4 * day, undefined);
    await node.journal.flushIndex();
    expect((await watchedEffects(node.stores, now - 5 * day)).effectIds).toEqual([settledLongAgo]);
    // The scheduled reconciler's window (3 days), then `interlock reconcile --since 5d` again.
    expect((await watchedEffects(node.stores, now - 3 * day)).effectIds).toEqual([]);
    expect((await watchedEffects(node.stores, now - 5 * day)).effectIds).toEqual([settledLongAgo]);
  });
});
