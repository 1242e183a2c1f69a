// The escalation inbox over HTTP (issue 13 §4): effects that settle AMBIGUOUS or refused on a stale premise open an
// item saying what happened, the money at stake and the facts that changed; approvers re-approve (a new request, its
// premises read now, through the gate), resolve or dismiss, each a signed RESOLVED entry on the effect's receipt
// naming the token; of two people acting at once one wins and the other is told who; auditors and operators read.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { createFacts, effectIdFor, latestProposal, openInboxItem, publicKeyPem, publicKeySet, raiseAlert, resolveAlert, verify, type Receipt } from '../../src/interlock.js';
import { inboxSuite } from './inbox-items.js';
import { pageSession } from './page-sessions.js';
import { approvalBody, bearer, TOKENS, uid } from './rig.js';

const { rig, make } = inboxSuite();

const keys = () => publicKeySet([publicKeyPem(rig.stores.signingKey)]);
const grant = (pi: string) => make.grant(pi);
const staleItem = () => make.stale();
const ambiguousItem = () => make.ambiguous();

async function receiptOf(effectId: string): Promise<Receipt> {
  const answer = await request(rig.app).get(`/v1/effects/${effectId}/receipt`).set(bearer(TOKENS.auditor));
  expect(answer.status).toBe(200);
  return answer.body as Receipt;
}

const approver = () => bearer(TOKENS.approver);

describe.concurrent('items open when an effect needs a person', () => {
  it('a refusal on a stale premise opens an item with the money at stake, the fact that changed (was -> now) and what may be done', async () => {
    const { effectId, item, pi } = await staleItem();
    const shown = await request(rig.app).get(`/v1/inbox/${item}`).set(bearer(TOKENS.auditor));
    expect(shown.status, JSON.stringify(shown.body)).toBe(200);
    expect(shown.body).toMatchObject({
      object: 'inbox_item',
      id: item,
      kind: 'stale_premise',
      effect_id: effectId,
      subject: `payment:${pi}`,
      outcome: 'REFUSED:stale_premise',
      cents_at_stake: 2_000,
      changes: [{ field: 'chargebacks', was: [], now: ['du_opened'] }],
      actions: ['reapprove', 'dismiss'],
      status: 'open',
      closed: null,
    });
    expect(shown.body.happened).toContain('no longer true');
    const listed = await request(rig.app).get(`/v1/inbox?effect=${effectId}`).set(bearer(TOKENS.operator));
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((entry: { id: string }) => entry.id)).toEqual([item]);
  });

  it('an AMBIGUOUS effect opens an item that may be resolved or dismissed, never re-approved', async () => {
    const { item } = await ambiguousItem();
    const shown = await request(rig.app).get(`/v1/inbox/${item}`).set(approver());
    expect(shown.status).toBe(200);
    expect(shown.body).toMatchObject({ kind: 'ambiguous', outcome: 'AMBIGUOUS', cents_at_stake: 2_000, actions: ['resolve', 'dismiss'], status: 'open' });
  });

  it('a committed effect opens no item', async () => {
    const effectId = await make.proposed(`pi_${uid()}`);
    expect(await make.submitLatest(effectId)).toBe('COMMITTED');
    const listed = await request(rig.app).get(`/v1/inbox?effect=${effectId}`).set(approver());
    expect(listed.body.data).toEqual([]);
  });

  it('a model deviation is opened by openInboxItem on a recorded effect, and refused for an effect nobody recorded', async () => {
    const effectId = await make.proposed(`pi_${uid()}`);
    const opened = await openInboxItem(rig.stores, { effectId, happened: 'The model proposed $80; the approval allows $20.', centsAtStake: 8_000, detail: { decidedCents: 8_000, approvedCents: 2_000 } });
    expect(opened.created).toBe(true);
    expect((await openInboxItem(rig.stores, { effectId, happened: 'again', centsAtStake: 1 })).created).toBe(false);
    const shown = await request(rig.app).get(`/v1/inbox/model_deviated:${effectId}`).set(approver());
    expect(shown.body).toMatchObject({ kind: 'model_deviated', happened: 'The model proposed $80; the approval allows $20.', cents_at_stake: 8_000, detail: { decided_cents: 8_000, approved_cents: 2_000 }, actions: ['reapprove', 'dismiss'] });
    await expect(openInboxItem(rig.stores, { effectId: 'f'.repeat(64), happened: 'x', centsAtStake: 1 })).rejects.toMatchObject({ code: 'unknown_effect' });
  });
});

