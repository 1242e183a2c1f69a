// The escalation inbox (issue 13 §4): effects the gate could not settle for a person (AMBIGUOUS), refusals a person
// may re-approve, exposures, model deviations and failed cases. Approvers act; auditors and operators read. Every
// action is a signed RESOLVED entry on the effect's receipt naming the token, at most one per item: of two approvers
// acting on one item at once, one wins and the other is answered 409 naming who acted. A failed case's item has no
// effect: its dismissal is kept in the inbox index (who, when, the note), not on a receipt.
import { checkFourEyes, createInboxActions, InterlockError, reapprovalRequestId, ProposalError, type Effect, type FactsNow, type InboxItem } from '../../src/interlock.js';
import { createDecisionChecks } from './decision-facts.js';
import { linkFor, linksOf, snakeKeys, type LinkReader } from './effect-view.js';
import { apiError } from './errors.js';
import { route, signedIn, type Route } from './route.js';
import { bodyErrors, dismissBody, errorAnswer, inboxItemAnswer, inboxItemParam, inboxList, inboxQuery, reapproveAnswer, reapproveBody, redisErrors, resolveBody } from './schemas.js';
import type { ApiContext } from './context.js';

const iso = (ms: number) => new Date(ms).toISOString();

/** The facts as the fact reader returned them; the recorder checks they are JSON before anything is written. */
type JsonFacts = Awaited<ReturnType<FactsNow>>;

/** An item as the API answers it; `reader`: whom its links are for (linkFor: none the role would be answered 403 on). */
export function inboxItemView(item: InboxItem, reader: LinkReader) {
  const closure = item.closure;
  return {
    object: 'inbox_item' as const,
    id: item.id,
    kind: item.kind,
    effect_id: item.effectId,
    subject: item.subject,
    outcome: item.outcome,
    happened: item.happened,
    cents_at_stake: item.centsAtStake,
    // The currency of cents_at_stake, as the item keeps it: an approver may not read the effect to learn it.
    currency: item.currency ?? null,
    changes: item.changes,
    actions: item.actions,
    // Only an open item is re-approved from a view; withFactsShown sets it for the views that show one.
    facts_shown: item.status === 'open' ? (item.factsShown ?? null) : null,
    detail: item.detail === null ? null : (snakeKeys(item.detail) as Record<string, unknown>),
    status: item.status,
    opened_at: iso(item.openedAt),
    closed:
      closure === null
        ? null
        : {
            action: closure.action,
            by: closure.by,
            note: closure.note,
            resolution: closure.resolution,
            reapproval: closure.reapproval === null ? null : { approval: closure.reapproval.approval, request_id: closure.reapproval.requestId, effect_id: closure.reapproval.effectId },
            at: iso(closure.at),
            // Why no signed entry stands behind this closure: the effect's journal was gone when it was dismissed.
            unsigned: closure.unsigned ?? null,
          },
    links: item.kind === 'case_failed' ? caseFailureLinks(item, reader) : itemLinks(item, reader),
  };
}

function itemLinks(item: InboxItem, reader: LinkReader): { self: string | null; effect: string | null; receipt: string | null } {
  const effect = linksOf(item.effectId, reader);
  return { self: linkFor(reader, 'readInbox', `/v1/inbox/${item.id}`), effect: effect.self, receipt: effect.receipt };
}

/** A failed case's item has no effect or receipt to link (nothing was recorded for it): it links its case. */
function caseFailureLinks(item: InboxItem, reader: LinkReader): { self: string | null; effect: null; receipt: null; case?: string | null } {
  const caseId = item.detail?.['case_id'];
  return { self: linkFor(reader, 'readInbox', `/v1/inbox/${item.id}`), effect: null, receipt: null, ...(typeof caseId === 'string' ? { case: linkFor(reader, 'readEffects', `/v1/cases/${encodeURIComponent(caseId)}`) } : {}) };
}

const common = {
  400: { description: 'The path, query or body is invalid; `fields` names each problem. Nothing was recorded.', schema: errorAnswer },
  401: { description: 'No bearer token, or an unknown one.', schema: errorAnswer },
  403: { description: "The token's role may not use this route.", schema: errorAnswer },
  429: { description: "The token's rate limit was reached.", schema: errorAnswer },
  ...redisErrors,
};

