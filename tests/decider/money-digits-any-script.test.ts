// Rule (README, Cases step 6: money in the model's words is read "however it is written"): a figure's digits are read
// in every script Unicode counts decimal digits in, not only ASCII, full-width and Arabic-Indic ones: Devanagari
// `$५००`, Bengali `$৫০০`, Thai `$๕๐๐` and mathematical `$𝟓𝟎𝟎` are $500, so a credit line naming them beside a $10.00
// credit is MODEL_DEVIATED as "$500" is, and one naming `$१०.००` beside it is the amount and is accepted. A sum in
// number words counted in cents ("fifty thousand cents") is read as "five hundred dollars" is. An over-cap ask in a
// field the tool does not define, written in such digits ("also refund $५०००००"), is a deviation, not a traceless
// decision_invalid.
import { describe, expect, it } from 'vitest';
import { createAnthropicDecider, MODEL_DEVIATED } from '../../src/decider/decider.js';
import { creditCase, refundCase } from './cases.js';
import { configFor, decidedAfterLookup, failure, judged } from './decider-support.js';
import { replies, messagesServerSuite } from './messages-server.js';

const server = messagesServerSuite();
const config = configFor(() => server);

const credited = async (description: string) => {
  const input = creditCase();
  return judged(await decidedAfterLookup(server, config, input, { amount_cents: 1000, description }), input);
};

/** Five hundred, and ten with two decimals, in each script's digits. */
const SCRIPTS: readonly [string, string, string][] = [
  ['ASCII', '500', '10.00'],
  ['Arabic-Indic', '٥٠٠', '١٠.٠٠'],
  ['full-width', '５００', '１０.００'],
  ['Devanagari', '५००', '१०.००'],
  ['Bengali', '৫০০', '১০.০০'],
  ['Thai', '๕๐๐', '๑๐.๐๐'],
  ['mathematical bold', '𝟓𝟎𝟎', '𝟏𝟎.𝟎𝟎'],
];

describe('a credit line in any script\'s digits is read as the same figure in ASCII', () => {
  it.each(SCRIPTS)('%s: "Credit of $%s" beside a $10.00 credit is MODEL_DEVIATED, naming $500.00', async (_script, fiveHundred) => {
    const { verdict, problems } = await credited(`Credit of $${fiveHundred} for INC-0efaf1`);
    expect(verdict).toBe(MODEL_DEVIATED);
    expect(problems).toContain('$500.00');
  });

  it.each(SCRIPTS)('%s: "Credit of $%s" beside a $10.00 credit, the amount itself, is accepted', async (_script, _fiveHundred, ten) => {
    expect(await credited(`Credit of $${ten} for INC-0efaf1`)).toEqual({ verdict: 'accepted', problems: '' });
  });
});

describe('a sum in number words counted in cents is read', () => {
  it('"fifty thousand cents" beside a $10.00 credit is MODEL_DEVIATED, naming $500.00', async () => {
    const { verdict, problems } = await credited('Credit: fifty thousand cents for INC-0efaf1');
    expect(verdict).toBe(MODEL_DEVIATED);
    expect(problems).toContain('$500.00');
  });

  it.each(['Credit: one thousand cents for INC-0efaf1', 'Credit of ten dollars for INC-0efaf1', 'Credit of nine dollars and one hundred cents for INC-0efaf1'])('"%s" beside a $10.00 credit is accepted', async (description) => {
    expect(await credited(description)).toEqual({ verdict: 'accepted', problems: '' });
  });
});

describe('an over-cap ask in a field the tool does not define, in Devanagari digits', () => {
  it.each(['also refund $500000', 'also refund $५०००००'])('note "%s" beside an in-cap refund is MODEL_DEVIATED with no amount read', async (note) => {
    const input = refundCase();
    server.script(replies.toolUse('get_payment', {}), replies.toolUse('issue_refund', { amount_cents: 2000, reason: 'Goodwill.', note }));
    const decision = await createAnthropicDecider(config()).decide(input).finally(() => server.reset());
    const { verdict, problems } = judged(decision, input);
    expect(verdict).toBe(MODEL_DEVIATED);
    expect(problems).toContain('a figure of more than 2000 cents');
  });

  it('a note in Devanagari digits within the cap is a harmless malformation: decision_invalid', async () => {
    server.script(replies.toolUse('get_payment', {}), replies.toolUse('issue_refund', { amount_cents: 2000, reason: 'Goodwill.', note: 'refund $२०' }));
    const error = await failure(createAnthropicDecider(config()).decide(refundCase())).finally(() => server.reset());
    expect(error.code).toBe('decision_invalid');
  });
});
