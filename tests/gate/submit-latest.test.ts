// submitLatest: what an effects job runs. It submits the effect's latest recorded proposal (a re-decision after a
// refusal included), not the copy the job carries; a latest proposal that was refused already is the answer and is
// not judged again; and the chain is read in the round trip of the binding, so a recorded effect's job costs two
// reads fewer than reading the chain first and again after binding (and waits for one round trip, not four, before
// it can dispatch). Every submit starts reading the facts its proposal names with the binding, so the premise read
// and the binding's round trip overlap; what the read finds is used only if the attempt gets that far.
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createMemoryTarget, createProposalRecorder, effectIdFor, journalOf, openStores, startSender, type MemoryTarget, type Sender, type Stores } from '../../src/interlock.js';
import { payloadHash } from '../../src/core/effect-id.js';
import { createRedisJournal } from '../../src/redis/journal.js';
import { countCommands } from '../support/count-commands.js';
import { approvalTerms, refundProposal, testConfig, testKey } from '../support/harness.js';

const keyPair = testKey();
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

async function rig(): Promise<{ stores: Stores; sender: Sender; target: MemoryTarget; sent: () => number }> {
  const config = testConfig();
  const target = createMemoryTarget({ tier: 1, sendTimeoutMs: config.sendTimeoutMs });
  target.world.set('payment:pi_1', { chargebacks: [], refunded_by_others: 0 });
  const redis = new Redis(config.redisUrl);
  const commands = countCommands(redis);
  const stores = await openStores(config, { logger: pino({ level: 'silent' }), signingKey: keyPair.key, redis });
  const sender = await startSender(stores, target);
  closers.push(async () => {
    await sender.close();
    await stores.close();
    const stale = await redis.keys(`${config.keyPrefix}:*`);
    if (stale.length > 0) await redis.del(...stale);
    await redis.quit();
  });
  return { stores, sender, target, sent: () => commands.read() };
}

async function entriesOf(sender: Sender, effectId: string) {
  return (await sender.gate.receipt(effectId))?.entries ?? [];
}

function idOf(proposal: ReturnType<typeof refundProposal>): string {
  return effectIdFor({ requestId: proposal.requestId, effect: proposal.effect });
}