describe.concurrent('acting on an item', () => {
  it('resolving an AMBIGUOUS effect as "did not land" is a signed entry naming the approver; the receipt verifies and answers not_returned on the operator\'s word', async () => {
    const { effectId, item } = await ambiguousItem();
    const resolved = await request(rig.app).post(`/v1/inbox/${item}/resolve`).set(approver()).send({ resolution: 'did_not_land', note: 'No refund on pi in the dashboard.' });
    expect(resolved.status, JSON.stringify(resolved.body)).toBe(200);
    expect(resolved.body).toMatchObject({ status: 'closed', closed: { action: 'resolve', by: { name: 'alex', role: 'approver' }, resolution: 'did_not_land', note: 'No refund on pi in the dashboard.' } });
    const receipt = await receiptOf(effectId);
    expect(receipt.entries.at(-1)).toMatchObject({ kind: 'RESOLVED', item, action: 'resolve', by: { name: 'alex', role: 'approver' } });
    const verification = verify(receipt, { publicKeys: keys() });
    expect(verification.problems).toEqual([]);
    expect(verification).toMatchObject({ valid: true, outcome: 'AMBIGUOUS', happened: 'unknown', answer: 'not_returned', answerFrom: 'operator' });
    expect(verification.operatorActions).toMatchObject([{ item, action: 'resolve', resolution: 'did_not_land', by: { name: 'alex' } }]);
    // The effect says so too, whoever reads it (support included): the outcome stays AMBIGUOUS, the answer is the person's.
    for (const token of [TOKENS.auditor, TOKENS.support]) {
      const shown = await request(rig.app).get(`/v1/effects/${effectId}`).set(bearer(token));
      expect(shown.body).toMatchObject({ outcome: 'AMBIGUOUS', answer: 'not_returned', answer_from: 'operator' });
    }
    const page = await request(rig.app).get(`/ui/effects/${effectId}`).set('cookie', (await pageSession(rig.app, TOKENS.auditor)).cookie);
    expect(page.text).toContain('not returned (a person&#39;s finding after checking Stripe)');
    // Closed items leave the open list and show in the closed one.
    expect((await request(rig.app).get(`/v1/inbox?effect=${effectId}`).set(approver())).body.data).toEqual([]);
    expect((await request(rig.app).get(`/v1/inbox?effect=${effectId}&status=closed`).set(approver())).body.data.map((entry: { id: string }) => entry.id)).toEqual([item]);
  });

  it('dismissing records the note and who dismissed, and closes the item', async () => {
    const { effectId, item } = await staleItem();
    const dismissed = await request(rig.app).post(`/v1/inbox/${item}/dismiss`).set(bearer(TOKENS.danaApprover)).send({ note: 'Customer withdrew the request.' });
    expect(dismissed.status, JSON.stringify(dismissed.body)).toBe(200);
    expect(dismissed.body.closed).toMatchObject({ action: 'dismiss', by: { name: 'dana', role: 'approver' }, note: 'Customer withdrew the request.', resolution: null, reapproval: null });
    expect(verify(await receiptOf(effectId), { publicKeys: keys() }).valid).toBe(true);
  });

  it('two approvers acting on one item at once: exactly one wins, the other gets 409 naming who acted, and the receipt holds one action', async () => {
    const { effectId, item } = await staleItem();
    const [first, second] = await Promise.all([
      request(rig.app).post(`/v1/inbox/${item}/dismiss`).set(bearer(TOKENS.approver)).send({ note: 'alex: duplicate case' }),
      request(rig.app).post(`/v1/inbox/${item}/dismiss`).set(bearer(TOKENS.danaApprover)).send({ note: 'dana: customer called back' }),
    ]);
    const statuses = [first.status, second.status].sort();
    expect(statuses).toEqual([200, 409]);
    const winner = first.status === 200 ? first : second;
    const loser = first.status === 200 ? second : first;
    const winnerName = String(winner.body.closed.by.name);
    expect(loser.body.error.code).toBe('inbox_item_closed');
    expect(loser.body.error.message).toContain(winnerName);
    const receipt = await receiptOf(effectId);
    expect(receipt.entries.filter((entry) => entry.kind === 'RESOLVED')).toHaveLength(1);
    expect(verify(receipt, { publicKeys: keys() }).valid).toBe(true);
  });

  it('the same approver re-approving twice at once (a double click) is answered with the one request both times, never told they were beaten by themselves; one action is recorded', async () => {
    const { pi, effectId, item } = await staleItem();
    const fresh = await grant(pi);
    const send = () => request(rig.app).post(`/v1/inbox/${item}/reapprove`).set(approver()).send({ approval: fresh, note: 'Refund anyway.' });
    const answers = await Promise.all([send(), send(), send()]);
    const newId = effectIdFor({ requestId: `reapproval:${item}`, effect: null });
    expect(answers.map((answer) => answer.status).sort(), JSON.stringify(answers.map((answer) => answer.body))).toEqual([200, 200, 202]);
    for (const answer of answers) expect(answer.body).toMatchObject({ object: 'reapproval', effect_id: newId, request_id: `reapproval:${item}`, item: { closed: { action: 'reapprove', by: { name: 'alex' } } } });
    expect(answers.map((answer) => answer.body.recorded).sort()).toEqual(['exists', 'exists', 'recorded']);
    expect((await receiptOf(effectId)).entries.filter((entry) => entry.kind === 'RESOLVED')).toHaveLength(1);
    // The same approver asking for something else now (another approval, a dismissal) is told it was they who acted.
    for (const other of [
      await request(rig.app).post(`/v1/inbox/${item}/reapprove`).set(approver()).send({ approval: await grant(pi) }),
      await request(rig.app).post(`/v1/inbox/${item}/dismiss`).set(approver()).send({ note: 'never mind' }),
    ]) {
      expect(other.status).toBe(409);
      expect(other.body.error).toMatchObject({ code: 'inbox_item_closed' });
      expect(other.body.error.message).toContain(`You (alex, approver) already re-approved it under ${fresh}`);
    }
  });

  // Rule: a re-approval repeated by the same approver under the same approval records nothing new and is answered with
  // the proposal recorded the first time. A repeat with another note, or after the facts moved, recorded a second
  // PROPOSED (and queued it) while answering "exists" with the facts read now.
  it('the same approver re-approving again with another note, after the facts moved, records nothing new and is answered with the first proposal', async () => {
    const { pi, item } = await staleItem();
    const fresh = await grant(pi);
    const newId = effectIdFor({ requestId: `reapproval:${item}`, effect: null });
    const first = await request(rig.app).post(`/v1/inbox/${item}/reapprove`).set(approver()).send({ approval: fresh, note: 'Refund anyway.' });
    expect(first.status, JSON.stringify(first.body)).toBe(202);
    rig.target.world.set(`payment:${pi}`, { chargebacks: ['du_opened'], refunded_by_others: 700 });
    for (const note of [undefined, 'Refund anyway.']) {
      const again = await request(rig.app).post(`/v1/inbox/${item}/reapprove`).set(approver()).send({ approval: fresh, note });
      expect(again.status, JSON.stringify(again.body)).toBe(200);
      expect(again.body).toMatchObject({ recorded: 'exists', effect_id: newId, premises: first.body.premises });
    }
    const partition = await rig.stores.journal.partitionOf(newId);
    const chain = partition === null ? [] : await rig.stores.journal.entries(partition, newId);
    expect(chain.filter((entry) => entry.kind === 'PROPOSED')).toHaveLength(1);
    expect(await latestProposal(rig.stores, newId)).toMatchObject({ premises: first.body.premises, request: { note: 'Refund anyway.' } });
  });

  it('a re-approval keeps its approval\'s four-eyes rule: the approver who granted it is refused 403 four_eyes and the item stays open; another approver may', async () => {
    const { pi, item } = await staleItem();
    const body = approvalBody({ scope: `payment:${pi}`, four_eyes: true });
    expect((await request(rig.app).post('/v1/approvals').set(approver()).send(body)).status).toBe(201);
    const own = await request(rig.app).post(`/v1/inbox/${item}/reapprove`).set(approver()).send({ approval: body.id });
    expect(own.status, JSON.stringify(own.body)).toBe(403);
    expect(own.body.error.code).toBe('four_eyes');
    expect(await rig.stores.inbox.get(item)).toMatchObject({ status: 'open' });
    const other = await request(rig.app).post(`/v1/inbox/${item}/reapprove`).set(bearer(TOKENS.danaApprover)).send({ approval: body.id });
    expect(other.status, JSON.stringify(other.body)).toBe(202);
  });

  it('re-approving is a new request under a new approval with premises read now, sent through the gate; the old payload is never resent', async () => {
    const { pi, effectId, item } = await staleItem();
    const fresh = await grant(pi);
    const answer = await request(rig.app).post(`/v1/inbox/${item}/reapprove`).set(approver()).send({ approval: fresh, note: 'The inquiry is not a chargeback; refund anyway.' });
    expect(answer.status, JSON.stringify(answer.body)).toBe(202);
    const newId = effectIdFor({ requestId: `reapproval:${item}`, effect: null });
    expect(answer.body).toMatchObject({ object: 'reapproval', effect_id: newId, request_id: `reapproval:${item}`, recorded: 'recorded', premises: { chargebacks: ['du_opened'], refunded_by_others: 0 } });
    expect(answer.body.item.closed).toMatchObject({ action: 'reapprove', by: { name: 'alex' }, reapproval: { approval: fresh, request_id: `reapproval:${item}`, effect_id: newId } });
    // The new proposal stands on the facts read now, under the new approval, and names the item it re-approves.
    const proposal = await latestProposal(rig.stores, newId);
    expect(proposal).toMatchObject({ requestId: `reapproval:${item}`, approval: fresh, agent: 'alex', premises: { chargebacks: ['du_opened'] }, request: { reapproves: item, effect: effectId } });
    expect(await make.submitLatest(newId)).toBe('COMMITTED');
    expect(rig.target.landedCount(newId)).toBe(1);
    // The old request id never sends now, even re-decided on facts that pass: the money would move twice.
    const redecided = { ...(await latestProposal(rig.stores, effectId)), approval: await grant(pi), premises: { chargebacks: ['du_opened'], refunded_by_others: 0 } };
    expect((await make.sender.gate.submit(redecided)).outcome).toBe('REFUSED:stale_premise');
    expect(rig.target.landedCount(effectId)).toBe(0);
    const old = verify(await receiptOf(effectId), { publicKeys: keys() });
    expect(old).toMatchObject({ valid: true, outcome: 'REFUSED:stale_premise', operatorActions: [{ action: 'reapprove', reapproval: { approval: fresh, effectId: newId } }] });
    // The same approver asking again (a lost answer) gets the same request; another approver is told who acted.
    const again = await request(rig.app).post(`/v1/inbox/${item}/reapprove`).set(approver()).send({ approval: fresh });
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body).toMatchObject({ recorded: 'exists', effect_id: newId });
    const other = await request(rig.app).post(`/v1/inbox/${item}/reapprove`).set(bearer(TOKENS.danaApprover)).send({ approval: fresh });
    expect(other.status).toBe(409);
    expect(other.body.error.message).toContain('alex (approver)');
    expect(rig.target.landedCount(newId)).toBe(1);
  });

  it('an action the kind does not allow is refused with 409 and records nothing', async () => {
    const ambiguous = await ambiguousItem();
    const stale = await staleItem();
    const fresh = await grant(ambiguous.pi);
    const reapprove = await request(rig.app).post(`/v1/inbox/${ambiguous.item}/reapprove`).set(approver()).send({ approval: fresh });
    expect(reapprove.status).toBe(409);
    expect(reapprove.body.error.code).toBe('action_not_allowed');
    const resolve = await request(rig.app).post(`/v1/inbox/${stale.item}/resolve`).set(approver()).send({ resolution: 'landed', note: 'x' });
    expect(resolve.status).toBe(409);
    expect(resolve.body.error.code).toBe('action_not_allowed');
    for (const { effectId } of [ambiguous, stale]) expect((await receiptOf(effectId)).entries.some((entry) => entry.kind === 'RESOLVED')).toBe(false);
  });
});

