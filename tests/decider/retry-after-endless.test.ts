// Rule: README "Cases" 6: a case whose API asked to wait longer than its job's backoff waits as asked, up to 15 min. A
// `retry-after` too large for a number of milliseconds (1e308 seconds, or `retry-after-ms: Infinity`) asks for more
// than that: the decision ends at once with a finite wait (stated as "at least" a day, never "Infinity ms"), and its
// job waits the 15 min cap, not the plain 2 s backoff.
import { expect, it } from 'vitest';
import { decisionBackoff, MAX_ASKED_WAIT_MS } from '../../queues/decisions.js';
import { createAnthropicDecider } from '../../src/decider/decider.js';
import { refundCase } from './cases.js';
import { configFor, failure } from './decider-support.js';
import { replies, messagesServerSuite } from './messages-server.js';

const server = messagesServerSuite();
const config = configFor(() => server, { maxRetries: 2 });

it.each([
  ['retry-after: 1e308', { 'retry-after': '1e308' }],
  ['retry-after-ms: Infinity', { 'retry-after-ms': 'Infinity' }],
])('a 429 with %s: decider_unavailable at once with a wait of a day, and the job waits the 15 min cap', async (_name, headers) => {
  server.reset();
  server.script(replies.error(429, { headers }), replies.toolUse('get_payment', {}), replies.toolUse('issue_refund', { amount_cents: 2_000, reason: 'As approved.' }));
  const error = await failure(createAnthropicDecider(config()).decide(refundCase()));
  expect(server.received).toHaveLength(1);
  expect(error).toMatchObject({ code: 'decider_unavailable', apiStatus: 429, retryAfterMs: 86_400_000, attempts: 1 });
  expect(error.message).toContain("it asked to wait at least 86400000 ms, longer than one decision waits (60000 ms), so the case's job waits it out");
  expect(error.message).not.toContain('Infinity');
  expect(decisionBackoff(1, 2_000, error)).toBe(MAX_ASKED_WAIT_MS);
  server.reset();
});
