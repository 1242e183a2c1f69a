// Support cases: a case (the payment or customer, the story, the approval) goes to the decisions queue, the decider
// decides within the approval, and an accepted decision is proposed through the gate under the request id
// `case:<case_id>`. POST answers 202 queued, 200 for the same case with the same payload (as it stands), 409 for
// another payload under a taken case id, or for a new case under an approval revoked or expired; `?wait=` holds the answer until the case is decided and, once proposed,
// until its effect settles, at most 30 s in all.
import { caseFailureItemId, caseScope, caseSubmissionOf, InterlockError, isFinalCase, RULES_MODEL, type CaseRecord, type CaseSubmission, type Entry, type InboxItem, type Stores } from '../../src/interlock.js';
import { detailOf, linkFor, summaryOf, type LinkReader } from './effect-view.js';
import { createDecisionChecks } from './decision-facts.js';
import { apiError, outcomeNotKnown } from './errors.js';
import { hangUpOf, route, signedIn, type Route } from './route.js';
import { bodyErrors, caseAnswer, caseBody, caseIdParam, errorAnswer, proposeQuery, redisErrors } from './schemas.js';
import type { ApiContext } from './context.js';

const iso = (ms: number) => new Date(ms).toISOString();

const OUTCOME_OF_STATE: Partial<Record<CaseRecord['status']['state'], string>> = { declined: 'DECLINED', deviated: 'MODEL_DEVIATED' };

/** How many re-approvals a case follows (a re-approved effect refused again may itself be re-approved). */
const MAX_REAPPROVALS = 8;

/** An effect of the case as it stands, with what became of the money (as GET /v1/effects/:id answers it). */
async function effectAsItStands(stores: Stores, effectId: string, reader: LinkReader) {
  const partition = await stores.journal.partitionOf(effectId);
  const entries = partition === null ? [] : await stores.journal.entries(partition, effectId);
  if (partition === null || entries.length === 0) return null;
  const summary = summaryOf(effectId, partition, entries, stores.config.creditCurrency, reader);
  const detail = detailOf(summary, entries, await stores.journal.receipt(effectId), stores.publicKeys);
  const view = {
    effect_id: summary.id,
    state: summary.state,
    outcome: summary.outcome,
    sentence: detail.sentence,
    reason: summary.reason,
    amount: summary.amount,
    final_money: detail.final_money,
    answer: detail.answer,
    answer_from: detail.answer_from,
    answer_matches_final_money: detail.answer_matches_final_money,
    exposure: detail.exposure,
    links: summary.links,
  };
  return { view, entries };
}

/**
 * The inbox item of a failed case's failure (case_failed, named by when the failure was written), or null when it is
 * not open yet (the decisions worker opens it once the run that failed the case has completed, a moment after the case
 * reads failed; a case failed before failures opened items has none).
 */
async function failureItemOf(stores: Stores, record: CaseRecord): Promise<string | null> {
  const { status } = record;
  if (status.state !== 'failed' || status.effectId !== null) return null;
  const id = caseFailureItemId(record.submission.caseId, status.updatedAt);
  return (await stores.inbox.get(id)) === null ? null : id;
}

type CaseEffect = NonNullable<Awaited<ReturnType<typeof effectAsItStands>>>['view'];

/**
 * The inbox item an effect's outcome opens (core/inbox.ts INBOX_OUTCOMES: a refusal at recovery or on a stale premise,
 * AMBIGUOUS, a re-approval refused under its approval or the caps), looked for on the effect a case answers by.
 */
const ITEM_OF_OUTCOME: Partial<Record<string, string>> = {
  AMBIGUOUS: 'ambiguous',
  'REFUSED:stale_premise': 'stale_premise',
  'REFUSED:stale_premise_at_recovery': 'stale_premise_at_recovery',
  'REFUSED:lease_at_recovery': 'lease_at_recovery',
  'REFUSED:lease': 'reapproval_refused',
  'REFUSED:over_cap': 'reapproval_refused',
};

