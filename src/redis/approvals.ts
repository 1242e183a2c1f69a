// Approvals (leases) in Redis: grant, revoke, describe, and the subject caps shared by every agent. Each approval
// lives in the partition of its scope, beside the effects it covers, so dispatch checks it atomically.
import { serverTime, type RedisClient } from './client.js';
import { termsProblems, type ApprovalTerms } from '../core/approval.js';
import type { ApprovalSnapshot } from '../core/entries.js';
import { assertPartition, type Keys } from './keys.js';
import { createScriptRunner } from './scripts.js';

export class ApprovalError extends Error {
  constructor(readonly code: 'invalid_approval' | 'approval_conflict' | 'unknown_approval', message: string) {
    super(message);
    this.name = 'ApprovalError';
  }
}

export type RevokeResult = { revokedAt: number; alreadyRevoked: boolean; mayStillLand: string[] };
export type Approvals = ReturnType<typeof createRedisApprovals>;

function toList(value: unknown): string[] {
  return Array.isArray(value) ? value.map(String) : [];
}

export function createRedisApprovals(deps: { redis: RedisClient; keys: Keys }) {
  const { redis, keys } = deps;
  const run = createScriptRunner(redis);

  async function partitionOf(approvalId: string): Promise<string | null> {
    return redis.hget(keys.approvalPartitions, approvalId);
  }

  return {
    partitionOf,

    async grant(terms: ApprovalTerms): Promise<{ created: boolean; grantedAt: number }> {
      const problems = termsProblems(terms);
      if (problems.length > 0) throw new ApprovalError('invalid_approval', `The approval is invalid: ${problems.join('; ')}.`);
      const partition = assertPartition(terms.scope);
      await redis.hsetnx(keys.approvalPartitions, terms.id, partition);
      const bound = await partitionOf(terms.id);
      if (bound !== partition) throw new ApprovalError('approval_conflict', `Approval ${terms.id} already exists with scope ${bound ?? '?'}; grant a new id instead of changing its scope.`);
      const ordered = { id: terms.id, approver: terms.approver, capCents: terms.capCents, expiresAt: terms.expiresAt, maxUses: terms.maxUses, scope: terms.scope };
      const reply = await run<{ status: 'CREATED' | 'EXISTS' | 'CONFLICT'; grantedAt?: number }>('grant-approval-1', [keys.approval(partition, terms.id)], [JSON.stringify(ordered)]);
      if (reply.status === 'CONFLICT') throw new ApprovalError('approval_conflict', `Approval ${terms.id} already exists with other terms; an approval never changes once granted. Grant a new id.`);
      return { created: reply.status === 'CREATED', grantedAt: reply.grantedAt ?? 0 };
    },

    async revoke(approvalId: string, by: string): Promise<RevokeResult> {
      const partition = await partitionOf(approvalId);
      if (partition === null) throw new ApprovalError('unknown_approval', `No approval ${approvalId}. Check the id with \`npx interlock approvals describe\`.`);
      const reply = await run<{ status: 'REVOKED' | 'ALREADY' | 'UNKNOWN'; revokedAt?: number; mayStillLand?: unknown }>(
        'revoke-approval-2',
        [keys.approval(partition, approvalId), keys.approvalOpen(partition, approvalId)],
        [by],
      );
      if (reply.status === 'UNKNOWN') throw new ApprovalError('unknown_approval', `No approval ${approvalId}.`);
      return { revokedAt: reply.revokedAt ?? 0, alreadyRevoked: reply.status === 'ALREADY', mayStillLand: toList(reply.mayStillLand).sort() };
    },

    /** A snapshot on the Redis clock, or null when the approval does not exist. */
    async describe(approvalId: string): Promise<{ now: number; snapshot: ApprovalSnapshot | null }> {
      const partition = await partitionOf(approvalId);
      if (partition === null) return { now: await serverTime(redis), snapshot: null };
      const reply = await run<{ status: 'OK' | 'UNKNOWN'; now: number; approval?: Record<string, string>; reservedCents?: number; uses?: number }>(
        'describe-approval-2',
        [keys.approval(partition, approvalId), keys.approvalReservations(partition, approvalId)],
        [],
      );
      if (reply.status === 'UNKNOWN' || !reply.approval) return { now: reply.now, snapshot: null };
      const a = reply.approval;
      return {
        now: reply.now,
        snapshot: {
          id: a.id ?? approvalId,
          approver: a.approver ?? '',
          capCents: Number(a.capCents),
          expiresAt: Number(a.expiresAt),
          maxUses: Number(a.maxUses),
          scope: a.scope ?? '',
          revoked: a.revoked === '1',
          revokedAt: a.revokedAt === undefined ? null : Number(a.revokedAt),
          reservedCents: reply.reservedCents ?? 0,
          uses: reply.uses ?? 0,
        },
      };
    },

    /** Sets the cap every agent shares on one subject, e.g. "at most 3000 cents refunded on payment:pi_1". */
    async setSubjectCap(subject: string, limitCents: number): Promise<void> {
      if (!Number.isSafeInteger(limitCents) || limitCents < 0) throw new ApprovalError('invalid_approval', 'A cap must be a whole, non-negative number of cents.');
      const partition = assertPartition(subject);
      await redis.sadd(keys.partitions, partition);
      await redis.hset(keys.subjectCap(partition), 'limit', limitCents, 'name', `subject:${subject}`);
    },
  };
}
