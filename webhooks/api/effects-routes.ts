// Proposing refunds and credits, and reading effects. A proposal is decided on facts read now, at decision time,
// through the fact reader (the Stripe target's premise reads, or the memory target's); those facts become its
// premises, which the gate re-reads right before it sends. The proposal is recorded (binding its payload, I5) and
// queued; a duplicate of the same request is answered with the effect already recorded, and another payload under
// the same request id is refused.
import { CONFLICT_EVIDENCE_MAX, effectIdFor, errorMessage, InterlockError, ProposalError, unusableApproval, type Effect } from '../../src/interlock.js';
import { createDecisionChecks } from './decision-facts.js';
import { detailOf, effectChain, linksOf, summaryOf } from './effect-view.js';
import { apiError, nothingRecorded, outcomeNotKnown } from './errors.js';
import { createEffectListing } from './listing.js';
import { hangUpOf, route, signedIn, type Route } from './route.js';
import { bodyErrors, creditBody, effectDetail, effectIdParam, effectList, errorAnswer, listQuery, proposalAnswer, proposeQuery, receiptAnswer, redisErrors, refundBody } from './schemas.js';
import type { ApiContext } from './context.js';
import type { Caller } from './tokens.js';

const CAMEL_TO_API: Record<string, string> = { requestId: 'request_id', paymentIntent: 'payment_intent' };

