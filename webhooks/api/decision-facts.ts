// What every proposal made through the API goes through before it is recorded, whoever makes it (a support token's
// POST /v1/refunds, an approver's re-approval of an inbox item): the four-eyes rule of its approval, and the facts it
// is decided on, read now through the fact reader, bounded in time.
import type { Effect } from '../../src/interlock.js';
import { apiError } from './errors.js';
import type { ApiContext } from './context.js';
import type { Caller } from './tokens.js';

export function createDecisionChecks(context: ApiContext) {
  const { stores, premises } = context;
  return {
    async checkFourEyes(approvalId: string, agent: string, caller: Caller): Promise<void> {
      const options = await context.approvalOptions.get(approvalId);
      if (!options?.four_eyes) return;
      const { snapshot } = await stores.approvals.describe(approvalId);
      const approvers = [snapshot?.approver, options.granted_by].filter((name): name is string => typeof name === 'string').map((name) => name.toLowerCase());
      const proposer = [agent, caller.name].find((name) => approvers.includes(name.toLowerCase()));
      if (proposer !== undefined) {
        throw apiError('four_eyes', `Approval ${approvalId} asks for four eyes and ${proposer} approved it, so ${proposer} cannot propose under it. Someone else must propose this.`);
      }
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
