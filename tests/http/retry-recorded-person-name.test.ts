// Rule: a refusal says what it recorded, truthfully. A request refused 400 says "Nothing was recorded"; but a
// person's name refused only by a rule that came after it could be recorded (letters of more than one script, a
// symbol of no script) may be the name an earlier version recorded this very request with: "Ольга Smith" was taken
// then, and a client retrying that recorded (perhaps sent) refund was told nothing was recorded. The 400 then says
// this request recorded nothing and where the request recorded before, if any, is read (GET /v1/effects?request=…);
// every other 400 reads as before.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { effectIdFor, payloadHash } from '../../src/core/effect-id.js';
import { parseProposalAndEffect } from '../../src/core/proposal.js';
import { proposedDraft } from '../../src/gate/record.js';
import { journalOf } from '../../src/interlock.js';
import { approvalBody, bearer, creditBody, refundBody, rigSuite, TOKENS, uid } from './rig.js';

const rig = rigSuite();

/** Records a refund proposal as an earlier version did, whatever its agent (read back as recorded), and its effect id. */
async function recordedBefore(body: { request_id: string; payment_intent: string; amount: number; approval: string; agent: string; reason: string }): Promise<string> {
  const input = {
    requestId: body.request_id,
    agent: body.agent,
    approval: body.approval,
    premises: { chargebacks: [], refunded_by_others: 0 },
    effect: { kind: 'refund', paymentIntent: body.payment_intent, amount: body.amount, reason: body.reason },
    request: { request_id: body.request_id, token: 'support' },
  };
  const { proposal } = parseProposalAndEffect(input, { recorded: true });
  const effectId = effectIdFor({ requestId: proposal.requestId, effect: proposal.effect });
  const subject = `payment:${body.payment_intent}`;
  const journal = journalOf(rig.stores);
  const bound = await journal.bind(effectId, subject);
  if (bound.status === 'OTHER_SUBJECT') throw new Error('bound elsewhere');
  const { state } = await journal.readState(subject, effectId);
  const written = await journal.append(subject, effectId, [proposedDraft(proposal)], { place: { head: state.head }, payloadHash: payloadHash(proposal.effect) });
  expect(written.status).toBe('OK');
  journal.unindex(effectId, bound.token);
  return effectId;
}

async function granted(): Promise<{ pi: string; approval: string }> {
  const pi = `pi_${uid()}`;
  rig.target.world.set(`payment:${pi}`, { chargebacks: [], refunded_by_others: 0 });
  const approval = approvalBody({ scope: `payment:${pi}` });
  expect((await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(approval)).status).toBe(201);
  return { pi, approval: String(approval.id) };
}

describe('a retry of a request an earlier version recorded with a name refused now', () => {
  it.each([
    ['mixing scripts', 'Ольга Smith'],
    ['holding a symbol', '\u237alex'],
  ])('(%s) is told where the recorded request is read, and that lookup answers it', async (_why, agent) => {
    const { pi, approval } = await granted();
    const body = { ...refundBody({ payment_intent: pi, approval, agent, request_id: `réf ${uid()}/1` }) } as { request_id: string; payment_intent: string; amount: number; approval: string; agent: string; reason: string };
    const effectId = await recordedBefore(body);
    const retried = await request(rig.app).post('/v1/refunds').set(bearer(TOKENS.support)).send(body);
    expect(retried.status, JSON.stringify(retried.body)).toBe(400);
    expect(retried.body.error.code).toBe('invalid_request');
    const lookup = `GET /v1/effects?request=${encodeURIComponent(body.request_id)}`;
    expect(retried.body.error.message).toContain(`Nothing was recorded by this request; if this request_id was recorded before (an earlier version took names that mix scripts or hold symbols), ${lookup} answers it as it stands.`);
    expect(retried.body.error.message).not.toMatch(/Nothing was recorded\.$/);
    const listed = await request(rig.app).get(lookup.slice('GET '.length)).set(bearer(TOKENS.support));
    expect(listed.status, JSON.stringify(listed.body)).toBe(200);
    expect(listed.body.data.map((effect: { id: string }) => effect.id)).toEqual([effectId]);
  });

  it('points a credit to the same lookup, a case to its own, and an approval to its own', async () => {
    const credit = creditBody({ agent: 'Ольга Smith' });
    const credited = await request(rig.app).post('/v1/credits').set(bearer(TOKENS.support)).send(credit);
    expect(credited.body.error.message).toContain(`GET /v1/effects?request=${encodeURIComponent(String(credit.request_id))} answers it`);
    const caseId = `case-${uid()}`;
    const submitted = await request(rig.app).post('/v1/cases').set(bearer(TOKENS.support)).send({ case_id: caseId, payment_intent: 'pi_1', story: 'The jar arrived cracked.', approval: 'ap_none', agent: 'Ольга Smith' });
    expect(submitted.status, JSON.stringify(submitted.body)).toBe(400);
    expect(submitted.body.error.message).toContain(`GET /v1/cases/${caseId} answers it`);
    const approval = approvalBody({ scope: 'payment:pi_1', approver: 'b\u0585b' });
    const refused = await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(approval);
    expect(refused.status, JSON.stringify(refused.body)).toBe(400);
    expect(refused.body.error.message).toContain(`if this id was recorded before (an earlier version took names that mix scripts or hold symbols), GET /v1/approvals/${String(approval.id)} answers it`);
  });

  it.each([
    ['an agent too long', { agent: 'a'.repeat(101) }],
    ['an amount of zero', { amount: 0 }],
    ['an agent mixing scripts beside another problem of the request id', { agent: 'Ольга Smith', request_id: '' }],
  ])('keeps the plain sentence for any other 400 (%s)', async (_what, overrides) => {
    const refused = await request(rig.app).post('/v1/refunds').set(bearer(TOKENS.support)).send(refundBody(overrides));
    expect(refused.status, JSON.stringify(refused.body)).toBe(400);
    expect(refused.body.error.message).toMatch(/\. Nothing was recorded\.$/);
  });
});
