// Approvals (leases) in Redis: grant, revoke, describe, and the subject caps shared by every agent. Each approval
// lives in the partition of its scope, beside the effects it covers, so dispatch checks it atomically. Its running
// totals (reserved cents, uses) sit in the same hash and move in the same step as each dispatch and settle.
import { createHash, randomBytes } from 'node:crypto';
import { Cluster } from 'ioredis';
import { SUBJECT, termsProblems, type ApprovalTerms } from '../core/approval.js';
import type { ApprovalSnapshot } from '../core/entries.js';
import { InterlockError } from '../core/errors.js';
import { serverTime, type RedisClient } from './client.js';
import { heldMarkerOn } from './durability.js';
import { assertPartition, type Keys } from './keys.js';
import { acknowledgedOnce, type WriteProof } from './replica-wait.js';
import { createScriptRunner } from './scripts.js';

export class ApprovalError extends InterlockError {
  constructor(code: 'invalid_approval' | 'approval_conflict' | 'unknown_approval', message: string) {
    super(code, message);
    this.name = 'ApprovalError';
  }
}

/**
 * `revokedBy`: who revoked it (this call's `by`, or whoever revoked it first when it was already revoked); null if not
 * recorded. `rebound`: the approval was found through the subject given, its id bound to nothing, and is bound again.
 */
export type RevokeResult = { revokedAt: number; revokedBy: string | null; alreadyRevoked: boolean; mayStillLand: string[]; rebound: boolean };

/**
 * An approval as describe reads it. `options`: what the support API kept beside its terms (JSON, approvals.grant's
 * `options`), null when none. `unbound`: found through the subject asked for while its id is bound to no partition
 * (a lost binding: see unknown), or to another one.
 */
export type Described = { now: number; snapshot: ApprovalSnapshot | null; revokedBy: string | null; options: string | null; unbound: boolean };

/** An approval's terms as granted: they never change, so a worker may keep them once read. */
export type GrantedTerms = ApprovalTerms & { partition: string; termsSha: string };

export type Approvals = ReturnType<typeof createRedisApprovals>;

/** A cap set: the cap in force (another caller's when theirs was set right after it) and what has moved or is in flight on its subject. */
export type CapInForce = { limitCents: number; movedCents: number };

/** A cap set only if it is not above the one in force (lowerSubjectCap): set, or refused with the cap in force. */
export type CapLowering = { taken: true; cap: CapInForce } | { taken: false; limitInForce: number };

function toList(value: unknown): string[] {
  return Array.isArray(value) ? value.map(String) : [];
}

/** The same sha1 the grant script stores (redis.sha1hex over the exact terms JSON). */
function sha1(text: string): string {
  return createHash('sha1').update(text, 'utf8').digest('hex');
}

function termsJson(terms: ApprovalTerms): string {
  return JSON.stringify({ id: terms.id, approver: terms.approver, capCents: terms.capCents, expiresAt: terms.expiresAt, maxUses: terms.maxUses, scope: terms.scope });
}

function snapshotOf(approvalId: string, a: Record<string, string>): ApprovalSnapshot {
  return {
    id: a.id ?? approvalId,
    approver: a.approver ?? '',
    capCents: Number(a.capCents),
    expiresAt: Number(a.expiresAt),
    maxUses: Number(a.maxUses),
    scope: a.scope ?? '',
    revoked: a.revoked === '1',
    revokedAt: a.revokedAt === undefined ? null : Number(a.revokedAt),
    reservedCents: Number(a.reservedCents ?? 0),
    uses: Number(a.uses ?? 0),
  };
}

/**
 * `minReplicas` (INTERLOCK_REDIS_MIN_REPLICAS, 0 when not given) and `replicaWaitMs` (INTERLOCK_REDIS_WAIT_MS): a
 * revoke or a cap is answered only once that many replicas of its master hold it, as a dispatch is sent only then.
 */
