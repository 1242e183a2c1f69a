// Makes real escalation inbox items for HTTP tests: effects proposed over the rig's API (no worker runs), then
// submitted through senders of the test's own, so each ends exactly where the test needs it. A refusal on a stale
// premise (a chargeback opened between the decision and the send), and an AMBIGUOUS effect (a tier-3 target, no
// dedupe and no lookup, whose connection dropped after the send).
import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { afterAll, beforeAll, expect } from 'vitest';
import { createMemoryTarget, effectIdFor, latestProposal, settledOutcome, startSender, type MemoryTarget, type Sender } from '../../src/interlock.js';
import { startedLater } from '../support/started-later.js';
import { approvalBody, bearer, refundBody, startRig, TOKENS, type Rig } from './rig.js';

export type MadeItem = { pi: string; effectId: string; item: string };

const uid = () => randomBytes(5).toString('hex');

export async function createItemMaker(rig: Rig) {
  const sender = await startSender(rig.stores, rig.target, { workerId: `inbox-t1-${uid()}` });
  const tier3: MemoryTarget = createMemoryTarget({ tier: 3, sendTimeoutMs: rig.stores.config.sendTimeoutMs });
  const sender3 = await startSender(rig.stores, tier3, { workerId: `inbox-t3-${uid()}` });

  async function grant(pi: string): Promise<string> {
    const body = approvalBody({ scope: `payment:${pi}` });
    const granted = await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(body);
    expect(granted.status, JSON.stringify(granted.body)).toBe(201);
    return String(body.id);
  }

  /** A $20 refund proposed over HTTP, its facts clean in every target's world. */
  async function proposed(pi: string, worlds: MemoryTarget[]): Promise<string> {
    for (const target of worlds) target.world.set(`payment:${pi}`, { chargebacks: [], refunded_by_others: 0 });
    const body = refundBody({ payment_intent: pi, approval: await grant(pi) });
    const answer = await request(rig.app).post('/v1/refunds').set(bearer(TOKENS.support)).send(body);
    expect(answer.status, JSON.stringify(answer.body)).toBe(202);
    return effectIdFor({ requestId: String(body.request_id), effect: null });
  }

  async function submitLatest(through: Sender, effectId: string): Promise<string> {
    return (await through.gate.submit(await latestProposal(rig.stores, effectId))).outcome;
  }

  async function staleOn(pi: string): Promise<MadeItem> {
    const effectId = await proposed(pi, [rig.target]);
    rig.target.world.set(`payment:${pi}`, { chargebacks: ['du_opened'], refunded_by_others: 0 });
    expect(await submitLatest(sender, effectId)).toBe('REFUSED:stale_premise');
    return { pi, effectId, item: `stale_premise:${effectId}` };
  }

  return {
    sender,
    grant,
    proposed: (pi: string) => proposed(pi, [rig.target]),
    submitLatest: (effectId: string) => submitLatest(sender, effectId),

    /** Refused at the send: a chargeback opened after the decision. The gate opens the item. */
    stale: () => staleOn(`pi_${uid()}`),
    staleOn,

    /**
     * The submit keeps its claim after the dropped connection; the recovery pass that meets it settles AMBIGUOUS
     * (tier 3 can neither dedupe nor look up) and opens the item. Tests run at once: another test's pass may be the
     * one that settles it.
     */
    async ambiguous(): Promise<MadeItem> {
      const pi = `pi_${uid()}`;
      const effectId = await proposed(pi, [rig.target, tier3]);
      tier3.inject({ kind: 'error-after-send' });
      expect(await submitLatest(sender3, effectId)).toBe('IN_FLIGHT');
      for (let pass = 0; pass < 20 && (await settledOutcome(rig.stores, effectId)) === null; pass += 1) await sender3.gate.recover();
      expect(await settledOutcome(rig.stores, effectId)).toBe('AMBIGUOUS');
      return { pi, effectId, item: `ambiguous:${effectId}` };
    },

    async close(): Promise<void> {
      await sender3.close();
      await sender.close();
    },
  };
}

export type ItemMaker = Awaited<ReturnType<typeof createItemMaker>>;

/**
 * A refund committed on a payment of its own, with two chargeback ids for it and `exposure(cents, disputes)`: the
 * exposure alert raiseAlert takes for that refund naming those chargebacks.
 */
export async function committedForExposure(make: ItemMaker) {
  const pi = `pi_${uid()}`;
  const effectId = await make.proposed(pi);
  expect(await make.submitLatest(effectId)).toBe('COMMITTED');
  const exposure = (cents: number, disputes: string[]) => ({ kind: 'exposure' as const, effectId, subject: `payment:${pi}`, centsAtStake: cents, refund: `re_${pi}`, disputes, sentence: `Charged back ${disputes.length} time(s).`, action: 'Answer the disputes.' });
  return { pi, effectId, item: `exposure:${effectId}`, first: `du_${uid()}`, second: `du_${uid()}`, exposure };
}

/**
 * A rig (no worker) and an item maker for one test file, started before its tests and closed after them:
 * `const { rig, make } = inboxSuite();` at the file's top. Hooks registered after it see both started; both are
 * stand-ins, so do not compare, spread or reassign them.
 */
export function inboxSuite(): { rig: Rig; make: ItemMaker } {
  let rig: Rig | undefined;
  let make: ItemMaker | undefined;
  beforeAll(async () => {
    rig = await startRig();
    make = await createItemMaker(rig);
  });
  afterAll(async () => {
    await make?.close();
    await rig?.close();
  });
  return { rig: startedLater('inbox rig', () => rig), make: startedLater('item maker', () => make) };
}