const actionResponses = {
  200: { description: 'Recorded: the item, closed, with who acted.', schema: inboxItemAnswer },
  ...common,
  ...bodyErrors,
  404: { description: 'No such item (`unknown_inbox_item`).', schema: errorAnswer },
  409: { description: 'Someone acted on the item already (`inbox_item_closed`, naming who and how, or saying it was you), the kind does not allow this action, the effect\'s money moved or its journal is gone, or the effect was re-approved already through another of its items (`action_not_allowed`, naming that item), the effect is being sent (`effect_in_flight`), the `reapproval:` request id holds another proposal (`conflicting_payload`), or, for a re-approval, the facts read now are not the ones the item showed (`facts_changed`, naming each; the item then shows them), or the item shows other facts than those `facts_shown` names (`facts_changed`: it was brought up to date since it was read).', schema: errorAnswer },
  503: { description: 'Redis is not durable now (`redis_not_durable`) or not answering (`redis_unavailable`); nothing was recorded and the item stays open.', schema: errorAnswer },
};

/** The inbox's actions as the API (and the page) take them: facts read through the API's fact reader, proposals queued. */
/**
 * A re-approval whose request the gate found recorded before with another payload moved nothing: the page and the API
 * both answer it as the conflict it is (409 conflicting_payload), never as a re-approval recorded and queued.
 */
export function assertReapprovalRecorded(recorded: { status: string; effectId: string }): void {
  if (recorded.status === 'conflict') throw apiError('conflicting_payload', `The re-approval's request was recorded before with another payload (effect ${recorded.effectId}); nothing new was recorded.`);
}

export function inboxActionsFor(context: ApiContext, by: { name: string; role: string }) {
  const { stores, effects } = context;
  const checks = createDecisionChecks(context);
  return createInboxActions({
    inbox: stores.inbox,
    journal: stores.journal,
    approvals: stores.approvals,
    checkFourEyes: (approvalId, actor) => checkFourEyes(stores, approvalId, [actor.name, by.name]),
    readFacts: async (effect: Effect, effectId: string) => (await checks.readFacts(effect, effectId)) as JsonFacts,
    async propose(proposal, how) {
      try {
        return await effects.propose(proposal, how);
      } catch (error) {
        // The payload was the recorded one and the facts are the reader's: a proposal the gate refuses is this service's fault.
        if (error instanceof ProposalError) throw apiError('internal', `The re-approval by ${by.name} (${by.role}) could not be recorded.`, { cause: error });
        throw error;
      }
    },
  });
}

