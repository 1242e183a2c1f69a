// The facts a proposal made through the API is decided on, whoever makes it (a support token's POST /v1/refunds, an
// approver's re-approval of an inbox item): read now through the fact reader, bounded in time. (The four-eyes rule
// every such proposal also meets is checkFourEyes in effects-routes.ts.)
import type { Effect } from '../../src/interlock.js';
import { apiError } from './errors.js';
import type { ApiContext } from './context.js';

export function createDecisionChecks(context: ApiContext) {
  const { premises } = context;
  return {
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