describe.concurrent('an exposure: its alert and its inbox item are one matter', () => {
  /** A committed $20 refund whose charge was then charged back: the alert raised, its item opened. */
  async function exposure() {
    const pi = `pi_${uid()}`;
    const effectId = await make.proposed(pi);
    expect(await make.submitLatest(effectId)).toBe('COMMITTED');
    const { alert } = await raiseAlert(rig.stores, { kind: 'exposure', effectId, subject: `payment:${pi}`, centsAtStake: 4_000, refund: `re_${uid()}`, disputes: [`du_${uid()}`], sentence: 'Refunded and charged back.', action: 'Answer the dispute.' });
    const item = `exposure:${effectId}`;
    expect(await rig.stores.inbox.get(item)).toMatchObject({ status: 'open', detail: { alert: alert.id } });
    return { effectId, item, alert: alert.id };
  }

  it('dismissing the exposure item resolves its alert, naming who', async () => {
    const { item, alert } = await exposure();
    const answer = await request(rig.app).post(`/v1/inbox/${item}/dismiss`).set(approver()).send({ note: 'Dispute answered with the refund as evidence.' });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(await rig.stores.alerts.get(alert)).toMatchObject({ resolvedBy: 'alex (approver)', resolvedAt: expect.any(Number) });
    expect((await rig.stores.alerts.list()).map((open) => open.id)).not.toContain(alert);
  });

  it('resolving the exposure alert closes its inbox item with a signed dismissal naming who, once', async () => {
    const { effectId, item, alert } = await exposure();
    expect(await resolveAlert(rig.stores, alert, { name: 'lee', role: 'cli' })).toMatchObject({ resolved: true, alert: { resolvedBy: 'lee (cli)' } });
    expect(await rig.stores.inbox.get(item)).toMatchObject({ status: 'closed', closure: { action: 'dismiss', by: { name: 'lee', role: 'cli' } } });
    expect(await resolveAlert(rig.stores, alert, { name: 'kim', role: 'cli' })).toMatchObject({ resolved: false, alert: { resolvedBy: 'lee (cli)' } });
    const receipt = await receiptOf(effectId);
    expect(receipt.entries.filter((entry) => entry.kind === 'RESOLVED')).toHaveLength(1);
    expect(verify(receipt, { publicKeys: keys() }).valid).toBe(true);
  });
});

