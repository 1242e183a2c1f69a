// Rule (README, Cases step 6: a deviation's problem names sums in the currency the words use): a figure written in
// another currency than the case's is no units mix-up of the case's currency. "Refund 2000 JPY" beside 2000 on a usd
// payment is a sum in another currency (JPY), never "2000 in whole units, 200000 cents ($2000.00)": yen read as
// dollars would mislead the person reading the inbox item. A figure in the case's own currency still is a mix-up.
import { describe, expect, it } from 'vitest';
import { MODEL_DEVIATED } from '../../src/decider/decider.js';
import { creditCase, refundCase } from './cases.js';
import { configFor, decidedAfterLookup, judged } from './decider-support.js';
import { messagesServerSuite } from './messages-server.js';

const server = messagesServerSuite();
const config = configFor(() => server);

describe('a figure in another currency equal to the amount called', () => {
  it.each([
    ['refund', 2000, 'Refund 2000 JPY goodwill.', '$2000.00'],
    ['refund', 2000, 'Refund €2000 goodwill.', '$2000.00'],
    ['credit', 1000, 'Credit 1000 JPY', '$1000.00'],
  ])('%s %i beside "%s" names a sum in another currency, never %s', async (kind, amount, words, misread) => {
    const input = kind === 'refund' ? refundCase() : creditCase();
    const call = kind === 'refund' ? { amount_cents: amount, reason: words } : { amount_cents: amount, description: words };
    const { verdict, problems } = judged(await decidedAfterLookup(server, config, input, call), input);
    expect(verdict).toBe(MODEL_DEVIATED);
    expect(problems).toContain('a sum in another currency');
    expect(problems).not.toContain(misread);
    expect(problems).not.toContain('in whole units');
  });
});

describe('a figure in the case\'s own currency is still a units mix-up', () => {
  it.each(['Refunding 20.00 USD for the jar.', 'Goodwill refund of $20.00 for the jar.'])('refund 20 beside "%s"', async (reason) => {
    const input = refundCase();
    const { verdict, problems } = judged(await decidedAfterLookup(server, config, input, { amount_cents: 20, reason }), input);
    expect(verdict).toBe(MODEL_DEVIATED);
    expect(problems).toContain('names 20 in whole units, 2000 cents ($20.00)');
  });
});