/**
 * The open inbox item of the effect a case answers by (the one its outcome opens, or an exposure: money that went out
 * on a payment charged back since), or null when none is open: a person acts on the case's money there.
 */
async function openItemOf(stores: Stores, effect: CaseEffect): Promise<InboxItem | null> {
  const kind = effect.outcome === null ? undefined : ITEM_OF_OUTCOME[effect.outcome];
  const ids = [...(kind === undefined ? [] : [`${kind}:${effect.effect_id}`]), `exposure:${effect.effect_id}`];
  for (const id of ids) {
    const item = await stores.inbox.get(id);
    if (item?.status === 'open') return item;
  }
  return null;
}

const ACTION_TEXT: Record<string, string> = { reapprove: 're-approve it under a live approval', resolve: 'record what Stripe shows of it', dismiss: 'dismiss it' };

/**
 * What a person may do about the case's money through its open inbox item. A credit's item whose changes show its
 * incident compensated since the decision (billing's SLA credit) offers no re-approval that can send: the credit target
 * credits an incident once, and the inbox refuses the re-approval on those facts (src/inbox/actions.ts).
 */
function itemSentence(item: InboxItem): string {
  const compensated = item.subject.startsWith('customer:') && item.actions.includes('reapprove') && item.changes.some((change) => change.field === 'incident_compensation' && typeof change.now === 'number' && change.now > 0);
  if (compensated) {
    return ` Inbox item ${item.id} is open on it: its incident was compensated since the decision, and Interlock credits an incident once, so a re-approval there is refused; if the customer is still owed money, a person credits the remainder by hand in the Stripe Dashboard and dismisses the item with a note (GET /v1/inbox/${item.id}).`;
  }
  const actions = item.actions.map((action) => ACTION_TEXT[action] ?? action);
  const may = actions.length === 0 ? 'read it' : actions.length === 1 ? (actions[0] ?? '') : `${actions.slice(0, -1).join(', ')} or ${actions.at(-1) ?? ''}`;
  return ` Inbox item ${item.id} is open on it: a person may ${may} there (GET /v1/inbox/${item.id}).`;
}

/**
 * The outcomes that end a case's own effect refused under its approval or the caps with the case's request id spent:
 * the same case submitted again is answered as it stands, so the money, if still owed, goes under a new case id.
 */
const SPENT_BY: Partial<Record<string, string>> = {
  'REFUSED:lease': 'a new approval that covers it (or one with room left) is granted',
  'REFUSED:over_cap': 'the shared cap its reason names lets it move (npx interlock caps set <subject> <cents>), or a new approval with room is granted',
};

function spentSentence(record: CaseRecord, outcome: string | null): string {
  const then = outcome === null ? undefined : SPENT_BY[outcome];
  if (then === undefined) return '';
  const { caseId } = record.submission;
  return ` Case ${caseId} is spent: submitted again it is answered as it stands. If the customer is still owed money, once ${then}, submit the case again under a new case id.`;
}

/**
 * The reason of a decline the rules wrote (the rules decider's, or the worker's for an approval no longer live): its
 * text is `rules: <why declined>. <reason>`, the reason naming the fact and what a person does next. Null for a model's.
 */
function rulesDeclineReason(record: CaseRecord): string | null {
  const decision = record.status.decision;
  if (decision === null || decision.model !== RULES_MODEL) return null;
  const head = `${RULES_MODEL}: declined`;
  const end = decision.text.startsWith(head) ? decision.text.indexOf('. ', head.length) : -1;
  return end === -1 ? null : decision.text.slice(end + 2);
}

/** The re-approval a person recorded on the effect (one refused payload is re-approved once), or null. */
function reapprovalOf(entries: readonly Entry[]) {
  for (const entry of entries) if (entry.kind === 'RESOLVED' && entry.action === 'reapprove' && entry.reapproval !== null) return { ...entry, reapproval: entry.reapproval };
  return null;
}

