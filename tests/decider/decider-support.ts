// Shared wiring for the Anthropic decider's tests: its config pointed at the local Messages API server, and the
// DeciderError a decision that should fail fails with.
import { DeciderError, type DeciderConfig } from '../../src/decider/decider.js';
import type { MessagesServer } from './messages-server.js';

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
