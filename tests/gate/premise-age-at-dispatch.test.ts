// Rule: a dispatch is sent only on a recent premise read (DESIGN §3 I3; README "The contract"). The dispatch step
// refuses a read begun more than premiseMaxAgeMs (the read's timeout and 10 s) before it (STALE_READ, nothing written), so a worker paused between
// its premise read and its dispatch step reads again on waking and decides on the facts as they are then; a worker that
// only ever reads too late sends nothing and throws a retryable error for the job's retry.
import { performance } from 'node:perf_hooks';
import { afterEach, expect, it, vi } from 'vitest';
import { InterlockError } from '../../src/core/errors.js';
import { verify } from '../../src/core/verify.js';
import { premiseMaxAgeMs } from '../../src/redis/journal.js';
import { kill, refundProposal, sleep, type TestNode, type World } from '../support/harness.js';
import { gateWorld, grant, PAYMENT, submitAndCrash } from './gate-support.js';

let world: World | undefined;
afterEach(async () => {
  vi.restoreAllMocks();
  await world?.close();
  world = undefined;
});

/** Counts the node's premise reads; `after` runs once each read has answered. */
function countReads(w: World, after: () => void = () => undefined): { count: () => number } {
  const readFacts = w.target.readFacts.bind(w.target);
  let reads = 0;
  w.target.readFacts = async (...args) => {
    const facts = await readFacts(...args);
    reads += 1;
    after();
    return facts;
  };
  return { count: () => reads };
}

it('a worker paused longer than premiseMaxAgeMs after its premise read reads again at its dispatch step, and refuses the refund on the hand refund made during the pause', async () => {
  world = await gateWorld({ target: { tier: 1, sendTimeoutMs: 3_000 }, config: { sendTimeoutMs: 3_000, claimTtlMs: 4_000, dedupMarginMs: 60_000 } });
  const a = await world.node('a');
  const terms = await grant(a);
  const w = world;
  // 1 ms after the first read answers, someone refunds 3000 by hand.
  let changed = false;
  const reads = countReads(w, () => {
    if (changed) return;
    changed = true;
    setTimeout(() => w.target.world.set(PAYMENT, { chargebacks: [], refunded_by_others: 3_000 }), 1);
  });
  // The VM pauses right before the dispatch step, past the bound by Redis's clock; its monotonic clock stands still.
  const real = performance.now.bind(performance);
  let behind = 0;
  let stoodAt: number | null = null;
  vi.spyOn(performance, 'now').mockImplementation(() => stoodAt ?? real() - behind);
  const journal = a.journal as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
  let paused = 0;
  for (const name of ['bindAndPropose', 'propose']) {
    const original = journal[name]?.bind(a.journal);
    if (original === undefined) throw new Error(`the journal has no ${name}`);
    journal[name] = async (...args: unknown[]) => {
      if (paused === 0) {
        paused += 1;
        stoodAt = real() - behind;
        await sleep(premiseMaxAgeMs(3_000) + 2_000);
        behind = real() - stoodAt;
        stoodAt = null;
      }
      return original(...args);
    };
  }

  const proposal = refundProposal({ approval: terms.id });
  const effectId = a.gate.effectIdOf(proposal);
  const answer = await a.gate.submit(proposal);
  expect(paused).toBe(1);
  expect(w.target.landedCount(effectId)).toBe(0);
  expect(reads.count()).toBe(2);
  expect(answer.outcome).toBe('REFUSED:stale_premise');
  const receipt = verify(JSON.parse(JSON.stringify(await a.gate.receipt(effectId))), { publicKeys: w.key.publicKeys });
  expect(receipt.problems).toEqual([]);
}, 40_000);

it('a prompt submit dispatches on its first premise read', async () => {
  world = await gateWorld();
  const a = await world.node('a');
  const terms = await grant(a);
  const reads = countReads(world);
  const proposal = refundProposal({ approval: terms.id });
  const answer = await a.gate.submit(proposal);
  expect(answer.outcome).toBe('COMMITTED');
  expect(reads.count()).toBe(1);
  expect(world.target.landedCount(answer.effectId)).toBe(1);
});

