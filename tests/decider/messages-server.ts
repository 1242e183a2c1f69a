// A local HTTP server that speaks the Messages API (POST /v1/messages) for the decider's tests: each request is
// answered with the next scripted reply, and every request is recorded as received. It also checks what the
// real API checks about a conversation (alternating roles, every tool_use answered by a tool_result with its id
// in the next turn, known tools only, each tool_use input an object and its id unique) and answers 400 where the API
// would, so a broken tool loop fails here instead of in production. Loopback only, no network.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll } from 'vitest';
import { startedLater } from '../support/started-later.js';

export type Received = { method: string; path: string; headers: IncomingHttpHeaders; body: RequestBody; at: number };

type Block = { type: string; [key: string]: unknown };
type Turn = { role: string; content: string | Block[] };
export type RequestBody = { model: string; max_tokens: number; system?: unknown; messages: Turn[]; tools?: { name: string; input_schema?: unknown }[]; tool_choice?: { type: string }; [key: string]: unknown };

type Headers = Record<string, string>;
export type Reply =
  | { kind: 'message'; message: Record<string, unknown>; delayMs?: number }
  | { kind: 'error'; status: number; errorType: string; message: string; headers?: Headers; delayMs?: number }
  | { kind: 'hang' }
  /** The headers of a 200, then part of the body: `stall` trickles a space now and then for ever, `lost` drops the connection short of the content-length sent, `ended` ends the body there. */
  | { kind: 'partial'; message: Record<string, unknown>; then: 'stall' | 'lost' | 'ended' };

const MODEL = 'claude-haiku-4-5-20251001';
let messageCount = 0;

function message(content: Block[], stopReason: string | null, extra: Record<string, unknown> = {}): Reply {
  messageCount += 1;
  return {
    kind: 'message',
    message: {
      id: `msg_test_${messageCount}`,
      type: 'message',
      role: 'assistant',
      model: MODEL,
      content,
      stop_reason: stopReason,
      stop_sequence: null,
      stop_details: null,
      container: null,
      diagnostics: null,
      usage: { input_tokens: 412, output_tokens: 38, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, service_tier: 'standard' },
      ...extra,
    },
  };
}

let toolUseCount = 0;
function toolUseBlock(name: string, input: unknown): Block {
  toolUseCount += 1;
  return { type: 'tool_use', id: `toolu_test_${toolUseCount}`, name, input, caller: { type: 'direct' } };
}

/** Scripted answers, one per HTTP request. */
export const replies = {
  /** A turn that calls one tool (stop_reason tool_use), with optional prose before the call. */
  toolUse(name: string, input: unknown, options: { text?: string; model?: string } = {}): Reply {
    const content: Block[] = options.text === undefined ? [] : [{ type: 'text', text: options.text, citations: null }];
    content.push(toolUseBlock(name, input));
    return message(content, 'tool_use', options.model === undefined ? {} : { model: options.model });
  },
  /** A turn that calls several tools at once. */
  toolUses(calls: { name: string; input: unknown }[]): Reply {
    return message(calls.map((call) => toolUseBlock(call.name, call.input)), 'tool_use');
  },
  /** Prose and no tool call (stop_reason end_turn). */
  text(text: string): Reply {
    return message([{ type: 'text', text, citations: null }], 'end_turn');
  },
  /** Cut off at max_tokens in the middle of a tool call. */
  maxTokens(): Reply {
    return message([toolUseBlock('issue_refund', { amount_cents: 2000 })], 'max_tokens');
  },
  refusal(): Reply {
    return message([{ type: 'text', text: '', citations: null }], 'refusal', { stop_details: { type: 'refusal', category: 'general_harms', explanation: 'The request was declined by a safety classifier.' } });
  },
  /** An API error in the API's own shape; `retryAfter` is the header's value in seconds. */
  error(status: number, options: { retryAfter?: string; headers?: Headers; message?: string } = {}): Reply {
    const errorType = status === 429 ? 'rate_limit_error' : status === 529 ? 'overloaded_error' : status === 401 ? 'authentication_error' : status >= 500 ? 'api_error' : 'invalid_request_error';
    const headers: Headers = { ...(options.retryAfter === undefined ? {} : { 'retry-after': options.retryAfter }), ...options.headers };
    return { kind: 'error', status, errorType, message: options.message ?? `scripted ${status}`, headers };
  },
  /** Answers `reply` only after `delayMs`; a client that gives up first never gets it. */
  slow(delayMs: number, reply: Reply): Reply {
    if (reply.kind === 'hang') return reply;
    if (reply.kind === 'partial') throw new Error('a partial answer starts at once');
    return { ...reply, delayMs };
  },
  /** Never answers; the client's timeout must end the request. */
  hang(): Reply {
    return { kind: 'hang' };
  },
  /** Sends the headers of a 200 and the first half of `reply`'s body, then `then` (see Reply). */
  partial(reply: Reply, then: 'stall' | 'lost' | 'ended'): Reply {
    if (reply.kind !== 'message') throw new Error('only a message answer can be cut');
    return { kind: 'partial', message: reply.message, then };
  },
};

