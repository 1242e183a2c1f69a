// Rule: two refunds of one payment decided on its other refunds (`refunded_by_others`, `refundable`) are never both
// sent on reads that could not see each other (REFUNDS_HOLD, src/core/effects.ts; lib.lua propose_effect). A premise
// read sees only what has landed at the target: the second refund waits while the first is out, and reads again when
// the first landed after its read began. Both went out before: two tickets about one complaint, each decided on
// "nobody else refunded", refunded twice. A refund whose premises do not name other refunds is not held. The target
// says which facts its refunds move (Target.movedBySends; the Stripe refund target names both). A worker whose view of
// Redis's clock predates a step back dated its read too late, and the second refund went out (RedisClock.floor).
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import type { Effect } from '../../src/core/effects.js';
import type { Target } from '../../src/core/target.js';
import { createMemoryTarget, type MemoryTarget } from '../../src/targets/memory-target.js';
import { approvalTerms, createWorld, refundProposal, sleep, startNode, testConfig, testKey, type TestNode, type World } from '../support/harness.js';
import { FACTS, FAST, PAYMENT } from './gate-support.js';

const key = testKey();
const nodes: TestNode[] = [];
const prefixes: string[] = [];

afterEach(async () => {
  for (const node of nodes.splice(0)) await node.close().catch(() => undefined);
  const redis = new Redis(testConfig().redisUrl);
  for (const prefix of prefixes.splice(0)) {
    const stale = await redis.keys(`${prefix}:*`);
    if (stale.length > 0) await redis.del(...stale);
  }
  await redis.quit();
});

/**
 * A memory target whose payment shows each landed refund in `refunded_by_others` from then on, as Stripe's does, and
 * whose premise reads can be held after reading (`holdRead`): a read that began before a landing and ends after it.
 */
function stripeLike(): { memory: MemoryTarget; target: Target; holdRead(effectId: string, until: Promise<unknown>): void } {
  const memory = createMemoryTarget({ tier: 1, sendTimeoutMs: FAST.sendTimeoutMs ?? 600, movedBySends: ['refunded_by_others'] });
  memory.world.set(PAYMENT, { ...FACTS });
  const held = new Map<string, Promise<unknown>>();
  const target: Target = {
    ...memory,
    async readFacts(effectId, effect, names, context) {
      const facts = await memory.readFacts(effectId, effect, names, context);
      const until = held.get(effectId);
      held.delete(effectId);
      if (until !== undefined) await until;
      return facts;
    },
    async apply(effectId, effect: Effect, context) {
      const landed = await memory.apply(effectId, effect, context);
      const payment = effect.kind === 'refund' ? `payment:${effect.paymentIntent}` : null;
      const standing = payment === null ? undefined : memory.world.get(payment);
      if (payment !== null && standing !== undefined && effect.kind === 'refund') memory.world.set(payment, { ...standing, refunded_by_others: Number(standing.refunded_by_others ?? 0) + effect.amount });
      return landed;
    },
  };
  return { memory, target, holdRead: (effectId, until) => held.set(effectId, until) };
}

async function twoNodes(target: Target): Promise<[TestNode, TestNode]> {
  const config = testConfig({ ...FAST });
  prefixes.push(config.keyPrefix);
  const a = await startNode({ config, target, key: key.key, workerId: 'a' });
  const b = await startNode({ config, target, key: key.key, workerId: 'b' });
  nodes.push(a, b);
  // Each node hears Redis's clock once (a refund on another payment), as a worker that has run before has.
  for (const node of [a, b]) {
    const terms = approvalTerms({ scope: `payment:pi_warm_${node.config.workerId}` });
    await node.approvals.grant(terms);
    expect((await node.gate.submit(refundProposal({ approval: terms.id, paymentIntent: `pi_warm_${node.config.workerId}`, premises: {} }))).outcome).toBe('COMMITTED');
  }
  return [a, b];
}

