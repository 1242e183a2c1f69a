// Reading effects: one effect (journal kinds with times, final money, exposure), its receipt (verifies offline with
// the keys GET /v1/keys hands out), and the listing: newest first across pages, every effect found by paging exactly
// once whatever the page size and filter, including effects bound in the same millisecond.
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { createProposalRecorder, publicKeySet, verify, type Stores } from '../../src/interlock.js';
import { createEffectListing } from '../../webhooks/api/listing.js';
import { approvalBody, bearer, refundBody, rigSuite, TOKENS, uid, type Rig } from './rig.js';

const auditor = () => bearer(TOKENS.auditor);

type Listed = { id: string; subject: string; state: string; created_at: string | null };

/** Every page from the start, following next_starting_after. */
async function everyPage(rig: Rig, query: string, limit: number): Promise<{ ids: string[]; pages: number; created: string[] }> {
  const ids: string[] = [];
  const created: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  for (;;) {
    const after: string = cursor === null ? '' : `&starting_after=${cursor}`;
    const page = await request(rig.app).get(`/v1/effects?limit=${limit}${query}${after}`).set(auditor());
    expect(page.status, JSON.stringify(page.body)).toBe(200);
    expect(page.body.data.length).toBeLessThanOrEqual(limit);
    ids.push(...page.body.data.map((item: Listed) => item.id));
    created.push(...page.body.data.map((item: Listed) => item.created_at ?? ''));
    pages += 1;
    if (!page.body.has_more) {
      expect(page.body.next_starting_after).toBeNull();
      return { ids, pages, created };
    }
    cursor = page.body.next_starting_after;
    expect(pages).toBeLessThan(1_000);
  }
}

/** Records `count` refund proposals on `subjects` payments straight through the recorder (no facts, no queue). */
async function recordMany(stores: Stores, count: number, subjects: string[]): Promise<string[]> {
  const record = createProposalRecorder(stores);
  const ids: string[] = [];
  for (let i = 0; i < count; i += 50) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(50, count - i) }, (_, j) =>
        record({ requestId: `bulk-${uid()}`, agent: 'bulk', approval: 'ap_bulk', premises: {}, effect: { kind: 'refund', paymentIntent: subjects[(i + j) % subjects.length] ?? 'pi_1', amount: 100 } }),
      ),
    );
    ids.push(...batch.map((recorded) => recorded.effectId));
  }
  return ids;
}

