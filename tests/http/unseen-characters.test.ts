// A name or id that arrives holds no character a reader cannot see: a direction override (U+202E), a zero-width or
// other invisible character, a line separator. Such an identifier shows other text than what is recorded: on the
// page, in a terminal, in a receipt ("support" with an override reads as someone else; two request ids that differ
// by a zero-width space look like one request and are two refunds; U+2800, the blank Braille pattern, and U+FFFC are
// drawn as nothing though no invisible class holds them, and a no-break or other wide space is drawn as the plain space
// it is not). It is refused (400 invalid_request, naming the
// field and the code point) and nothing is recorded. Letters of any script, and visible symbols, are still names.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { showable } from '../../src/core/text.js';
import { approvalBody, bearer, caseBody, refundBody, rigSuite, TOKENS, uid } from './rig.js';

const rig = rigSuite();

async function paymentWithApproval(): Promise<{ paymentIntent: string; approval: string }> {
  const paymentIntent = `pi_${uid()}`;
  rig.target.world.set(`payment:${paymentIntent}`, { chargebacks: [], refunded_by_others: 0 });
  const approval = approvalBody({ scope: `payment:${paymentIntent}` });
  const granted = await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(approval);
  expect(granted.status, JSON.stringify(granted.body)).toBe(201);
  return { paymentIntent, approval: String(approval.id) };
}

describe('identifiers with characters nobody sees', () => {
  it('a refund whose agent, request id or model holds one is refused, naming the field and the character; nothing is recorded', async () => {
    const { paymentIntent, approval } = await paymentWithApproval();
    const before = await rig.effectCount();
    const cases: [Record<string, unknown>, string, string][] = [
      [{ agent: 'support\u202ebot' }, 'agent', 'U+202E'],
      [{ request_id: `r\u200b-${uid()}` }, 'request_id', 'U+200B'],
      [{ decision: { model: 'claude\u2066', text: 'refund it' } }, 'decision.model', 'U+2066'],
      [{ agent: 'sam\u2028ops' }, 'agent', 'U+2028'],
      [{ agent: 'sa\u00adm' }, 'agent', 'U+00AD'],
      [{ agent: '\u3164' }, 'agent', 'U+3164'],
      [{ request_id: `refund-${uid()}\u2800` }, 'request_id', 'U+2800'],
      [{ agent: 'alex\uFFFCsmith' }, 'agent', 'U+FFFC'],
      [{ agent: 'alex\u00A0smith' }, 'agent', 'U+00A0'],
      [{ request_id: `refund\u2008${uid()}` }, 'request_id', 'U+2008'],
      [{ agent: 'sam\u3000ops' }, 'agent', 'U+3000'],
    ];
    for (const [overrides, path, point] of cases) {
      const answer = await request(rig.app).post('/v1/refunds').set(bearer(TOKENS.support)).send(refundBody({ payment_intent: paymentIntent, approval, ...overrides }));
      expect(answer.status, `${path}: ${JSON.stringify(answer.body)}`).toBe(400);
      expect(answer.body.error.code).toBe('invalid_request');
      const field = (answer.body.error.fields as { path: string; message: string }[]).find((problem) => problem.message.includes(point));
      expect(field?.path, JSON.stringify(answer.body.error.fields)).toBe(path);
    }
    expect(await rig.effectCount()).toBe(before);
    // Letters of other scripts, accents and visible symbols are names like any other.
    const taken = await request(rig.app).post('/v1/refunds').set(bearer(TOKENS.support)).send(refundBody({ payment_intent: paymentIntent, approval, amount: 100, agent: 'Zoë 日本 ❤ bot', request_id: `réf-${uid()}` }));
    expect(taken.status, JSON.stringify(taken.body)).toBe(202);
  });

  it('an approval whose approver holds one is refused, and no approval exists', async () => {
    const blank = await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(approvalBody({ approver: 'alex\u2800' }));
    expect(blank.status, JSON.stringify(blank.body)).toBe(400);
    expect(blank.body.error.fields).toEqual([expect.objectContaining({ path: 'approver', message: expect.stringContaining('U+2800') })]);
    const body = approvalBody({ approver: 'dana\u202e' + 'anad' });
    const answer = await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.approver)).send(body);
    expect(answer.status, JSON.stringify(answer.body)).toBe(400);
    expect(answer.body.error.fields).toEqual([expect.objectContaining({ path: 'approver', message: expect.stringContaining('U+202E') })]);
    const read = await request(rig.app).get(`/v1/approvals/${String(body.id)}`).set(bearer(TOKENS.approver));
    expect(read.status).toBe(404);
  });

  it('a case whose agent holds one is refused, and nothing is queued', async () => {
    const { paymentIntent, approval } = await paymentWithApproval();
    const body = caseBody({ payment_intent: paymentIntent, approval, agent: 'sam\u200f' });
    const answer = await request(rig.app).post('/v1/cases').set(bearer(TOKENS.support)).send(body);
    expect(answer.status, JSON.stringify(answer.body)).toBe(400);
    expect(answer.body.error.fields).toEqual([expect.objectContaining({ path: 'agent', message: expect.stringContaining('U+200F') })]);
    expect(await rig.decisions.queue.getJobCounts('waiting', 'delayed', 'active', 'prioritized')).toEqual({ waiting: 0, delayed: 0, active: 0, prioritized: 0 });
  });

  it('a lookup by request id takes one as recorded: a request from before the rule can still be found', async () => {
    const answer = await request(rig.app).get('/v1/effects').query({ request: `r\u200b-${uid()}` }).set(bearer(TOKENS.auditor));
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body.data).toEqual([]);
  });
});

describe('a page shows what a reader cannot see as its escape', () => {
  // Rule: a value recorded before the intake rule (or from Stripe) that holds the blank Braille pattern is shown on a
  // page and in a terminal as its escape, so "alex\u2800" never reads as "alex".
  it('the blank Braille pattern is shown escaped, with or without line breaks kept', () => {
    expect(showable('alex\u2800')).toBe('alex\\u2800');
    expect(showable('alex\u2800\nsam', { lineBreaks: true })).toBe('alex\\u2800\nsam');
    expect(showable('alex\uFFFCsmith')).toBe('alex\\ufffcsmith');
  });
});
