// Rule: every link an answer hands a caller names a route the caller's role may read (the document's `x-roles`, the
// table the routes run on), and a link is null exactly where the role may not read it: each link given is answered
// 200 to that role, each link left null is one an operator is given and this role is answered 403 on. Support was
// handed receipts (auditor/operator only) and the inbox, an approver effects, receipts and cases.
import { Ajv2020 } from 'ajv/dist/2020.js';
import request from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { caseFailureItem, caseSubmissionOf } from '../../src/interlock.js';
import type { Role } from '../../webhooks/api/tokens.js';
import { inboxSuite } from './inbox-items.js';
import { bearer, caseBody, refundBody, ROLE_TOKENS, TOKENS, uid } from './rig.js';

const { rig, make } = inboxSuite();

type Link = { at: string; link: string | null };
type Operation = { responses: Record<string, { content?: { 'application/json': { schema: object } } }> };
let doc: { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, object> } };
let ajv: Ajv2020;

beforeAll(async () => {
  doc = (await request(rig.app).get('/v1/openapi.json')).body;
  ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
  for (const [id, schema] of Object.entries(doc.components.schemas)) ajv.addSchema(schema, `#/components/schemas/${id}`);
});

/** Every member of every `links` object in an answer, with where it was found. */
function linksIn(value: unknown, at = ''): Link[] {
  if (Array.isArray(value)) return value.flatMap((item, index) => linksIn(item, `${at}[${index}]`));
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([key, item]) =>
    key === 'links' && item !== null && typeof item === 'object'
      ? Object.entries(item).map(([name, link]) => ({ at: `${at}.links.${name}`, link: typeof link === 'string' ? link : null }))
      : linksIn(item, `${at}.${key}`),
  );
}

const read = (role: Role, url: string) => request(rig.app).get(url).set(bearer(ROLE_TOKENS[role]));

/**
 * The answer is the one the document describes for its operation and status, and every link it gives is answered 200
 * to `role`.
 */
async function followsAll(role: Role, operation: { path: string; method: string }, answer: { status: number; body: unknown }): Promise<void> {
  const schema = doc.paths[operation.path]?.[operation.method]?.responses[String(answer.status)]?.content?.['application/json'].schema;
  expect(schema, `${operation.method} ${operation.path} ${answer.status}`).toBeDefined();
  const validate = ajv.compile(schema as object);
  expect(validate(answer.body), `${role} ${operation.method} ${operation.path}: ${JSON.stringify(validate.errors)}`).toBe(true);
  for (const { at, link } of linksIn(answer.body)) {
    if (link !== null) expect((await read(role, link)).status, `${role} ${operation.path} ${at} -> ${link}`).toBe(200);
  }
}

/**
 * `role`'s read of `url` gives the links an operator's read gives (operators read effects, receipts, cases and the
 * inbox), but null where `role` is answered 403 on the operator's link, and only there.
 */
async function nullOnlyWhereRefused(role: Role, path: string, url: string): Promise<void> {
  const mine = await read(role, url);
  const full = await read('operator', url);
  expect([mine.status, full.status], `${role} ${url}`).toEqual([200, 200]);
  await followsAll(role, { path, method: 'get' }, mine);
  await followsAll('operator', { path, method: 'get' }, full);
  const given = linksIn(mine.body);
  const operators = linksIn(full.body);
  expect(given.map((link) => link.at)).toEqual(operators.map((link) => link.at));
  for (const [index, { at, link }] of given.entries()) {
    const theirs = operators[index]?.link ?? null;
    if (link !== null) expect(link, `${role} ${url} ${at}`).toBe(theirs);
    else if (theirs !== null) expect((await read(role, theirs)).status, `${role} ${url} ${at} is null; ${theirs}`).toBe(403);
  }
}