describe('one effect and its receipt', () => {
  const rig = rigSuite({ worker: true });
  let effectId: string;
  beforeAll(async () => {
    rig.target.world.set('payment:pi_read', { chargebacks: [], refunded_by_others: 0 });
    const approval = approvalBody({ scope: 'payment:pi_read' });
    await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(approval);
    const answer = await request(rig.app).post('/v1/refunds?wait=10').set(bearer(TOKENS.support)).send(refundBody({ payment_intent: 'pi_read', approval: approval.id, request_id: 'case-read' }));
    expect(answer.body.outcome).toBe('COMMITTED');
    effectId = answer.body.effect_id;
  });

  it('?outcome= lists only effects settled with that outcome, alone or with the other filters; an unknown outcome is 400', async () => {
    const ids = async (query: string) => ((await request(rig.app).get(`/v1/effects?limit=100${query}`).set(auditor())).body.data as Listed[]).map((item) => item.id);
    expect(await ids('&outcome=COMMITTED')).toContain(effectId);
    expect(await ids('&outcome=COMMITTED&subject=payment:pi_read&state=committed')).toEqual([effectId]);
    expect(await ids('&outcome=REFUSED:over_cap')).not.toContain(effectId);
    expect(await ids('&outcome=COMMITTED&request=case-read')).toEqual([effectId]);
    expect(await ids('&outcome=AMBIGUOUS&request=case-read')).toEqual([]);
    const bad = await request(rig.app).get('/v1/effects?outcome=LANDED').set(auditor());
    expect(bad.status).toBe(400);
    expect(bad.body.error.fields[0].path).toBe('query.outcome');
  });

  it('GET /v1/effects/:id: state, outcome, sentence, journal kinds with times, final money, exposure and links', async () => {
    const answer = await request(rig.app).get(`/v1/effects/${effectId}`).set(bearer(TOKENS.support));
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({
      object: 'effect',
      id: effectId,
      request_id: 'case-read',
      kind: 'refund',
      subject: 'payment:pi_read',
      amount: 2_000,
      agent: 'sam',
      state: 'committed',
      outcome: 'COMMITTED',
      settled: true,
      final_money: { status: 'returned', failure_reason: null, disputes: [] },
      exposure: null,
      receipt_valid: true,
      // Support reads effects, not receipts: the receipt's link is null for it.
      links: { self: `/v1/effects/${effectId}`, receipt: null },
    });
    expect(answer.body.journal.map((entry: { kind: string }) => entry.kind)).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED']);
    for (const entry of answer.body.journal) expect(new Date(entry.at).getTime()).toBe(entry.at_ms);
  });

  it('a summary describes the proposal that stands: a refund refused under one approval and sent under another names the agent and approval it was sent under', async () => {
    rig.target.world.set('payment:pi_redo', { chargebacks: [], refunded_by_others: 0 });
    const small = approvalBody({ scope: 'payment:pi_redo', cap_cents: 1_000 });
    const big = approvalBody({ scope: 'payment:pi_redo', cap_cents: 5_000 });
    for (const approval of [small, big]) expect((await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(approval)).status).toBe(201);
    const body = refundBody({ payment_intent: 'pi_redo', amount: 2_000, request_id: `case-redo-${uid()}` });
    // Over its approval's cap: the API refuses a new request so before recording it (invalid_approval), so the refused
    // first proposal is recorded through the effects queue, which the gate judges.
    const first = await rig.queue.propose({ requestId: body.request_id, agent: 'first-agent', approval: String(small.id), premises: { chargebacks: [], refunded_by_others: 0 }, effect: { kind: 'refund', paymentIntent: 'pi_redo', amount: 2_000, reason: body.reason } });
    expect((await rig.queue.waitFor(first.effectId, 10_000))?.outcome).toBe('REFUSED:lease');
    const refused = { body: { effect_id: first.effectId } };
    const sent = await request(rig.app).post('/v1/refunds?wait=10').set(bearer(TOKENS.support)).send({ ...body, approval: big.id, agent: 'second-agent' });
    expect(sent.body).toMatchObject({ effect_id: refused.body.effect_id, outcome: 'COMMITTED' });
    const standing = { id: sent.body.effect_id, request_id: body.request_id, agent: 'second-agent', approval: big.id, state: 'committed' };
    const detail = await request(rig.app).get(`/v1/effects/${sent.body.effect_id}`).set(auditor());
    expect(detail.body.journal.map((entry: { kind: string }) => entry.kind)).toEqual(['PROPOSED', 'REFUSED', 'PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED']);
    expect(detail.body).toMatchObject(standing);
    expect((await request(rig.app).get(`/v1/effects?request=${body.request_id}`).set(auditor())).body.data).toMatchObject([standing]);
  });

  it('a summary’s request_id is the one the journal records, whoever recorded the proposal (the CLI and cases record no API request)', async () => {
    const requestId = `cli-${uid()}`;
    const recorded = await createProposalRecorder(rig.stores)({ requestId, agent: 'cli', approval: 'ap_cli', premises: {}, effect: { kind: 'refund', paymentIntent: 'pi_cli', amount: 100 } });
    const listed = await request(rig.app).get(`/v1/effects?request=${requestId}`).set(auditor());
    expect(listed.body.data).toMatchObject([{ id: recorded.effectId, request_id: requestId }]);
    expect((await request(rig.app).get(`/v1/effects/${recorded.effectId}`).set(auditor())).body.request_id).toBe(requestId);
  });

  it('GET /v1/effects/:id/receipt is the signed bundle, which verifies with the key from GET /v1/keys', async () => {
    const receipt = await request(rig.app).get(`/v1/effects/${effectId}/receipt`).set(auditor());
    const keys = await request(rig.app).get('/v1/keys').set(auditor());
    expect(keys.body.keys).toEqual([{ kid: rig.stores.signingKey.kid, pem: expect.stringContaining('BEGIN PUBLIC KEY'), status: 'current' }]);
    const verdict = verify(receipt.body, { publicKeys: publicKeySet(keys.body.keys.map((key: { pem: string }) => key.pem)) });
    expect(verdict).toMatchObject({ valid: true, happenedOnce: true, outcome: 'COMMITTED' });
    expect(verdict.finalMoney.status).toBe('returned');
  });
});