async function ticket(node: TestNode, premises: Record<string, unknown> = { ...FACTS }) {
  const terms = approvalTerms({ scope: PAYMENT });
  await node.approvals.grant(terms);
  return refundProposal({ requestId: `ticket-${randomBytes(4).toString('hex')}`, approval: terms.id, premises });
}

describe('two refunds of one payment, each decided on "nobody else refunded"', () => {
  it('the second, judged while the first is out, waits for it, reads again and is refused on the fresh read', async () => {
    const { memory, target } = stripeLike();
    const [a, b] = await twoNodes(target);
    const [first, second] = [await ticket(a), await ticket(b)];
    memory.inject({ kind: 'slow-answer', delayMs: 300, answer: 'landed' });
    const sending = a.gate.submit(first);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const late = await b.gate.submit(second);
    expect((await sending).outcome).toBe('COMMITTED');
    expect({ outcome: late.outcome, reason: late.reason }).toEqual({ outcome: 'REFUSED:stale_premise', reason: expect.stringContaining('refunded_by_others') });
    expect(memory.landedCount(b.gate.effectIdOf(second))).toBe(0);
  });

  /**
   * Node b's refund reads the payment (nothing refunded) and answers only once node a's refund has committed; `before`
   * runs on b first. b's refund must read again and be refused on what it finds.
   */
  async function readBeganBeforeTheLanding(before: (b: TestNode) => Promise<void> = async () => undefined): Promise<void> {
    const { memory, target, holdRead } = stripeLike();
    const [a, b] = await twoNodes(target);
    await before(b);
    const [first, second] = [await ticket(a), await ticket(b)];
    let committed: () => void = () => undefined;
    const firstCommitted = new Promise<void>((resolve) => (committed = resolve));
    holdRead(b.gate.effectIdOf(second), firstCommitted);
    const late = b.gate.submit(second);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect((await a.gate.submit(first)).outcome).toBe('COMMITTED');
    committed();
    const answer = await late;
    expect({ outcome: answer.outcome, reason: answer.reason }).toEqual({ outcome: 'REFUSED:stale_premise', reason: expect.stringContaining('refunded_by_others') });
    expect(memory.landedCount(b.gate.effectIdOf(second))).toBe(0);
  }

  it('the second, whose read began before the first landed and ended after it settled, reads again and is refused', async () => {
    await readBeganBeforeTheLanding();
  });

  it('the same, on a worker whose last reply came from before Redis stepped its clock back: its read is dated no later than Redis', async () => {
    await readBeganBeforeTheLanding(async (b) => {
      // b heard Redis's clock just before it stepped back 800 ms (an NTP step, a failover): that reply said true + 800.
      const sentAt = b.journal.clock.mark();
      b.journal.clock.observe((await b.journal.serverTime()) + 800, sentAt);
      await b.journal.now();
    });
  });

  it('a refund whose premises name no other refunds is not held: both are sent', async () => {
    const { memory, target } = stripeLike();
    const [a, b] = await twoNodes(target);
    const [first, second] = [await ticket(a, { chargebacks: [] }), await ticket(b, { chargebacks: [] })];
    memory.inject({ kind: 'slow-answer', delayMs: 300, answer: 'landed' });
    const sending = a.gate.submit(first);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const other = await b.gate.submit(second);
    expect([(await sending).outcome, other.outcome]).toEqual(['COMMITTED', 'COMMITTED']);
  });

  it('refunds of one payment one after another are each judged on what the others left', async () => {
    const { target } = stripeLike();
    const [a] = await twoNodes(target);
    const first = await ticket(a);
    expect((await a.gate.submit(first)).outcome).toBe('COMMITTED');
    // Decided knowing of the first: sent at once, no wait.
    const second = await ticket(a, { chargebacks: [], refunded_by_others: 2_000 });
    expect((await a.gate.submit(second)).outcome).toBe('COMMITTED');
  });

  /**
   * A world of a tier-3 target and one node whose refund on the payment ended AMBIGUOUS (the connection dropped before
   * the request was written: nothing landed, and a tier-3 target cannot be asked); `then` runs on it, and it closes.
   */
  async function withAmbiguousRefund(then: (a: TestNode, ambiguous: string) => Promise<void>): Promise<void> {
    const world: World = await createWorld({ target: { tier: 3, movedBySends: ['refunded_by_others'] }, config: FAST });
    try {
      world.target.world.set(PAYMENT, { ...FACTS });
      const a = await world.node('a');
      const first = await ticket(a);
      world.target.inject({ kind: 'error-before-send' });
      let outcome = (await a.gate.submit(first)).outcome;
      for (let pass = 0; pass < 60 && outcome !== 'AMBIGUOUS'; pass += 1) {
        await a.gate.recover();
        outcome = (await a.gate.submit(first)).outcome;
        if (outcome !== 'AMBIGUOUS') await sleep(100);
      }
      expect(outcome).toBe('AMBIGUOUS');
      await then(a, a.gate.effectIdOf(first));
    } finally {
      await world.close();
    }
  }

  it('an AMBIGUOUS refund holds the payment: a refund decided on its other refunds is refused at once, until a person resolves it (landed or not)', async () => {
    await withAmbiguousRefund(async (a, ambiguous) => {
      // Nothing settles an AMBIGUOUS refund by itself: no wait, a definite refusal that says what to do.
      const started = performance.now();
      const refused = await a.gate.submit(await ticket(a));
      expect(refused.outcome).toBe('REFUSED:stale_premise');
      expect(refused.reason).toContain(`refund ${ambiguous} on ${PAYMENT} is AMBIGUOUS`);
      expect(performance.now() - started).toBeLessThan(FAST.sendTimeoutMs ?? 600);
      await a.stores.inbox.act(`ambiguous:${ambiguous}`, { action: 'resolve', resolution: 'landed', note: 'the refund is at Stripe', by: { name: 'dana', role: 'approver' } });
      // Decided knowing of it now: sent.
      expect((await a.gate.submit(await ticket(a, { chargebacks: [], refunded_by_others: 0 }))).outcome).toBe('COMMITTED');
    });
  });

  it('a landing reported late for a refused refund lets the payment go on: it does not hold it again', async () => {
    const world: World = await createWorld({ target: { tier: 1, movedBySends: ['refunded_by_others'] }, config: FAST });
    try {
      world.target.world.set(PAYMENT, { ...FACTS });
      const a = await world.node('a');
      const first = await ticket(a);
      world.target.inject({ kind: 'reject', code: 'timeout_at_the_bank' });
      const refused = await a.gate.submit(first);
      expect(refused.outcome).toBe('REFUSED:target_error');
      const landing = { kind: 'LATE_RESULT' as const, owner: 'facts', epoch: 1, outcome: 'landed' as const, result: { id: 're_late', object: 'refund' }, error: null };
      expect(await a.journal.lateLanding(PAYMENT, refused.effectId, landing, first.approval)).toMatchObject({ status: 'OK', effect: 'relanded' });
      world.target.world.set(PAYMENT, { ...FACTS, refunded_by_others: 2_000 });
      expect((await a.gate.submit(await ticket(a, { chargebacks: [], refunded_by_others: 2_000 }))).outcome).toBe('COMMITTED');
    } finally {
      await world.close();
    }
  });

  it('an AMBIGUOUS refund whose inbox item is dismissed lets the payment go: nothing would ever settle it', async () => {
    await withAmbiguousRefund(async (a, ambiguous) => {
      await a.stores.inbox.act(`ambiguous:${ambiguous}`, { action: 'dismiss', note: 'looked at it', by: { name: 'dana', role: 'approver' } });
      expect((await a.gate.submit(await ticket(a))).outcome).toBe('COMMITTED');
    });
  });
});
