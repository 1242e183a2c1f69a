// Rule: a money figure in a model call's own words that is past any exact sum (a credit's description naming
// `$1000000000000000000000000`, a refund's reason `$99999999999999999999999.00`) is still a deviation, named as a sum
// too large to read exactly beside the words as written, never stated as money in exponent form (`$1e+24`) or as
// another sum (`$1e+23` for 99999999999999999999999.00).
import { describe, expect, it } from 'vitest';
import { checkDecision, MODEL_DEVIATED } from '../../src/decider/decider.js';
import { creditCase, refundCase } from './cases.js';
import { configFor, decidedAfterLookup } from './decider-support.js';
import { messagesServerSuite } from './messages-server.js';

const server = messagesServerSuite();
const config = configFor(() => server);

describe('a model call whose words name a figure past any exact sum', () => {
  it('a credit description naming $1000000000000000000000000 is a deviation naming a sum too large to read', async () => {
    const base = creditCase();
    const input = creditCase({ approval: { ...base.approval, capCents: 200_000 } });
    const decision = await decidedAfterLookup(server, config, input, { amount_cents: 1_000, description: 'Outage credit of $1000000000000000000000000 for incident INC-0efaf1' });
    const check = checkDecision(decision, input.approval, input.kind, input);
    expect(check.verdict).toBe(MODEL_DEVIATED);
    const message = check.verdict === MODEL_DEVIATED ? check.message : '';
    expect(message).toContain('names another sum: a sum too large to read exactly ("Outage credit of $1000000000000000000000000 for incident INC-0efaf1")');
    expect(message).not.toMatch(/e\+\d/);
  });

  it('a refund reason naming $99999999999999999999999.00 is a deviation naming a sum too large to read', async () => {
    const input = refundCase();
    const decision = await decidedAfterLookup(server, config, input, { amount_cents: 1_000, reason: 'Partial refund; the order was $99999999999999999999999.00 in all' });
    const check = checkDecision(decision, input.approval, input.kind, input);
    expect(check.verdict).toBe(MODEL_DEVIATED);
    const message = check.verdict === MODEL_DEVIATED ? check.message : '';
    expect(message).toContain('name another: a sum too large to read exactly in its reason ("refund; the order was $99999999999999999999999.00 in all")');
    expect(message).not.toMatch(/e\+\d/);
  });

  it('a figure at the largest exact sum is still read as money', async () => {
    const input = refundCase();
    const decision = await decidedAfterLookup(server, config, input, { amount_cents: 1_000, reason: 'Partial refund; the order was $90071992547409.91 in all' });
    const check = checkDecision(decision, input.approval, input.kind, input);
    const message = check.verdict === MODEL_DEVIATED ? check.message : '';
    expect(message).toContain('name another: $90071992547409.91 in its reason');
  });
});