/**
 * Dates every premise read of `node` `backMs` in the past (by default ten minutes, far past the bound), as a worker
 * stalling after each read would, or as a read answered that long after it began.
 */
function datesReadsBack(node: TestNode, backMs = 10 * 60_000): void {
  const clock = node.journal.clock;
  const floor = clock.floor.bind(clock);
  vi.spyOn(clock, 'floor').mockImplementation(() => {
    const known = floor();
    return known === null ? null : known - backMs;
  });
}

it('a submit whose every premise read is too old by its dispatch step sends nothing, writes no entry, and fails retryably; the retry sends', async () => {
  world = await gateWorld();
  const a = await world.node('a');
  const terms = await grant(a);
  const reads = countReads(world);
  const proposal = refundProposal({ approval: terms.id });
  const effectId = a.gate.effectIdOf(proposal);
  datesReadsBack(a);
  const failed = await a.gate.submit(proposal).then(
    () => null,
    (error: unknown) => error,
  );
  expect(failed).toBeInstanceOf(InterlockError);
  expect(failed).toMatchObject({ code: 'premise_read_failed', retryable: true });
  expect(reads.count()).toBe(3);
  expect(world.target.landedCount(effectId)).toBe(0);
  expect(await a.journal.entries(PAYMENT, effectId)).toEqual([]);

  vi.restoreAllMocks();
  const answer = await a.gate.submit(proposal);
  expect(answer.outcome).toBe('COMMITTED');
  expect(world.target.landedCount(effectId)).toBe(1);
});

it("recovery's resend is held to the same bound: a re-check read too old by the resend sends nothing, and the next pass reads again and resends", async () => {
  world = await gateWorld();
  const [a, b] = [await world.node('a'), await world.node('b')];
  const { id } = await grant(a);
  world.target.inject({ kind: 'crash-before-send' });
  const effectId = await submitAndCrash(a, refundProposal({ approval: id }));
  await kill(a);
  datesReadsBack(b);
  const held = await b.gate.recover();
  expect(held.settled).toEqual([]);
  expect(held.skipped).toEqual([expect.objectContaining({ effectId })]);
  expect(world.target.landedCount(effectId)).toBe(0);

  vi.restoreAllMocks();
  expect((await b.gate.recover()).settled).toEqual([expect.objectContaining({ effectId, outcome: 'COMMITTED_BY_RETRY' })]);
  expect(world.target.landedCount(effectId)).toBe(1);
});

it('a read merely slow, begun more than 10 s before the dispatch step but within its own timeout and 10 s, is not too old: the refund is sent on it', async () => {
  world = await gateWorld({ target: { tier: 1, sendTimeoutMs: 8_000 }, config: { sendTimeoutMs: 8_000, claimTtlMs: 10_000 } });
  const a = await world.node('a');
  const terms = await grant(a);
  const reads = countReads(world);
  // 12 s: past 10 s, within premiseMaxAgeMs(8_000), 18 s.
  datesReadsBack(a, 12_000);
  const answer = await a.gate.submit(refundProposal({ approval: terms.id }));
  expect(answer.outcome).toBe('COMMITTED');
  expect(reads.count()).toBe(1);
});

it("recovery's resend allows one read timeout more than a dispatch, for the lookup it runs between its re-check read and the resend: a re-check read and a lookup each slow but within their timeouts still resend", async () => {
  world = await gateWorld({ target: { tier: 1, sendTimeoutMs: 5_000 }, config: { sendTimeoutMs: 5_000, claimTtlMs: 6_000 } });
  const [a, b] = [await world.node('a'), await world.node('b')];
  const { id } = await grant(a);
  world.target.inject({ kind: 'crash-before-send' });
  const effectId = await submitAndCrash(a, refundProposal({ approval: id }));
  await kill(a);
  // 17 s: past premiseMaxAgeMs(5_000), a dispatch's bound (15 s), within premiseMaxAgeMs(2 * 5_000), a resend's (20 s).
  datesReadsBack(b, 17_000);
  expect((await b.gate.recover()).settled).toEqual([expect.objectContaining({ effectId, outcome: 'COMMITTED_BY_RETRY' })]);
  expect(world.target.landedCount(effectId)).toBe(1);
});