export type MessagesServer = {
  url: string;
  received: Received[];
  /** Conversations the server refused as the API would, and requests that found no scripted reply. */
  problems: string[];
  script(...next: Reply[]): void;
  /** Scripted replies no request has taken yet. */
  unused(): number;
  reset(): void;
  close(): Promise<void>;
};

/** What the real API would refuse about a request, or an empty list. */
export function conversationProblems(body: RequestBody): string[] {
  const problems: string[] = [];
  if (typeof body.model !== 'string' || body.model === '') problems.push('model: must be a model id');
  if (!Number.isInteger(body.max_tokens) || body.max_tokens < 1) problems.push('max_tokens: must be a positive integer');
  if (!Array.isArray(body.messages) || body.messages.length === 0) return [...problems, 'messages: at least one message is required'];
  const toolNames = new Set((body.tools ?? []).map((tool) => tool.name));
  if (toolNames.size !== (body.tools ?? []).length) problems.push('tools: tool names must be unique');
  const blocks = (turn: Turn): Block[] => (typeof turn.content === 'string' ? [{ type: 'text', text: turn.content }] : turn.content);
  const idsSent = new Set<unknown>();
  body.messages.forEach((turn, index) => {
    const expected = index % 2 === 0 ? 'user' : 'assistant';
    if (turn.role !== expected) problems.push(`messages.${index}.role: roles must alternate, starting with user (got ${turn.role})`);
    if (turn.role !== 'assistant') return;
    const uses = blocks(turn).filter((block) => block.type === 'tool_use');
    for (const use of uses) if (!toolNames.has(String(use.name))) problems.push(`messages.${index}: tool_use of ${String(use.name)}, which is not in tools`);
    for (const use of uses) {
      if (typeof use.input !== 'object' || use.input === null || Array.isArray(use.input)) problems.push(`messages.${index}: tool_use.input: Input should be a valid dictionary`);
      if (idsSent.has(use.id)) problems.push(`messages.${index}: \`tool_use\` ids must be unique (${String(use.id)})`);
      idsSent.add(use.id);
    }
    const next = body.messages[index + 1];
    const resultIds = next === undefined ? [] : blocks(next).filter((block) => block.type === 'tool_result').map((block) => block.tool_use_id);
    for (const use of uses) {
      if (!resultIds.includes(use.id)) problems.push(`messages.${index + 1}: tool_use ids were found without tool_result blocks immediately after: ${String(use.id)}`);
    }
  });
  body.messages.forEach((turn, index) => {
    if (turn.role !== 'user') return;
    const previous = index > 0 ? body.messages[index - 1] : undefined;
    const useIds = previous === undefined ? [] : blocks(previous).filter((block) => block.type === 'tool_use').map((block) => block.id);
    for (const result of blocks(turn).filter((block) => block.type === 'tool_result')) {
      if (!useIds.includes(result.tool_use_id)) problems.push(`messages.${index}: unexpected tool_use_id ${String(result.tool_use_id)} in tool_result blocks; each tool_result must answer a tool_use of the previous message`);
    }
  });
  return problems;
}

