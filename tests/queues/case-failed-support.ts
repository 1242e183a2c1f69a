// What the case_failed inbox tests share: a refund case, a decider that answers with no decision, and a case's
// case_failed items.
import { caseEffectId } from '../../queues/decisions.js';
import { InterlockError, type CaseSubmission, type Decider, type InboxItem } from '../../src/interlock.js';
import type { CasesRig } from '../support/cases-rig.js';
import { uid } from '../http/rig.js';

/** A goodwill refund case on the payment under the approval, with a case id of its own. */
export function refundCase(paymentIntent: string, approval: string): CaseSubmission {
  return { caseId: `case-${uid()}`, kind: 'refund', subject: paymentIntent, incident: null, story: 'The blender arrived with a cracked jar; support approved a goodwill partial refund.', approval, agent: 'support-bot' };
}

/** A decider whose answer is no decision (decision_invalid, raised not retryable as the Anthropic decider raises it: the same case submitted again is decided afresh). */
export const noDecision: Decider = {
  name: 'anthropic',
  decide: async (input) => {
    throw new InterlockError('decision_invalid', `The model answered case ${input.caseId} with no tool call. Nothing was proposed; submit the case again (the same id and payload) to ask the model again.`, { retryable: false });
  },
};

/** Every case_failed item of the case, open and closed, oldest first. */
export async function caseFailedItems(rig: CasesRig, caseId: string): Promise<InboxItem[]> {
  const effect = caseEffectId(caseId);
  const [open, closed] = await Promise.all([rig.stores.inbox.list({ status: 'open', kind: 'case_failed', effect }, 100), rig.stores.inbox.list({ status: 'closed', kind: 'case_failed', effect }, 100)]);
  return [...open.data, ...closed.data].sort((a, b) => a.openedAt - b.openedAt);
}
