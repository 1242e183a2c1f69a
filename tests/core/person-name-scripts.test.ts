// Rule: four eyes holds whatever the spelling, in two layers. Every letter the look-alike table lists (Latin IPA
// letters and small capitals, Greek, Cyrillic, Armenian, Cherokee, Lisu, Coptic) reads as the Latin letter it is drawn
// as, in either case; and since no table is complete, a person's name that mixes scripts (Latin with Armenian, Lisu,
// Coptic, any other) is refused where it arrives, naming which letters are of which script. A name in one script
// (José, Zoë, Łukasz, Strauß, Νίκος, Сергей, 山田はなこ) and the usual CJK mixes are taken.
import { describe, expect, it } from 'vitest';
import { termsProblems } from '../../src/core/approval.js';
import { parseProposalAndEffect, ProposalError, proposalSchema, quickFields } from '../../src/core/proposal.js';
import { LATIN_LOOK_ALIKES, latinLookAlikes, mixedScriptProblem, personName } from '../../src/core/text.js';
import { personKey } from '../../src/interlock.js';

const LATIN_LETTER = /^\p{Script=Latin}$/u;

describe('the look-alike table', () => {
  const entries = Object.entries(LATIN_LOOK_ALIKES);

  it.each(entries)('reads %s as %s, as personKey meets it and in its capital too', (letter, latin) => {
    expect([...letter]).toHaveLength(1);
    expect(latin).toMatch(/^[a-z]$/);
    expect(latinLookAlikes(letter)).toBe(latin);
    // The key is the form a name holds once personKey has folded compatibility forms and case: otherwise it never fires.
    // personKey, the key by letters, reads every entry as its letter; the upright strokes are the other key's
    // (personStrokeKey, tests/http/four-eyes-bars.test.ts).
    expect(personKey(letter)).toBe(latin);
    expect(personKey(letter.toUpperCase())).toBe(latin);
  });

  it.each(entries)('takes a whole-script name with %s only when its script is Latin: the mix is refused', (letter) => {
    const mixed = `${letter}x`;
    if (LATIN_LETTER.test(letter)) expect(mixedScriptProblem(mixed)).toBeNull();
    else expect(mixedScriptProblem(mixed)).toContain(letter);
  });

  it.each([
    ['\u0251lex', 'alex'], ['\u0261ary', 'gary'], ['\u1d00lex', 'alex'], ['\u026avan', 'ivan'], ['\u0269van', 'ivan'], ['\ua647van', 'ivan'],
    ['b\u0585b', 'bob'], ['\ua4f2van', 'ivan'], ['\u2c9fscar', 'oscar'], ['\uabafole', 'cole'], ['\uabaeee', 'lee'], ['\ua4e0ick', 'nick'],
    ['\u13df\u13aa\u13de\u13ac', 'cale'], ['\ua4f2\ua4ee\ua4e0', 'ian'], ['\u2ca7\u2c9f\u2c99', 'tom'], ['\u03f2\u03bf\u03f2\u03bf', 'coco'], ['\u03f9\u039f\u03f9\u039f', 'coco'],
  ])('reads %s as %s', (name, latin) => {
    expect(personKey(name)).toBe(personKey(latin));
  });
});

