// Approvals (leases) and shared caps, for approvers. An approval never changes once granted: a retried grant with
// the same terms and options answers the approval that stands, other terms or options are a conflict. Its options
// (four eyes, who granted it) are written with its terms, in the step that creates it, so an approval the API granted
// never exists without them, and a grant that creates nothing (a retry, a conflict) changes nothing.
import { approvalRoom, InterlockError, parseApprovalOptions, type ApprovalOptions, type ApprovalSnapshot, type SubjectCap } from '../../src/interlock.js';
import { apiError } from './errors.js';
import { linksOf } from './effect-view.js';
import { route, signedIn, type Route } from './route.js';
import { approvalAnswer, approvalBody, approvalIdParam, approvalQuery, bodyErrors, capAnswer, capBody, errorAnswer, redisErrors, revokeAnswer, revokeBody, subjectParam } from './schemas.js';
import type { ApiContext } from './context.js';

const DEFAULT_EXPIRES_IN_SECONDS = 3_600;

const common = {
  400: { description: 'The body or path is invalid; `fields` names each problem.', schema: errorAnswer },
  401: { description: 'No bearer token, or an unknown one.', schema: errorAnswer },
  403: { description: "The token's role may not use this route.", schema: errorAnswer },
  429: { description: "The token's rate limit was reached.", schema: errorAnswer },
  ...redisErrors,
};

const iso = (ms: number) => new Date(ms).toISOString();

function approvalView(snapshot: ApprovalSnapshot, now: number, options: ApprovalOptions | null, subject: SubjectCap, revokedBy: string | null) {
  const room = approvalRoom(snapshot, now, subject);
  return {
    object: 'approval' as const,
    id: snapshot.id,
    approver: snapshot.approver,
    cap_cents: snapshot.capCents,
    scope: snapshot.scope,
    max_uses: snapshot.maxUses,
    expires_at: iso(snapshot.expiresAt),
    four_eyes: options?.four_eyes ?? false,
    granted_by: options?.granted_by ?? null,
    revoked: snapshot.revoked,
    revoked_at: snapshot.revokedAt === null ? null : iso(snapshot.revokedAt),
    revoked_by: snapshot.revoked ? revokedBy : null,
    reserved_cents: snapshot.reservedCents,
    uses: snapshot.uses,
    live: room.live,
    uses_left: room.usesLeft,
    cents_left: room.centsLeft,
    subject_cents_left: room.subjectCentsLeft,
    usable: room.usable,
  };
}

