// Rule: four eyes holds whatever the spelling: characters drawn as one upright stroke in the case they are written in
// (the capital I, the small l, the digit 1 and the letters drawn as them: the Cyrillic palochka ӏ Ӏ and capital І, the
// Greek capital Ι, the Lisu ꓲ, the Latin ǀ, and ǁ as two) are one stroke when names are compared (personStrokeKey,
// beside personKey, which compares letters with case aside: samePerson), so a proposer whose name differs from the
// approver's only in them ("AIex" with a capital i against Alex, the all-Cyrillic "аӏех" against alex) is the approver
// and is refused 403, nothing recorded. Only the keys fold them: the names recorded and shown are those sent, and a
// name with none of them keeps the key it had. The vertical line |, drawn as they are, is refused in a name (400,
// nothing recorded): as a letter it would part "Jean|Luc" from JeanLuc, and as punctuation, dropped, "a|ex" from alex.
// Changed twice: when the stroke key kept case (Ian and Lan two people), ALEX against АӀЕХ, lisa against ɪɪsa and Ían
// against Ĺan were told apart; the stroke key now reads the I and the i, the L and the l as one stroke in either case
// (tests/http/four-eyes-strokes-as-drawn.test.ts), so they are one person again.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { personKey, personStrokeKey, samePerson } from '../../src/interlock.js';
import { approvalBody, bearer, proposeUnderFourEyes, rigSuite, TOKENS, uid } from './rig.js';

const rig = rigSuite();

const propose = (approver: string, agent: string) => proposeUnderFourEyes(rig, approver, agent);

describe('the four-eyes keys: upright strokes are one stroke', () => {
  it.each([
    ['alex', '\u0430\u04cf\u0435\u0445', 'all Cyrillic, its palochka \u04cf drawn as l'],
    ['alex', '\u0410\u04c0\u0415\u0425', 'all Cyrillic capitals, the capital palochka against a small l'],
    ['Alex', 'AIex', 'a Latin capital i'],
    ['alex', 'a1ex', 'the digit one'],
    ['allen', 'a\u01c1en', 'the lateral click \u01c1, drawn as ll'],
    ['Ian', 'lan', 'i and l'],
    ['Bill', 'BiII', 'two capital i for ll'],
    ['lan', '\u0399\u0391\u039d', 'Greek capitals, iota first'],
    ['ivan', '\ua4f2van', 'a Lisu i'],
    ['ian', '\u2c93\u2c81\u2c9b', 'all Coptic'],
    ['iisa', '\u026a\u026asa', 'two Latin small capital i'],
    ['\u013aan', '\u00cdan', 'the same accent over a small l and a capital I'],
    ['ALEX', '\u0410\u04c0\u0415\u0425', 'all capitals, Latin against Cyrillic'],
    ['lisa', '\u026a\u026asa', 'two Latin small capital i against l and i'],
    ['\u00cdan', '\u0139an', 'the same accent over a capital I and a capital L'],
  ])('reads %s and %s as one person (%s)', (approver, agent) => {
    expect(samePerson(agent, approver)).toBe(true);
  });

  it.each([
    ['alex', 'aex'],
    ['ian', '\u00edan'],
    ['Ana', 'Ava'],
    ['al1', 'al2'],
  ])('still tells %s from %s', (one, other) => {
    expect(samePerson(one, other)).toBe(false);
  });

  it.each([
    ['Bob', 'bob'],
    ['Strau\u00df', 'strauss'],
    ['\u0141ukasz', '\u0142ukasz'],
    ['Zo\u00eb', 'zo\u00eb'],
  ])('keeps the key of %s, which holds no I, i, L, l or 1: %s, by both keys', (name, key) => {
    expect(personKey(name)).toBe(key);
    expect(personStrokeKey(name)).toBe(key);
  });
});

describe('four eyes against upright strokes', () => {
  it.each([
    ['alex', '\u0430\u04cf\u0435\u0445'],
    ['Alex', 'AIex'],
    ['AIex', 'Alex'],
    ['alex', 'a1ex'],
    ['allen', 'a\u01c1en'],
    ['Ivan', 'lvan'],
  ])('refuses the approver %s proposing as agent %s (403 four_eyes), naming the agent as sent', async (approver, agent) => {
    const proposed = await propose(approver, agent);
    expect(proposed.status, JSON.stringify(proposed.body)).toBe(403);
    expect(proposed.body.error).toMatchObject({ code: 'four_eyes' });
    expect(proposed.body.error.message).toContain(agent);
  });

  it.each([
    ['agent', 'alex', 'a|ex'],
    ['agent', 'JeanLuc', 'Jean|Luc'],
    ['approver', 'a|ex', 'alex'],
  ])('refuses a vertical line in the %s (400, nothing recorded): %s and %s', async (field, approver, agent) => {
    const answer = field === 'agent' ? await propose(approver, agent) : await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.danaApprover)).send(approvalBody({ scope: `payment:pi_${uid()}`, approver, four_eyes: true }));
    expect(answer.status, JSON.stringify(answer.body)).toBe(400);
    expect(JSON.stringify(answer.body)).toContain('vertical line');
  });

  it('lets a name that differs by more than a stroke propose: alec under alex', async () => {
    expect((await propose('alex', 'alec')).status).toBe(202);
  });
});