function effectSentence(effect: CaseEffect): string {
  return effect.sentence;
}

/** Who dismissed the effect's inbox item `item` and why, or null when nobody did. */
function dismissalOf(entries: readonly Entry[], item: string): { by: string; note: string } | null {
  for (const entry of entries) if (entry.kind === 'RESOLVED' && entry.item === item && entry.action === 'dismiss') return { by: entry.by.name, note: entry.note };
  return null;
}

type Followed = { item: string; approval: string; by: string; at: string; request_id: string; effect_id: string; effect: CaseEffect | null };

function reapprovalSentence(followed: readonly Followed[]): string {
  return followed
    .map((hop) => ` ${hop.by} re-approved it under ${hop.approval} (inbox item ${hop.item}) as effect ${hop.effect_id}: ${hop.effect === null ? 'not recorded yet (the worker\'s recovery pass proposes it).' : effectSentence(hop.effect)}`)
    .join('');
}

function caseSentence(record: CaseRecord, effect: CaseEffect | null, followed: readonly Followed[], dismissed: { by: string; note: string } | null): string {
  const { status } = record;
  switch (status.state) {
    case 'queued':
      return status.error === null ? 'Queued for the decider.' : `Queued again: the last attempt failed (${status.error.code}): ${status.error.message}`;
    case 'deciding':
      return 'The decider is reading the facts and deciding.';
    case 'declined': {
      const reason = rulesDeclineReason(record);
      return reason === null ? 'The decider declined: nothing was proposed or sent. Its text says which fact stopped it.' : `Declined: ${reason}`;
    }
    case 'deviated':
      if (followed.length > 0 && status.effectId !== null) return `MODEL_DEVIATED: ${status.problems.join('; ')}. Its decision was recorded refused on effect ${status.effectId};${reapprovalSentence(followed)}`;
      if (dismissed !== null && status.effectId !== null) return `MODEL_DEVIATED: ${status.problems.join('; ')}. Nothing was sent; its decision is recorded refused on effect ${status.effectId}, and ${dismissed.by} dismissed inbox item model_deviated:${status.effectId}: ${JSON.stringify(dismissed.note)}.`;
      return `MODEL_DEVIATED: ${status.problems.join('; ')}. Nothing was sent; ${status.effectId === null ? 'a person must decide this case' : `its decision is recorded refused on effect ${status.effectId}, and inbox item model_deviated:${status.effectId} asks a person to re-approve the amount the model asked for or dismiss it (only to dismiss it when the model chose another kind of money than the case asks for: its item says so)`}.`;
    case 'failed':
      return status.error?.message ?? 'The case could not be decided; nothing was proposed.';
    case 'proposed':
      return effect === null ? 'Proposed; the effect is not recorded yet.' : `Proposed as effect ${effect.effect_id}: ${effectSentence(effect)}${reapprovalSentence(followed)}${followed.length === 0 ? spentSentence(record, effect.outcome) : ''}`;
    default: {
      const never: never = status.state;
      return never;
    }
  }
}

/**
 * A case as the API answers it (GET /v1/cases/:id, POST /v1/cases, `interlock case`), with its effect as it stands.
 * When a person re-approved the case's refused effect from the inbox (a model deviation, a stale premise), the case
 * follows the re-approval: its outcome and final money are those of the effect that went out in its place, since
 * that is what happened to the customer's money. `reader`: whom its links are for (linkFor); the API passes its
 * caller's role, the CLI none.
 */
