// Shared wiring for the Anthropic decider's tests: its config pointed at the local Messages API server, and the
// DeciderError a decision that should fail fails with.
import { checkDecision, createAnthropicDecider, DeciderError, MODEL_DEVIATED, type DeciderConfig, type Decision, type DecisionCase } from '../../src/decider/decider.js';
import { replies, type MessagesServer } from './messages-server.js';

export type ServerDeciderConfig = DeciderConfig & { apiKey: string };

/**
 * The config a test file decides with against `server` (read at each call: the server starts in beforeAll):
 * Haiku, a test key, 1024 tokens, 2 s per attempt, no SDK retries, four turns. `defaults` are the file's changes to
 * that, a call's `overrides` one test's.
 */
export function configFor(server: () => MessagesServer, defaults: Partial<ServerDeciderConfig> = {}): (overrides?: Partial<ServerDeciderConfig>) => ServerDeciderConfig {
  return (overrides = {}) => ({ apiKey: 'sk-ant-test-key', model: 'claude-haiku-4-5-20251001', baseURL: server().url, maxTokens: 1024, timeoutMs: 2_000, maxRetries: 0, maxTurns: 4, ...defaults, ...overrides });
}

/** The DeciderError `promise` rejects with; any other error is rethrown, and a decision made fails the test. */
export async function failure(promise: Promise<unknown>): Promise<DeciderError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof DeciderError) return error;
    throw error;
  }
  throw new Error('the decision succeeded');
}

/** What `promise` settles to within `ms`, or 'still waiting': a decision that hangs fails its test then, not at the test timeout. */
export async function within<T>(ms: number, promise: Promise<T>): Promise<T | 'still waiting'> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<'still waiting'>((resolve) => (timer = setTimeout(() => resolve('still waiting'), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The decision the Anthropic decider (its config from `config`) makes on `input` when the model on `server` looks the
 * facts up, then makes `call` (issue_refund or issue_credit, by the case's kind) with `text` beside it.
 */
export async function decidedAfterLookup(server: MessagesServer, config: () => ServerDeciderConfig, input: DecisionCase, call: Record<string, unknown>, text?: string): Promise<Decision> {
  const lookup = input.kind === 'refund' ? 'get_payment' : 'get_account';
  const tool = input.kind === 'refund' ? 'issue_refund' : 'issue_credit';
  server.script(replies.toolUse(lookup, {}), replies.toolUse(tool, call, text === undefined ? {} : { text }));
  const decision = await createAnthropicDecider(config()).decide(input);
  server.reset();
  return decision;
}

/** checkDecision's verdict and problems for `decision` on `input`'s approval and facts. */
export function judged(decision: Decision, input: DecisionCase): { verdict: string; problems: string } {
  const check = checkDecision(decision, input.approval, input.kind, input);
  return { verdict: check.verdict, problems: check.verdict === MODEL_DEVIATED ? check.problems.join('; ') : '' };
}
