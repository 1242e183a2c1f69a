// Rule: a chargeback returns money twice only where it overlaps the refunds on its charge. The facts worker records a
// chargeback with its charge's amount and what is refunded on it (read at Stripe with it), so the receipt can tell: a
// chargeback of only the part of a partly refunded charge no refund returned (issuers dispute what is left; Stripe:
// dispute.amount "can differ ... because only part of the order is disputed") is no exposure and raises no alert,
// and a chargeback of the whole charge puts the refund at stake, not the refund plus the chargeback.
//
// Rule: what is refunded on the charge has no lifecycle, so the latest read recorded stands, and a read that differs
// from the latest is recorded again even when an earlier fact said the same (DESIGN §8: never by arrival order). Two
// facts jobs can append in the other order than they read in (one stalls after reading the charge while another
// refund on it was pending): the stale read, appended last, stands only until the charge is read again, and the job
// that appended it, having seen another read recorded meanwhile, reads it again at once. Before, every later re-read
// finding the charge as Stripe had it was dropped as a duplicate of the earlier fact, and the stale read and its false
// exposure alert stood for good.
//
// Rule: the job that appended the read that stands for a dispute reads the chain again after its append, and reads
// Stripe once more when another job appended a differing read at any time after its own read of Stripe began: also
// between its read of the chain and its append (a job stalled there), and on a dispute naming only its charge, whose
// charge is read to route it before its payment's chains are known (a read recorded on them by then may be newer).
//
// Rule: a re-read that finds a dispute as its latest fact says it (its status and its charge read) appends nothing,
// whatever key the fact was recorded under: a chain recorded before reads were counted in turns holds a read that came
// back under a key with no turn, and the turn counted now would record that fact again.
import { describe, expect, it } from 'vitest';
import { createFacts, journalOf, stripeSide, type StripeEvent, type StripeReader } from '../../src/interlock.js';
import { createFactsApplier } from '../../src/facts/apply.js';
import { canonicalJson, sha256Hex } from '../../src/core/json.js';
import type { Entry } from '../../src/core/entries.js';
import { pay, sharedFactsRig } from './facts-rig.js';

// The sandbox's events are not forwarded: only the re-reads below record facts.
const rig = sharedFactsRig({ forward: false });

/** A 10000-cent payment with a gated 2000-cent refund, then a lost chargeback of the charge; the effect's id. */
async function refundedThenChargedBack(): Promise<string> {
  await rig.sandbox.control.configure({ pending_refund_dispute_window_seconds: 0 });
  const { paymentIntent, charge } = await pay(rig.stripe, 'pm_card_visa', 10_000);
  const effectId = await rig.refund(paymentIntent, 2_000);
  const dispute = await rig.sandbox.control.openDispute({ charge, kind: 'chargeback' });
  await rig.stripe.disputes.close(dispute.id);
  return effectId;
}

describe('a chargeback weighed against the refunds on its charge', () => {
  it('of only the unrefunded remainder of a partly refunded charge, is no exposure and raises no alert', async () => {
    const effectId = await refundedThenChargedBack();
    // The sandbox always disputes the whole charge; an issuer disputes the part not yet refunded (8000 of 10000). The
    // project's own reader over the sandbox, with only the dispute's amount changed to that.
    const real = stripeSide(rig.config).reader;
    const reader: StripeReader = { ...real, disputesOf: async (pi) => (await real.disputesOf(pi)).map((found) => ({ ...found, amount: 8_000 })) };
    await createFacts(rig.stores, reader).reread(effectId);
    const verification = await rig.receipt(effectId);
    expect(verification.finalMoney.disputes.map((d) => [d.status, d.amount, d.chargeAmount, d.chargeRefunded])).toEqual([['lost', 8_000, 10_000, 2_000]]);
    expect(verification.finalMoney.status).toBe('returned');
    expect(verification.exposure).toBeNull();
    expect(await rig.stores.alerts.get(`exposure:${effectId}`)).toBeNull();
  });

  it('of the whole charge, puts the refund at stake: the overlap, not the refund plus the chargeback', async () => {
    const effectId = await refundedThenChargedBack();
    await createFacts(rig.stores, stripeSide(rig.config).reader).reread(effectId);
    const verification = await rig.receipt(effectId);
    expect(verification.exposure).toMatchObject({ cents: 2_000, refundCents: 2_000, chargebackCents: 10_000, chargeCents: 10_000, refundedCents: 2_000 });
    expect(await rig.stores.alerts.get(`exposure:${effectId}`)).toMatchObject({ centsAtStake: 2_000 });
  });
});