export function createRedisApprovals(deps: { redis: RedisClient; keys: Keys; minReplicas?: number; replicaWaitMs?: number }) {
  const { redis, keys } = deps;
  const minReplicas = deps.minReplicas ?? 0;
  const replicaWaitMs = deps.replicaWaitMs ?? 1_000;
  const run = createScriptRunner(redis);
  // A cluster keeps an approval's id binding (the index's slot) and the approval (its subject's) on different masters.
  const clustered = redis instanceof Cluster;

  /**
   * Returns once `minReplicas` replicas of the master that took `proof`'s write hold it (the WAIT with proof that
   * dispatch uses, replica-wait.ts); throws `redis_not_durable` (retryable) with `unheld`'s sentence when they do not
   * in time. The writes that make the rules stricter wait (revoke, setSubjectCap): one that was answered and then lost
   * in a failover lets money move that the operator was told cannot (a revoked approval comes back, a lowered cap
   * comes back higher). A grant does not (see grant).
   */
  async function replicated(partition: string, proof: WriteProof, unheld: (acknowledged: number) => string): Promise<void> {
    const acknowledged = await replicasHolding(partition, proof);
    if (acknowledged >= minReplicas) return;
    throw new InterlockError('redis_not_durable', unheld(acknowledged));
  }
  /** Replicas of the master that took `proof`'s write that hold it (0 when that master does not); none asked when none are required. */
  async function replicasHolding(partition: string, proof: WriteProof): Promise<number> {
    if (minReplicas <= 0) return 0;
    return acknowledgedOnce(redis, { mark: keys.replicaMarkOf(partition), proof, replicas: minReplicas, timeoutMs: replicaWaitMs });
  }
  const behind = (acknowledged: number) => `only ${acknowledged} of the ${minReplicas} Redis replicas required (INTERLOCK_REDIS_MIN_REPLICAS) acknowledged it within ${replicaWaitMs} ms`;

  async function partitionOf(approvalId: string): Promise<string | null> {
    return redis.hget(keys.approvalPartitions, approvalId);
  }

  /**
   * Before an approval is said not to be there: throws the durability monitor's refusal (redis_not_durable) when Redis
   * no longer holds the deployment marker this process holds (durability.ts heldMarkerOn), or a loss was recorded
   * already. An empty Redis (restarted without its append-only file, flushed) finds no approval, granted or not, and
   * "no approval" would be read as one never granted. Read after the lookup, on the same connection, so a marker found
   * here was there when the lookup ran. Nothing is checked while no monitor runs (a one-off command).
   */
  async function confirmAbsent(): Promise<void> {
    const marker = heldMarkerOn(redis);
    if (marker === null) return;
    const found = await redis.get(keys.deployment);
    if (found !== marker.held || marker.dataLost()) throw marker.lost(found);
  }

  /**
   * The partition of a subject an operator names to find an approval by (revoke, describe): its scope. Checked as a
   * grant's scope is, so a bad one is invalid input, not an approval that is not there.
   */
  function subjectPartition(subject: string): string {
    if (typeof subject !== 'string' || !SUBJECT.test(subject)) {
      throw new ApprovalError('invalid_approval', `The subject an approval is looked for on must name one payment or one customer, e.g. payment:pi_123 or customer:cus_123, not ${typeof subject === 'string' ? subject.slice(0, 80) : typeof subject}.`);
    }
    return assertPartition(subject);
  }

  /**
   * No approval `approvalId` where it was looked for: through its id's binding, or on `subject` when one was given
   * (`bound`: the partition its id is bound to, when it is another). An approval is found through the binding of its id
   * (the index's slot), and lives in its scope's partition (another slot). On a Redis Cluster those are on different
   * masters, and a grant waits for no replica, so a failover of the index's master can lose a binding while the
   * approval stands on its own master, where a dispatch reads it: an approval that still authorizes money. So on a
   * cluster an id bound to nothing is never said not to exist: the answer says how to find (and revoke) it through its
   * subject. One server cannot lose the binding alone: its replicas take its writes in order, the binding's first.
   */
  function unknown(approvalId: string, subject?: string, bound?: string | null): ApprovalError {
    if (!clustered && subject === undefined) return new ApprovalError('unknown_approval', `No approval ${approvalId}.`);
    if (subject !== undefined) {
      const elsewhere = bound === null || bound === undefined || bound === subject ? '' : ` Its id is bound to ${bound}: \`npx interlock approvals describe ${approvalId}\` (without --subject) shows that one.`;
      return new ApprovalError('unknown_approval', `No approval ${approvalId} on ${subject}.${elsewhere}`);
    }
    return new ApprovalError(
      'unknown_approval',
      `No approval ${approvalId} is bound to that id. If it was granted, a failover of the master holding the approval ids' index may have lost the binding while the approval still stands (and may still authorize refunds) in its subject's partition: name its scope to find it there, \`npx interlock approvals describe ${approvalId} --subject payment:pi_...\` or \`npx interlock approvals revoke ${approvalId} --by <who> --subject payment:pi_...\` (in the support API, ?subject= on GET /v1/approvals/${approvalId}, or "subject" in the revoke's body). Revoking it there binds its id again.`,
    );
  }

  /**
   * The approval's record, where its id is bound. `likely` is the partition the caller expects (the subject its
   * effect moves money on): an approval is written in its partition only after the id is bound to it (grant below),
   * so one found there is that approval, read in one round trip instead of two. Anywhere else, the binding says.
   */
  async function read(approvalId: string, likely?: string): Promise<{ now: number; raw: Record<string, string> | null; partition: string | null }> {
    if (likely !== undefined) {
      const reply = await run<{ status: 'OK' | 'UNKNOWN'; now: number; approval?: Record<string, string> }>('describe-approval-1', [keys.approval(likely, approvalId)], []);
      if (reply.status === 'OK' && reply.approval) return { now: reply.now, raw: reply.approval, partition: likely };
    }
    const partition = await partitionOf(approvalId);
    if (partition === null) {
      await confirmAbsent();
      return { now: await serverTime(redis), raw: null, partition: null };
    }
    const reply = await run<{ status: 'OK' | 'UNKNOWN'; now: number; approval?: Record<string, string> }>('describe-approval-1', [keys.approval(partition, approvalId)], []);
    const raw = reply.status === 'OK' && reply.approval ? reply.approval : null;
    if (raw === null) await confirmAbsent();
    return { now: reply.now, raw, partition };
  }

  /** set-cap-1.lua under `mode`, then the replicas' wait (INTERLOCK_REDIS_MIN_REPLICAS) for a cap it set. */
  async function setCap(subject: string, limitCents: number, mode: 'any' | 'lower_only'): Promise<CapLowering> {
    if (!Number.isSafeInteger(limitCents) || limitCents < 0) throw new ApprovalError('invalid_approval', `A cap must be a whole, non-negative number of cents, not ${String(limitCents)}.`);
    if (typeof subject !== 'string' || !SUBJECT.test(subject)) {
      const given = typeof subject === 'string' ? subject.slice(0, 80) : `a value of type ${subject === null ? 'null' : typeof subject}`;
      throw new ApprovalError('invalid_approval', `A cap's subject must name one payment or one customer, e.g. payment:pi_123 or customer:cus_123, not ${given}.`);
    }
    // SUBJECT is narrower than the Redis key rule, so the partition key is always valid here.
    const partition = assertPartition(subject);
    const key = keys.subject(partition);
    const reply = await run<{ status: 'OK'; movedCents: string; limit: string; capSets: string; capSet: string } | { status: 'NOT_LOWER'; limit: string }>('set-cap-1', [key], [limitCents, `subject:${subject}`, randomBytes(8).toString('hex'), mode]);
    if (reply.status === 'NOT_LOWER') return { taken: false, limitInForce: Number(reply.limit) };
    // Every cap waits, a raised one too: whether it is lower than the one it replaced is not known here, and a raise
    // answered 503 is only set again.
    const held = await replicasHolding(partition, { key, field: 'capSet', value: reply.capSet });
    if (held < minReplicas) {
      // Not held in time: the replicas are behind, or the master no longer holds this cap's set, because another
      // cap was set since (another operator's, at the same moment) or because this one was lost (a failover to a
      // replica that had not taken it). A higher count on the master, or this count under another call's token,
      // tells a cap set after this one: a replica that missed this set holds a lower count, which reaches this one's
      // only with caps set after the failover. That cap is the one in force, so once the replicas hold it the answer
      // is that cap, not 503: told to set this one again, the caller would undo it.
      const [limit, moved, sets, set] = await redis.hmget(key, 'limit', 'movedCents', 'capSets', 'capSet');
      const later = typeof sets === 'string' && typeof set === 'string' && (Number(sets) > Number(reply.capSets) || (Number(sets) === Number(reply.capSets) && set !== reply.capSet));
      if (typeof limit !== 'string' || typeof set !== 'string' || !later) {
        throw new InterlockError('redis_not_durable', `The cap of ${reply.limit} on ${subject} is set on its Redis master, but ${behind(held)}, so a failover could still lose it and bring back the cap it replaced (or none). Set it again once the replicas catch up: setting the same cap again is idempotent, and answers once they hold it.`);
      }
      await replicated(partition, { key, field: 'capSet', value: set }, (acknowledged) =>
        `The cap of ${reply.limit} on ${subject} was replaced on its Redis master by a cap of ${limit} set since, but ${behind(acknowledged)}, so a failover could still lose it and bring back an earlier cap (or none). Setting ${reply.limit} again would undo the cap of ${limit}: once the replicas catch up, set again whichever of the two should stand.`,
      );
      return { taken: true, cap: { limitCents: Number(limit), movedCents: Number(moved ?? 0) } };
    }
    return { taken: true, cap: { limitCents: Number(reply.limit), movedCents: Number(reply.movedCents) } };
  }

  return {
    partitionOf,

    /** `options`: what the support API keeps beside the terms (JSON), written with them only when this grant creates the approval. */
    async grant(terms: ApprovalTerms, options?: string): Promise<{ created: boolean; grantedAt: number }> {
      const problems = termsProblems(terms);
      if (problems.length > 0) throw new ApprovalError('invalid_approval', `The approval is invalid: ${problems.join('; ')}.`);
      let partition: string;
      try {
        partition = assertPartition(terms.scope);
      } catch (error) {
        throw new ApprovalError('invalid_approval', `The approval is invalid: scope ${error instanceof Error ? error.message : String(error)}`);
      }
      // A grant is answered without waiting for replicas (INTERLOCK_REDIS_MIN_REPLICAS): a failover that loses it loses
      // an approval, and a missing approval refuses. An effect dispatched under it cannot outlive it either: the
      // dispatch waits for the replicas of the same masters, which then hold every write they took before, the grant's too.
      // The binding is written first, and only while Redis holds the deployment marker this process holds
      // (bind-approval-2.lua, in the marker's slot): a grant is never recorded into a Redis that lost the deployment's
      // data, whatever the durability monitor last read (a grant queued while Redis was down is written when the
      // connection comes back, before the re-check the reconnect starts).
      const marker = heldMarkerOn(redis);
      const binding = await run<{ status: 'BOUND'; bound: string } | { status: 'MARKER'; found: string }>('bind-approval-2', [keys.approvalPartitions, keys.deployment], [terms.id, partition, marker?.held ?? '']);
      if (binding.status === 'MARKER') {
        const found = binding.found === '' ? null : binding.found;
        throw marker?.lost(found) ?? new InterlockError('redis_not_durable', `Redis lost its data: the deployment marker ${keys.deployment} is ${found === null ? 'gone' : 'another'}, so nothing was granted.`);
      }
      const bound = binding.bound;
      if (bound !== partition) {
        // The id is bound to another scope first (the binding is written before the approval, in another slot). No
        // approval behind the binding is a grant that stopped in between (Redis lost, the process killed): say so, since
        // `approvals describe` answers "no approval" for it.
        const unfinished = bound !== null && (await redis.exists(keys.approval(bound, terms.id))) === 0;
        if (unfinished) throw new ApprovalError('approval_conflict', `Approval id ${terms.id} was taken for scope ${bound} by a grant that did not finish (no approval was written under it), so it cannot be granted for ${terms.scope}. Grant a new id; or, if ${bound} is what was meant, grant ${terms.id} with that scope again.`);
        throw new ApprovalError('approval_conflict', `Approval ${terms.id} already exists with scope ${bound ?? '?'}; grant a new id instead of changing its scope.`);
      }
      const reply = await run<{ status: 'CREATED' | 'EXISTS' | 'CONFLICT'; grantedAt?: number }>('grant-approval-1', [keys.approval(partition, terms.id)], [termsJson(terms), options ?? '']);
      if (reply.status === 'CONFLICT') {
        // A retry of the same grant (a command run again, a request sent again) differs from it only in when it
        // asked, so only in its expiry, and asks later: the first one stands. One that asks for an earlier expiry is no
        // retry (the approval would stay live longer than just asked), and neither is any other term under the id.
        const { raw } = await read(terms.id, partition);
        const same = raw !== null && raw.approver === terms.approver && Number(raw.capCents) === terms.capCents && Number(raw.maxUses) === terms.maxUses && raw.scope === terms.scope;
        if (!same) throw new ApprovalError('approval_conflict', `Approval ${terms.id} already exists with other terms; an approval never changes once granted. Grant a new id.`);
        if (Number(raw.expiresAt) > terms.expiresAt) {
          throw new ApprovalError('approval_conflict', `Approval ${terms.id} already exists and expires at ${new Date(Number(raw.expiresAt)).toISOString()}, later than the ${new Date(terms.expiresAt).toISOString()} asked now; an approval never changes once granted. Revoke it (\`npx interlock approvals revoke ${terms.id} --by <who>\`) and grant a new id to shorten it.`);
        }
        return { created: false, grantedAt: Number(raw.grantedAt ?? 0) };
      }
      return { created: reply.status === 'CREATED', grantedAt: reply.grantedAt ?? 0 };
    },

    /** The error for an approval not found where it was looked for (revoke's, and a caller's of describe). */
    notFound: unknown,

    /**
     * Revokes the approval its id is bound to or, with `subject`, the one on that subject (its scope), whatever its id
     * is bound to: an approval whose binding a failover lost still authorizes money on its subject (unknown), and is
     * revoked there. Its id, bound to nothing, is bound to it again (`rebound`), so it is found by its id alone after.
     */
    async revoke(approvalId: string, by: string, subject?: string): Promise<RevokeResult> {
      const wanted = subject === undefined ? undefined : subjectPartition(subject);
      const bound = await partitionOf(approvalId);
      const partition = wanted ?? bound;
      if (partition === null) {
        await confirmAbsent();
        throw unknown(approvalId);
      }
      const reply = await run<{ status: 'REVOKED' | 'ALREADY' | 'UNKNOWN'; revokedAt?: number; mayStillLand?: unknown }>(
        'revoke-approval-2',
        [keys.approval(partition, approvalId), keys.approvalOpen(partition, approvalId)],
        [by],
      );
      if (reply.status === 'UNKNOWN') {
        await confirmAbsent();
        throw unknown(approvalId, subject ?? partition, bound);
      }
      // First bound wins: a grant of the id elsewhere that came in between keeps its binding.
      const rebound = bound === null && (await redis.hsetnx(keys.approvalPartitions, approvalId, partition)) === 1;
      // An approval already revoked waits too: it may be this revoke's own retry, after the first was not held in time.
      await replicated(partition, { key: keys.approval(partition, approvalId), field: 'revoked', value: '1' }, (acknowledged) =>
        `Approval ${approvalId} is revoked on its Redis master, but ${behind(acknowledged)}, so a failover could still lose the revoke and let refunds be sent under the approval again. Revoke it again once the replicas catch up: revoking is idempotent, and answers once they hold it.`,
      );
      // Already revoked: who did is read after the script, and never changes once written (the script writes it with
      // `revoked`, once), so the read needs no atomicity with it.
      const revokedBy = reply.status === 'ALREADY' ? await redis.hget(keys.approval(partition, approvalId), 'revokedBy') : by;
      return { revokedAt: reply.revokedAt ?? 0, revokedBy, alreadyRevoked: reply.status === 'ALREADY', mayStillLand: toList(reply.mayStillLand).sort(), rebound };
    },

    /**
     * A snapshot on the Redis clock with the running totals, or null when there is no approval where it is looked for
     * (through its id's binding; on `subject` when one is given, whatever its id is bound to: see unknown, which says
     * what a null means); and who revoked it (null while it is not revoked). `revokedBy` stays out of the snapshot: the
     * snapshot is what entries record. Reads only: a binding found lost is not written (revoke binds it again).
     */
    async describe(approvalId: string, subject?: string): Promise<Described> {
      if (subject === undefined) {
        const { now, raw } = await read(approvalId);
        return { now, snapshot: raw === null ? null : snapshotOf(approvalId, raw), revokedBy: raw?.revokedBy ?? null, options: raw?.options ?? null, unbound: false };
      }
      const partition = subjectPartition(subject);
      const [reply, bound] = await Promise.all([run<{ status: 'OK' | 'UNKNOWN'; now: number; approval?: Record<string, string> }>('describe-approval-1', [keys.approval(partition, approvalId)], []), partitionOf(approvalId)]);
      const raw = reply.status === 'OK' && reply.approval ? reply.approval : null;
      if (raw === null) await confirmAbsent();
      return { now: reply.now, snapshot: raw === null ? null : snapshotOf(approvalId, raw), revokedBy: raw?.revokedBy ?? null, options: raw?.options ?? null, unbound: raw !== null && bound !== partition };
    },

    /** The terms as granted, for a worker to quote in entries; null when there is no such approval (see read). */
    async terms(approvalId: string, likely?: string): Promise<GrantedTerms | null> {
      const { raw, partition } = await read(approvalId, likely);
      if (raw === null || partition === null || raw.terms === undefined) return null;
      const parsed = JSON.parse(raw.terms) as ApprovalTerms;
      return { ...parsed, partition, termsSha: sha1(raw.terms) };
    },

    /** The cap every agent shares on one subject (null when none is set) and what the gate has moved or has in flight there. */
    async subjectCap(subject: string): Promise<{ limitCents: number | null; movedCents: number }> {
      const [limit, moved] = await redis.hmget(keys.subject(assertPartition(subject)), 'limit', 'movedCents');
      return { limitCents: limit === null ? null : Number(limit), movedCents: Number(moved ?? 0) };
    },

    /**
     * Sets the cap every agent shares on one subject, e.g. "at most 3000 cents refunded on payment:pi_1". It
     * counts everything the gate has moved or has in flight there, whenever the cap was set; 0 stops all money.
     * Answers the cap in force, which is another one when a cap set at the same moment replaced this one.
     */
    async setSubjectCap(subject: string, limitCents: number): Promise<CapInForce> {
      const set = await setCap(subject, limitCents, 'any');
      if (!set.taken) throw new Error(`set-cap refused a cap of ${limitCents} on ${subject} it was not asked to compare`);
      return set.cap;
    },

    /**
     * Sets the cap as setSubjectCap does only when it is not above the one in force (any cap, when none is): the brake,
     * taken while Redis is not durable, as a revoke is. Otherwise answers `taken: false` with the cap in force, and
     * writes nothing. The compare is made in the script that writes (set-cap-1.lua), so it holds against any cap set
     * at the same moment.
     */
    async lowerSubjectCap(subject: string, limitCents: number): Promise<CapLowering> {
      return setCap(subject, limitCents, 'lower_only');
    },
  };
}
