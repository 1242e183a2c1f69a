// Rule: one unsettled effect holds at most MAX_PROPOSALS decisions not judged yet. A new decision past that (a retry
// whose agent, token or decision text differs from the latest one recorded, as an AI agent rewording its decision on
// every retry makes) is refused with too_many_proposals (409, retryable), naming the effect and what to do, and writes
// nothing: no PROPOSED, and no outbox entry for recovery to queue. The same proposal again is still answered from the
// journal, an effect judged since takes a re-decision again, and a settled one keeps its answer.
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createMemoryTarget, createProposalRecorder, effectIdFor, InterlockError, journalOf, openStores, startSender, type Sender, type Stores } from '../../src/interlock.js';
import { MAX_PROPOSALS } from '../../src/gate/record.js';
import { approvalTerms, refundProposal, testConfig, testKey } from '../support/harness.js';

const keyPair = testKey();
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

async function rig(): Promise<{ stores: Stores; sender: Sender; redis: Redis }> {
  const config = testConfig({ keyPrefix: `tcap${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}` });
  const target = createMemoryTarget({ tier: 1, sendTimeoutMs: config.sendTimeoutMs });
  target.world.set('payment:pi_1', { chargebacks: [], refunded_by_others: 0 });
  const redis = new Redis(config.redisUrl);
  const stores = await openStores(config, { logger: pino({ level: 'silent' }), signingKey: keyPair.key, redis });
  // Started, but only the tests call it: no effects worker runs, so an effect stays unsettled until a test judges it.
  const sender = await startSender(stores, target);
  closers.push(async () => {
    await sender.close();
    await stores.close();
    const stale = await redis.keys(`${config.keyPrefix}:*`);
    if (stale.length > 0) await redis.del(...stale);
    await redis.quit();
  });
  return { stores, sender, redis };
}

const decided = (proposal: ReturnType<typeof refundProposal>, attempt: number) => ({ ...proposal, decision: { model: 'gpt-x', text: `Refund approved (attempt ${attempt}): the jar arrived cracked.` } });
const idOf = (proposal: ReturnType<typeof refundProposal>) => effectIdFor({ requestId: proposal.requestId, effect: proposal.effect });

async function proposedCount(sender: Sender, effectId: string): Promise<number> {
  return ((await sender.gate.receipt(effectId))?.entries ?? []).filter((entry) => entry.kind === 'PROPOSED').length;
}

async function refusal(attempt: Promise<unknown>): Promise<InterlockError> {
  const error = await attempt.then(() => null, (thrown: unknown) => thrown);
  if (!(error instanceof InterlockError)) throw new Error(`expected an InterlockError, got ${String(error)}`);
  return error;
}

describe('the decisions one unsettled effect holds', () => {
  it('refuses the decision past MAX_PROPOSALS with too_many_proposals, writing nothing, and still answers the same proposal from the journal', async () => {
    const { stores, sender, redis } = await rig();
    const record = createProposalRecorder(stores);
    const terms = approvalTerms();
    await stores.approvals.grant(terms);
    const proposal = refundProposal({ approval: terms.id });
    const effectId = idOf(proposal);
    for (let attempt = 0; attempt < MAX_PROPOSALS; attempt += 1) {
      expect(await record(decided(proposal, attempt), { outbox: true })).toMatchObject({ status: 'recorded', proposals: attempt + 1 });
    }
    const entriesBefore = (await sender.gate.receipt(effectId))?.entries.length;
    const openOf = async () => {
      await journalOf(stores).flushIndex();
      return (await redis.zrange(stores.keys.openIndex, '0', '-1')).filter((entry) => entry.startsWith(`${effectId}:`)).length;
    };
    const openBefore = await openOf();

    const error = await refusal(record(decided(proposal, MAX_PROPOSALS), { outbox: true }));
    expect([error.code, error.status, error.retryable]).toEqual(['too_many_proposals', 409, true]);
    expect(error.message).toContain(`Effect ${effectId} already holds ${MAX_PROPOSALS} decisions`);
    expect(error.message).toContain(`GET /v1/effects/${effectId}`);
    expect(error.message).toContain('a new request id starts a new effect');
    // Another agent deciding the same way is a new decision too, and refused alike.
    expect((await refusal(record({ ...decided(proposal, 0), agent: 'other-bot' }))).code).toBe('too_many_proposals');
    expect((await sender.gate.receipt(effectId))?.entries.length).toBe(entriesBefore);
    expect(await openOf()).toBe(openBefore);

    // The latest proposal again is the same request recorded before: answered, not refused.
    expect(await record(decided(proposal, MAX_PROPOSALS - 1))).toMatchObject({ status: 'exists', outcome: null, proposals: MAX_PROPOSALS });
    expect(await proposedCount(sender, effectId)).toBe(MAX_PROPOSALS);
  });

  it('takes a re-decision again once the effect is judged (refused), and counts from there', async () => {
    const { stores, sender } = await rig();
    const record = createProposalRecorder(stores);
    // Covers 1000 of the 2000 cents asked: every decision under it is refused (REFUSED:lease) when judged.
    const short = approvalTerms({ capCents: 1_000 });
    await stores.approvals.grant(short);
    const proposal = refundProposal({ approval: short.id });
    const effectId = idOf(proposal);
    for (let attempt = 0; attempt < MAX_PROPOSALS; attempt += 1) await record(decided(proposal, attempt));
    expect((await refusal(record(decided(proposal, MAX_PROPOSALS)))).code).toBe('too_many_proposals');
    expect((await sender.gate.submitLatest(effectId, proposal)).answer.outcome).toBe('REFUSED:lease');

    const enough = approvalTerms();
    await stores.approvals.grant(enough);
    const redecided = { ...proposal, approval: enough.id };
    for (let attempt = 0; attempt < MAX_PROPOSALS; attempt += 1) {
      expect(await record(decided(redecided, attempt))).toMatchObject({ status: 'recorded', proposals: MAX_PROPOSALS + attempt + 1 });
    }
    expect((await refusal(record(decided(redecided, MAX_PROPOSALS)))).message).toContain(`holds ${MAX_PROPOSALS} decisions`);
    expect((await sender.gate.submitLatest(effectId, proposal)).answer.outcome).toBe('COMMITTED');
  });

  it('answers a new decision on a settled effect as it stands, however many it held', async () => {
    const { stores, sender } = await rig();
    const record = createProposalRecorder(stores);
    const terms = approvalTerms();
    await stores.approvals.grant(terms);
    const proposal = refundProposal({ approval: terms.id });
    const effectId = idOf(proposal);
    for (let attempt = 0; attempt < MAX_PROPOSALS; attempt += 1) await record(decided(proposal, attempt));
    expect((await sender.gate.submitLatest(effectId, proposal)).answer.outcome).toBe('COMMITTED');
    expect(await record(decided(proposal, MAX_PROPOSALS))).toMatchObject({ status: 'exists', outcome: 'COMMITTED' });
    expect(await proposedCount(sender, effectId)).toBe(MAX_PROPOSALS);
  });
});
