// Rule: four eyes holds whatever the spelling: names that read the same to a person are the same person. A proposer
// named with Cyrillic or Greek letters drawn exactly as the approver's Latin ones (some of them, or all) is the
// approver; two spellings of one name that differ only in case stay one name; a name that reads otherwise is not. A
// name that mixes such letters with Latin ones is refused before four eyes is asked (400, one script per name:
// tests/http/four-eyes-scripts.test.ts); nothing is recorded either way.
import { describe, expect, it } from 'vitest';
import { personKey } from '../../src/interlock.js';
import { proposeUnderFourEyes, rigSuite } from './rig.js';

const rig = rigSuite();

const propose = (approver: string, agent: string) => proposeUnderFourEyes(rig, approver, agent);

describe('four eyes against look-alike letters', () => {
  it.each([
    ['coco', '\u0441\u043e\u0441\u043e', 'Cyrillic letters only'],
    ['Kim', '\u039a\u0399\u039c', 'Greek capitals only'],
  ])('refuses the approver %s proposing as agent %s (%s)', async (approver, agent) => {
    expect(personKey(agent)).toBe(personKey(approver));
    const proposed = await propose(approver, agent);
    expect(proposed.status, JSON.stringify(proposed.body)).toBe(403);
    expect(proposed.body.error).toMatchObject({ code: 'four_eyes' });
  });

  it.each([
    ['alex', '\u0430lex', 'a Cyrillic a'],
    ['alex', 'al\u0435x', 'a Cyrillic e'],
    ['bob', 'b\u03bfb', 'a Greek omicron'],
    ['alex', '\u0410L\u0415\u0425', 'Cyrillic capitals A, E and X among Latin'],
    ['Nick', '\u039dick', 'a Greek capital nu'],
  ])('refuses the approver %s proposing as agent %s (%s), a name mixing scripts, before four eyes', async (approver, agent) => {
    expect(personKey(agent)).toBe(personKey(approver));
    const proposed = await propose(approver, agent);
    expect(proposed.status, JSON.stringify(proposed.body)).toBe(400);
    expect(proposed.body.error).toMatchObject({ code: 'invalid_request' });
    expect(JSON.stringify(proposed.body.error)).toMatch(/agent/);
  });

  it.each([
    ['\u039d\u0399\u039a\u039f\u03a3', '\u03bd\u03b9\u03ba\u03bf\u03c3'],
    ['\u0422\u043e\u043c', '\u0442\u043e\u043c'],
  ])('still refuses the approver %s proposing as %s: one name in two cases', async (approver, agent) => {
    expect(personKey(agent)).toBe(personKey(approver));
    expect((await propose(approver, agent)).status).toBe(403);
  });

  it('lets a name that reads otherwise propose: a Greek alex is not alex', async () => {
    const agent = '\u03b1\u03bb\u03b5\u03be';
    expect(personKey(agent)).not.toBe(personKey('alex'));
    expect((await propose('alex', agent)).status).toBe(202);
  });
});