describe.concurrent('an exposure the facts undo', () => {
  it('closes its inbox item with a signed dismissal naming the facts when later facts resolve its alert (the dispute was won)', async () => {
    const pi = `pi_${uid()}`;
    const effectId = await make.proposed(pi);
    expect(await make.submitLatest(effectId)).toBe('COMMITTED');
    // The facts without re-reads: each event's object is the fact.
    const facts = createFacts(rig.stores, null, { rereadBeforeAppend: false });
    // The refund the effect committed, as Stripe reports it.
    const committed = (await receiptOf(effectId)).entries.find((entry) => entry.kind === 'COMMITTED');
    if (committed?.kind !== 'COMMITTED' || committed.found === null) throw new Error(`effect ${effectId} committed no refund id`);
    const refund = { id: committed.found, object: 'refund', status: 'succeeded', amount: 2_000, payment_intent: pi, metadata: { interlock_effect_id: effectId } };
    const dispute = { id: `du_${uid()}`, object: 'dispute', status: 'needs_response', amount: 10_000, payment_intent: pi, reason: 'fraudulent' };
    await facts.applyEvent({ id: `evt_${uid()}`, type: 'refund.created', data: { object: refund } });
    await facts.applyEvent({ id: `evt_${uid()}`, type: 'charge.dispute.created', data: { object: dispute } });
    const item = `exposure:${effectId}`;
    const alert = `exposure:${effectId}`;
    expect(await rig.stores.alerts.get(alert)).toMatchObject({ resolvedAt: null });
    expect(await rig.stores.inbox.get(item)).toMatchObject({ status: 'open' });

    await facts.applyEvent({ id: `evt_${uid()}`, type: 'charge.dispute.closed', data: { object: { ...dispute, status: 'won' } } });
    expect(await rig.stores.alerts.get(alert)).toMatchObject({ resolvedBy: 'facts', resolvedAt: expect.any(Number) });
    expect(await rig.stores.inbox.get(item)).toMatchObject({ status: 'closed', closure: { action: 'dismiss', by: { name: 'facts', role: 'worker' } } });
    const receipt = await receiptOf(effectId);
    const dismissals = receipt.entries.filter((entry) => entry.kind === 'RESOLVED');
    expect(dismissals).toEqual([expect.objectContaining({ item, action: 'dismiss', by: { name: 'facts', role: 'worker' }, note: expect.stringContaining('the facts resolved') })]);
    expect(verify(receipt, { publicKeys: keys() })).toMatchObject({ valid: true, problems: [] });
  });
});

