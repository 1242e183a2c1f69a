// Rule: four eyes holds however the proposer's name is spelled, and a look-alike no table lists cannot stand in a
// name beside the letters it mimics. Besides letters of one script, a person's name holds only its signs (digits,
// spaces, ASCII punctuation, apostrophes, hyphens, middle dots, accents and emoji): any other character of no one
// script (Common) is a symbol, drawn as a letter as often as not (APL's ⍺ ⍳ ⍴, the estimated sign ℮), and is refused
// where it arrives, naming it. Japanese, Chinese and Korean letters go with Latin only as words of their own, so a Han
// 〇 (U+3007) is not an o inside "b〇b". The name is read with compatibility forms folded (NFKC), as personKey reads it.
// Names people have (Vietnamese, Turkish, O'Brien, Anne-Marie, Hawaiian ʻokina, digits, Japanese, Korean, Chinese with
// ·, Arabic, Hebrew, Thai, emoji) are taken as before.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { mixedScriptProblem, personName } from '../../src/core/text.js';
import { approvalBody, bearer, proposeUnderFourEyes, rigSuite, TOKENS, uid } from './rig.js';

const rig = rigSuite();

const propose = (approver: string, agent: string) => proposeUnderFourEyes(rig, approver, agent);

const SYMBOL_LOOK_ALIKES = [
  ['alex', '\u237alex', '\u237a (U+237A)'],
  ['steve', 'stev\u212e', '\u212e (U+212E)'],
  ['kim', 'k\u2373m', '\u2373 (U+2373)'],
  ['pat', '\u2374at', '\u2374 (U+2374)'],
] as const;

describe('a person name with a symbol of no script', () => {
  it.each(SYMBOL_LOOK_ALIKES)('refuses the approver %s proposing as %s: 400 naming the symbol, nothing recorded', async (approver, agent, named) => {
    const proposed = await propose(approver, agent);
    expect(proposed.status, JSON.stringify(proposed.body)).toBe(400);
    expect(proposed.body.error.code).toBe('invalid_request');
    expect(proposed.body.error.fields).toEqual([{ path: 'agent', message: expect.stringContaining(`holds ${named}`) }]);
    expect(proposed.body.error.fields[0].message).toContain('a name is letters of one script with digits, spaces');
  });

  it('refuses an approval whose approver holds one (400) and grants nothing', async () => {
    const approval = approvalBody({ scope: `payment:pi_${uid()}`, approver: '\u237alex', four_eyes: true });
    const granted = await request(rig.app).post('/v1/approvals').set(bearer(TOKENS.danaApprover)).send(approval);
    expect(granted.status, JSON.stringify(granted.body)).toBe(400);
    expect(granted.body.error.fields).toEqual([{ path: 'approver', message: expect.stringContaining('holds \u237a (U+237A)') }]);
    expect((await request(rig.app).get(`/v1/approvals/${approval.id}`).set(bearer(TOKENS.danaApprover))).status).toBe(404);
  });

  it.each([
    ['a\u2502ex', '\u2502 (U+2502)'], // box drawing, drawn as l
    ['\u00a9ole', '\u00a9 (U+00A9)'], // the copyright sign, an emoji by its property but drawn as a c
    ['b\u{1f17e}b', '\u{1f17e} (U+1F17E)'], // a letter in a square
    ['\u2202an', '\u2202 (U+2202)'], // the partial differential, drawn as a d
    ['\u02c8 \u02d0', '\u02c8 (U+02C8), \u02d0 (U+02D0)'], // modifier letters of no script (IPA stress and length)
  ])('refuses %s, naming %s', (name, named) => {
    expect(mixedScriptProblem(name)).toContain(`holds ${named}`);
    expect(personName(200).safeParse(name).success).toBe(false);
  });

  it('reads a compatibility form as personKey does: a mathematical alex is Latin, and beside a Tifinagh letter a mix', () => {
    expect(mixedScriptProblem('\u{1d41a}\u{1d425}\u{1d41e}\u{1d431}')).toBeNull();
    expect(mixedScriptProblem('\uff41\uff4c\uff45\uff58 \uff10\uff17')).toBeNull();
    expect(mixedScriptProblem('\u{1d41a}\u{1d425}\u{1d41e}\u2d5d')).toContain('Tifinagh: \u2d5d (U+2D5D)');
  });
});

describe('Japanese, Chinese and Korean letters beside Latin', () => {
  it('refuses the approver bob proposing as b〇b (a Han ideographic zero inside a Latin word): 400 naming the letters', async () => {
    const proposed = await propose('bob', 'b\u3007b');
    expect(proposed.status, JSON.stringify(proposed.body)).toBe(400);
    expect(proposed.body.error.fields).toEqual([{ path: 'agent', message: expect.stringContaining('Han: \u3007 (U+3007)') }]);
    expect(proposed.body.error.fields[0].message).toContain('only as words of their own');
  });

  it.each(['l\u4e28e', 'a\u4e28ex', 'Alex\u674e', 'b\u3147b', '\u30ed\u30fcb'])('refuses %s, Latin and CJK in one word', (name) => {
    expect(mixedScriptProblem(name)).toContain('only as words of their own');
  });

  it.each(['Alex 李', 'Lee 김민준', 'Zoë 日本 ❤ bot', '山田はなこ', '金민준', '王ㄅ', '李〇'])('takes %s', (name) => {
    expect(mixedScriptProblem(name)).toBeNull();
  });
});

describe('names people have', () => {
  it.each([
    'Nguyễn Thị Minh Khai', // Vietnamese
    'Işıl Yıldırım', // Turkish dotless ı
    "O'Brien",
    'O\u2019Brien',
    'Anne-Marie',
    'Anne\u2010Marie',
    'Kalani\u02bbōpu\u02bbu', // Hawaiian ʻokina (U+02BB, script Common)
    'Sa\u02bfid',
    '12345',
    'support-bot',
    'dana@example.com',
    'ops_team.2',
    'ヤマダ・タロウ',
    'キーラ',
    '山田 太郎',
    '김민준',
    '米歇尔·福柯', // Chinese with the middle dot
    'محمد',
    'יעל',
    'สมชาย',
    'Νίκος',
    'Сергей',
    'alex 👍🏽',
    'José',
    'Jose\u0301',
  ])('takes %s', (name) => {
    expect(mixedScriptProblem(name)).toBeNull();
    expect(personName(200).safeParse(name).success).toBe(true);
  });

  it.each([
    ['Kalani\u02bbōpu\u02bbu', 'Kalani\u02bbōpu\u02bbu'],
    ['米歇尔·福柯', '米歇尔·福柯'],
  ])('takes %s as an approver and still refuses it proposing as %s (403)', async (approver, agent) => {
    const proposed = await propose(approver, agent);
    expect(proposed.status, JSON.stringify(proposed.body)).toBe(403);
    expect(proposed.body.error).toMatchObject({ code: 'four_eyes' });
  });
});
