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
import { parseProposal } from '../../src/core/proposal.js';
import { createRedisJournal } from '../../src/redis/journal.js';
import { commandsNaming } from '../support/count-commands.js';
import { approvalTerms, refundProposal, testConfig, testKey } from '../support/harness.js';

const keyPair = testKey();
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
});

async function rig(): Promise<{ stores: Stores; sender: Sender; target: MemoryTarget; named: (needle: string) => string[] }> {
  const config = testConfig();
  const target = createMemoryTarget({ tier: 1, sendTimeoutMs: config.sendTimeoutMs });
  target.world.set('payment:pi_1', { chargebacks: [], refunded_by_others: 0 });
  const redis = new Redis(config.redisUrl);
  const naming = commandsNaming(redis);
  const stores = await openStores(config, { logger: pino({ level: 'silent' }), signingKey: keyPair.key, redis });
  const sender = await startSender(stores, target);
  closers.push(async () => {
    await sender.close();
    await stores.close();
    const stale = await redis.keys(`${config.keyPrefix}:*`);
    if (stale.length > 0) await redis.del(...stale);
    await redis.quit();
  });
  return { stores, sender, target, named: (needle) => naming.naming(needle) };
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

  /**
   * Records `recorded` as a PROPOSED on payment:pi_1, as the recorder wrote any proposal before a rule about what
   * arrives came in (the journal's own calls: no check of the proposal's fields), and answers its effect id.
   */
  async function recordedAsBefore(stores: Stores, recorded: ReturnType<typeof refundProposal> & { decision?: { model: string; text: string } }): Promise<string> {
    const effectId = idOf(recorded);
    const redis = new Redis(stores.config.redisUrl);
    closers.push(async () => void (await redis.quit()));
    const journal = createRedisJournal({ redis, keys: stores.keys, signingKey: keyPair.key });
    const bound = await journal.bind(effectId, 'payment:pi_1');
    if (bound.status === 'OTHER_SUBJECT') throw new Error('bound elsewhere');
    journal.unindex(effectId, bound.token);
    const { state } = await stores.journal.readState('payment:pi_1', effectId);
    const entry = { kind: 'PROPOSED' as const, requestId: recorded.requestId, agent: recorded.agent, approval: recorded.approval, premises: { chargebacks: [], refunded_by_others: 0 }, effect: recorded.effect, request: null, decision: recorded.decision ?? null };
    const written = await journal.append('payment:pi_1', effectId, [entry], { place: { head: state.head }, payloadHash: payloadHash(recorded.effect) });
    expect(written.status).toBe('OK');
    return effectId;
  }

  it('sends a proposal recorded before request ids had to be NFC: the job of an accepted request is run, not refused as bad input', async () => {
    const { stores, sender, target } = await rig();
    const terms = approvalTerms();
    await stores.approvals.grant(terms);
    // "café" as e and a combining accent, written as the recorder wrote any spelling before the rule.
    const recorded = refundProposal({ requestId: `cafe\u0301-${Date.now()}`, approval: terms.id, amount: 900 });
    expect(recorded.requestId.normalize('NFC')).not.toBe(recorded.requestId);
    const effectId = await recordedAsBefore(stores, recorded);
    expect((await sender.gate.submitLatest(effectId, recorded)).answer.outcome).toBe('COMMITTED');
    expect(target.landings).toHaveLength(1);
  });

  it('sends a proposal recorded before identifiers had to be seen whole: its job is run, while the same proposal arriving is refused', async () => {
    const { stores, sender, target } = await rig();
    const terms = approvalTerms();
    await stores.approvals.grant(terms);
    // A right-to-left override in the agent, a zero-width space in the request id, a word joiner in a metadata key
    // and a soft hyphen in the model: all taken before the rule, and recorded as the recorder wrote them then.
    const base = refundProposal({ requestId: `r\u200b-${Date.now()}`, approval: terms.id, amount: 900 });
    const recorded = { ...base, agent: 'support\u202ebot', effect: { ...base.effect, metadata: { 'ticket\u2060id': 'T-1' } }, decision: { model: 'mod\u00adel', text: 'refund it' } };
    expect(() => parseProposal(recorded)).toThrow(/U\+200B/);
    const effectId = await recordedAsBefore(stores, recorded);
    expect((await sender.gate.submitLatest(effectId, recorded)).answer.outcome).toBe('COMMITTED');
    expect(target.landings).toHaveLength(1);
  });

  it('costs a recorded effect two reads fewer than reading its chain before submitting it', async () => {
    const { stores, sender, named } = await rig();
    const record = createProposalRecorder(stores);
    const terms = approvalTerms({ maxUses: 10, capCents: 50_000 });
    await stores.approvals.grant(terms);
    // Warm: the approval's terms are read once per worker.
    const warm = refundProposal({ approval: terms.id });
    await record(warm);
    await sender.gate.submitLatest(idOf(warm), warm);
    // The commands naming the effect from its job's start to its index entry's removal (flushed, not waited for): a
    // heartbeat or a clock read in between names no effect, so a loaded machine cannot move the count.
    const commandsOf = async (proposal: ReturnType<typeof refundProposal>, run: () => Promise<unknown>) => {
      await record(proposal);
      const before = named(idOf(proposal)).length;
      await run();
      await journalOf(stores).flushIndex();
      return named(idOf(proposal)).length - before;
    };
    const latest = refundProposal({ approval: terms.id });
    const viaLatest = await commandsOf(latest, async () => expect((await sender.gate.submitLatest(idOf(latest), latest)).answer.outcome).toBe('COMMITTED'));
    const plain = refundProposal({ approval: terms.id });
    const viaChainFirst = await commandsOf(plain, async () => {
      // The path an effects job took before: the binding's partition, the chain, then the submit (which reads it again).
      const partition = await stores.journal.partitionOf(idOf(plain));
      await stores.journal.entries(partition ?? '', idOf(plain));
      expect((await sender.gate.submit(plain)).outcome).toBe('COMMITTED');
    });
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

describe("a job's first run on the chain its producer left (EffectJob.onlyEntry)", () => {
  async function recorded(stores: Stores, proposal: ReturnType<typeof refundProposal>) {
    const made = await createProposalRecorder(stores)(proposal);
    if (made.status !== 'recorded' || made.onlyEntry === null) throw new Error(`expected a first PROPOSED, got ${JSON.stringify(made)}`);
    return made.onlyEntry;
  }

  it('dispatches without reading the chain: three commands fewer than reading it with the binding, the receipt the same', async () => {
    const { stores, sender, named } = await rig();
    const terms = approvalTerms({ maxUses: 10, capCents: 50_000 });
    await stores.approvals.grant(terms);
    const warm = refundProposal({ approval: terms.id });
    await sender.gate.submitLatest(idOf(warm), warm, await recorded(stores, warm));
    // The commands naming the effect, from its job's start to its index entry's removal (flushed, not waited for).
    const commandsOf = async (proposal: ReturnType<typeof refundProposal>, only: unknown) => {
      const before = named(idOf(proposal)).length;
      expect((await sender.gate.submitLatest(idOf(proposal), proposal, only)).answer.outcome).toBe('COMMITTED');
      await journalOf(stores).flushIndex();
      return named(idOf(proposal)).slice(before);
    };
    const read = refundProposal({ approval: terms.id });
    await recorded(stores, read);
    const viaRead = await commandsOf(read, null);
    const guessed = refundProposal({ approval: terms.id });
    const viaGuess = await commandsOf(guessed, await recorded(stores, guessed));
    // bind-5, read-state-1 and the chain's GET are gone; bind-propose-10 does propose-5's work and the binding.
    expect({ read: viaRead.length, guess: viaGuess.length }).toEqual({ read: viaGuess.length + 3, guess: viaGuess.length });
    expect(viaGuess.filter((name) => name === 'get')).toEqual([]);
    // One PROPOSED, written by the producer; the worker's batch follows it, as on the path that reads the chain.
    const kinds = (id: string) => entriesOf(sender, id).then((entries) => entries.map((entry) => entry.kind));
    expect(await kinds(idOf(guessed))).toEqual(await kinds(idOf(read)));
    expect(await kinds(idOf(guessed))).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED']);
  });

  it("seals after the producer's entry when this worker's estimate of Redis time is behind it: no time refused, no command more", async () => {
    const { stores, sender, named } = await rig();
    const terms = approvalTerms();
    await stores.approvals.grant(terms);
    const proposal = refundProposal({ approval: terms.id });
    const only = await recorded(stores, proposal);
    // The producer sealed its PROPOSED at its estimate, an upper bound of Redis time that errs late by up to a round
    // trip; a worker's estimate (or this one's, after a faster reply) can be lower. Sealed at it, the dispatch would
    // precede the entry it follows and the script would refuse its time (BAD_TIME), then the settle's.
    const clock = journalOf(stores).clock;
    clock.estimate = () => only.at - 300;
    const before = named(idOf(proposal)).length;
    expect((await sender.gate.submitLatest(idOf(proposal), proposal, only)).answer.outcome).toBe('COMMITTED');
    await journalOf(stores).flushIndex();
    // As many as any such job sends (the claim check right before the request leaves among them, send.ts sendOnce):
    // not one more for the late estimate.
    expect(named(idOf(proposal)).slice(before)).toHaveLength(4);
    const entries = await entriesOf(sender, idOf(proposal));
    expect(entries.map((entry) => entry.at)).toEqual([...entries.map((entry) => entry.at)].sort((a, b) => a - b));
  });

  it('a guess that no longer holds writes nothing on it: a refusal recorded since is the answer, judged no further, nothing sent', async () => {
    const { stores, sender, target } = await rig();
    const terms = approvalTerms();
    await stores.approvals.grant(terms);
    const proposal = refundProposal({ approval: terms.id });
    const only = await recorded(stores, proposal);
    // Refused meanwhile (as recovery refuses a stale effect): the chain is no longer the producer's entry alone.
    target.world.set('payment:pi_1', { chargebacks: ['du_1'], refunded_by_others: 0 });
    expect((await sender.gate.submitLatest(idOf(proposal), proposal)).answer.outcome).toBe('REFUSED:stale_premise');
    const before = await entriesOf(sender, idOf(proposal));
    target.world.set('payment:pi_1', { chargebacks: [], refunded_by_others: 0 });
    expect(await sender.gate.submitLatest(idOf(proposal), proposal, only)).toMatchObject({ judged: false, answer: { outcome: 'REFUSED:stale_premise' } });
    expect(await entriesOf(sender, idOf(proposal))).toEqual(before);
    expect(target.landings).toHaveLength(0);
  });

  it('a re-decision recorded since is what runs, under its own approval', async () => {
    const { stores, sender, target } = await rig();
    const first = approvalTerms({ capCents: 1_000 });
    await stores.approvals.grant(first);
    const carried = refundProposal({ approval: first.id });
    const only = await recorded(stores, carried);
    expect((await sender.gate.submitLatest(idOf(carried), carried)).answer.outcome).toBe('REFUSED:lease');
    const second = approvalTerms();
    await stores.approvals.grant(second);
    await createProposalRecorder(stores)({ ...carried, approval: second.id });
    expect((await sender.gate.submitLatest(idOf(carried), carried, only)).answer.outcome).toBe('COMMITTED');
    expect(target.landings).toHaveLength(1);
    expect((await entriesOf(sender, idOf(carried))).find((entry) => entry.kind === 'DISPATCHED')).toMatchObject({ approval: second.id });
  });

  it('an effect another submit sent since is not sent again', async () => {
    const { stores, sender, target } = await rig();
    const terms = approvalTerms();
    await stores.approvals.grant(terms);
    const proposal = refundProposal({ approval: terms.id });
    const only = await recorded(stores, proposal);
    expect((await sender.gate.submit(proposal)).outcome).toBe('COMMITTED');
    expect((await sender.gate.submitLatest(idOf(proposal), proposal, only)).answer.outcome).toBe('DUPLICATE_IGNORED');
    expect(target.landings).toHaveLength(1);
  });

  it('trusts no job data: an entry that is not the carried proposal\'s (another approval, other premises) is not taken for the chain', async () => {
    const { stores, sender } = await rig();
    const recordedTerms = approvalTerms({ maxUses: 10 });
    const otherTerms = approvalTerms();
    await stores.approvals.grant(recordedTerms);
    await stores.approvals.grant(otherTerms);
    const proposal = refundProposal({ approval: recordedTerms.id });
    const only = await recorded(stores, proposal);
    // The same effect (request id and payload), decided otherwise than recorded: the chain's head is still the
    // recorded entry, so only the hash check stands between this job and a dispatch nothing recorded.
    const carried = { ...proposal, approval: otherTerms.id, premises: { refunded_by_others: 0 } };
    expect(idOf(carried)).toBe(idOf(proposal));
    expect((await sender.gate.submitLatest(idOf(carried), carried, only)).answer.outcome).toBe('COMMITTED');
    const entries = await entriesOf(sender, idOf(proposal));
    expect(entries.filter((entry) => entry.kind === 'PROPOSED')).toHaveLength(1);
    expect(entries.find((entry) => entry.kind === 'DISPATCHED')).toMatchObject({ approval: recordedTerms.id, premises: proposal.premises });
    for (const garbage of [{ ...only, at: only.at + 1 }, { ...only, kid: 'other' }, { hash: only.hash }, 'text', 7]) {
      const next = refundProposal({ approval: recordedTerms.id, amount: 100 });
      await recorded(stores, next);
      expect((await sender.gate.submitLatest(idOf(next), next, garbage)).answer.outcome).toBe('COMMITTED');
    }
  });
});
