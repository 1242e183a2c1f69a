// Recovery (DESIGN §4 recovery outcomes, §7 timing and fast takeover) on real Redis with the in-memory target:
// a node "crashes" through an injected fault, kill() removes its heartbeat, and another node recovers.
import { afterEach, describe, expect, it } from 'vitest';
import { kill, refundProposal, sleep, type World } from '../support/harness.js';
import { FACTS, PAYMENT, entryKinds, gateWorld, grant, openState, recoverUntilSettled, storedError, submitAndCrash, submitSlowly, untilRedisTime, verifiedReceipt } from './gate-support.js';

let world: World;
afterEach(async () => {
  await world.close();
});

async function twoNodes() {
  const [a, b] = [await world.node('a'), await world.node('b')];
  const { id } = await grant(a);
  return { a, b, approval: id };
}

describe('recovery outcomes', () => {
  it('COMMITTED_BY_RETRY: a tier-1 effect whose sender died before the send is resent under the same key at once, once', async () => {
    world = await gateWorld();
    const { a, b, approval } = await twoNodes();
    world.target.inject({ kind: 'crash-before-send' });
    const effectId = await submitAndCrash(a, refundProposal({ approval }));
    await kill(a);
    const report = await b.gate.recover();
    expect(report.settled).toEqual([expect.objectContaining({ effectId, outcome: 'COMMITTED_BY_RETRY' })]);
    expect(world.target.landedCount(effectId)).toBe(1);
    const receipt = await verifiedReceipt(world, b, effectId);
    expect(receipt).toMatchObject({ outcome: 'COMMITTED_BY_RETRY', happened: true, happenedOnce: true, assumptionsHeld: true, authorizedWhenFired: true, refused: null });
    expect(receipt.recheckedAtRecovery).toMatchObject({ approvalLive: true, violations: [] });
  });

  it('COMMITTED_BY_RETRY: a resend of a tier-1 effect that had already landed is deduped by the target, so it lands once', async () => {
    world = await gateWorld();
    const { a, b, approval } = await twoNodes();
    world.target.inject({ kind: 'crash-after-send' });
    const effectId = await submitAndCrash(a, refundProposal({ approval }));
    await kill(a);
    expect((await b.gate.recover()).settled).toEqual([expect.objectContaining({ effectId, outcome: 'COMMITTED_BY_RETRY' })]);
    expect(world.target.landedCount(effectId)).toBe(1);
  });

  it('COMMITTED_ON_QUERY: what landed before a crash is recorded even though a chargeback arrived during the outage (the seed case)', async () => {
    world = await gateWorld();
    const { a, b, approval } = await twoNodes();
    world.target.inject({ kind: 'crash-after-send' });
    const effectId = await submitAndCrash(a, refundProposal({ approval }));
    world.target.world.set(PAYMENT, { ...FACTS, chargebacks: ['dp_1'] });
    await kill(a);
    expect((await b.gate.recover()).settled).toEqual([expect.objectContaining({ effectId, outcome: 'COMMITTED_ON_QUERY' })]);
    expect(world.target.landedCount(effectId)).toBe(1);
    const receipt = await verifiedReceipt(world, b, effectId);
    // The facts held when it fired; the recovery re-check records that they no longer do.
    expect(receipt).toMatchObject({ outcome: 'COMMITTED_ON_QUERY', happened: true, assumptionsHeld: true, evidence: world.target.landings[0]?.id });
    expect(receipt.recheckedAtRecovery?.changes).toEqual([{ field: 'chargebacks', was: [], now: ['dp_1'] }]);
  });

  it('REAPPLIED_AFTER_QUERY: a tier-2 effect that left no trace is resent only after its send deadline plus the settle margin', async () => {
    world = await gateWorld({ target: { tier: 2 } });
    const { a, b, approval } = await twoNodes();
    world.target.inject({ kind: 'crash-before-send' });
    const effectId = await submitAndCrash(a, refundProposal({ approval }));
    await kill(a);
    const report = await recoverUntilSettled(b, effectId);
    expect(report.settled).toEqual([expect.objectContaining({ effectId, outcome: 'REAPPLIED_AFTER_QUERY' })]);
    expect(world.target.landedCount(effectId)).toBe(1);
    const receipt = await verifiedReceipt(world, b, effectId);
    expect(receipt).toMatchObject({ outcome: 'REAPPLIED_AFTER_QUERY', happened: true, happenedOnce: true, assumptionsHeld: true });
    expect(receipt.recheckedAtRecovery).toMatchObject({ approvalLive: true, violations: [] });
  });

  it('REFUSED:lease_at_recovery: an approval revoked during the outage stops the resend, and nothing lands', async () => {
    world = await gateWorld();
    const { a, b, approval } = await twoNodes();
    world.target.inject({ kind: 'crash-before-send' });
    const effectId = await submitAndCrash(a, refundProposal({ approval }));
    const revoked = await b.approvals.revoke(approval, 'lee@risk');
    expect(revoked.mayStillLand).toEqual([effectId]);
    await kill(a);
    const report = await recoverUntilSettled(b, effectId);
    expect(report.settled).toEqual([expect.objectContaining({ effectId, outcome: 'REFUSED:lease_at_recovery' })]);
    expect(world.target.landings).toEqual([]);
    const receipt = await verifiedReceipt(world, b, effectId);
    expect(receipt).toMatchObject({ outcome: 'REFUSED:lease_at_recovery', happened: false, refused: { code: 'REFUSED:lease_at_recovery' }, authorizedWhenFired: null });
    expect(receipt.recheckedAtRecovery).toMatchObject({ approvalLive: false, approval: { revoked: true } });
  });

  it('REFUSED:lease_at_recovery: an approval that expired during the outage stops the resend too', async () => {
    world = await gateWorld();
    const [a, b] = [await world.node('a'), await world.node('b')];
    const { id, expiresAt } = await grant(a, { expiresAt: Date.now() + 300 });
    world.target.inject({ kind: 'crash-before-send' });
    const effectId = await submitAndCrash(a, refundProposal({ approval: id }));
    await kill(a);
    await untilRedisTime(b, expiresAt);
    const report = await recoverUntilSettled(b, effectId);
    expect(report.settled).toEqual([expect.objectContaining({ effectId, outcome: 'REFUSED:lease_at_recovery' })]);
    expect(world.target.landings).toEqual([]);
    expect((await verifiedReceipt(world, b, effectId)).recheckedAtRecovery?.approvalProblems).toEqual([expect.stringContaining('expired')]);
  });

  it('REFUSED:stale_premise_at_recovery: a chargeback during the outage stops the resend of an effect that never left (the seed case)', async () => {
    world = await gateWorld();
    const { a, b, approval } = await twoNodes();
    world.target.inject({ kind: 'crash-before-send' });
    const effectId = await submitAndCrash(a, refundProposal({ approval }));
    world.target.world.set(PAYMENT, { ...FACTS, chargebacks: ['dp_1'] });
    await kill(a);
    const report = await recoverUntilSettled(b, effectId);
    expect(report.settled).toEqual([expect.objectContaining({ effectId, outcome: 'REFUSED:stale_premise_at_recovery' })]);
    expect(world.target.landings).toEqual([]);
    const receipt = await verifiedReceipt(world, b, effectId);
    expect(receipt).toMatchObject({ outcome: 'REFUSED:stale_premise_at_recovery', happened: false, refused: { code: 'REFUSED:stale_premise_at_recovery' } });
    expect(receipt.recheckedAtRecovery).toMatchObject({ approvalLive: true, changes: [{ field: 'chargebacks', was: [], now: ['dp_1'] }] });
  });

  it('UNRESOLVED:<error>: a lookup that fails never counts as absent; the effect stays open and a later pass settles it', async () => {
    world = await gateWorld({ target: { tier: 2 } });
    const { a, b, approval } = await twoNodes();
    world.target.inject({ kind: 'crash-before-send' });
    const effectId = await submitAndCrash(a, refundProposal({ approval }));
    await kill(a);
    world.target.inject({ kind: 'lookup-error' });
    const failed = await b.gate.recover();
    expect(failed.unresolved).toEqual([expect.objectContaining({ effectId, outcome: 'UNRESOLVED:lookup_failed' })]);
    expect(failed.settled).toEqual([]);
    expect((await entryKinds(b, effectId)).at(-1)).toBe('DISPATCHED');
    expect((await openState(b, effectId)).state.open).toBe(true);
    const report = await recoverUntilSettled(b, effectId);
    expect(report.settled).toEqual([expect.objectContaining({ effectId, outcome: 'REAPPLIED_AFTER_QUERY' })]);
    expect(world.target.landedCount(effectId)).toBe(1);
  });

  it('UNRESOLVED:<error>: premises that cannot be re-read send nothing and refuse nothing; recovery retries until they can', async () => {
    world = await gateWorld();
    const { a, b, approval } = await twoNodes();
    world.target.inject({ kind: 'crash-before-send' });
    const effectId = await submitAndCrash(a, refundProposal({ approval }));
    await kill(a);
    world.target.inject({ kind: 'premise-down' });
    // Nothing may be resent without a re-check; the lookup runs, and finds nothing that may be trusted yet.
    const early = await b.gate.recover();
    expect(early.settled).toEqual([]);
    expect(early.waiting).toEqual([expect.objectContaining({ effectId })]);
    if (early.nextAt !== null) await untilRedisTime(b, early.nextAt);
    expect((await b.gate.recover()).unresolved).toEqual([expect.objectContaining({ effectId, outcome: 'UNRESOLVED:premise_read_failed' })]);
    expect(world.target.landings).toEqual([]);
    world.target.heal();
    expect((await b.gate.recover()).settled).toEqual([expect.objectContaining({ effectId, outcome: 'COMMITTED_BY_RETRY' })]);
    expect(world.target.landedCount(effectId)).toBe(1);
  });

  it('COMMITTED_ON_QUERY: a landed effect is recorded even while its premises can never be re-read (issue 6, item 8)', async () => {
    world = await gateWorld();
    const { a, b, approval } = await twoNodes();
    world.target.inject({ kind: 'crash-after-send' });
    const effectId = await submitAndCrash(a, refundProposal({ approval }));
    await kill(a);
    world.target.inject({ kind: 'premise-down' });
    expect((await b.gate.recover()).settled).toEqual([expect.objectContaining({ effectId, outcome: 'COMMITTED_ON_QUERY' })]);
    expect(world.target.landedCount(effectId)).toBe(1);
    expect(await verifiedReceipt(world, b, effectId)).toMatchObject({ happened: true, happenedOnce: true, outcome: 'COMMITTED_ON_QUERY' });
  });
});

