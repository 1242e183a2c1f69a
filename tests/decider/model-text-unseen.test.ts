// Rule: the model's words never smuggle in characters a reader does not see (src/core/text.ts: U+202E "turns what
// follows around", U+200B "is a space of no width"): model text drops them, as it drops control characters. A credit's
// description is the model's one text that leaves the project: Stripe shows it to the customer in their balance
// history and the receipt signs it, so it is one line of characters a reader sees, and still a valid effect.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEffect } from '../../src/core/effects.js';
import { unseenCharacter } from '../../src/core/text.js';
import { checkDecision, cleanModelLine, cleanModelText, createAnthropicDecider, proposalFields, type AcceptedDecision, type Decision } from '../../src/decider/decider.js';
import { creditCase } from './cases.js';
import { configFor } from './decider-support.js';
import { replies, startMessagesServer, type MessagesServer } from './messages-server.js';

let server: MessagesServer;
beforeAll(async () => { server = await startMessagesServer(); });
afterAll(async () => { await server.close(); });
const config = configFor(() => server);

// Drawn by a bidi-aware renderer as "... final settlement, no further claims" (the tail reversed).
const OVERRIDDEN = 'Goodwill credit for INC-0efaf1 \u202Esmialc rehtruf on ,tnemelttes lanif\u202C\u200B';
// One of each kind core/text.ts names unseen: format (U+200B, U+2066, U+FEFF, a tag U+E0041), other default
// ignorable (U+3164), line and paragraph separators, the blank Braille pattern, the object replacement character.
const UNSEEN = ['\u200B', '\u2066', '\uFEFF', '\u{E0041}', '\u3164', '\u2028', '\u2029', '\u2800', '\uFFFC'];

describe('model text without the characters a reader does not see', () => {
  it('free text drops every unseen character and keeps tabs, line breaks, emoji and accents', () => {
    expect(cleanModelText(`a${UNSEEN.join('b')}c`, 200)).toBe(`a${'b'.repeat(UNSEEN.length - 1)}c`);
    expect(cleanModelText('Dear Zoë,\n\tyour refund \ud83d\ude00\r\nis on its way.', 200)).toBe('Dear Zoë,\n\tyour refund \ud83d\ude00\r\nis on its way.');
  });

  it('one line drops them too, and its line breaks and tabs become single spaces', () => {
    expect(cleanModelLine(`Credit\u200B for\r\n\tINC-1\u2028${UNSEEN.join('')} \u202Eok`, 200)).toBe('Credit for INC-1 ok');
  });

  it("a credit description the model wrote with a direction override reaches the effect as one line a reader sees, and the effect is valid", async () => {
    server.script(replies.toolUse('get_account', {}), replies.toolUse('issue_credit', { amount_cents: 1000, description: OVERRIDDEN }));
    const input = creditCase();
    const decision = await createAnthropicDecider(config()).decide(input);
    const check = checkDecision(decision, input.approval, input.kind, input);
    expect(check.verdict).toBe('accepted');
    const { effect } = proposalFields(check as AcceptedDecision, input);
    expect(effect).toMatchObject({ kind: 'credit', description: 'Goodwill credit for INC-0efaf1 smialc rehtruf on ,tnemelttes lanif' });
    expect(parseEffect(effect)).toEqual(effect);
  });

  it("any decider's credit description is cleaned when it becomes the effect: one line, nothing unseen", () => {
    const input = creditCase();
    const decision: Decision = { action: 'credit', amountCents: 1000, description: `Goodwill credit\nfor INC-0efaf1${UNSEEN.join('')}\u00AD.`, model: 'm', text: 't' };
    const { effect } = proposalFields({ verdict: 'accepted', decision }, input);
    const description = (effect as { description?: string }).description ?? '';
    expect(description).toBe('Goodwill credit for INC-0efaf1.');
    expect(unseenCharacter(description)).toBeNull();
    expect(parseEffect(effect)).toEqual(effect);
  });
});