describe('links an answer gives', () => {
  it('a proposal, its effect and the effect list: support is given the effect, not its receipt; auditors both', async () => {
    const pi = `pi_${uid()}`;
    rig.target.world.set(`payment:${pi}`, { chargebacks: [], refunded_by_others: 0 });
    const body = refundBody({ payment_intent: pi, approval: await make.grant(pi) });
    const proposed = await request(rig.app).post('/v1/refunds').set(bearer(TOKENS.support)).send(body);
    expect(proposed.status).toBe(202);
    const effectId = String(proposed.body.effect_id);
    expect(proposed.body.links).toEqual({ self: `/v1/effects/${effectId}`, receipt: null });
    await followsAll('support', { path: '/v1/refunds', method: 'post' }, proposed);

    for (const role of ['support', 'auditor'] as const) {
      await nullOnlyWhereRefused(role, '/v1/effects/{id}', `/v1/effects/${effectId}`);
      await nullOnlyWhereRefused(role, '/v1/effects', `/v1/effects?request=${String(body.request_id)}`);
    }
    expect((await read('auditor', `/v1/effects/${effectId}`)).body.links).toEqual({ self: `/v1/effects/${effectId}`, receipt: `/v1/effects/${effectId}/receipt` });
  });

  it("an inbox item and a re-approval: an approver is given the item, not the effect or its receipt", async () => {
    const stale = await make.stale();
    for (const role of ['approver', 'auditor'] as const) {
      await nullOnlyWhereRefused(role, '/v1/inbox/{id}', `/v1/inbox/${stale.item}`);
      await nullOnlyWhereRefused(role, '/v1/inbox', `/v1/inbox?effect=${stale.effectId}`);
    }
    const reapproved = await request(rig.app).post(`/v1/inbox/${stale.item}/reapprove`).set(bearer(TOKENS.approver)).send({ approval: await make.grant(stale.pi), note: 'chargeback withdrawn' });
    expect(reapproved.status, JSON.stringify(reapproved.body)).toBe(202);
    expect(reapproved.body.links).toEqual({ self: null, receipt: null });
    expect(reapproved.body.item.links).toEqual({ self: `/v1/inbox/${stale.item}`, effect: null, receipt: null });
    await followsAll('approver', { path: '/v1/inbox/{id}/reapprove', method: 'post' }, reapproved);
  });

  it('a failed case and its case_failed item: support is not given the item, an approver not the case', async () => {
    const caseId = `case-${uid()}`;
    const submission = caseSubmissionOf({ caseId, paymentIntent: 'pi_9', story: 'cracked jar', approval: 'ap_gone', agent: 'sam' });
    await rig.stores.cases.create(submission, 'sam');
    const failed = await rig.stores.cases.setStatus(caseId, { state: 'failed', decision: null, effectId: null, problems: [], error: { code: 'unknown_approval', message: 'No approval ap_gone.' }, attempts: 1 });
    const draft = caseFailureItem({ caseId, subject: 'payment:pi_9', approval: 'ap_gone', code: 'unknown_approval', message: 'No approval ap_gone.', failedAt: failed.record.status.updatedAt, attempts: 1 });
    await rig.stores.inbox.openCaseFailure(draft);

    for (const role of ['support', 'auditor'] as const) await nullOnlyWhereRefused(role, '/v1/cases/{id}', `/v1/cases/${caseId}`);
    expect((await read('support', `/v1/cases/${caseId}`)).body.links).toEqual({ self: `/v1/cases/${caseId}`, effect: null, inbox: null, reapproved: null });
    for (const role of ['approver', 'auditor'] as const) await nullOnlyWhereRefused(role, '/v1/inbox/{id}', `/v1/inbox/${draft.id}`);
    expect((await read('approver', `/v1/inbox/${draft.id}`)).body.links).toEqual({ self: `/v1/inbox/${draft.id}`, effect: null, receipt: null, case: null });
    expect((await read('auditor', `/v1/inbox/${draft.id}`)).body.links).toMatchObject({ case: `/v1/cases/${caseId}` });

    const dismissed = await request(rig.app).post(`/v1/inbox/${draft.id}/dismiss`).set(bearer(TOKENS.approver)).send({ note: 'Resubmitted under ap_new.' });
    expect(dismissed.status).toBe(200);
    await followsAll('approver', { path: '/v1/inbox/{id}/dismiss', method: 'post' }, dismissed);
  });

  it("a case submitted and a revocation's effects that may still land: each for the role that sent it", async () => {
    const submitted = await request(rig.app).post('/v1/cases').set(bearer(TOKENS.support)).send(caseBody({ approval: await make.grant('pi_1') }));
    expect(submitted.status, JSON.stringify(submitted.body)).toBe(202);
    await followsAll('support', { path: '/v1/cases', method: 'post' }, submitted);

    // A refund being sent (the target answers slowly) when its approval is revoked.
    const pi = `pi_${uid()}`;
    rig.target.world.set(`payment:${pi}`, { chargebacks: [], refunded_by_others: 0 });
    const approval = await make.grant(pi);
    const proposed = await request(rig.app).post('/v1/refunds').set(bearer(TOKENS.support)).send(refundBody({ payment_intent: pi, approval }));
    const effectId = String(proposed.body.effect_id);
    rig.target.inject({ kind: 'slow-answer', delayMs: 800, answer: 'landed' });
    const sending = make.submitLatest(effectId);
    await expect.poll(async () => (await read('support', `/v1/effects/${effectId}`)).body.state, { timeout: 5_000, interval: 10 }).toBe('dispatched');
    const revoked = await request(rig.app).post(`/v1/approvals/${approval}/revoke`).set(bearer(TOKENS.approver));
    expect(revoked.status).toBe(200);
    expect(revoked.body.may_still_land).toEqual([{ effect_id: effectId, links: { self: null, receipt: null } }]);
    await followsAll('approver', { path: '/v1/approvals/{id}/revoke', method: 'post' }, revoked);
    expect(await sending).toBe('COMMITTED');
  });
});
