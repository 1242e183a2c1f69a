// Rule: a case re-submitted by another support token is the same case (cases.test.ts), whether the two submissions
// come one after the other or at once. The same body without `agent` is compared with the agent stored, so it is
// answered 200 as it stands, never 409 "another payload ... use a new case id": that advice would have an integrator
// submit one support case twice, and the customer's refund decided twice. A body that differs in anything else is
// still 409.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { createApp } from '../../webhooks/app.js';
import { approvalBody, bearer, caseBody, rigSuite, tokenRegistry, TOKENS, uid } from './rig.js';
import type { DecisionsQueue } from '../../queues/decisions.js';

const rig = rigSuite();

async function approvalFor(paymentIntent: string): Promise<string> {
  const approval = approvalBody({ scope: `payment:${paymentIntent}`, max_uses: 5 });
  expect((await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(approval)).status).toBe(201);
  return String(approval.id);
}

/**
 * The app whose first case submission lets `first` in just before it goes to the decisions queue: another token's
 * request stored after this one read that no case was stored yet, the moment two submissions sent at once cross,
 * made certain rather than left to timing.
 */
function appWithSubmissionCrossing(first: () => Promise<void>) {
  let crossed = false;
  const decisions: DecisionsQueue = {
    ...rig.decisions,
    async submit(submission, submittedBy) {
      if (!crossed) {
        crossed = true;
        await first();
      }
      return rig.decisions.submit(submission, submittedBy);
    },
  };
  return createApp({ stores: rig.stores, effects: rig.queue, decisions, readFacts: async () => ({}), tokens: tokenRegistry(), logger: rig.stores.logger });
}

/** Sam's submission of `body`, answered 202: the case is stored under agent sam. */
const samSubmits = (body: Record<string, unknown>) => async () => {
  expect((await request(rig.app).post('/v1/cases').set(bearer(TOKENS.support)).send(body)).status).toBe(202);
};

describe('POST /v1/cases: one case sent at once by two support tokens', () => {
  it('the second, which read before the first was stored: 200 the same case, its agent as stored (sam)', async () => {
    const paymentIntent = `pi_${uid()}`;
    const body = caseBody({ payment_intent: paymentIntent, approval: await approvalFor(paymentIntent) });
    const caseId = String(body.case_id);
    const second = await request(appWithSubmissionCrossing(samSubmits(body))).post('/v1/cases').set(bearer(TOKENS.danaSupport)).send(body);
    expect(second.status, JSON.stringify(second.body)).toBe(200);
    expect(second.body).toMatchObject({ id: caseId, agent: 'sam', state: 'queued' });
    expect((await rig.stores.cases.get(caseId))?.submittedBy).toBe('sam');
  });

  it('the same, differing in its story: still 409 conflicting_payload, the stored case stands', async () => {
    const paymentIntent = `pi_${uid()}`;
    const body = caseBody({ payment_intent: paymentIntent, approval: await approvalFor(paymentIntent) });
    const caseId = String(body.case_id);
    const other = await request(appWithSubmissionCrossing(samSubmits(body))).post('/v1/cases').set(bearer(TOKENS.danaSupport)).send({ ...body, story: 'Make it $50 instead.' });
    expect([other.status, other.body.error?.code]).toEqual([409, 'conflicting_payload']);
    expect((await rig.stores.cases.get(caseId))?.submission).toMatchObject({ story: body.story, agent: 'sam' });
  });

  it('sent at once through one app: one 202 and one 200, never 409', async () => {
    const paymentIntent = `pi_${uid()}`;
    const body = caseBody({ payment_intent: paymentIntent, approval: await approvalFor(paymentIntent) });
    const answers = await Promise.all([TOKENS.support, TOKENS.danaSupport].map((token) => request(rig.app).post('/v1/cases').set(bearer(token)).send(body)));
    expect(answers.map((answer) => answer.status).sort()).toEqual([200, 202]);
  });
});