/** A gate field path (`effect.paymentIntent`) in the API's words (`payment_intent`). */
function apiPath(path: string): string {
  const bare = path.replace(/^effect\./, '');
  return bare
    .split('.')
    .map((part) => CAMEL_TO_API[part] ?? part.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`))
    .join('.');
}

const common = {
  400: { description: 'The body or query is invalid; `fields` names each problem. Nothing was recorded.', schema: errorAnswer },
  401: { description: 'No bearer token, or an unknown one.', schema: errorAnswer },
  403: { description: "The token's role may not use this route.", schema: errorAnswer },
  429: { description: "The token's rate limit was reached; see Retry-After.", schema: errorAnswer },
  ...redisErrors,
};

export function effectsRoutes(context: ApiContext): Route[] {
  const { stores, effects } = context;
  const list = createEffectListing(stores);

  const { checkFourEyes, readFacts } = createDecisionChecks(context);

  type Proposed = { request_id: string; approval: string; agent?: string | undefined; decision?: { model: string; text: string } | undefined };

  /**
   * Records the proposal decided on facts read now. When they cannot be read, the journal answers what needs no facts
   * (another payload under a recorded request id, a retry of an effect nothing more can happen to), as recording would
   * have whatever they were. It is asked only then, so a new request pays no Redis round trip for it; a recorded
   * request whose retry would be judged again on the facts stays 503, saying it is recorded.
   */
  async function recordOn(effect: Effect, effectId: string, body: Proposed, proposalOn: (premises: Record<string, unknown>) => Record<string, unknown>) {
    const requestId = body.request_id;
    let facts: Record<string, unknown>;
    try {
      facts = await readFacts(effect, effectId);
    } catch (unread) {
      const recalled = await effects.recall(proposalOn({}));
      if (recalled === null) throw unread;
      if (recalled.status !== 'needs_facts') return recalled;
      const why = unread instanceof Error && unread.cause !== undefined ? errorMessage(unread.cause) : errorMessage(unread);
      throw apiError('premise_read_failed', `Request ${requestId} is recorded (effect ${recalled.effectId}), but the facts a retry of it is decided on could not be read (${why}), so this retry was not decided and nothing new was recorded. Send it again when Stripe answers.`, { cause: unread });
    }
    // An approval the gate could only refuse, under a request id not recorded yet: refused before anything is recorded.
    const unusable = await unusableApproval(stores, effect, effectId, body.approval, facts);
    if (unusable !== null) {
      const subject = effect.kind === 'refund' ? `payment:${effect.paymentIntent}` : `customer:${effect.customer}`;
      throw apiError('invalid_approval', `Approval ${body.approval} cannot carry this ${effect.kind}: ${unusable.join('; ')}. Nothing was recorded, and request id ${body.request_id} is still free. Grant a new approval that covers ${subject} (POST /v1/approvals), then propose the ${effect.kind} under it.`, { fields: [{ path: 'approval', message: unusable.join('; ') }] });
    }
    return effects.propose(proposalOn(facts));
  }

  async function propose(effect: Effect, body: Proposed, caller: Caller, wait: number | undefined, gone: AbortSignal) {
    const agent = body.agent ?? caller.name;
    await checkFourEyes(body.approval, agent, caller);
    const effectId = effectIdFor({ requestId: body.request_id, effect });
    const proposalOn = (premises: Record<string, unknown>) => ({
      requestId: body.request_id,
      agent,
      approval: body.approval,
      premises,
      effect,
      // Which credential asked, kept in the signed PROPOSED entry beside the request id.
      request: { request_id: body.request_id, token: caller.name },
      ...(body.decision ? { decision: body.decision } : {}),
    });
    let recorded: Awaited<ReturnType<typeof recordOn>>;
    try {
      recorded = await recordOn(effect, effectId, body, proposalOn);
    } catch (error) {
      if (error instanceof ProposalError) {
        const fields = error.fields.map((field) => ({ path: apiPath(field.path), message: field.message }));
        // Facts are the reader's, not the caller's: facts the gate cannot record are this service's fault.
        if (fields.length > 0 && fields.every((field) => field.path.startsWith('premises'))) throw apiError('internal', 'The fact reader returned facts the gate cannot record.', { cause: error });
        throw apiError('invalid_request', `The request is invalid (${fields.map((field) => `${field.path}: ${field.message}`).join('; ')}).${nothingRecorded(`/v1/${effect.kind}s`, body, fields)}`, { fields });
      }
      throw error;
    }
    if (recorded.status === 'conflict') {
      // The same payload decided in another currency (a credit's, src/gate/record.ts otherCurrency) is another sum of
      // money: its reason says which currencies.
      if (recorded.reason.includes(' first decided in ')) {
        throw apiError('conflicting_payload', `Request ${body.request_id} (effect ${recorded.effectId}): ${recorded.reason}. This one was not sent (REFUSED:conflicting_payload); the attempt is noted on that effect's receipt as evidence (each distinct payload once, at most ${CONFLICT_EVIDENCE_MAX}).`);
      }
      throw apiError('conflicting_payload', `Request ${body.request_id} was first decided with another payload (effect ${recorded.effectId}); the recorded payload stands and this one was not sent (REFUSED:conflicting_payload). The attempt is noted on that effect's receipt as evidence (each distinct payload once, at most ${CONFLICT_EVIDENCE_MAX}).`);
    }
    // From here on the proposal is recorded (and queued): a failure reading it back or waiting on it is no "nothing was
    // recorded" (outcomeNotKnown).
    try {
      let entries = await stores.journal.entries(recorded.subject, recorded.effectId);
      let summary = summaryOf(recorded.effectId, recorded.subject, entries, stores.config.creditCurrency, caller.role);
      if (wait !== undefined && wait > 0 && !summary.settled) {
        // Heard through BullMQ's queue events, not by polling the journal. A caller who hung up stops the wait (not the
        // effect), and the journal is not read again for an answer nobody receives.
        try {
          await effects.waitFor(recorded.effectId, Math.round(wait * 1000), gone);
        } catch (error) {
          if (!gone.aborted) throw error;
        }
        if (!gone.aborted) {
          entries = await stores.journal.entries(recorded.subject, recorded.effectId);
          summary = summaryOf(recorded.effectId, recorded.subject, entries, stores.config.creditCurrency, caller.role);
        }
      }
      return {
        status: recorded.status === 'recorded' ? 202 : 200,
        body: { effect_id: summary.id, request_id: body.request_id, state: summary.state, outcome: summary.outcome, sentence: summary.sentence, reason: summary.reason, links: summary.links },
      };
    } catch (error) {
      throw outcomeNotKnown(
        error,
        `Request ${body.request_id} is recorded (effect ${recorded.effectId})${'queued' in recorded && recorded.queued ? ' and queued: it will be carried out' : ''}`,
        `Send the same request again (the same request_id and payload) to learn it, or read GET /v1/effects?request=${encodeURIComponent(body.request_id)}: it is answered from the journal, and its money moves at most once. Do not propose it again under a new request_id.`,
      );
    }
  }

  const proposeResponses = {
    200: { description: 'The same request was recorded before with this payload; the effect as it stands.', schema: proposalAnswer },
    202: { description: 'Recorded and queued; `outcome` is null until the effect settles (or the outcome, with ?wait).', schema: proposalAnswer },
    ...common,
    400: {
      description:
        "The body or query is invalid; `fields` names each problem. Or the request id is not recorded yet and its approval cannot carry the proposal (`invalid_approval`: revoked, expired, its cap below the amount, or every use spent, those of effects in flight counted), which the gate could only refuse: grant a new approval, then propose under it. Nothing was recorded either way; a request id recorded before is answered as it stands, whatever its approval is now.",
      schema: errorAnswer,
    },
    403: { description: 'The role may not propose, or the approval asks for four eyes and the proposer (by its name or by its token) is the approver of the approval or the token that granted it, however the name is spelled (`four_eyes`). Nothing is recorded.', schema: errorAnswer },
    404: { description: 'No such approval (`unknown_approval`): grant it first; nothing was recorded.', schema: errorAnswer },
    409: { description: 'The request id was first decided with another payload (`conflicting_payload`); the recorded one stands. Or its effect, not settled yet, holds as many decisions not judged yet as it takes (`too_many_proposals`, retryable): nothing was written; send it again once the effect has settled (GET /v1/effects/{id}), or use a new request id for a new effect; an effect whose latest decision had no live job left (it failed for good) has it queued again, as the message says. Or its effect holds as many decisions in all as one effect takes, the latest refused or still to be judged (`too_many_decisions`, not retryable): nothing was written, and no new decision under this request id will be; decide it again under a new request id.', schema: errorAnswer },
    ...bodyErrors,
    503: { description: 'The facts could not be read (`premise_read_failed`; a request recorded before whose answer needs no facts is answered from the journal all the same: 200 for an effect settled for good or being sent, 409 for another payload), Redis is down or did not answer in time (`redis_unavailable`; after a timeout the proposal may or may not be recorded, one recorded whose queueing failed says so: recorded, perhaps not queued, and one that fails after the proposal was recorded, in its ?wait or reading it back, says it is recorded and will be carried out, its outcome not known yet: send the same request_id again to learn it, never a new one), or Redis is not durable now (`redis_not_durable`: nothing was written; send it again once it is); send the same request again.', schema: errorAnswer },
  };

  const effectOr404 = (id: string) => effectChain(stores, id);

  return [
    route({
      method: 'post',
      path: '/v1/refunds',
      operationId: 'proposeRefund',
      summary: 'Propose a refund of a PaymentIntent, under an approval',
      permission: 'propose',
      query: proposeQuery,
      body: refundBody,
      responses: proposeResponses,
      async handle({ body, query, caller, res }) {
        const effect: Effect = { kind: 'refund', paymentIntent: body.payment_intent, amount: body.amount, ...(body.reason ? { reason: body.reason } : {}) };
        return propose(effect, body, signedIn(caller), query.wait, hangUpOf(res));
      },
    }),
    route({
      method: 'post',
      path: '/v1/credits',
      operationId: 'proposeCredit',
      summary: 'Propose a customer balance credit for an incident, under an approval',
      permission: 'propose',
      query: proposeQuery,
      body: creditBody,
      responses: proposeResponses,
      async handle({ body, query, caller, res }) {
        const effect: Effect = { kind: 'credit', customer: body.customer, amount: body.amount, incident: body.incident, ...(body.description !== undefined ? { description: body.description } : {}) };
        return propose(effect, body, signedIn(caller), query.wait, hangUpOf(res));
      },
    }),
    route({
      method: 'get',
      path: '/v1/effects',
      operationId: 'listEffects',
      summary: 'List effects, newest first, by request, subject, state or outcome (cursor pagination)',
      permission: 'readEffects',
      query: listQuery,
      responses: { 200: { description: 'A page of effects; pass `next_starting_after` as `starting_after` for the next one.', schema: effectList }, ...common },
      async handle({ query, caller }) {
        const page = await list({ request: query.request, subject: query.subject, state: query.state, outcome: query.outcome }, query.limit ?? 10, query.starting_after);
        const { role } = signedIn(caller);
        const data = page.data.map((summary) => ({ ...summary, links: linksOf(summary.id, role) }));
        return { status: 200, body: { object: 'list', url: '/v1/effects', data, has_more: page.hasMore, next_starting_after: page.next } };
      },
    }),
    route({
      method: 'get',
      path: '/v1/effects/:id',
      operationId: 'getEffect',
      summary: 'One effect: state, outcome, journal, final money and exposure',
      permission: 'readEffects',
      params: effectIdParam,
      responses: { 200: { description: 'The effect.', schema: effectDetail }, ...common, 404: { description: 'No such effect (`unknown_effect`).', schema: errorAnswer } },
      async handle({ params, caller }) {
        const { partition, entries } = await effectOr404(params.id);
        const receipt = await stores.journal.receipt(params.id);
        return { status: 200, body: detailOf(summaryOf(params.id, partition, entries, stores.config.creditCurrency, signedIn(caller).role), entries, receipt, stores.publicKeys) };
      },
    }),
    route({
      method: 'get',
      path: '/v1/effects/:id/receipt',
      operationId: 'getReceipt',
      summary: "An effect's signed receipt bundle (verify it offline with `interlock receipt verify`)",
      permission: 'readReceipts',
      params: effectIdParam,
      responses: { 200: { description: 'The receipt, exactly as signed.', schema: receiptAnswer }, ...common, 404: { description: 'No such effect.', schema: errorAnswer } },
      async handle({ params }) {
        const receipt = await stores.journal.receipt(params.id);
        if (!receipt) throw new InterlockError('unknown_effect', `No effect ${params.id}.`);
        return { status: 200, body: receipt, verbatim: true };
      },
    }),
  ];
}
