// Rule: the decider's tool loop sends the Messages API only requests it accepts. A lookup turn may hold a blank text
// block ("\n\n" before a tool_use is common) and the API refuses a request that sends one back ("text content blocks
// must contain non-whitespace text", 400), which the decider reads as invalid_config: the case would fail for good,
// blaming the configuration. The blank block is left out of the turn sent back.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAnthropicDecider, DeciderError, type DeciderConfig } from '../../src/decider/decider.js';
import { refundCase } from './cases.js';

type Block = { type: string; text?: unknown; [key: string]: unknown };
type Turn = { role: string; content: string | Block[] };

// A Messages API stand-in with the real API's rule on text blocks: turn 1 calls get_payment after a whitespace-only
// text block (as models do), turn 2 decides the approved refund, and any request holding an empty or whitespace-only
// text block is refused as the API refuses it.
let server: Server;
let url = '';
const seen: Turn[][] = [];
beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { messages: Turn[] };
      seen.push(body.messages);
      const send = (status: number, payload: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json', 'request-id': `req_${seen.length}`, ...(status === 400 ? { 'x-should-retry': 'false' } : {}) });
        res.end(JSON.stringify(payload));
      };
      const blank = body.messages.some((turn) => typeof turn.content !== 'string' && turn.content.some((block) => block.type === 'text' && (typeof block.text !== 'string' || block.text.trim() === '')));
      if (blank) {
        send(400, { type: 'error', error: { type: 'invalid_request_error', message: 'messages: text content blocks must contain non-whitespace text' } });
        return;
      }
      const message = (content: Block[]) => ({ id: `msg_${seen.length}`, type: 'message', role: 'assistant', model: 'claude-haiku-4-5-20251001', content, stop_reason: 'tool_use', stop_sequence: null, usage: { input_tokens: 10, output_tokens: 10 } });
      if (body.messages.length === 1) send(200, message([{ type: 'text', text: '\n\n' }, { type: 'tool_use', id: 'toolu_1', name: 'get_payment', input: {} }]));
      else send(200, message([{ type: 'tool_use', id: 'toolu_2', name: 'issue_refund', input: { amount_cents: 2000, reason: 'cracked jar, the approved goodwill refund' } }]));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

function config(): DeciderConfig & { apiKey: string } {
  return { apiKey: 'sk-ant-test-key', model: 'claude-haiku-4-5-20251001', baseURL: url, maxTokens: 1024, timeoutMs: 2_000, maxRetries: 0, maxTurns: 4 };
}

describe('a lookup turn whose answer carries a whitespace-only text block', () => {
  it('is sent back without that block, and the case is decided (not failed as invalid_config)', async () => {
    let outcome: unknown;
    try {
      outcome = await createAnthropicDecider(config()).decide(refundCase());
    } catch (error) {
      outcome = error instanceof DeciderError ? { code: error.code, message: error.message } : error;
    }
    expect(outcome).toMatchObject({ action: 'refund', amountCents: 2000 });
    // What was sent back as the assistant's turn holds no blank text block.
    const replayedTurn = seen[1]?.[1];
    expect(replayedTurn?.role).toBe('assistant');
    const blocks = typeof replayedTurn?.content === 'string' ? [] : (replayedTurn?.content ?? []);
    expect(blocks.filter((block) => block.type === 'text' && String(block.text).trim() === '')).toEqual([]);
  });
});