describe('listing effects', () => {
  const rig = rigSuite({ deps: { limits: { ratePerMinute: null } } });
  let all: string[];
  const subjects = ['pi_la', 'pi_lb', 'pi_lc'];
  beforeAll(async () => {
    // Recorded 50 at a time: many share a millisecond, so pages end inside a millisecond too.
    all = await recordMany(rig.stores, 330, subjects);
  });

  it.each([4, 25, 100])('pages of %i find every effect, none twice, newest first across pages', async (limit) => {
    const { ids, pages, created } = await everyPage(rig, '', limit);
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual([...all].sort());
    expect(pages).toBeGreaterThanOrEqual(Math.ceil(all.length / limit));
    // Newest bound first; within one millisecond, descending effect id.
    const bound = await Promise.all(ids.map(async (id) => Number(await rig.redis.zscore(rig.stores.keys.effectsByTime, id))));
    for (let i = 1; i < ids.length; i += 1) {
      const [previous, current] = [bound[i - 1] ?? 0, bound[i] ?? 0];
      expect(previous > current || (previous === current && (ids[i - 1] ?? '') > (ids[i] ?? '')), `position ${i}`).toBe(true);
    }
    expect(created.every((at) => at !== '')).toBe(true);
  });

  it('?subject= lists the effects on one payment', async () => {
    const { ids } = await everyPage(rig, '&subject=payment:pi_lb', 10);
    const summaries = await Promise.all(ids.map(async (id) => (await request(rig.app).get(`/v1/effects/${id}`).set(auditor())).body as Listed));
    expect(summaries.every((summary) => summary.subject === 'payment:pi_lb')).toBe(true);
    expect(ids.length).toBe(all.filter((_, index) => index % 3 === 1).length);
  });

  it('?state= filters by state, and ?request= names one effect', async () => {
    expect((await everyPage(rig, '&state=proposed', 50)).ids.length).toBe(all.length);
    expect((await everyPage(rig, '&state=committed', 50)).ids).toEqual([]);
    const approval = approvalBody({ scope: 'payment:pi_la' });
    expect((await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(approval)).status).toBe(201);
    const one = await request(rig.app).post('/v1/refunds').set(bearer(TOKENS.support)).send(refundBody({ request_id: 'case-listed', payment_intent: 'pi_la', approval: approval.id }));
    const byRequest = await request(rig.app).get('/v1/effects?request=case-listed').set(auditor());
    expect(byRequest.body).toMatchObject({ object: 'list', has_more: false, next_starting_after: null, data: [{ id: one.body.effect_id, request_id: 'case-listed', state: 'proposed' }] });
    expect((await request(rig.app).get('/v1/effects?request=case-listed&subject=payment:pi_lb').set(auditor())).body.data).toEqual([]);
    expect((await request(rig.app).get('/v1/effects?request=case-unknown').set(auditor())).body.data).toEqual([]);
  });

  it('a page that looks at its budget of index entries without filling ends early, and the next one goes on from there', async () => {
    const list = createEffectListing(rig.stores, { scanBudget: 50 });
    const seen: string[] = [];
    let next: string | undefined;
    let emptyPages = 0;
    for (let page = 0; page < 100; page += 1) {
      const answer = await list({ subject: 'payment:pi_nothing_here' }, 10, next);
      expect(answer.data).toEqual([]);
      emptyPages += 1;
      if (!answer.hasMore) break;
      next = answer.next ?? undefined;
    }
    expect(emptyPages).toBeGreaterThan(1);
    next = undefined;
    for (let page = 0; page < 100; page += 1) {
      const answer = await list({ state: 'proposed' }, 40, next);
      seen.push(...answer.data.map((item) => item.id));
      if (!answer.hasMore) break;
      next = answer.next ?? undefined;
    }
    expect(new Set(seen).size).toBeGreaterThanOrEqual(all.length);
  });

  it('an effect recorded now heads the first page; the pages after it are unchanged', async () => {
    await recordMany(rig.stores, 7, ['pi_ld']);
    const before = await everyPage(rig, '&subject=payment:pi_ld', 3);
    expect(before.ids).toHaveLength(7);
    const [fresh] = await recordMany(rig.stores, 1, ['pi_ld']);
    const first = await request(rig.app).get('/v1/effects?limit=3&subject=payment:pi_ld').set(auditor());
    expect(first.body.data[0].id).toBe(fresh);
    const after = await everyPage(rig, '&subject=payment:pi_ld', 3);
    expect(after.ids).toEqual([fresh, ...before.ids]);
  });

  it('a cursor that is not one is 400', async () => {
    const answer = await request(rig.app).get('/v1/effects?starting_after=abc').set(auditor());
    expect(answer.status).toBe(400);
    expect(answer.body.error.fields).toEqual([{ path: 'query.starting_after', message: 'must be the next_starting_after of a previous page' }]);
  });
});
