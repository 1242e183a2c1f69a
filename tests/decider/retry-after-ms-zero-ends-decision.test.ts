// Rule: README "Cases" 6: a `retry-after` over 60 s is not slept out inside the decision but handed to the job's
// backoff. The SDK sleeps `retry-after-ms`, or `retry-after` when retry-after-ms reads as 0 or is no number; the
// decider takes the longer of both, so whatever header would have the SDK sleep over 60 s ends the decision at once
// (decider_unavailable, one request, carrying the wait) instead of holding the worker's slot asleep.
import { expect, it } from 'vitest';
import { createAnthropicDecider } from '../../src/decider/decider.js';
import { refundCase } from './cases.js';
import { configFor, failure, within } from './decider-support.js';
import { replies, messagesServerSuite } from './messages-server.js';

const server = messagesServerSuite();
const config = configFor(() => server, { maxRetries: 2 });

it.each([
  ['retry-after-ms: 0 (the SDK then reads retry-after)', { 'retry-after-ms': '0', 'retry-after': '3600' }],
  ['retry-after-ms: 1000 beside retry-after: 3600 (the longer one counts)', { 'retry-after-ms': '1000', 'retry-after': '3600' }],
])('a 429 with %s ends the decision at once, carrying the hour for the job', async (_name, headers) => {
  server.reset();
  server.script(replies.error(429, { headers }), replies.toolUse('get_payment', {}), replies.toolUse('issue_refund', { amount_cents: 2_000, reason: 'As approved.' }));
  const stop = new AbortController();
  try {
    const error = await within(10_000, failure(createAnthropicDecider(config()).decide(refundCase(), { signal: stop.signal })));
    expect(error).toMatchObject({ code: 'decider_unavailable', retryable: true, apiStatus: 429, retryAfterMs: 3_600_000, attempts: 1 });
    expect(server.received).toHaveLength(1);
    expect(error !== 'still waiting' && error.message).toContain("it asked to wait 3600000 ms, longer than one decision waits (60000 ms), so the case's job waits it out");
  } finally {
    stop.abort();
    server.reset();
  }
});