describe.concurrent('roles and bad input', () => {
  it('auditors, operators and approvers read the inbox; support does not; only approvers act', async () => {
    const { item } = await staleItem();
    for (const token of [TOKENS.auditor, TOKENS.operator, TOKENS.approver]) {
      expect((await request(rig.app).get('/v1/inbox').set(bearer(token))).status).toBe(200);
      expect((await request(rig.app).get(`/v1/inbox/${item}`).set(bearer(token))).status).toBe(200);
    }
    const support = await request(rig.app).get('/v1/inbox').set(bearer(TOKENS.support));
    expect(support.status).toBe(403);
    expect(support.body.error.code).toBe('forbidden');
    for (const token of [TOKENS.support, TOKENS.auditor, TOKENS.operator]) {
      const acted = await request(rig.app).post(`/v1/inbox/${item}/dismiss`).set(bearer(token)).send({ note: 'not mine to dismiss' });
      expect(acted.status).toBe(403);
    }
    expect((await request(rig.app).get('/v1/inbox')).status).toBe(401);
    expect((await request(rig.app).get(`/v1/inbox/${item}`).set(approver())).body.status).toBe('open');
  });

  it('an item the index does not hold yet (the settling entry is written, the item opens right after it) is opened from the chain by whoever reads or acts on it', async () => {
    const { effectId, item } = await ambiguousItem();
    const stale = await staleItem();
    // As if the process that settled them died between the settling entry and opening the item.
    for (const id of [item, stale.item]) {
      await rig.redis.hdel(rig.stores.keys.inbox, id);
      await rig.redis.zrem(rig.stores.keys.inboxOpen, id);
    }
    const shown = await request(rig.app).get(`/v1/inbox/${stale.item}`).set(bearer(TOKENS.auditor));
    expect(shown.status, JSON.stringify(shown.body)).toBe(200);
    expect(shown.body).toMatchObject({ id: stale.item, kind: 'stale_premise', status: 'open' });
    const resolved = await request(rig.app).post(`/v1/inbox/${item}/resolve`).set(approver()).send({ resolution: 'landed', note: 'Seen in the dashboard.' });
    expect(resolved.status, JSON.stringify(resolved.body)).toBe(200);
    expect((await receiptOf(effectId)).entries.filter((entry) => entry.kind === 'RESOLVED')).toHaveLength(1);
    // The chain calls for one item per effect: another kind's id on the same effect is still unknown.
    const wrongKind = await request(rig.app).get(`/v1/inbox/ambiguous:${stale.effectId}`).set(approver());
    expect(wrongKind.status).toBe(404);
  });

  it('refuses bad bodies, ids and queries with 400 naming the field, and unknown items with 404; nothing is recorded', async () => {
    const { effectId, item } = await ambiguousItem();
    const cases: [string, Record<string, unknown>, string][] = [
      ['resolve', { resolution: 'maybe', note: 'x' }, 'resolution'],
      ['resolve', { resolution: 'landed' }, 'note'],
      ['resolve', { resolution: 'landed', note: '   ' }, 'note'],
      ['resolve', { resolution: 'landed', note: 'x', extra: 1 }, 'extra'],
      ['dismiss', { note: 'x'.repeat(2_001) }, 'note'],
      ['dismiss', { note: 'bell\u0007' }, 'note'],
      ['reapprove', { approval: 'has spaces' }, 'approval'],
    ];
    for (const [action, body, field] of cases) {
      const answer = await request(rig.app).post(`/v1/inbox/${item}/${action}`).set(approver()).send(body);
      expect(answer.status, `${action} ${JSON.stringify(body)}`).toBe(400);
      expect(answer.body.error.fields.map((problem: { path: string }) => problem.path)).toContain(field);
    }
    const badId = await request(rig.app).get('/v1/inbox/not-an-item').set(approver());
    expect(badId.status).toBe(400);
    const unknown = await request(rig.app).post(`/v1/inbox/ambiguous:${'0'.repeat(64)}/dismiss`).set(approver()).send({ note: 'x' });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('unknown_inbox_item');
    for (const query of ['kind=nope', 'limit=0', 'starting_after=zzz', 'status=maybe', 'effect=abc']) {
      expect((await request(rig.app).get(`/v1/inbox?${query}`).set(approver())).status, query).toBe(400);
    }
    expect((await receiptOf(effectId)).entries.some((entry) => entry.kind === 'RESOLVED')).toBe(false);
  });
});