describe('submitLatest (an effects job)', () => {
  it('submits the latest recorded proposal, not the copy the job carries: a re-decision under a new approval is judged on its own terms', async () => {
    const { stores, sender, target } = await rig();
    const record = createProposalRecorder(stores);
    const first = approvalTerms({ capCents: 1_000 });
    await stores.approvals.grant(first);
    const carried = refundProposal({ approval: first.id });
    await record(carried);
    // The first decision is refused (its approval covers 1000 of 2000 cents); it is decided again under another.
    expect((await sender.gate.submitLatest(idOf(carried), carried)).answer.outcome).toBe('REFUSED:lease');
    const second = approvalTerms();
    await stores.approvals.grant(second);
    expect((await record({ ...carried, approval: second.id })).status).toBe('recorded');
    const run = await sender.gate.submitLatest(idOf(carried), carried);
    expect(run).toMatchObject({ judged: true, answer: { outcome: 'COMMITTED' } });
    expect(target.landings).toHaveLength(1);
    const dispatched = (await entriesOf(sender, idOf(carried))).find((entry) => entry.kind === 'DISPATCHED');
    expect(dispatched).toMatchObject({ approval: second.id });
  });

  it('answers with the refusal of a latest proposal refused already, writes nothing and leaves no index entry for recovery to look at', async () => {
    const { stores, sender, target } = await rig();
    const terms = approvalTerms();
    await stores.approvals.grant(terms);
    const proposal = refundProposal({ approval: terms.id });
    target.world.set('payment:pi_1', { chargebacks: ['du_1'], refunded_by_others: 0 });
    expect((await sender.gate.submit(proposal)).outcome).toBe('REFUSED:stale_premise');
    const before = (await entriesOf(sender, idOf(proposal))).length;
    const again = await sender.gate.submitLatest(idOf(proposal), proposal);
    expect(again).toMatchObject({ judged: false, answer: { outcome: 'REFUSED:stale_premise' } });
    expect(await entriesOf(sender, idOf(proposal))).toHaveLength(before);
    const redis = new Redis(stores.config.redisUrl);
    try {
      await expect.poll(async () => redis.zcard(stores.keys.openIndex), { timeout: 2_000 }).toBe(0);
    } finally {
      await redis.quit();
    }
  });

  it('runs the recorded proposal when the job carries an unusable one or one of another effect', async () => {
    const { stores, sender, target } = await rig();
    const record = createProposalRecorder(stores);
    const terms = approvalTerms();
    await stores.approvals.grant(terms);
    const recorded = refundProposal({ approval: terms.id, amount: 700 });
    await record(recorded);
    expect((await sender.gate.submitLatest(idOf(recorded), { agent: 'x', effect: 'not a proposal' })).answer.outcome).toBe('COMMITTED');
    const other = refundProposal({ approval: terms.id, amount: 800 });
    await record(other);
    expect((await sender.gate.submitLatest(idOf(other), recorded)).answer.outcome).toBe('COMMITTED');
    expect(target.landings.map((landing) => (landing.effect.kind === 'refund' ? landing.effect.amount : null))).toEqual([700, 800]);
  });

  it('sends a proposal recorded before request ids had to be NFC: the job of an accepted request is run, not refused as bad input', async () => {
    const { stores, sender, target } = await rig();
    const terms = approvalTerms();
    await stores.approvals.grant(terms);
    // "café" as e and a combining accent, written as the recorder wrote any spelling before the rule.
    const recorded = refundProposal({ requestId: `cafe\u0301-${Date.now()}`, approval: terms.id, amount: 900 });
    expect(recorded.requestId.normalize('NFC')).not.toBe(recorded.requestId);
    const effectId = idOf(recorded);
    const redis = new Redis(stores.config.redisUrl);
    closers.push(async () => void (await redis.quit()));
    const journal = createRedisJournal({ redis, keys: stores.keys, signingKey: keyPair.key });
    const bound = await journal.bind(effectId, 'payment:pi_1');
    if (bound.status === 'OTHER_SUBJECT') throw new Error('bound elsewhere');
    journal.unindex(effectId, bound.token);
    const { state } = await stores.journal.readState('payment:pi_1', effectId);
    const written = await journal.append('payment:pi_1', effectId, [{ kind: 'PROPOSED', requestId: recorded.requestId, agent: recorded.agent, approval: recorded.approval, premises: { chargebacks: [], refunded_by_others: 0 }, effect: recorded.effect, request: null, decision: null }], { place: { head: state.head }, payloadHash: payloadHash(recorded.effect) });
    expect(written.status).toBe('OK');
    expect((await sender.gate.submitLatest(effectId, recorded)).answer.outcome).toBe('COMMITTED');
    expect(target.landings).toHaveLength(1);
  });

  it('costs a recorded effect two reads fewer than reading its chain before submitting it', async () => {
    const { stores, sender, sent } = await rig();
    const record = createProposalRecorder(stores);
    const terms = approvalTerms({ maxUses: 10, capCents: 50_000 });
    await stores.approvals.grant(terms);
    // Warm: the approval's terms are read once per worker.
    const warm = refundProposal({ approval: terms.id });
    await record(warm);
    await sender.gate.submitLatest(idOf(warm), warm);
    // Each count includes the index upkeep its submit schedules, and nothing of the one before: flushed here rather
    // than waited for (its timer, 50 ms, fired late on a loaded machine and the count fell into the next step).
    const settle = async () => {
      await new Promise((resolve) => setTimeout(resolve, 20));
      await journalOf(stores).flushIndex();
    };
    await settle();
    const latest = refundProposal({ approval: terms.id });
    await record(latest);
    const before = sent();
    expect((await sender.gate.submitLatest(idOf(latest), latest)).answer.outcome).toBe('COMMITTED');
    await settle();
    const viaLatest = sent() - before;
    const plain = refundProposal({ approval: terms.id });
    await record(plain);
    await settle();
    const start = sent();
    // The path an effects job took before: the binding's partition, the chain, then the submit (which reads it again).
    const partition = await stores.journal.partitionOf(idOf(plain));
    await stores.journal.entries(partition ?? '', idOf(plain));
    expect((await sender.gate.submit(plain)).outcome).toBe('COMMITTED');
    await settle();
    const viaChainFirst = sent() - start;
    expect(viaLatest).toBe(viaChainFirst - 2);
  });
});

