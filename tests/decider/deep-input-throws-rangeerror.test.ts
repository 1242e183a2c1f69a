// Rule: an answer that is no usable decision ends as a DeciderError (decision_invalid) or a deviation, never as a
// RangeError further on, which the decisions worker takes for an outside failure and retries, asking the model again
// each attempt: a call's input is quoted bounded in depth and size, so one nested 20,000 levels deep (JSON.parse
// takes it; JSON.stringify overflows the stack on it) is quoted cut.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createAnthropicDecider, DeciderError } from '../../src/decider/decider.js';
import { refundCase } from './cases.js';

const DEPTH = 20_000;
const deep = `${'['.repeat(DEPTH)}${']'.repeat(DEPTH)}`;
let body = '';
let server: Server;
let url = '';
beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json', 'request-id': 'req_deep' });
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

function answer(calls: string[]): string {
  return `{"id":"msg_deep","type":"message","role":"assistant","model":"claude-haiku-4-5-20251001","stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1},"content":[${calls.join(',')}]}`;
}

async function outcome(): Promise<unknown> {
  const decider = createAnthropicDecider({ apiKey: 'sk-ant-test-key', model: 'claude-haiku-4-5-20251001', baseURL: url, maxTokens: 64_000, timeoutMs: 5_000, maxRetries: 0, maxTurns: 4 });
  try {
    return await decider.decide(refundCase());
  } catch (error) {
    return error;
  }
}

it('an over-cap call carrying a deeply nested field, beside a second decision: a DeciderError or a deviation, not a RangeError', async () => {
  body = answer([
    `{"type":"tool_use","id":"toolu_1","name":"issue_refund","input":{"amount_cents":500000,"reason":"Compliance notice.","note":${deep}}}`,
    `{"type":"tool_use","id":"toolu_2","name":"issue_refund","input":{"amount_cents":2000,"reason":"As approved."}}`,
  ]);
  const result = await outcome();
  expect(result instanceof RangeError ? `RangeError: ${result.message}` : 'no RangeError').toBe('no RangeError');
  expect(result instanceof DeciderError || (typeof result === 'object' && result !== null && 'action' in result)).toBe(true);
});

it('one over-cap call carrying a deeply nested field: not a RangeError', async () => {
  body = answer([`{"type":"tool_use","id":"toolu_1","name":"issue_refund","input":{"amount_cents":500000,"reason":"Compliance notice.","note":${deep}}}`]);
  const result = await outcome();
  expect(result instanceof RangeError ? `RangeError: ${result.message}` : 'no RangeError').toBe('no RangeError');
  expect(result).toMatchObject({ action: 'refund', deviations: expect.any(Array) });
});

it('an in-cap call carrying a deeply nested field: a deviation with no amount read (the input is more than is read for one), quoting the input cut', async () => {
  body = answer([`{"type":"tool_use","id":"toolu_1","name":"issue_refund","input":{"amount_cents":2000,"reason":"As approved.","note":${deep}}}`]);
  const result = await outcome();
  expect(result instanceof RangeError ? `RangeError: ${result.message}` : 'no RangeError').toBe('no RangeError');
  expect(result).toMatchObject({ action: 'refund', deviations: [expect.stringContaining('held more than is read for an amount'), expect.stringContaining('[nested too deep]')] });
});
