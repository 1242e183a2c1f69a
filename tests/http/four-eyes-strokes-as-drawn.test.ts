// Rule: four eyes compares names by two keys and refuses when either matches: their letters with case aside (Alex is
// ALEX) and their upright strokes as drawn, case kept for the strokes (the capital I, the small l, the digit 1, the
// Cyrillic palochka ӏ are one stroke: AIex, a1ex and the all-Cyrillic аӏех are alex, and lan is Ian). A capital L, which
// has a foot, and a small i, dotted or not, are no stroke, so people whose names differ by them (Ian and Lan, Iida and
// Lida, Elia and Ella, Ila and Lia, Lisa and Iisa) are two people and may propose under each other's approval. The
// four_eyes refusal names the recorded approver (or the granting token) that matched and the proposer as sent, never
// the proposer as the one who approved. The vertical line is refused in a name in its full-width form ｜ too (NFKC
// folds it to |).
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { mixedScriptProblem } from '../../src/core/text.js';
import { personKey, personStrokeKey, samePerson } from '../../src/interlock.js';
import { approvalBody, bearer, refundBody, rigSuite, TOKENS, uid } from './rig.js';

const rig = rigSuite();

async function grant(approver: string): Promise<{ pi: string; id: string; status: number }> {
  const pi = `pi_${uid()}`;
  rig.target.world.set(`payment:${pi}`, { chargebacks: [], refunded_by_others: 0 });
  const approval = approvalBody({ scope: `payment:${pi}`, approver, four_eyes: true });
  const granted = await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.danaApprover)).send(approval);
  return { pi, id: String(approval.id), status: granted.status };
}

async function propose(approver: string, agent: string): Promise<request.Response> {
  const { pi, id, status } = await grant(approver);
  expect(status).toBe(201);
  return request(rig.app).post('/v1/refunds').set(bearer(TOKENS.support)).send(refundBody({ payment_intent: pi, approval: id, agent }));
}

describe('two keys: letters with case aside, and upright strokes as drawn', () => {
  it.each([
    ['AIex', 'alex'],
    ['AIex', 'Alex'],
    ['a1ex', 'alex'],
    ['\u0430\u04cf\u0435\u0445', 'alex'],
    ['Ian', 'lan'],
    ['lisa', 'Iisa'],
    ['Alex', 'ALEX'],
    ['Jean|Luc', 'JeanLuc'],
  ])('takes %s and %s for one person', (one, other) => {
    expect(samePerson(one, other)).toBe(true);
    expect(samePerson(other, one)).toBe(true);
  });

  it.each([
    ['Iida', 'Lida'],
    ['Ian', 'Lan'],
    ['Elia', 'Ella'],
    ['Ila', 'Lia'],
    ['Lisa', 'Iisa'],
    ['AIex', 'ALEX'],
  ])('tells %s from %s: an L has a foot, an i is short', (one, other) => {
    expect(samePerson(one, other)).toBe(false);
    expect(personKey(one)).not.toBe(personKey(other));
    expect(personStrokeKey(one)).not.toBe(personStrokeKey(other));
  });
});

describe('four eyes by either key', () => {
  it.each([
    ['alex', 'AIex'],
    ['Alex', 'AIex'],
    ['alex', 'a1ex'],
    ['alex', '\u0430\u04cf\u0435\u0445'],
    ['lan', 'Ian'],
    ['Alex', 'ALEX'],
  ])('refuses the approver %s proposing as %s (403 four_eyes)', async (approver, agent) => {
    const proposed = await propose(approver, agent);
    expect(proposed.status, JSON.stringify(proposed.body)).toBe(403);
    expect(proposed.body.error).toMatchObject({ code: 'four_eyes' });
  });

  it.each([
    ['Iida', 'Lida'],
    ['Ian', 'Lan'],
    ['Elia', 'Ella'],
    ['Ila', 'Lia'],
    ['Lisa', 'Iisa'],
  ])('lets %s approve and %s propose (202)', async (approver, agent) => {
    const proposed = await propose(approver, agent);
    expect(proposed.status, JSON.stringify(proposed.body)).toBe(202);
  });
});

describe('the four_eyes refusal names who approved and who proposed', () => {
  it('names the recorded approver and the proposer as sent: approver lida, proposer Iida', async () => {
    const proposed = await propose('lida', 'Iida');
    expect(proposed.status, JSON.stringify(proposed.body)).toBe(403);
    expect(proposed.body.error.message).toMatch(/^Approval \S+ asks for four eyes and was approved by lida, whose name compares as the proposer Iida's, so Iida cannot propose under it\. Nothing was recorded; someone else must do this\.$/);
    expect(proposed.body.error.message).not.toContain('Iida approved');
  });

  it('names the approver once when the proposer spells the name as recorded', async () => {
    const proposed = await propose('alex', 'alex');
    expect(proposed.body.error.message).toMatch(/asks for four eyes and was approved by alex, so alex cannot propose under it\./);
  });

  it('names the granting token when it is the one that matched: granted by dana, proposed as Dana', async () => {
    const proposed = await propose('casey', 'Dana');
    expect(proposed.status, JSON.stringify(proposed.body)).toBe(403);
    expect(proposed.body.error.message).toContain("was granted by the token dana, whose name compares as the proposer Dana's, so Dana cannot propose under it");
  });
});

describe('a full-width vertical line in a person name', () => {
  it('is refused as | is, naming it by its code point', () => {
    expect(mixedScriptProblem('a\uff5cex')).toContain('\uff5c (U+FF5C), a vertical line');
    expect(mixedScriptProblem('a|ex')).toContain('holds |, a vertical line');
  });

  it('is refused in the agent (400), nothing proposed', async () => {
    const proposed = await propose('alex', 'a\uff5cex');
    expect(proposed.status, JSON.stringify(proposed.body)).toBe(400);
    expect(JSON.stringify(proposed.body)).toContain('vertical line');
  });

  it('is refused in the approver (400)', async () => {
    expect((await grant('a\uff5cex')).status).toBe(400);
  });
});
