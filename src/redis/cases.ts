// Support cases in Redis (keys.case): one JSON value per case, created once with SET NX (so two submissions of one
// case id cannot both create it) and then updated by the decisions worker as the decision moves along. The money
// is not kept here: a proposed case names its effect, whose journal is the record of what was sent.
import { queuedStatus, sameSubmission, type CaseRecord, type CaseStatus, type CaseSubmission } from '../core/cases.js';
import type { RedisClient } from './client.js';
import type { Keys } from './keys.js';

export type CaseCreated =
  /** Stored now; the caller queues it. */
  | { status: 'created'; record: CaseRecord }
  /** The same case was submitted before with this payload: the case as it stands. */
  | { status: 'exists'; record: CaseRecord }
  /** The case id is taken by another payload; the stored one stands. */
  | { status: 'conflict'; record: CaseRecord };

export type Cases = ReturnType<typeof createCases>;

export function createCases(deps: { redis: RedisClient; keys: Keys; now?: () => number }) {
  const { redis, keys } = deps;
  const now = deps.now ?? Date.now;

  async function get(caseId: string): Promise<CaseRecord | null> {
    const text = await redis.get(keys.case(caseId));
    return text === null ? null : (JSON.parse(text) as CaseRecord);
  }

  return {
    get,
    /** Stores a new case as queued, or answers the one stored under its id (the same payload, or a conflict). */
    async create(submission: CaseSubmission, submittedBy: string): Promise<CaseCreated> {
      const at = now();
      const record: CaseRecord = { submission, submittedBy, createdAt: at, status: queuedStatus(at) };
      for (let attempt = 0; attempt < 3; attempt += 1) {
        if ((await redis.set(keys.case(submission.caseId), JSON.stringify(record), 'NX')) === 'OK') return { status: 'created', record };
        const stored = await get(submission.caseId);
        // Gone between the two calls (deleted by an operator): try to create it again.
        if (stored === null) continue;
        return { status: sameSubmission(stored.submission, submission) ? 'exists' : 'conflict', record: stored };
      }
      throw new Error(`case ${submission.caseId} kept appearing and disappearing while it was being created`);
    },
    /** Writes where the case stands now; the submission is never changed. */
    async setStatus(caseId: string, status: Omit<CaseStatus, 'updatedAt'>): Promise<CaseRecord> {
      const stored = await get(caseId);
      if (stored === null) throw new Error(`case ${caseId} is not stored, so its status cannot be set`);
      const record: CaseRecord = { ...stored, status: { ...status, updatedAt: now() } };
      await redis.set(keys.case(caseId), JSON.stringify(record), 'XX');
      return record;
    },
  };
}