describe('a person name in one script', () => {
  it.each(['alex', 'José', 'Jose\u0301', 'Zoë', 'Zoe\u0308', 'Łukasz', 'Strauß', "O'Brien", 'Anne-Marie 2', 'Νίκος', 'Сергей', 'مريم', 'יעל', '山田 太郎', '山田はなこ', 'ヤマダ・タロウ', '김민준', '金민준', '王ㄅ', 'Alex 李', 'Lee 김민준', '\u0251lex', '\ua4f2\ua4ee\ua4e0', '\u2ca7\u2c9f\u2c99'])(
    'takes %s',
    (name) => {
      expect(mixedScriptProblem(name)).toBeNull();
      expect(personName(200).safeParse(name).success).toBe(true);
    },
  );

  it.each([
    ['b\u0585b', 'Armenian: \u0585 (U+0585)', 'Latin: b'],
    ['\ua4f2van', 'Lisu: \ua4f2 (U+A4F2)', 'Latin: v a n'],
    ['\u2c9fscar', 'Coptic: \u2c9f (U+2C9F)', 'Latin: s c a r'],
    ['\uabafole', 'Cherokee: \uabaf (U+ABAF)', 'Latin: o l e'],
    ['\u0430lex', 'Cyrillic: \u0430 (U+0430)', 'Latin: l e x'],
    ['alex \u05d0', 'Hebrew: \u05d0 (U+05D0)', 'Latin: a l e x'],
    ['\u0391\u0392\u0413', 'Greek: \u0391 (U+0391) \u0392 (U+0392)', 'Cyrillic: \u0413 (U+0413)'],
    ['alex\ue000', 'Unknown: \ue000 (U+E000)', 'Latin: a l e x'],
  ])('refuses %s, naming each script\'s letters', (name, one, other) => {
    const problem = mixedScriptProblem(name);
    expect(problem).toContain('mixes letters of more than one script');
    expect(problem).toContain(one);
    expect(problem).toContain(other);
    expect(problem).toContain('write the name in the letters of one script');
    const parsed = personName(200).safeParse(name);
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues.map((issue) => issue.message)).toEqual([problem]);
  });

  // Changed with the rule on symbols: a modifier letter of no one script (script Common: ʹ ˈ ː ꜛ ꞈ, and 𐞁 which folds
  // to ː) is drawn as a mark, not as a letter of any name, and is refused as a symbol; the apostrophes among them
  // (ʻ ʼ ʾ ʿ) are taken.
  it('knows the script of every letter this runtime knows: a name of any one letter, twice, is taken, but a modifier letter of no script', () => {
    const refused: string[] = [];
    const symbols: string[] = [];
    for (let point = 0; point <= 0x10ffff; point += 1) {
      const letter = String.fromCodePoint(point);
      if (!/^\p{L}$/u.test(letter)) continue;
      const problem = mixedScriptProblem(`${letter}${letter}`);
      if (problem?.startsWith('holds ') === true && /^\p{Script_Extensions=Common}$/u.test(letter.normalize('NFKC'))) symbols.push(letter);
      else if (problem !== null) refused.push(`U+${point.toString(16).toUpperCase()}`);
    }
    expect(refused).toEqual([]);
    expect(symbols.every((letter) => /^\p{Lm}$/u.test(letter.normalize('NFKC')))).toBe(true);
    expect(symbols).toEqual(expect.arrayContaining(['\u02b9', '\u02c8', '\u02d0', '\ua788']));
    for (const apostrophe of ['\u02bb', '\u02bc', '\u02be', '\u02bf']) expect(mixedScriptProblem(`Ha${apostrophe}i`)).toBeNull();
  });
});

describe('where a person name arrives', () => {
  const good = { requestId: 'case-1', agent: 'support-bot', approval: 'ap_1', premises: { chargebacks: [], refunded_by_others: 0 }, effect: { kind: 'refund', paymentIntent: 'pi_1', amount: 2_000 } };
  const terms = { id: 'ap_1', approver: 'dana', capCents: 100, expiresAt: 1, maxUses: 1, scope: 'payment:pi_1' };

  it('refuses a proposal whose agent mixes scripts, naming the field; one read back from the journal is taken as recorded', () => {
    const input = { ...good, agent: 'b\u0585b' };
    expect(quickFields(input)).toBeNull();
    expect(proposalSchema.safeParse(input).success).toBe(false);
    try {
      parseProposalAndEffect(input);
      expect.unreachable('a mixed-script agent was taken');
    } catch (error) {
      expect(error).toBeInstanceOf(ProposalError);
      expect((error as ProposalError).fields).toEqual([expect.objectContaining({ path: 'agent', message: expect.stringContaining('Armenian') })]);
    }
    expect(parseProposalAndEffect(input, { recorded: true }).proposal.agent).toBe('b\u0585b');
    expect(parseProposalAndEffect({ ...good, agent: '\u0251lex' }).proposal.agent).toBe('\u0251lex');
  });

  it('refuses terms whose approver mixes scripts, and takes one in one script', () => {
    expect(termsProblems({ ...terms, approver: '\ua4f2van' })).toEqual([expect.stringMatching(/^approver mixes letters of more than one script \(Lisu: /)]);
    for (const approver of ['José', 'Łukasz', 'Strauß', 'Νίκος', '山田はなこ']) expect(termsProblems({ ...terms, approver })).toEqual([]);
  });
});
