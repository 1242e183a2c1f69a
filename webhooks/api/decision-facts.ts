// What every proposal made through the API goes through before it is recorded, whoever makes it (a support token's
// POST /v1/refunds, an approver's re-approval of an inbox item): the four-eyes rule of its approval, and the facts it
// is decided on, read now through the fact reader, bounded in time.
import { checkFourEyes, type Effect } from '../../src/interlock.js';
import { apiError } from './errors.js';
import type { ApiContext } from './context.js';
import type { Caller } from './tokens.js';

export function createDecisionChecks(context: ApiContext) {
  const { stores, premises } = context;
  return {
    /** The four-eyes rule (checkFourEyes in src/interlock.ts), for the proposer named in the body and the token. */
    async checkFourEyes(approvalId: string, agent: string, caller: Caller): Promise<void> {
      await checkFourEyes(stores, approvalId, [agent, caller.name]);
    },

    async readFacts(effect: Effect, effectId: string): Promise<Record<string, unknown>> {
      const names = premises[effect.kind];
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${context.factTimeoutMs} ms`)), context.factTimeoutMs);
      });
      try {
        const facts = await Promise.race([context.readFacts(effect, names, { effectId, timeoutMs: context.factTimeoutMs }), timeout]);
        // Only the facts asked for; one the reader does not know is recorded as null, as the gate re-reads it.
        return Object.fromEntries(names.map((name) => [name, Object.hasOwn(facts, name) && facts[name] !== undefined ? facts[name] : null]));
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        throw apiError('premise_read_failed', `Could not read the facts this ${effect.kind} is decided on (${message}); nothing was recorded. Retry when Stripe answers.`, { cause: error });
      } finally {
        clearTimeout(timer);
      }
    },
  };
}