describe('listing, and facts that cannot be read', () => {
  it('a re-approval under an approval that does not exist, or whose facts cannot be read now, records nothing and leaves the item open', async () => {
    const { pi, effectId, item } = await staleItem();
    const before = (await receiptOf(effectId)).entries.length;
    const missing = await request(rig.app).post(`/v1/inbox/${item}/reapprove`).set(approver()).send({ approval: `ap_missing_${uid()}` });
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('unknown_approval');
    const otherScope = await grant(`pi_${uid()}`);
    const wrong = await request(rig.app).post(`/v1/inbox/${item}/reapprove`).set(approver()).send({ approval: otherScope });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error.code).toBe('invalid_approval');
    const fresh = await grant(pi);
    // The target's faults are shared by every test of the file: this one runs on its own (a sequential block).
    rig.target.inject({ kind: 'premise-error' });
    const unread = await request(rig.app).post(`/v1/inbox/${item}/reapprove`).set(approver()).send({ approval: fresh });
    expect(unread.status).toBe(503);
    expect(unread.body.error.code).toBe('premise_read_failed');
    expect((await receiptOf(effectId)).entries).toHaveLength(before);
    expect(await rig.hasEffect(effectIdFor({ requestId: `reapproval:${item}`, effect: null }))).toBe(false);
    expect((await request(rig.app).get(`/v1/inbox/${item}`).set(approver())).body.status).toBe('open');
  });

  it('a re-approval under an approval that is revoked, expired or too small for the payload is refused before anything is written: the item stays open for a live one', async () => {
    const { pi, effectId, item } = await staleItem();
    const before = (await receiptOf(effectId)).entries.length;
    const revoked = await grant(pi);
    expect((await request(rig.app).post(`/v1/approvals/${revoked}/revoke`).set(approver()).send({})).status).toBe(200);
    const expired = approvalBody({ scope: `payment:${pi}`, expires_in: 1 });
    expect((await request(rig.app).post('/v1/approvals').set(approver()).send(expired)).status).toBe(201);
    const small = approvalBody({ scope: `payment:${pi}`, cap_cents: 1_000 });
    expect((await request(rig.app).post('/v1/approvals').set(approver()).send(small)).status).toBe(201);
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    for (const [approval, says] of [[revoked, 'revoked'], [String(expired.id), 'expired'], [String(small.id), 'covers at most 1000 (minor units, currency unknown)']] as const) {
      const answer = await request(rig.app).post(`/v1/inbox/${item}/reapprove`).set(approver()).send({ approval });
      expect(answer.status, JSON.stringify(answer.body)).toBe(400);
      expect(answer.body.error.code).toBe('invalid_approval');
      expect(answer.body.error.message).toContain(says);
      expect(answer.body.error.message).toContain('Nothing was recorded');
    }
    expect((await receiptOf(effectId)).entries).toHaveLength(before);
    expect(await rig.hasEffect(effectIdFor({ requestId: `reapproval:${item}`, effect: null }))).toBe(false);
    const live = await request(rig.app).post(`/v1/inbox/${item}/reapprove`).set(approver()).send({ approval: await grant(pi) });
    expect(live.status, JSON.stringify(live.body)).toBe(202);
  });

  it('a re-approval whose request id holds a proposal no re-approval recorded (taken before reapproval: ids were refused to callers) is refused with 409 before anything is written: the item stays open', async () => {
    for (const amount of [4_900, 2_000]) {
      const { pi, effectId, item } = await staleItem();
      const newId = effectIdFor({ requestId: `reapproval:${item}`, effect: null });
      // Recorded as a support caller's request under the item's request id, another payload or the same one.
      const taken = await rig.queue.propose({ requestId: `reapproval:${item}`, agent: 'sam', approval: await grant(pi), premises: { chargebacks: [], refunded_by_others: 0 }, effect: { kind: 'refund', paymentIntent: pi, amount, reason: 'requested_by_customer' }, request: { request_id: `reapproval:${item}`, token: 'sam' } });
      expect(taken.status).toBe('recorded');
      const before = (await receiptOf(effectId)).entries.length;
      const answer = await request(rig.app).post(`/v1/inbox/${item}/reapprove`).set(approver()).send({ approval: await grant(pi), note: 'ok, refund the $20' });
      expect(answer.status, JSON.stringify(answer.body)).toBe(409);
      expect(answer.body.error.code).toBe('conflicting_payload');
      expect((await receiptOf(effectId)).entries).toHaveLength(before);
      expect((await request(rig.app).get(`/v1/inbox/${item}`).set(approver())).body).toMatchObject({ status: 'open', closed: null });
      expect(answer.body.error.message).toContain(`Request reapproval:${item}, the one a re-approval of item ${item} proposes under, already holds a proposal that no re-approval of it recorded`);
      expect((await latestProposal(rig.stores, newId))?.agent).toBe('sam');
    }
  });

  it('pages through open items newest first with a cursor, each item once, filtered by kind and subject', async () => {
    const made = [await staleItem(), await staleItem(), await staleItem()];
    const ids = new Set(made.map((entry) => entry.item));
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < 50; page += 1) {
      const answer: request.Response = await request(rig.app).get(`/v1/inbox?kind=stale_premise&limit=1${cursor === null ? '' : `&starting_after=${cursor}`}`).set(approver());
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      seen.push(...answer.body.data.map((entry: { id: string }) => entry.id));
      cursor = answer.body.next_starting_after;
      if (!answer.body.has_more) break;
    }
    const ours = seen.filter((id) => ids.has(id));
    expect(ours).toEqual([...made].reverse().map((entry) => entry.item));
    expect(new Set(seen).size).toBe(seen.length);
    const bySubject = await request(rig.app).get(`/v1/inbox?subject=payment:${made[0]?.pi}`).set(approver());
    expect(bySubject.body.data.map((entry: { id: string }) => entry.id)).toEqual([made[0]?.item]);
  });
});