export async function caseView(stores: Stores, record: CaseRecord, reader: LinkReader = null) {
  const { submission, status } = record;
  const own = status.effectId === null ? null : await effectAsItStands(stores, status.effectId, reader);
  const effect = own?.view ?? null;
  const followed: Followed[] = [];
  let current = own;
  while (current !== null && followed.length < MAX_REAPPROVALS) {
    const reapproved = reapprovalOf(current.entries);
    if (reapproved === null) break;
    const next = await effectAsItStands(stores, reapproved.reapproval.effectId, reader);
    followed.push({ item: reapproved.item, approval: reapproved.reapproval.approval, by: reapproved.by.name, at: iso(reapproved.at), request_id: reapproved.reapproval.requestId, effect_id: reapproved.reapproval.effectId, effect: next?.view ?? null });
    current = next;
  }
  const last = followed.at(-1);
  // The effect whose outcome the case answers: the last re-approval's (null while it is not recorded), else its own once proposed.
  const answering = last !== undefined ? last.effect : status.state === 'proposed' ? effect : null;
  const byEffect = last !== undefined || status.state === 'proposed';
  const outcome = byEffect ? (answering?.outcome ?? null) : status.state === 'failed' ? (status.error?.code ?? 'failed') : (OUTCOME_OF_STATE[status.state] ?? null);
  const failureItem = await failureItemOf(stores, record);
  // An open item on the effect the case answers by (a stale premise, a refusal at recovery, AMBIGUOUS, an exposure)
  // is where a person acts on its money now; else a deviated case's model_deviated item, or a failed case's.
  const openItem = answering === null ? null : await openItemOf(stores, answering);
  const inbox =
    openItem !== null ? `/v1/inbox/${openItem.id}` : status.state === 'deviated' && effect !== null ? `/v1/inbox/model_deviated:${effect.effect_id}` : failureItem === null ? null : `/v1/inbox/${failureItem}`;
  return {
    object: 'case' as const,
    id: submission.caseId,
    kind: submission.kind,
    payment_intent: submission.kind === 'refund' ? submission.subject : null,
    customer: submission.kind === 'credit' ? submission.subject : null,
    incident: submission.incident,
    approval: submission.approval,
    agent: submission.agent,
    state: status.state,
    outcome,
    sentence: caseSentence(record, effect, followed, own === null || status.effectId === null ? null : dismissalOf(own.entries, `model_deviated:${status.effectId}`)) + (openItem === null ? '' : itemSentence(openItem)),
    // What became of the money, for the effect `outcome` answers (null before one settled): a refund Stripe accepted and
    // then failed answers COMMITTED with final money not_returned.
    final_money: answering !== null && answering.outcome !== null ? answering.final_money : null,
    answer: answering !== null && answering.outcome !== null ? answering.answer : null,
    decision: status.decision === null ? null : { model: status.decision.model, text: status.decision.text, action: status.decision.action, amount_cents: status.decision.amountCents },
    problems: status.problems,
    error: status.error,
    attempts: status.attempts,
    effect,
    reapprovals: followed,
    created_at: iso(record.createdAt),
    updated_at: iso(status.updatedAt),
    links: {
      self: linkFor(reader, 'readEffects', `/v1/cases/${encodeURIComponent(submission.caseId)}`),
      effect: effect === null ? null : effect.links.self,
      inbox: inbox === null ? null : linkFor(reader, 'readInbox', inbox),
      reapproved: last === undefined ? null : linkFor(reader, 'readEffects', `/v1/effects/${last.effect_id}`),
    },
  };
}

export type CaseView = Awaited<ReturnType<typeof caseView>>;

/**
 * Waits for the case to be decided and, once proposed, for its effect to settle, within `ms` in all. Given `gone`
 * (the HTTP client's hang-up), the wait ends when it aborts, rejecting with its reason; the case goes on.
 */
export async function waitForCase(context: Pick<ApiContext, 'effects'> & { decisions: NonNullable<ApiContext['decisions']> }, caseId: string, ms: number, gone?: AbortSignal): Promise<void> {
  const until = Date.now() + ms;
  const decided = await context.decisions.waitFor(caseId, ms, gone);
  const left = until - Date.now();
  const effectId = decided?.status.state === 'proposed' ? decided.status.effectId : null;
  if (effectId !== null && left > 0) await context.effects.waitFor(effectId, left, gone);
}

