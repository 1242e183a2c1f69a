// Rule: what the decider reads from ANTHROPIC_BASE_URL is bounded, in the worker process that also sends money. An
// answer is read up to 64 KiB plus 32 bytes per INTERLOCK_MODEL_MAX_TOKENS token, never whole: a 200 larger than that
// is no message the model could have written (a proxy's, a gateway's or another service's) and is decider_unavailable,
// not taken as a decision, and not asked again by the SDK. The bound follows the setting; a failure's body is read up
// to 1 MiB and still judged as its status says.
import { afterEach, describe, expect, it } from 'vitest';
import { createAnthropicDecider } from '../../src/decider/decider.js';
import { refundCase } from './cases.js';
import { configFor, failure } from './decider-support.js';
import { replies, messagesServerSuite } from './messages-server.js';

const server = messagesServerSuite();
afterEach(() => server.reset());
const config = configFor(() => server, { timeoutMs: 20_000 });

/** Prose of about `bytes` bytes before an in-cap refund. */
const refundAfter = (bytes: number) => replies.toolUse('issue_refund', { amount_cents: 2_000, reason: 'Cracked jar.' }, { text: 'Refund approved. '.repeat(Math.ceil(bytes / 17)) });

describe('an answer larger than INTERLOCK_MODEL_MAX_TOKENS allows', () => {
  it('4 MB of prose before an issue_refund at 1024 tokens: decider_unavailable, not a decision, not retried by the SDK', async () => {
    server.script(replies.toolUse('get_payment', {}), refundAfter(4_000_000));
    const error = await failure(createAnthropicDecider(config({ maxRetries: 2 })).decide(refundCase()));
    expect(error).toMatchObject({ code: 'decider_unavailable', retryable: true, attempts: 1 });
    expect(error.message).toContain(`with more than ${64 * 1024 + 32 * 1024} bytes, more than a Messages API message holds at INTERLOCK_MODEL_MAX_TOKENS=1024`);
    expect(server.received).toHaveLength(2);
  });

  it('200 KB of prose is over the bound at 1024 tokens and within it at 8192: the bound follows the setting', async () => {
    server.script(replies.toolUse('get_payment', {}), refundAfter(200_000));
    expect((await failure(createAnthropicDecider(config()).decide(refundCase()))).code).toBe('decider_unavailable');
    server.reset();
    server.script(replies.toolUse('get_payment', {}), refundAfter(200_000));
    expect(await createAnthropicDecider(config({ maxTokens: 8_192 })).decide(refundCase())).toMatchObject({ action: 'refund', amountCents: 2_000 });
  });

  it('a 3 MB error page is read cut and still judged by its status (500 unavailable, 400 a refused call)', async () => {
    server.script(replies.error(500, { message: 'x'.repeat(3_000_000) }));
    const unavailable = await failure(createAnthropicDecider(config()).decide(refundCase()));
    expect(unavailable).toMatchObject({ code: 'decider_unavailable', apiStatus: 500 });
    expect(unavailable.message.length).toBeLessThan(1_500);
    server.script(replies.error(400, { message: 'x'.repeat(3_000_000) }));
    expect(await failure(createAnthropicDecider(config()).decide(refundCase()))).toMatchObject({ code: 'invalid_config', apiStatus: 400 });
  });
});
