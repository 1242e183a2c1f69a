// Rule: four eyes compares names by two keys and refuses when either matches: their letters with case aside (Alex is
// ALEX) and their upright strokes, where every letter drawn as one upright stroke in either of its cases (I and i, L
// and l, the digit 1, the Cyrillic palochka ӏ) is one stroke. The keys make one relation: a name is never one person
// with a second spelling and another with a third that the second is one person with. So AIex, ALEX, a1ex and the
// all-Cyrillic аӏех are alex, and Ian, Lan, lan and ian one name: people whose names differ only by those letters
// (Iida and Lida, Elia and Ella) may not propose under each other's four-eyes approval. Changed from a stroke key that
// kept case (Ian and Lan two people), under which an approver recorded as ALEX could propose as aIex. The four_eyes
// refusal names the recorded approver (or the granting token) that matched and the proposer as sent, never the
// proposer as the one who approved. A dot above on an i (the dotted capital İ folds to i and the dot; typed on a
// small i it is drawn as the i's own) is no letter: İlker is ilker. The vertical line is refused in a name in its full-width form ｜ too (NFKC folds
// it to |).
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

describe('two keys: letters with case aside, and upright strokes in either case', () => {
  it.each([
    ['AIex', 'alex'],
    ['AIex', 'Alex'],
    ['a1ex', 'alex'],
    ['\u0430\u04cf\u0435\u0445', 'alex'],
    ['Ian', 'lan'],
    ['lisa', 'Iisa'],
    ['Alex', 'ALEX'],
    ['Jean|Luc', 'JeanLuc'],
    ['AIex', 'ALEX'],
    ['a1ex', 'ALEX'],
    ['\u0430\u04cf\u0435\u0445', 'ALEX'],
    ['biII', 'BILL'],
    ['bi11', 'BILL'],
    ['Iida', 'Lida'],
    ['Ian', 'Lan'],
    ['Elia', 'Ella'],
    ['Ila', 'Lia'],
    ['Lisa', 'Iisa'],
    ['\u00edan', '\u0139an'],
    ['ilker', '\u0130lker'],
    ['ILKER', '\u0130LKER'],
    ['ilker', 'i\u0307lker'],
  ])('takes %s and %s for one person', (one, other) => {
    expect(samePerson(one, other)).toBe(true);
    expect(samePerson(other, one)).toBe(true);
  });

  it.each([
    ['alex', 'alec'],
    ['ian', '\u00edan'],
    ['\u0141ukasz', 'lukasz'],
    ['Ana', 'Ava'],
  ])('tells %s from %s: they differ by more than a stroke', (one, other) => {
    expect(samePerson(one, other)).toBe(false);
    expect(personKey(one)).not.toBe(personKey(other));
    expect(personStrokeKey(one)).not.toBe(personStrokeKey(other));
  });

  // Every spelling of a name that is one person with a second spelling is one person with every spelling the second
  // is one person with: the two keys make no pair that a third name joins (the gap an approver in capitals used).
  it('is one relation over names that differ by case and strokes', () => {
    const names = ['ALEX', 'Alex', 'alex', 'AIex', 'aIex', 'a1ex', 'A1EX', '\u0430\u04cf\u0435\u0445', '\u0410\u04c0\u0415\u0425', 'Ian', 'Lan', 'lan', 'ian', 'IAN', 'LAN', '\u00cdan', '\u00edan', '\u0139an', '\u013aan', 'BILL', 'bill', 'biII', 'bi11', 'Bi1l', 'ilker', 'ILKER', '\u0130lker', '\u0130LKER', 'i\u0307lker', '\u0131lker'];
    for (const a of names) for (const b of names) for (const c of names) {
      if (samePerson(a, b) && samePerson(b, c)) expect(samePerson(a, c), `${a} ~ ${b} ~ ${c}`).toBe(true);
    }
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
    ['ALEX', 'aIex'],
    ['ALEX', 'a1ex'],
    ['ALEX', '\u0430\u04cf\u0435\u0445'],
    ['BILL', 'biII'],
    ['Lan', 'Ian'],
    ['Ella', 'Elia'],
  ])('refuses the approver %s proposing as %s (403 four_eyes)', async (approver, agent) => {
    const proposed = await propose(approver, agent);
    expect(proposed.status, JSON.stringify(proposed.body)).toBe(403);
    expect(proposed.body.error).toMatchObject({ code: 'four_eyes' });
  });

  it.each([
    ['alex', 'alec'],
    ['ian', '\u00edan'],
    ['Ana', 'Ava'],
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