const callerErrors = {
  401: { description: 'No bearer token, or an unknown one.', schema: errorAnswer },
  403: { description: "The token's role may not use this route.", schema: errorAnswer },
  429: { description: "The token's rate limit was reached; see Retry-After.", schema: errorAnswer },
  ...redisErrors,
};

export function casesRoutes(context: ApiContext): Route[] {
  const { stores } = context;

  function decisionsOrUnavailable() {
    if (context.decisions === null) throw apiError('not_available', 'This process takes no cases (it was started without the decisions queue); send the case to a service running the api role.');
    return context.decisions;
  }

  /**
   * The approval exists and covers the case's subject; for a case id not stored yet (`isNew`), it is also live: a case
   * under a revoked or expired approval could only be decided into money the gate refuses (REFUSED:lease), its case id
   * spent. A case stored already is answered as it stands (the worker declines it if its approval ended undecided).
   */
  async function checkApproval(submission: CaseSubmission, isNew: boolean): Promise<void> {
    const { snapshot, now, revokedBy } = await stores.approvals.describe(submission.approval);
    if (snapshot === null) throw new InterlockError('unknown_approval', `No approval ${submission.approval}; nothing was queued. Grant it first (POST /v1/approvals), then submit the case.`);
    const scope = caseScope(submission);
    if (snapshot.scope !== scope) {
      throw apiError('invalid_request', `Approval ${submission.approval} covers ${snapshot.scope}, not ${scope}; nothing was queued. Submit the case under an approval of this ${submission.kind === 'refund' ? 'payment' : 'customer'}.`, {
        fields: [{ path: 'approval', message: `covers ${snapshot.scope}, not ${scope}` }],
      });
    }
    if (!isNew || (!snapshot.revoked && snapshot.expiresAt > now)) return;
    const ended = snapshot.revoked
      ? `was revoked${revokedBy === null ? '' : ` by ${revokedBy}`}${snapshot.revokedAt === null ? '' : ` at ${iso(snapshot.revokedAt)}`}`
      : `expired at ${iso(snapshot.expiresAt)}`;
    throw apiError('approval_not_live', `Approval ${submission.approval} ${ended}; nothing was recorded or queued, and case id ${submission.caseId} is still free. Grant a new approval that covers ${scope} (POST /v1/approvals), then submit the case under it.`, {
      fields: [{ path: 'approval', message: ended }],
    });
  }

  return [
    route({
      method: 'post',
      path: '/v1/cases',
      operationId: 'submitCase',
      summary: 'Submit a support case: the decider decides within the approval, and its decision is proposed through the gate',
      permission: 'propose',
      query: proposeQuery,
      body: caseBody,
      responses: {
        200: { description: 'The same case was submitted before with this payload; the case as it stands.', schema: caseAnswer },
        202: { description: 'Stored and queued for the decider (or, with ?wait, as it stands when decided, or when its effect settled).', schema: caseAnswer },
        ...callerErrors,
        400: { description: 'The body or query is invalid, or the approval covers another subject; `fields` names each problem. Nothing was queued.', schema: errorAnswer },
        403: { description: 'The role may not submit cases, or the approval asks for four eyes and the submitter (by its name or by its token) is the approver of the approval or the token that granted it, however the name is spelled (`four_eyes`). Nothing is recorded.', schema: errorAnswer },
        404: { description: 'No such approval (`unknown_approval`).', schema: errorAnswer },
        409: {
          description:
            'The case id was first submitted with another payload (`conflicting_payload`); the stored case stands. Or the approval of a new case is revoked or expired (`approval_not_live`, saying by whom or when): nothing was recorded; grant a new approval and submit the case under it.',
          schema: errorAnswer,
        },
        ...bodyErrors,
        503: { description: 'This process takes no cases (`not_available`), Redis is down (`redis_unavailable`; a case stored whose queueing failed says so: stored, perhaps not queued, and one that fails after the case was stored, in its ?wait or reading it back, says it is stored and will be decided, its outcome not known yet: submit the same case_id again to learn it, never a new one), or Redis is not durable now (`redis_not_durable`: nothing was written; send it again once it is); submit the same case again.', schema: errorAnswer },
      },
      async handle({ body, query, caller, res }) {
        const who = signedIn(caller);
        const gone = hangUpOf(res);
        const decisions = decisionsOrUnavailable();
        const given = caseSubmissionOf({ caseId: body.case_id, paymentIntent: body.payment_intent, customer: body.customer, incident: body.incident, story: body.story, approval: body.approval, agent: body.agent ?? who.name });
        // Omitted, the agent is the token's name for a new case only: a re-submission by another token is the same
        // case (CaseRecord.submittedBy), so it is compared with the agent stored, not refused as another payload.
        const existing = await stores.cases.get(given.caseId);
        const stored = body.agent === undefined ? existing : null;
        let submission = stored === null ? given : { ...given, agent: stored.submission.agent };
        await checkApproval(submission, existing === null);
        const { checkFourEyes } = createDecisionChecks(context);
        await checkFourEyes(submission.approval, submission.agent, who);
        let created = await decisions.submit(submission, who.name);
        const storedAgent = created.record.submission.agent;
        if (created.status === 'conflict' && body.agent === undefined && storedAgent !== submission.agent) {
          // Another token stored the case between the read above and this submission (the two sent it at once): it is
          // compared again with the agent stored, as it would have been had it come second, and is 409 only if it
          // differs in something else.
          submission = { ...given, agent: storedAgent };
          await checkFourEyes(submission.approval, submission.agent, who);
          created = await decisions.submit(submission, who.name);
        }
        if (created.status === 'conflict') {
          throw apiError('conflicting_payload', `Case ${submission.caseId} was first submitted with another payload; the stored case stands and this one was not queued. Use a new case id for another request.`);
        }
        // From here on the case is stored (and queued while not decided): a failure waiting on it or reading it back is
        // no "nothing was recorded" (outcomeNotKnown).
        try {
          if (query.wait !== undefined && query.wait > 0) {
            try {
              await waitForCase({ effects: context.effects, decisions }, submission.caseId, Math.round(query.wait * 1000), gone);
            } catch (error) {
              if (!gone.aborted) throw error;
            }
          }
          // A caller who hung up is answered (into the closed connection) with the case as submitted, read no further.
          const record = gone.aborted ? created.record : ((await stores.cases.get(submission.caseId)) ?? created.record);
          return { status: created.status === 'created' ? 202 : 200, body: await caseView(stores, record, who.role) };
        } catch (error) {
          throw outcomeNotKnown(
            error,
            `Case ${submission.caseId} is stored${isFinalCase(created.record.status) ? '' : ' and queued: it will be decided, and its effect carried out'}`,
            `Submit the same case again (the same case_id and payload) to learn it, or read GET /v1/cases/${encodeURIComponent(submission.caseId)}: it is answered as it stands, and it is decided at most once. Do not submit it again under a new case_id.`,
          );
        }
      },
    }),
    route({
      method: 'get',
      path: '/v1/cases/:id',
      operationId: 'getCase',
      summary: 'One case: its state, the decision, and its effect as it stands',
      permission: 'readEffects',
      params: caseIdParam,
      responses: {
        200: { description: 'The case.', schema: caseAnswer },
        ...callerErrors,
        400: { description: 'The id is not a case id.', schema: errorAnswer },
        404: { description: 'No such case (`unknown_case`).', schema: errorAnswer },
      },
      async handle({ params, caller }) {
        const record = await stores.cases.get(params.id);
        if (record === null) throw new InterlockError('unknown_case', `No case ${params.id}.`);
        return { status: 200, body: await caseView(stores, record, signedIn(caller).role) };
      },
    }),
  ];
}