describe('the facts read ahead (with the binding, so their round trips overlap)', () => {
  it('starts the premise read before the binding has answered, and reads once per submit', async () => {
    const { stores, sender, target } = await rig();
    const terms = approvalTerms();
    await stores.approvals.grant(terms);
    const order: string[] = [];
    const read = target.readFacts.bind(target);
    target.readFacts = (...args: Parameters<typeof read>) => {
      order.push('facts read');
      return read(...args);
    };
    const proposal = refundProposal({ approval: terms.id });
    const submitted = sender.gate.submit(proposal);
    // The read starts in the same turn as the binding is sent, before any reply can have come back.
    expect(order).toEqual(['facts read']);
    expect((await submitted).outcome).toBe('COMMITTED');
    expect(order).toEqual(['facts read']);
  });

  it('serves a job whose premises are named in another order than the recorded ones (they come back sorted): one read', async () => {
    const { stores, sender, target } = await rig();
    const terms = approvalTerms();
    await stores.approvals.grant(terms);
    const carried = refundProposal({ approval: terms.id, premises: { refunded_by_others: 0, chargebacks: [] } });
    await createProposalRecorder(stores)(carried);
    let reads = 0;
    const read = target.readFacts.bind(target);
    target.readFacts = (...args: Parameters<typeof read>) => {
      reads += 1;
      return read(...args);
    };
    expect((await sender.gate.submitLatest(idOf(carried), carried)).answer.outcome).toBe('COMMITTED');
    expect(reads).toBe(1);
  });

  it('never lets a read ahead of other facts stand in: a job carrying other premises than the recorded ones reads the recorded ones', async () => {
    const { stores, sender, target } = await rig();
    const terms = approvalTerms();
    await stores.approvals.grant(terms);
    // The recorded proposal stood on the chargebacks; the job's copy names only the refunds by others. The latest
    // recorded proposal is the one judged, so its facts are read: used in its place, the read ahead would have no
    // chargebacks in it, and a missing fact reads as changed (refused as stale).
    const recorded = refundProposal({ requestId: 'case-other-premises', approval: terms.id, premises: { chargebacks: [] } });
    await createProposalRecorder(stores)(recorded);
    const carried = refundProposal({ requestId: 'case-other-premises', approval: terms.id, premises: { refunded_by_others: 0 } });
    expect(idOf(carried)).toBe(idOf(recorded));
    const asked: string[][] = [];
    const read = target.readFacts.bind(target);
    target.readFacts = (...args: Parameters<typeof read>) => {
      asked.push([...args[2]]);
      return read(...args);
    };
    expect((await sender.gate.submitLatest(idOf(carried), carried)).answer.outcome).toBe('COMMITTED');
    expect(asked).toEqual([['refunded_by_others'], ['chargebacks']]);
  });

  it('never lets an error of the read ahead stand in for a refusal that comes first: a missing approval is refused with Stripe down', async () => {
    const { sender, target } = await rig();
    target.inject({ kind: 'premise-down' });
    const missing = refundProposal({ approval: 'ap_missing' });
    expect(await sender.gate.submit(missing)).toMatchObject({ outcome: 'REFUSED:lease', reason: 'approval ap_missing does not exist' });
    expect(target.landings).toHaveLength(0);
  });
});