export function approvalsRoutes(context: ApiContext): Route[] {
  const { stores, approvalOptions } = context;

  /**
   * The approval its id is bound to, or the one on `subject` (whatever its id is bound to: approvals.describe). Its
   * options are the ones in its own hash; an approval granted before they moved there has them in the index only.
   */
  async function viewOf(approvalId: string, subject?: string) {
    const described = await stores.approvals.describe(approvalId, subject);
    const { now, snapshot, revokedBy } = described;
    if (!snapshot) throw stores.approvals.notFound(approvalId, subject);
    const [options, cap] = await Promise.all([described.options === null ? approvalOptions.get(approvalId) : parseApprovalOptions(described.options), stores.approvals.subjectCap(snapshot.scope)]);
    return approvalView(snapshot, now, options, cap, revokedBy);
  }

  /**
   * Sets the cap. While Redis is not durable (AppDeps.intake) it is set only when it is not above the one in force: a
   * lowered cap is a brake, as a revoke is (app.ts), and one Redis lost would leave things no worse than one refused;
   * a raise is refused with the guard's reason, nothing written. The compare is the script's, made as it writes.
   */
  async function setCap(subject: string, cents: number) {
    try {
      context.intake?.assertDurable();
    } catch (error) {
      if (!(error instanceof InterlockError) || error.code !== 'redis_not_durable') throw error;
      const lowering = await stores.approvals.lowerSubjectCap(subject, cents);
      if (lowering.taken) return lowering.cap;
      throw new InterlockError('redis_not_durable', `${error.message} While Redis is not durable, a cap is taken only when it is not above the one in force: ${subject} is capped at ${lowering.limitInForce}, and ${cents} is above it, so nothing was changed. Lowering it is taken now.`);
    }
    return stores.approvals.setSubjectCap(subject, cents);
  }

  return [
    route({
      method: 'post',
      path: '/v1/approvals',
      operationId: 'grantApproval',
      summary: 'Grant an approval scoped to one payment or customer',
      permission: 'manageApprovals',
      body: approvalBody,
      responses: {
        200: { description: 'Granted before with these terms and options; the approval as it stands.', schema: approvalAnswer },
        201: { description: 'Granted.', schema: approvalAnswer },
        ...common,
        ...bodyErrors,
        409: { description: 'The id is taken by an approval with other terms or options (`approval_conflict`); nothing was changed.', schema: errorAnswer },
        503: { description: 'Redis is not durable now (`redis_not_durable`) or not answering (`redis_unavailable`); nothing was changed.', schema: errorAnswer },
      },
      async handle({ body, caller }) {
        const who = signedIn(caller);
        const wanted: ApprovalOptions = { four_eyes: body.four_eyes ?? false, granted_by: who.name };
        const now = await stores.journal.serverTime();
        const terms = { id: body.id, approver: body.approver, capCents: body.cap_cents, expiresAt: now + (body.expires_in ?? DEFAULT_EXPIRES_IN_SECONDS) * 1000, maxUses: body.max_uses ?? 1, scope: body.scope };
        // A retry of the same grant differs only in when it asked, so only in its expiry: the first one stands
        // (created false; approvals.grant).
        const { created } = await approvalOptions.grant(terms, wanted);
        if (!created) {
          // The options that stand are the ones its creating grant wrote (none for a grant from the CLI).
          const standing = (await approvalOptions.get(body.id))?.four_eyes ?? false;
          if (standing !== wanted.four_eyes) throw apiError('approval_conflict', `Approval ${body.id} already exists with four_eyes ${String(standing)}; an approval never changes once granted. Grant a new id.`);
        }
        return { status: created ? 201 : 200, body: await viewOf(body.id) };
      },
    }),
    route({
      method: 'get',
      path: '/v1/approvals/:id',
      operationId: 'getApproval',
      summary: 'An approval: terms, options, what it has reserved and its uses',
      permission: 'readApprovals',
      params: approvalIdParam,
      query: approvalQuery,
      responses: {
        200: { description: 'The approval.', schema: approvalAnswer },
        ...common,
        404: { description: 'No approval is bound to the id, or none is on the `subject` given (`unknown_approval`). An id bound to nothing may still name an approval on its subject (the message says how to find it).', schema: errorAnswer },
      },
      async handle({ params, query }) {
        return { status: 200, body: await viewOf(params.id, query.subject) };
      },
    }),
    route({
      method: 'post',
      path: '/v1/approvals/:id/revoke',
      operationId: 'revokeApproval',
      summary: 'Revoke an approval; answers the effects already dispatched under it, which may still land',
      permission: 'manageApprovals',
      params: approvalIdParam,
      body: revokeBody,
      optionalBody: true,
      responses: {
        200: { description: 'Revoked (or already revoked).', schema: revokeAnswer },
        ...common,
        ...bodyErrors,
        404: { description: 'No approval is bound to the id, or none is on the `subject` given (`unknown_approval`); nothing was changed. An id bound to nothing may still name an approval that authorizes refunds on its subject: revoke it with that `subject`.', schema: errorAnswer },
        503: { description: 'Redis is down, turned the request away or did not answer in time (`redis_unavailable`); after a timeout the approval may or may not be revoked. Or, with INTERLOCK_REDIS_MIN_REPLICAS set, too few replicas held the revoke in time (`redis_not_durable`): it is in force on the master but a failover could lose it. Revoke it again: a second revoke answers `already_revoked: true` once the replicas hold it.', schema: errorAnswer },
      },
      async handle({ params, body, caller }) {
        const who = signedIn(caller);
        const result = await stores.approvals.revoke(params.id, who.name, body.subject);
        const count = result.mayStillLand.length;
        const sentence =
          count === 0
            ? 'Revoked: nothing was in flight under it, so nothing more can be sent under it.'
            : `Revoked: nothing new will be sent under it, but ${count} effect${count === 1 ? ' was' : 's were'} already dispatched and may still land; their receipts will say.`;
        const rebound = result.rebound ? ` It was found on ${body.subject ?? 'its subject'}, its id bound to nothing, and its id is bound to it again.` : '';
        return {
          status: 200,
          body: {
            object: 'revocation',
            id: params.id,
            revoked_at: iso(result.revokedAt),
            already_revoked: result.alreadyRevoked,
            revoked_by: result.revokedBy,
            may_still_land: result.mayStillLand.map((effectId) => ({ effect_id: effectId, links: linksOf(effectId, who.role) })),
            sentence: `${sentence}${rebound}`,
          },
        };
      },
    }),
    route({
      method: 'put',
      path: '/v1/caps/:subject',
      operationId: 'setCap',
      summary: 'Cap the money (in the smallest unit of its currency) all agents together may move on one payment or customer',
      permission: 'manageApprovals',
      params: subjectParam,
      body: capBody,
      responses: {
        200: { description: 'The cap in force, and what has moved (or is in flight) on the subject so far. With INTERLOCK_REDIS_MIN_REPLICAS set, the cap in force is another caller\'s when theirs was set right after this one.', schema: capAnswer },
        ...common,
        ...bodyErrors,
        503: { description: 'Redis is not answering (`redis_unavailable`); nothing was changed. Or Redis is not durable now (`redis_not_durable`) and the cap asked is above the one in force: while it is not, only a cap not above the one in force (any cap, when none is set) is taken, since lowering a cap is a brake, as a revoke is; nothing was changed. Or, with INTERLOCK_REDIS_MIN_REPLICAS set, too few replicas held the new cap in time (`redis_not_durable`, saying so): it is set on the master but a failover could lose it; set the same cap again, unless the message says a cap set since replaced it.', schema: errorAnswer },
      },
      async handle({ params, body }) {
        const cap = await setCap(params.subject, body.cap_cents);
        // A cap at or below what has moved already is allowed (it stops further money), but the caller should know.
        // The subject's currency is not known here (a cap is set before anything moves on it, and nothing is read from
        // Stripe), so amounts are said in its minor units, never as cents: 500 of a jpy payment is ¥500.
        const sentence =
          cap.movedCents >= cap.limitCents
            ? `${cap.movedCents} minor units of its currency have moved (or are in flight) on ${params.subject}, at or over this cap of ${cap.limitCents}: nothing more may move on it until the cap is raised.`
            : `${cap.limitCents - cap.movedCents} more minor units of its currency may move on ${params.subject} (${cap.movedCents} of ${cap.limitCents} have moved or are in flight).`;
        return { status: 200, body: { object: 'cap', subject: params.subject, cap_cents: cap.limitCents, moved_cents: cap.movedCents, sentence } };
      },
    }),
  ];
}