describe('recovery timing and fast takeover (DESIGN §7)', () => {
  it('takes over at once a claim whose owner heartbeat is gone, long before the claim would lapse', async () => {
    world = await gateWorld();
    const { a, b, approval } = await twoNodes();
    world.target.inject({ kind: 'crash-before-send' });
    const effectId = await submitAndCrash(a, refundProposal({ approval }));
    await kill(a);
    const { now, state } = await openState(b, effectId);
    expect(state.claimExpires - now).toBeGreaterThan(world.config.claimTtlMs / 2);
    const report = await b.gate.recover();
    expect(report.settled).toEqual([expect.objectContaining({ effectId, outcome: 'COMMITTED_BY_RETRY' })]);
    expect(await b.journal.serverTime()).toBeLessThan(state.claimExpires);
  });

  it('takes over at once a claim whose owner restarted under the same worker id with a new boot nonce', async () => {
    world = await gateWorld();
    const { a, approval } = await twoNodes();
    world.target.inject({ kind: 'crash-before-send' });
    const effectId = await submitAndCrash(a, refundProposal({ approval }));
    await a.close({ clearHeartbeat: false });
    const restarted = await world.node('a');
    expect(restarted.heartbeat.nonce).not.toBe(a.heartbeat.nonce);
    const { state } = await openState(restarted, effectId);
    expect((await restarted.gate.recover()).settled).toEqual([expect.objectContaining({ effectId, outcome: 'COMMITTED_BY_RETRY' })]);
    expect(await restarted.journal.serverTime()).toBeLessThan(state.claimExpires);
    expect(world.target.landedCount(effectId)).toBe(1);
  });

  it('a resubmit that meets an in-flight effect whose owner is dead recovers it inline', async () => {
    world = await gateWorld();
    const { a, b, approval } = await twoNodes();
    const proposal = refundProposal({ approval });
    world.target.inject({ kind: 'crash-before-send' });
    const effectId = await submitAndCrash(a, proposal);
    await kill(a);
    expect(await b.gate.submit(proposal)).toMatchObject({ effectId, outcome: 'COMMITTED_BY_RETRY' });
    expect(world.target.landedCount(effectId)).toBe(1);
  });

  it('a worker keeps the claim of its own send in progress: its recovery pass and a duplicate job leave it alone', async () => {
    world = await gateWorld();
    const { a, approval } = await twoNodes();
    const proposal = refundProposal({ approval });
    const { effectId, sending } = await submitSlowly(world, a, proposal);
    const report = await a.gate.recover();
    expect(report.settled).toEqual([]);
    expect(report.skipped).toEqual([expect.objectContaining({ effectId, holder: 'a' })]);
    expect(await a.gate.submit(proposal)).toMatchObject({ outcome: 'IN_FLIGHT', holder: 'a' });
    expect((await sending).outcome).toBe('COMMITTED');
    expect(await entryKinds(a, effectId)).not.toContain('LATE_RESULT');
    expect(world.target.landedCount(effectId)).toBe(1);
  });

  it('an unknown send outcome keeps the claim: other nodes leave it to its live owner, whose recovery settles it once', async () => {
    world = await gateWorld();
    const { a, b, approval } = await twoNodes();
    world.target.inject({ kind: 'error-after-send' });
    const unknown = await a.gate.submit(refundProposal({ approval }));
    expect(unknown).toMatchObject({ outcome: 'IN_FLIGHT', holder: 'a', reason: expect.stringContaining('unknown') });
    expect((await b.gate.recover()).skipped).toEqual([expect.objectContaining({ effectId: unknown.effectId, holder: 'a' })]);
    // The send got no definite answer, so recovery looks before it resends under the key: it finds what landed.
    expect((await a.gate.recover()).settled).toEqual([expect.objectContaining({ effectId: unknown.effectId, outcome: 'COMMITTED_ON_QUERY' })]);
    expect(world.target.landedCount(unknown.effectId)).toBe(1);
  });

  it('COMMITTED_ON_QUERY: a refund that landed behind a 500 Stripe stored under the key is looked up at once, not resent under the key', async () => {
    world = await gateWorld();
    const stripe = storedError(world, { landsFirst: true });
    const { a, approval } = await twoNodes();
    const sent = await a.gate.submit(refundProposal({ approval }));
    expect(sent).toMatchObject({ outcome: 'IN_FLIGHT', holder: 'a', reason: expect.stringContaining('500') });
    expect((await a.gate.recover()).settled).toEqual([expect.objectContaining({ effectId: sent.effectId, outcome: 'COMMITTED_ON_QUERY' })]);
    expect(stripe.requests()).toBe(1);
    expect(world.target.landedCount(sent.effectId)).toBe(1);
    expect((await verifiedReceipt(world, a, sent.effectId)).happened).toBe(true);
  });

  it('a key that keeps answering 500 is resent only after a lookup that finds nothing and the quiet period after the last answer, never on every pass', async () => {
    world = await gateWorld();
    const stripe = storedError(world, { landsFirst: false });
    const { a, approval } = await twoNodes();
    const sent = await a.gate.submit(refundProposal({ approval }));
    expect(sent).toMatchObject({ outcome: 'IN_FLIGHT' });
    let passes = 0;
    let waited = 0;
    for (const stopAt = Date.now() + 3_000; Date.now() < stopAt; passes += 1) {
      waited += (await a.gate.recover()).waiting.length;
      await sleep(20);
    }
    // With a 600 ms send timeout and a 150 ms settle margin: the send, then resends at about 0.75 s, 1.5 s and 2.25 s.
    expect(passes).toBeGreaterThan(20);
    expect(waited).toBeGreaterThan(15);
    expect(stripe.requests()).toBeGreaterThanOrEqual(2);
    expect(stripe.requests()).toBeLessThanOrEqual(5);
    expect(stripe.queries()).toBeGreaterThan(15);
    expect((await openState(a, sent.effectId)).state).toMatchObject({ open: true, unknowns: stripe.requests() });
    expect(world.target.landedCount(sent.effectId)).toBe(0);
  });

  it('a submit that meets an effect recovery is waiting on answers IN_FLIGHT with the instant it will be settled', async () => {
    world = await gateWorld({ target: { tier: 2 } });
    const { a, b, approval } = await twoNodes();
    const proposal = refundProposal({ approval });
    world.target.inject({ kind: 'crash-before-send' });
    const effectId = await submitAndCrash(a, proposal);
    await kill(a);
    const { waiting } = await b.gate.recover();
    expect(await b.gate.submit(proposal)).toMatchObject({ outcome: 'IN_FLIGHT', holder: 'recovery', retryAt: waiting[0]?.until });
    expect(world.target.landings).toEqual([]);
    expect(effectId).toBe(waiting[0]?.effectId);
  });

  it('leaves a live slow sender its claim and reports the skip with the holder and when to retry', async () => {
    world = await gateWorld();
    const { a, b, approval } = await twoNodes();
    const proposal = refundProposal({ approval });
    const { effectId, sending } = await submitSlowly(world, a, proposal);
    const report = await b.gate.recover();
    expect(report.settled).toEqual([]);
    expect(report.skipped).toEqual([{ effectId, reason: 'held by a live sender', holder: 'a', retryAt: expect.any(Number) }]);
    expect(report.nextAt).toBe(report.skipped[0]?.retryAt);
    expect((await sending).outcome).toBe('COMMITTED');
    expect(world.target.landedCount(effectId)).toBe(1);
  });

  it('does not trust a tier-2 lookup that finds nothing before the sender stopped (its deadline, or its proven death) + settle margin, and waits for exactly that instant', async () => {
    // A settle margin wide enough that the second pass below still comes before it on a loaded machine (300 ms did not
    // always: the pass then settled, rightly, and the assertion that it waits failed).
    world = await gateWorld({ target: { tier: 2 }, config: { settleMarginMs: 3_000 } });
    const { a, b, approval } = await twoNodes();
    world.target.inject({ kind: 'crash-before-send' });
    const effectId = await submitAndCrash(a, refundProposal({ approval }));
    await kill(a);

    const early = await b.gate.recover();
    // The takeover proved a's death; from then on a can send nothing new, so the quiet period counts from there.
    const { state } = await openState(b, effectId);
    expect(state.deathProvenAt).not.toBeNull();
    const trustedAt = Math.min(state.sendDeadline, state.deathProvenAt ?? Infinity) + world.config.settleMarginMs;
    expect(trustedAt).toBeLessThan(state.sendDeadline + world.config.settleMarginMs);
    expect(early.settled).toEqual([]);
    expect(early.waiting).toEqual([{ effectId, until: trustedAt, reason: expect.stringContaining('settle margin') }]);
    expect(early.nextAt).toBe(trustedAt);
    expect((await b.gate.recover()).waiting).toEqual([expect.objectContaining({ effectId, until: trustedAt })]);
    expect(world.target.landings).toEqual([]);

    await untilRedisTime(b, trustedAt);
    expect((await b.gate.recover()).settled).toEqual([expect.objectContaining({ effectId, outcome: 'REAPPLIED_AFTER_QUERY' })]);
    expect(world.target.landedCount(effectId)).toBe(1);
  });

  it('a request that lands after its sender gave up is found, not resent: absence is trusted only after the settle margin', async () => {
    world = await gateWorld({ target: { tier: 2 }, config: { sendTimeoutMs: 400, settleMarginMs: 600 } });
    const { a, b, approval } = await twoNodes();
    world.target.inject({ kind: 'slow-send', delayMs: 700, landsAfterAbort: true });
    const gaveUp = await a.gate.submit(refundProposal({ approval }));
    expect(gaveUp.outcome).toBe('IN_FLIGHT');
    await kill(a);
    const first = await b.gate.recover();
    expect(first.waiting).toEqual([expect.objectContaining({ effectId: gaveUp.effectId })]);
    const report = await recoverUntilSettled(b, gaveUp.effectId);
    expect(report.settled).toEqual([expect.objectContaining({ effectId: gaveUp.effectId, outcome: 'COMMITTED_ON_QUERY' })]);
    expect(world.target.landedCount(gaveUp.effectId)).toBe(1);
  });

  it.each([
    ['crash-after-send', 'finds what landed instead of resending under a forgotten key', 'COMMITTED_ON_QUERY'],
    ['crash-before-send', 'resends what never landed only once the lookup is trusted', 'REAPPLIED_AFTER_QUERY'],
  ] as const)('a tier-1 effect older than the dedup window minus its margin falls back to lookup (%s): %s', async (fault, _rule, outcome) => {
    world = await gateWorld({ target: { dedupWindowMs: 1_400 }, config: { dedupMarginMs: 800 } });
    const { a, b, approval } = await twoNodes();
    world.target.inject({ kind: fault });
    const effectId = await submitAndCrash(a, refundProposal({ approval }));
    await kill(a);
    world.target.forgetKeys();
    await sleep(1_400 - 800 + 50);
    const report = await recoverUntilSettled(b, effectId);
    expect(report.settled).toEqual([expect.objectContaining({ effectId, outcome })]);
    expect(world.target.landedCount(effectId)).toBe(1);
  });

  it('records a fenced-out sender late answer as LATE_RESULT, never as a second COMMITTED, and commits the landing it reports', async () => {
    world = await gateWorld();
    const { a, b, approval } = await twoNodes();
    const proposal = refundProposal({ approval });
    const { effectId, sending: zombie } = await submitSlowly(world, a, proposal);
    // The sender is cut off from Redis (its heartbeat lapses) while its request is still on the wire. A resend under
    // the same key meanwhile is answered "in use" by the target, as Stripe answers 409: no outcome, the claim stays.
    await kill(a);
    expect((await b.gate.recover()).unresolved).toEqual([expect.objectContaining({ effectId })]);
    const late = await zombie;
    // Its caller hears that the effect is in other hands, not COMMITTED: it lost its claim.
    expect(['IN_FLIGHT', 'DUPLICATE_IGNORED']).toContain(late.outcome);
    // Its landed answer is the truth about the effect: the holder commits it without sending again.
    expect((await b.gate.recover()).settled).toEqual([expect.objectContaining({ effectId, outcome: 'COMMITTED_ON_QUERY' })]);
    const kinds = await entryKinds(b, effectId);
    expect(kinds.slice(-2)).toEqual(['LATE_RESULT', 'COMMITTED']);
    expect(kinds.filter((kind) => kind === 'COMMITTED')).toHaveLength(1);
    expect(world.target.landedCount(effectId)).toBe(1);
    await verifiedReceipt(world, b, effectId);
  });

  it('a fenced-out tier-2 sender whose request lands while recovery waits is recorded late, and recovery commits what the lookup finds', async () => {
    world = await gateWorld({ target: { tier: 2 } });
    const { a, b, approval } = await twoNodes();
    const proposal = refundProposal({ approval });
    const { effectId, sending: zombie } = await submitSlowly(world, a, proposal);
    await kill(a);
    const first = await b.gate.recover();
    expect(first.waiting).toEqual([expect.objectContaining({ effectId })]);
    await zombie;
    expect(await entryKinds(b, effectId)).toContain('LATE_RESULT');
    expect(await entryKinds(b, effectId)).not.toContain('COMMITTED');
    const report = await recoverUntilSettled(b, effectId);
    expect(report.settled).toEqual([expect.objectContaining({ effectId, outcome: 'COMMITTED_ON_QUERY' })]);
    expect(world.target.landedCount(effectId)).toBe(1);
    await verifiedReceipt(world, b, effectId);
  });

  it('reports an effect id it does not know as skipped, with the reason', async () => {
    world = await gateWorld();
    const b = await world.node('b');
    const report = await b.gate.recover({ only: ['f'.repeat(64)] });
    expect(report).toEqual({ settled: [], waiting: [], skipped: [{ effectId: 'f'.repeat(64), reason: 'unknown effect id' }], unresolved: [], nextAt: null });
  });
});