export async function startMessagesServer(): Promise<MessagesServer> {
  let queue: Reply[] = [];
  const received: Received[] = [];
  const problems: string[] = [];
  let requestCount = 0;

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      requestCount += 1;
      const requestId = `req_test_${requestCount}`;
      const send = (status: number, payload: unknown, headers: Headers = {}) => {
        if (res.destroyed) return;
        res.writeHead(status, { 'content-type': 'application/json', 'request-id': requestId, ...headers });
        res.end(JSON.stringify(payload));
      };
      const apiError = (status: number, errorType: string, text: string, headers: Headers = {}) => send(status, { type: 'error', error: { type: errorType, message: text }, request_id: requestId }, headers);

      let body: RequestBody;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as RequestBody;
      } catch {
        problems.push(`request ${requestCount}: body is not JSON`);
        apiError(400, 'invalid_request_error', 'body is not JSON', { 'x-should-retry': 'false' });
        return;
      }
      received.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body, at: performance.now() });
      if (req.method !== 'POST' || req.url !== '/v1/messages') {
        problems.push(`request ${requestCount}: ${req.method} ${req.url} is not POST /v1/messages`);
        apiError(404, 'not_found_error', `${req.method} ${req.url} not found`, { 'x-should-retry': 'false' });
        return;
      }
      // API version 2026-10-21 takes the key as a bearer token; older versions sent x-api-key.
      const key = req.headers.authorization?.startsWith('Bearer ') ? req.headers.authorization.slice('Bearer '.length) : req.headers['x-api-key'];
      if (typeof key !== 'string' || key === '' || typeof req.headers['anthropic-version'] !== 'string') {
        problems.push(`request ${requestCount}: no API key (authorization or x-api-key) or no anthropic-version`);
        apiError(401, 'authentication_error', 'an API key is required', { 'x-should-retry': 'false' });
        return;
      }
      const refused = conversationProblems(body);
      if (refused.length > 0) {
        problems.push(...refused.map((problem) => `request ${requestCount}: ${problem}`));
        apiError(400, 'invalid_request_error', refused.join('; '), { 'x-should-retry': 'false' });
        return;
      }
      const reply = queue.shift();
      if (reply === undefined) {
        problems.push(`request ${requestCount}: no reply was scripted`);
        apiError(400, 'invalid_request_error', 'no reply was scripted for this request', { 'x-should-retry': 'false' });
        return;
      }
      if (reply.kind === 'hang') return;
      if (reply.kind === 'partial') {
        const whole = JSON.stringify(reply.message);
        const half = whole.slice(0, Math.floor(whole.length / 2));
        res.writeHead(200, { 'content-type': 'application/json', 'request-id': requestId, ...(reply.then === 'lost' ? { 'content-length': String(Buffer.byteLength(whole)) } : {}) });
        if (reply.then === 'ended') {
          res.end(half);
          return;
        }
        res.write(half);
        if (reply.then === 'lost') {
          setTimeout(() => res.socket?.destroy(), 20);
          return;
        }
        // JSON whitespace, so the body is never malformed, only never finished; each write keeps an idle timer alive.
        const trickle = setInterval(() => res.write(' '), 50);
        res.on('close', () => clearInterval(trickle));
        return;
      }
      const answer = () => (reply.kind === 'message' ? send(200, reply.message) : apiError(reply.status, reply.errorType, reply.message, reply.headers));
      if (reply.delayMs === undefined) {
        answer();
        return;
      }
      const timer = setTimeout(answer, reply.delayMs);
      // A client that gave up (its timeout) closes the connection; the late answer is then never written.
      res.on('close', () => clearTimeout(timer));
    });
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    problems,
    script(...next) {
      queue.push(...next);
    },
    unused() {
      return queue.length;
    },
    reset() {
      queue = [];
      received.length = 0;
      problems.length = 0;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
    },
  };
}

/** A suite's Messages server: started before its tests, closed after them. */
export function messagesServerSuite(): MessagesServer {
  let server: MessagesServer | undefined;
  beforeAll(async () => {
    server = await startMessagesServer();
  });
  afterAll(async () => {
    await server?.close();
  });
  return startedLater('Messages server', () => server);
}