describe('a charge read that comes back after another', () => {
  /**
   * The project's own reader over the sandbox, with the issuer disputing 8000 of the 10000 charge (all but the gate's
   * 2000 refund), and what is refunded on the charge as `refunded()` says when the charge is read. `hold`: the read's
   * answer comes back only then (a stalled job: what it read is fixed when it read).
   */
  function readerWith(refunded: () => number, hold?: Promise<void>): StripeReader {
    const real = stripeSide(rig.config).reader;
    return {
      ...real,
      disputesOf: async (pi) => (await real.disputesOf(pi)).map((found) => ({ ...found, amount: 8_000 })),
      charge: async (id) => {
        const read = await real.charge?.(id);
        const now = refunded();
        if (hold !== undefined) await hold;
        return read === undefined || read === null ? null : { ...read, refunded: now };
      },
    };
  }

  const chargeReads = async (effectId: string) =>
    ((await rig.stores.journal.receipt(effectId))?.entries ?? []).flatMap((entry: Entry) => (entry.kind === 'OBSERVED' && entry.chargeRefunded !== undefined ? [entry.chargeRefunded] : []));

  it('is recorded again, so the latest read stands: a stale one appended last is replaced by the next re-read', async () => {
    const effectId = await refundedThenChargedBack();
    // Recorded in this order: 2000 refunded, then (a slow job's stale read) 6000, with another 4000 refund pending.
    await createFacts(rig.stores, readerWith(() => 2_000)).reread(effectId);
    await createFacts(rig.stores, readerWith(() => 6_000)).reread(effectId);
    expect((await rig.receipt(effectId)).exposure).toMatchObject({ cents: 2_000, refundedCents: 6_000 });
    expect(await rig.stores.alerts.get(`exposure:${effectId}`)).toMatchObject({ resolvedAt: null });

    // Stripe says 2000, as the first fact did: recorded again, and it stands; read once more, nothing new.
    await createFacts(rig.stores, readerWith(() => 2_000)).reread(effectId);
    await createFacts(rig.stores, readerWith(() => 2_000)).reread(effectId);
    expect(await chargeReads(effectId)).toEqual([2_000, 6_000, 2_000]);
    const verification = await rig.receipt(effectId);
    expect(verification.finalMoney.disputes.map((d) => d.chargeRefunded)).toEqual([2_000]);
    expect(verification.exposure).toBeNull();
    expect(await rig.stores.alerts.get(`exposure:${effectId}`)).toMatchObject({ resolvedAt: expect.any(Number) });

    // And 6000 again after that (another refund on the charge pending once more) is a fact too.
    await createFacts(rig.stores, readerWith(() => 6_000)).reread(effectId);
    expect(await chargeReads(effectId)).toEqual([2_000, 6_000, 2_000, 6_000]);
  });

  it('by a job that read it before another job recorded a newer read: that job reads the charge again at once', async () => {
    const effectId = await refundedThenChargedBack();
    // Another 4000 refund on the charge is pending (6000 refunded), then fails (2000).
    let refunded = 6_000;
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    // Job A reads while the refund is pending, and stalls; job B reads once it failed, and records first.
    const slow = createFacts(rig.stores, readerWith(() => refunded, held)).reread(effectId);
    await new Promise((resolve) => setTimeout(resolve, 200));
    refunded = 2_000;
    await createFacts(rig.stores, readerWith(() => refunded)).reread(effectId);
    release();
    await slow;

    // A appended its stale read after B's, saw B's recorded meanwhile, and read again: the receipt follows Stripe now.
    expect(await chargeReads(effectId)).toEqual([2_000, 6_000, 2_000]);
    const verification = await rig.receipt(effectId);
    expect(verification.finalMoney.disputes.map((d) => d.chargeRefunded)).toEqual([2_000]);
    expect(verification.exposure).toBeNull();
    const alert = await rig.stores.alerts.get(`exposure:${effectId}`);
    expect(alert === null || alert.resolvedAt !== null).toBe(true);
  });

  /** A gate its holder opens: a read or an append held until then (a stalled job). */
  function gate() {
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    return { held, release: () => release() };
  }

  /** As refundedThenChargedBack, the dispute left open (needs_response); the effect, the charge and the dispute. */
  async function refundedThenDisputed() {
    await rig.sandbox.control.configure({ pending_refund_dispute_window_seconds: 0 });
    const { paymentIntent, charge } = await pay(rig.stripe, 'pm_card_visa', 10_000);
    const effectId = await rig.refund(paymentIntent, 2_000);
    const dispute = await rig.sandbox.control.openDispute({ charge, kind: 'chargeback' });
    return { effectId, charge, dispute };
  }

  const standsAsStripeSays = async (effectId: string) => {
    const verification = await rig.receipt(effectId);
    return { reads: await chargeReads(effectId), final: verification.finalMoney.disputes.map((d) => d.chargeRefunded), exposure: verification.exposure };
  };

  it('by a dispute event naming only its charge, routed by a read older than one recorded before its chains were read: the job reads again', async () => {
    const { effectId, charge, dispute } = await refundedThenDisputed();
    let refunded = 6_000;
    const { held, release } = gate();
    const event: StripeEvent = { id: `evt_routed_race_${effectId}`, type: 'charge.dispute.created', data: { object: { id: dispute.id, object: 'dispute', charge, status: 'needs_response', amount: 8_000 } } };
    // The event's job routes the dispute by reading its charge while another refund is pending, and stalls; a re-read
    // after that refund failed records 2000 first, before the job reads the payment's chains.
    const slow = createFacts(rig.stores, readerWith(() => refunded, held)).applyEvent(event);
    await new Promise((resolve) => setTimeout(resolve, 200));
    refunded = 2_000;
    await createFacts(rig.stores, readerWith(() => refunded)).reread(effectId);
    expect(await chargeReads(effectId)).toEqual([2_000]);
    release();
    await slow;

    expect(await standsAsStripeSays(effectId)).toEqual({ reads: [2_000, 6_000, 2_000], final: [2_000], exposure: null });
  });

  it('by a job stalled between reading the chain and appending, over a read recorded meanwhile: the job reads again', async () => {
    const { effectId } = await refundedThenDisputed();
    let refunded = 6_000;
    const { held, release } = gate();
    const appending = gate();
    // The job's journal holds its first dispute fact until released: it read the chain (and Stripe) before that.
    const journal = journalOf(rig.stores);
    let stalled = false;
    const stalling: typeof journal = {
      ...journal,
      observe: async (...args: Parameters<typeof journal.observe>) => {
        if (!stalled && args[2].objectType === 'dispute') {
          stalled = true;
          appending.release();
          await held;
        }
        return journal.observe(...args);
      },
    };
    const slow = createFactsApplier({ journal: stalling, alerts: rig.stores.alerts, reader: readerWith(() => refunded), logger: rig.stores.logger }).reread(effectId);
    await appending.held;
    refunded = 2_000;
    await createFacts(rig.stores, readerWith(() => refunded)).reread(effectId);
    expect(await chargeReads(effectId)).toEqual([2_000]);
    release();
    await slow;

    expect(await standsAsStripeSays(effectId)).toEqual({ reads: [2_000, 6_000, 2_000], final: [2_000], exposure: null });
  });

  it('is not recorded again, on a chain recorded before reads were counted in turns, when Stripe says what its latest fact says', async () => {
    const { effectId, charge, dispute } = await refundedThenDisputed();
    const real = stripeSide(rig.config).reader;
    const reading = (status: string, refunded: number): StripeReader => ({ ...readerWith(() => refunded), disputesOf: async (pi) => (await real.disputesOf(pi)).map((found) => ({ ...found, status, amount: 8_000 })) });
    const facts = async () => ((await rig.stores.journal.receipt(effectId))?.entries ?? []).flatMap((entry: Entry) => (entry.kind === 'OBSERVED' && entry.chargeRefunded !== undefined ? [[entry.status, entry.chargeRefunded]] : []));
    // The first two facts have the keys they had before turns were counted (no read came back yet).
    await createFacts(rig.stores, reading('needs_response', 2_000)).reread(effectId);
    await createFacts(rig.stores, reading('needs_response', 6_000)).reread(effectId);
    // The third as the version before recorded it: 2000 refunded again, now under review, under a key with no turn.
    const journal = journalOf(rig.stores);
    const partition = await journal.partitionOf(effectId);
    if (partition === null) throw new Error(`effect ${effectId} has no partition`);
    const found = await rig.stripe.disputes.retrieve(dispute.id);
    const said = ['dispute', dispute.id, 'under_review', null, 8_000, 'under_review', { chargeAmount: 10_000, chargeRefunded: 2_000 }];
    const draft = { kind: 'OBSERVED', source: 'reread', eventId: null, eventType: 'dispute.reread', objectType: 'dispute', objectId: dispute.id, status: 'under_review', failureReason: null, amount: 8_000, charge, disputeStatus: 'under_review', disputeReason: found.reason ?? null, created: found.created, chargeAmount: 10_000, chargeRefunded: 2_000 } as const;
    const keyOf = (words: unknown[]) => `f:${sha256Hex(canonicalJson(words)).slice(0, 32)}`;
    // The key is built as that version built it: the first fact's, so built, is taken already.
    const first = ['dispute', dispute.id, 'needs_response', null, 8_000, 'needs_response', { chargeAmount: 10_000, chargeRefunded: 2_000 }];
    expect((await journal.observe(partition, effectId, { ...draft, status: 'needs_response', disputeStatus: 'needs_response' }, keyOf(first))).status).toBe('DUPLICATE');
    expect((await journal.observe(partition, effectId, draft, keyOf(said))).status).toBe('OK');
    expect(await facts()).toEqual([['needs_response', 2_000], ['needs_response', 6_000], ['under_review', 2_000]]);

    await createFacts(rig.stores, reading('under_review', 2_000)).reread(effectId);
    expect(await facts()).toEqual([['needs_response', 2_000], ['needs_response', 6_000], ['under_review', 2_000]]);
  });
});