export function inboxRoutes(context: ApiContext): Route[] {
  const { stores } = context;
  const actionsFor = (name: string, role: string) => inboxActionsFor(context, { name, role });

  async function itemOr404(id: string): Promise<InboxItem> {
    const item = await stores.inbox.get(id);
    if (item === null) throw new InterlockError('unknown_inbox_item', `No inbox item ${id}. GET /v1/inbox lists the open ones.`);
    return item;
  }

  return [
    route({
      method: 'get',
      path: '/v1/inbox',
      operationId: 'listInbox',
      summary: 'Escalation inbox items, newest first (open by default; cursor pagination)',
      permission: 'readInbox',
      query: inboxQuery,
      responses: { 200: { description: 'A page of items; pass `next_starting_after` as `starting_after` for the next one.', schema: inboxList }, ...common },
      async handle({ query, caller }) {
        const page = await stores.inbox.list({ status: query.status ?? 'open', kind: query.kind, subject: query.subject, effect: query.effect }, query.limit ?? 10, query.starting_after);
        const { role } = signedIn(caller);
        const data = await Promise.all(page.data.map((item) => stores.inbox.withFactsShown(item)));
        return { status: 200, body: { object: 'list', url: '/v1/inbox', data: data.map((item) => inboxItemView(item, role)), has_more: page.hasMore, next_starting_after: page.next } };
      },
    }),
    route({
      method: 'get',
      path: '/v1/inbox/:id',
      operationId: 'getInboxItem',
      summary: 'One inbox item: what happened, the money at stake, the facts that changed, what a person may do',
      permission: 'readInbox',
      params: inboxItemParam,
      responses: { 200: { description: 'The item.', schema: inboxItemAnswer }, ...common, 404: { description: 'No such item (`unknown_inbox_item`).', schema: errorAnswer } },
      async handle({ params, caller }) {
        return { status: 200, body: inboxItemView(await stores.inbox.withFactsShown(await itemOr404(params.id)), signedIn(caller).role) };
      },
    }),
    route({
      method: 'post',
      path: '/v1/inbox/:id/reapprove',
      operationId: 'reapproveInboxItem',
      summary: 'Re-approve an item under a NEW approval: a new request, premises read now, through the gate',
      permission: 'actOnInbox',
      params: inboxItemParam,
      body: reapproveBody,
      responses: {
        ...actionResponses,
        202: { description: 'Recorded and queued: the new request, its premises, and the item closed.', schema: reapproveAnswer },
        200: { description: 'The same person re-approved this item under this approval before, or at the same moment (a double submit); the new request as recorded then.', schema: reapproveAnswer },
        403: { description: 'The role may not act, or the approval asks for four eyes and the one acting (by its name or by its token) is the approver of the approval or the token that granted it, however the name is spelled (`four_eyes`). Nothing is recorded.', schema: errorAnswer },
        404: { description: 'No such item, or no such approval (`unknown_approval`).', schema: errorAnswer },
        400: { description: 'The body is invalid, or the approval cannot carry the payload (`invalid_approval`: revoked, expired, on another subject, no room left on its cap or the subject\'s, or the credit\'s incident held by another credit, named); nothing was recorded and the item stays open.', schema: errorAnswer },
        503: { description: 'The facts could not be read now (`premise_read_failed`), or Redis is not durable now (`redis_not_durable`) or not answering (`redis_unavailable`); the item stays open.', schema: errorAnswer },
      },
      async handle({ params, body, caller }) {
        const who = signedIn(caller);
        await itemOr404(params.id);
        const done = await actionsFor(who.name, who.role).reapprove(params.id, { approval: body.approval, note: body.note ?? '', by: { name: who.name, role: who.role }, factsShown: body.facts_shown });
        assertReapprovalRecorded(done.recorded);
        const { effectId } = done.recorded;
        return {
          status: done.entry === null ? 200 : 202,
          body: {
            object: 'reapproval',
            item: inboxItemView(done.item, who.role),
            effect_id: effectId,
            request_id: reapprovalRequestId(params.id),
            recorded: done.entry === null ? 'exists' : 'recorded',
            premises: done.premises,
            links: linksOf(effectId, who.role),
          },
        };
      },
    }),
    route({
      method: 'post',
      path: '/v1/inbox/:id/resolve',
      operationId: 'resolveInboxItem',
      summary: 'Resolve an AMBIGUOUS effect after checking Stripe: it landed, or it did not',
      permission: 'actOnInbox',
      params: inboxItemParam,
      body: resolveBody,
      responses: actionResponses,
      async handle({ params, body, caller }) {
        const who = signedIn(caller);
        const done = await actionsFor(who.name, who.role).resolve(params.id, { resolution: body.resolution, note: body.note, by: { name: who.name, role: who.role } });
        return { status: 200, body: inboxItemView(done.item, who.role) };
      },
    }),
    route({
      method: 'post',
      path: '/v1/inbox/:id/dismiss',
      operationId: 'dismissInboxItem',
      summary: 'Dismiss an item with a note saying why',
      permission: 'actOnInbox',
      params: inboxItemParam,
      body: dismissBody,
      responses: actionResponses,
      async handle({ params, body, caller }) {
        const who = signedIn(caller);
        const done = await actionsFor(who.name, who.role).dismiss(params.id, { note: body.note, by: { name: who.name, role: who.role } });
        return { status: 200, body: inboxItemView(done.item, who.role) };
      },
    }),
  ];
}
