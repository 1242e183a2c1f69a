// One effect can hold two inbox items that allow a re-approval (item ids are `<kind>:<effect id>`): a refusal on a
// stale premise, then, the same request re-decided under a new approval and refused again at recovery, a
// lease_at_recovery refusal. Its payload is re-approved through one of them, once: the other is refused
// (action_not_allowed, naming the item that re-approved it, nothing recorded), so one refused $20 refund never goes out
// twice under two new requests, and the receipt holds one re-approval.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { effectIdFor, latestProposal, publicKeyPem, publicKeySet, settledOutcome, verify, type Receipt } from '../../src/interlock.js';
import { inboxSuite } from './inbox-items.js';
import { bearer, TOKENS, uid } from './rig.js';

const { rig, make } = inboxSuite();

/** An effect refused on a stale premise, re-decided under a new approval and refused again at recovery: two open items. */
async function twoItems(): Promise<{ pi: string; effectId: string; first: string; second: string }> {
    const pi = `pi_${uid()}`;
    const { effectId, item: first } = await make.staleOn(pi);
    expect(await rig.stores.inbox.get(first)).toMatchObject({ status: 'open' });

    // The same request re-decided under a new approval, on the facts as they read now (README: a new approval is a new
    // decision and brings its own facts). Its send's connection drops before the request is written; the approval is
    // revoked meanwhile, and recovery refuses it (nothing found at Stripe): REFUSED:lease_at_recovery.
    const ap2 = await make.grant(pi);
    const original = await latestProposal(rig.stores, effectId);
    if (original === null) throw new Error('the refused effect has no proposal');
    const retried = await request(rig.app).post('/v1/refunds').set(bearer(TOKENS.support)).send({ request_id: original.requestId, payment_intent: pi, amount: 2_000, approval: ap2, reason: 'requested_by_customer' });
    expect(retried.status, JSON.stringify(retried.body)).toBeLessThan(300);
    expect(await latestProposal(rig.stores, effectId)).toMatchObject({ approval: ap2 });
    rig.target.inject({ kind: 'error-before-send' });
    const sent = await make.sender.gate.submit(await latestProposal(rig.stores, effectId));
    expect(['IN_FLIGHT', 'AMBIGUOUS'].includes(sent.outcome) || sent.outcome.startsWith('UNRESOLVED'), sent.outcome).toBe(true);
    expect((await request(rig.app).post(`/v1/approvals/${ap2}/revoke`).set(bearer(TOKENS.approver)).send({})).status).toBe(200);
    for (let pass = 0; pass < 40 && (await settledOutcome(rig.stores, effectId)) === 'REFUSED:stale_premise'; pass += 1) {
      await make.sender.gate.recover();
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    for (let pass = 0; pass < 40 && !String(await settledOutcome(rig.stores, effectId)).includes('at_recovery'); pass += 1) {
      await make.sender.gate.recover();
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(await settledOutcome(rig.stores, effectId)).toBe('REFUSED:lease_at_recovery');
    const second = `lease_at_recovery:${effectId}`;
    expect(await rig.stores.inbox.get(second)).toMatchObject({ status: 'open' });
    expect(await rig.stores.inbox.get(first)).toMatchObject({ status: 'open' });

    return { pi, effectId, first, second };
}

describe('two re-approvable items on one effect', () => {
  it('re-approves the one refused payload once, through either item, never twice', async () => {
    const { pi, effectId, first, second } = await twoItems();

    // Two approvers (or one, from two tabs) each re-approve one of the two items.
    const apA = await make.grant(pi);
    const apB = await make.grant(pi);
    const a = await request(rig.app).post(`/v1/inbox/${first}/reapprove`).set(bearer(TOKENS.approver)).send({ approval: apA, note: 'refund anyway' });
    const b = await request(rig.app).post(`/v1/inbox/${second}/reapprove`).set(bearer(TOKENS.danaApprover)).send({ approval: apB, note: 'refund anyway' });
    expect(a.status, JSON.stringify(a.body)).toBe(202);
    expect(b.status).toBe(409);
    expect(b.body.error.code).toBe('action_not_allowed');
    expect(b.body.error.message).toContain(`re-approved already, through item ${first}`);
    expect(await rig.stores.inbox.get(second)).toMatchObject({ status: 'open' });
    const landed: string[] = [];
    for (const item of [first, second]) {
      const newId = effectIdFor({ requestId: `reapproval:${item}`, effect: null });
      if ((await rig.hasEffect(newId)) && (await make.submitLatest(newId)) === 'COMMITTED') landed.push(item);
    }
    expect(landed).toEqual([first]);
    const receipt = await request(rig.app).get(`/v1/effects/${effectId}/receipt`).set(bearer(TOKENS.auditor));
    const verification = verify(receipt.body as Receipt, { publicKeys: publicKeySet([publicKeyPem(rig.stores.signingKey)]) });
    expect(verification).toMatchObject({ valid: true, problems: [] });
    expect(verification.operatorActions.map((action) => [action.item, action.action])).toEqual([[first, 'reapprove']]);
    // The other item is closed with a note, as the refusal says.
    const dismissed = await request(rig.app).post(`/v1/inbox/${second}/dismiss`).set(bearer(TOKENS.danaApprover)).send({ note: 're-approved through the stale-premise item' });
    expect(dismissed.status, JSON.stringify(dismissed.body)).toBe(200);
  });

  it('catches a re-approval of an effect re-approved before the mark existed, from its chain', async () => {
    const { pi, effectId, first, second } = await twoItems();
    const apA = await make.grant(pi);
    expect((await request(rig.app).post(`/v1/inbox/${first}/reapprove`).set(bearer(TOKENS.approver)).send({ approval: apA, note: 'refund anyway' })).status).toBe(202);
    // As an earlier version left it: the RESOLVED entry in the chain, no `reapproved` mark beside the state.
    const partition = `payment:${pi}`;
    expect(await rig.redis.hdel(rig.stores.keys.state(partition, effectId), 'reapproved')).toBe(1);
    const apB = await make.grant(pi);
    const b = await request(rig.app).post(`/v1/inbox/${second}/reapprove`).set(bearer(TOKENS.danaApprover)).send({ approval: apB, note: 'refund anyway' });
    expect(b.status).toBe(409);
    expect(b.body.error.message).toContain(`re-approved already, through item ${first}`);
    expect(await rig.hasEffect(effectIdFor({ requestId: `reapproval:${second}`, effect: null }))).toBe(false);
  });
});
