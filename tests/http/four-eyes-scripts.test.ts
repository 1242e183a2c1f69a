// Rule: four eyes holds whatever the spelling. A proposer whose name reads as the approver's is the approver, with
// look-alikes from Latin's own IPA letters and small capitals (ɑ, ɡ, ᴀ, ɪ) and from names written wholly in Lisu,
// Cherokee, Coptic or Armenian; and a name that mixes Latin with another script's letters (bօb with an Armenian օ,
// ꓲvan with a Lisu ꓲ) is refused where it arrives, as an agent or as an approver, naming which letters are of which
// script, so a look-alike no table lists cannot pass as another person. Names in one script are taken as before.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { approvalBody, bearer, refundBody, rigSuite, TOKENS, uid } from './rig.js';

const rig = rigSuite();

async function grant(approver: string): Promise<{ pi: string; approval: string }> {
  const pi = `pi_${uid()}`;
  rig.target.world.set(`payment:${pi}`, { chargebacks: [], refunded_by_others: 0 });
  const approval = approvalBody({ scope: `payment:${pi}`, approver, four_eyes: true });
  const granted = await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.danaApprover)).send(approval);
  expect(granted.status, JSON.stringify(granted.body)).toBe(201);
  return { pi, approval: String(approval.id) };
}

async function propose(approver: string, agent: string): Promise<request.Response> {
  const { pi, approval } = await grant(approver);
  return request(rig.app).post('/v1/refunds').set(bearer(TOKENS.support)).send(refundBody({ payment_intent: pi, approval, agent }));
}

describe('four eyes across scripts', () => {
  it.each([
    ['alex', '\u0251lex', 'a Latin alpha'],
    ['gary', '\u0261ary', 'a Latin script g'],
    ['alex', '\u1d00lex', 'a Latin small capital A'],
    ['Ivan', '\u026avan', 'a Latin small capital I'],
    ['Ivan', '\u0269van', 'a Latin iota'],
    ['Ian', '\ua4f2\ua4ee\ua4e0', 'Lisu letters only'],
    ['Cale', '\u13df\u13aa\u13de\u13ac', 'Cherokee letters only'],
    ['Tom', '\u2ca7\u2c9f\u2c99', 'Coptic letters only'],
    ['Ugo', '\u057d\u0581\u0585', 'Armenian letters only'],
  ])('refuses the approver %s proposing as agent %s (%s)', async (approver, agent) => {
    const proposed = await propose(approver, agent);
    expect(proposed.status, JSON.stringify(proposed.body)).toBe(403);
    expect(proposed.body.error).toMatchObject({ code: 'four_eyes' });
  });

  it.each([
    ['bob', 'b\u0585b', 'Armenian: \u0585 (U+0585)'],
    ['Ivan', '\ua4f2van', 'Lisu: \ua4f2 (U+A4F2)'],
    ['oscar', '\u2c9fscar', 'Coptic: \u2c9f (U+2C9F)'],
    ['cole', '\uabafole', 'Cherokee: \uabaf (U+ABAF)'],
    ['nick', '\ua4e0ick', 'Lisu: \ua4e0 (U+A4E0)'],
    // A letter no look-alike table lists: refused for the mix all the same.
    ['alex', 'ale\u2d5d', 'Tifinagh: \u2d5d (U+2D5D)'],
  ])('refuses the approver %s\'s name mixed with another script, %s, as an agent before any rule is weighed (400, naming the letters)', async (approver, agent, named) => {
    const proposed = await propose(approver, agent);
    expect(proposed.status, JSON.stringify(proposed.body)).toBe(400);
    expect(proposed.body.error.code).toBe('invalid_request');
    expect(proposed.body.error.fields).toEqual([{ path: 'agent', message: expect.stringContaining(named) }]);
    expect(proposed.body.error.fields[0].message).toContain('Latin: ');
    expect(proposed.body.error.fields[0].message).toContain('write the name in the letters of one script');
  });

  it('refuses an approval whose approver mixes scripts, naming the letters (400), and grants nothing', async () => {
    const pi = `pi_${uid()}`;
    const approval = approvalBody({ scope: `payment:${pi}`, approver: 'b\u0585b', four_eyes: true });
    const granted = await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.danaApprover)).send(approval);
    expect(granted.status, JSON.stringify(granted.body)).toBe(400);
    expect(granted.body.error.fields).toEqual([{ path: 'approver', message: expect.stringContaining('Armenian: \u0585 (U+0585)') }]);
    expect((await request(rig.app).get(`/v1/approvals/${approval.id}`).set(bearer(TOKENS.danaApprover))).status).toBe(404);
  });

  it.each([
    ['José', 'Jose'],
    ['Łukasz', 'Zoë'],
    ['Strauß', 'Straus'],
    ['山田太郎', '鈴木はなこ'],
    ['Νίκος', 'Сергей'],
  ])('takes names in one script: the approver %s, and %s proposing under the approval', async (approver, agent) => {
    expect((await propose(approver, agent)).status).toBe(202);
  });

  it.each([
    ['Strauß', 'STRAUSS'],
    ['山田太郎', '山田太郎'],
    ['Zoë', 'ZOE\u0308'],
  ])('still refuses the approver %s proposing as %s', async (approver, agent) => {
    const proposed = await propose(approver, agent);
    expect(proposed.status, JSON.stringify(proposed.body)).toBe(403);
    expect(proposed.body.error).toMatchObject({ code: 'four_eyes' });
  });
});
