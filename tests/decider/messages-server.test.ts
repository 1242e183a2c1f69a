// The test server refuses what the real Messages API refuses about a conversation, so a tool loop that sends a
// broken conversation fails in these tests. Checked here through the real SDK.
import Anthropic, { BadRequestError } from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { conversationProblems, replies, startMessagesServer, type MessagesServer, type RequestBody } from './messages-server.js';

let server: MessagesServer;
beforeAll(async () => {
  server = await startMessagesServer();
});
afterAll(async () => {
  await server.close();
});

const tools = [{ name: 'get_payment', input_schema: { type: 'object' as const, properties: {} } }];

describe('the Messages API test server', () => {
  it('answers with the scripted reply, in the API shape the SDK parses', async () => {
    server.script(replies.toolUse('get_payment', {}));
    const client = new Anthropic({ apiKey: 'k', baseURL: server.url, maxRetries: 0, logLevel: 'off' });
    const message = await client.messages.create({ model: 'claude-haiku-4-5-20251001', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }], tools });
    expect(message).toMatchObject({ type: 'message', role: 'assistant', stop_reason: 'tool_use', content: [{ type: 'tool_use', name: 'get_payment' }] });
    server.reset();
  });

  it('refuses a tool_use that the next turn does not answer with its tool_result, with a 400 the SDK does not retry', async () => {
    const client = new Anthropic({ apiKey: 'k', baseURL: server.url, maxRetries: 2, logLevel: 'off' });
    const request = client.messages.create({
      model: 'claude-haiku-4-5-20251001',
      max_tokens: 10,
      tools,
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_payment', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_other', content: '{}' }] },
      ],
    });
    await expect(request).rejects.toBeInstanceOf(BadRequestError);
    expect(server.received).toHaveLength(1);
    expect(server.problems.join('\n')).toContain('tool_use ids were found without tool_result blocks immediately after: toolu_1');
    server.reset();
  });

  it('names roles out of order, unknown tools and a stray tool_result', () => {
    const body = {
      model: 'm',
      max_tokens: 1,
      tools,
      messages: [
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_x' }] },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_2', name: 'send_money', input: {} }] },
        { role: 'assistant', content: 'again' },
      ],
    } as RequestBody;
    const problems = conversationProblems(body);
    expect(problems).toEqual(expect.arrayContaining([expect.stringContaining('roles must alternate'), expect.stringContaining('send_money, which is not in tools'), expect.stringContaining('unexpected tool_use_id toolu_x')]));
    expect(conversationProblems({ model: 'm', max_tokens: 1, messages: [{ role: 'user', content: 'x' }] })).toEqual([]);
  });
});
