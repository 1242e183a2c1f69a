// Shared wiring for the tests of malformed money calls: the decider against the local Messages API server, asked once
// the facts were read, and its answer as checkDecision judges it (or the decider's error).
import { afterAll, afterEach, beforeAll } from 'vitest';
import { checkDecision } from '../../src/decider/check.js';
import { createAnthropicDecider, DeciderError, type Decision } from '../../src/decider/decider.js';
import { refundCase } from './cases.js';
import { configFor } from './decider-support.js';
import { replies, startMessagesServer, type MessagesServer, type Reply } from './messages-server.js';

export { replies };
let server: MessagesServer;
export function useServer() {
  beforeAll(async () => { server = await startMessagesServer(); });
  afterAll(async () => { await server.close(); });
  afterEach(() => server.reset());
}
const config = configFor(() => server);

export type Outcome = { verdict: string; amountCents: number | null; problems: string[] } | { code: string; message: string };

/** Reads the facts, then answers `answer`; the decision as checkDecision judges it, or the decider's error. */
export async function outcome(answer: Reply): Promise<Outcome> {
  server.reset();
  server.script(replies.toolUse('get_payment', {}), answer);
  const base = refundCase();
  try {
    const decision: Decision = await createAnthropicDecider(config()).decide(base);
    const check = checkDecision(decision, base.approval, base.kind, null);
    return { verdict: check.verdict, amountCents: decision.action === 'decline' ? null : decision.amountCents, problems: check.verdict === 'MODEL_DEVIATED' ? check.problems : [] };
  } catch (error) {
    if (error instanceof DeciderError) return { code: error.code, message: error.message };
    throw error;
  }
}
