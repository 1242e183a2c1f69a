// Support cases in Redis (keys.case): one JSON value per case, created once with SET NX (so two submissions of one
// case id cannot both create it) and then updated by the decisions worker as the decision moves along. The money
// is not kept here: a proposed case names its effect, whose journal is the record of what was sent.
//
// A status is written by compare and set (set-case-status-1.lua) under mayReplaceCaseStatus: two runs of one case
// cannot overwrite each other blindly, and a case the journal has decided is never moved off that decision.
//
// Times are Redis's (TIME), not the writing worker's clock, and a status's `updatedAt` is always later than the one it
// replaces (statusTime): a failure's time names its inbox item, and open-case-failure-5 lets the later failure
// supersede the earlier one by it, so two workers whose clocks differ must still order a case's writes as they landed.
import { mayReopenCase, mayReplaceCaseStatus, queuedStatus, sameSubmission, type CaseRecord, type CaseStatus, type CaseSubmission } from '../core/cases.js';
import { serverTime, type RedisClient } from './client.js';
import type { Keys } from './keys.js';
import { createScriptRunner } from './scripts.js';

export type CaseCreated =
  /** Stored now; the caller queues it. */
  | { status: 'created'; record: CaseRecord }
  /** The same case was submitted before with this payload: the case as it stands. */
  | { status: 'exists'; record: CaseRecord }
  /** The case id is taken by another payload; the stored one stands. */
  | { status: 'conflict'; record: CaseRecord };

export type Cases = ReturnType<typeof createCases>;

/** A status write: the record as it stands after it, and whether it is the one asked for (false: the stored one stood). */
export type CaseStatusWritten = { written: boolean; record: CaseRecord };

/** Compare-and-set rounds before a status write gives up (each lost round is another writer's write landing). */
const STATUS_WRITE_ROUNDS = 20;

/**
 * The `updatedAt` of a status written at `now` over `stored`: `now`, or 1 ms after the stored one when that is not
 * earlier (Redis's clock stepped back, or a write of an older version timed by its worker's clock). The compare and set
 * stores it only over the status it was computed from, so a case's writes carry increasing times in the order they
 * landed, whatever clock any writer has.
 */
function statusTime(stored: CaseStatus, now: number): number {
  return Math.max(now, stored.updatedAt + 1);
}

/** `now` (tests): the time to write at, ms; Redis's TIME by default. */
export function createCases(deps: { redis: RedisClient; keys: Keys; now?: () => number | Promise<number> }) {
  const { redis, keys } = deps;
  const now = deps.now ?? (() => serverTime(redis));
  const run = createScriptRunner(redis);

  async function get(caseId: string): Promise<CaseRecord | null> {
    const text = await redis.get(keys.case(caseId));
    return text === null ? null : (JSON.parse(text) as CaseRecord);
  }

  return {
    get,
    /**
     * The cases' outbox (keys.casesUnqueued): `queueing` notes, before a submission stores or queues the case, that it
     * is on its way to the decisions queue (the first note's time is kept); the note stays until the case is final or
     * is not stored, and `queued` drops it then; `queuedLater` times a note (if there is one) `at`, so a sweep looks at
     * it again only a grace later; `unqueued` lists the notes made at or before `before` (Redis time), oldest first.
     */
    async queueing(caseId: string, at: number): Promise<void> {
      // The id is checked as the case's own key checks it (a bad one throws before anything is written).
      keys.case(caseId);
      await redis.zadd(keys.casesUnqueued, 'NX', at, caseId);
    },
    async queued(caseId: string): Promise<void> {
      await redis.zrem(keys.casesUnqueued, caseId);
    },
    async queuedLater(caseId: string, at: number): Promise<void> {
      await redis.zadd(keys.casesUnqueued, 'XX', at, caseId);
    },
    async unqueued(before: number, limit: number): Promise<string[]> {
      return redis.zrangebyscore(keys.casesUnqueued, '-inf', before, 'LIMIT', 0, limit);
    },
    /** Stores a new case as queued, or answers the one stored under its id (the same payload, or a conflict). */
    async create(submission: CaseSubmission, submittedBy: string): Promise<CaseCreated> {
      const at = await now();
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
    /**
     * Queues a failed case again when it may be decided again (mayReopenCase: it failed for a reason that passes,
     * and nothing was proposed), keeping the error it failed with until it is decided. Compare and set, as
     * setStatus: of two submissions at once, one reopens it and the other finds it queued already.
     */
    async reopen(caseId: string): Promise<CaseStatusWritten> {
      for (let round = 0; round < STATUS_WRITE_ROUNDS; round += 1) {
        // The time is read beside the record (no round trip more); it is only used if the record may be written.
        const [text, at] = await Promise.all([redis.get(keys.case(caseId)), now()]);
        if (text === null) throw new Error(`case ${caseId} is not stored, so it cannot be queued again`);
        const stored = JSON.parse(text) as CaseRecord;
        if (!mayReopenCase(stored.status)) return { written: false, record: stored };
        const record: CaseRecord = { ...stored, status: { ...queuedStatus(statusTime(stored.status, at)), error: stored.status.error } };
        const answer = await run<{ status: 'OK' | 'CHANGED' | 'MISSING' }>('set-case-status-1', [keys.case(caseId)], [text, JSON.stringify(record)]);
        if (answer.status === 'OK') return { written: true, record };
        if (answer.status === 'MISSING') throw new Error(`case ${caseId} is not stored, so it cannot be queued again`);
      }
      throw new Error(`case ${caseId} kept changing while it was being queued again (${STATUS_WRITE_ROUNDS} rounds)`);
    },
    /**
     * Writes where the case stands now, unless the stored status may not be replaced by it (mayReplaceCaseStatus:
     * another run of the case decided it as the journal holds it); the submission is never changed.
     */
    async setStatus(caseId: string, status: Omit<CaseStatus, 'updatedAt'>): Promise<CaseStatusWritten> {
      for (let round = 0; round < STATUS_WRITE_ROUNDS; round += 1) {
        const [text, at] = await Promise.all([redis.get(keys.case(caseId)), now()]);
        if (text === null) throw new Error(`case ${caseId} is not stored, so its status cannot be set`);
        const stored = JSON.parse(text) as CaseRecord;
        if (!mayReplaceCaseStatus(stored.status, status)) return { written: false, record: stored };
        const record: CaseRecord = { ...stored, status: { ...status, updatedAt: statusTime(stored.status, at) } };
        const answer = await run<{ status: 'OK' | 'CHANGED' | 'MISSING' }>('set-case-status-1', [keys.case(caseId)], [text, JSON.stringify(record)]);
        if (answer.status === 'OK') return { written: true, record };
        if (answer.status === 'MISSING') throw new Error(`case ${caseId} is not stored, so its status cannot be set`);
      }
      throw new Error(`case ${caseId} kept changing while its status was being written (${STATUS_WRITE_ROUNDS} rounds)`);
    },
  };
}
