// Rule: a failed case has one open case_failed inbox item, its latest failure's, whichever decisions worker wrote each
// failure and whatever its clock says. An item is named by its failure's time (the failed status's updatedAt) and
// open-case-failure-5 supersedes the items of older times, so a case's status times must follow the order its writes
// landed in: they are Redis's TIME, not the worker's Date.now(), and each is later than the status it replaced
// (src/redis/cases.ts), so a worker whose clock is an hour behind cannot write a failure that reads as the older one.
// Real Redis under a random prefix.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { caseEffectIdOf, caseFailureItem, caseFailureItemId } from '../../src/core/inbox.js';
import type { CaseRecord, CaseStatus, CaseSubmission } from '../../src/core/cases.js';
import { serverTime, type RedisClient } from '../../src/redis/client.js';
import { createCases } from '../../src/redis/cases.js';
import { createInbox } from '../../src/redis/inbox.js';
import type { Journal } from '../../src/redis/journal.js';
import { createKeys } from '../../src/redis/keys.js';
import { removePrefixes, REDIS_URL } from '../support/harness.js';

const prefix = `csc${randomBytes(6).toString('hex')}`;
const keys = createKeys(prefix);
const redis = new Redis(REDIS_URL) as unknown as RedisClient;
// The inbox asks its journal only for the time it opens and closes items at.
const journal = { serverTime: () => serverTime(redis) } as unknown as Journal;
const inbox = createInbox({ redis, keys, journal, alerts: { resolve: async () => null } as never });

const HOUR = 3_600_000;

afterEach(() => {
  vi.restoreAllMocks();
});
afterAll(async () => {
  await (redis as unknown as Redis).quit();
  await removePrefixes([prefix]);
});

function submission(): CaseSubmission {
  const id = randomBytes(4).toString('hex');
  return { caseId: `case-${id}`, kind: 'refund', subject: `pi_${id}`, incident: null, story: 'The jar arrived cracked.', approval: `ap_${id}`, agent: 'support-bot' };
}

const failed = (message: string): Omit<CaseStatus, 'updatedAt'> => ({ state: 'failed', decision: null, effectId: null, problems: [], error: { code: 'decision_invalid', message }, attempts: 1 });

/** Opens the item of the failure `record` holds, as the decisions worker does (openFailureItemOf). */
function openItemOf(record: CaseRecord) {
  const { submission: filed, status } = record;
  return inbox.openCaseFailure(
    caseFailureItem({ caseId: filed.caseId, subject: `payment:${filed.subject}`, approval: filed.approval, code: status.error?.code ?? 'internal', message: status.error?.message ?? '', failedAt: status.updatedAt, attempts: status.attempts }),
  );
}

async function openFailureIds(caseId: string): Promise<string[]> {
  return (await inbox.list({ status: 'open', kind: 'case_failed', effect: caseEffectIdOf(caseId) }, 100)).data.map((item) => item.id);
}

describe("a case's failures written by two decisions workers whose clocks differ", () => {
  it('a worker whose clock is an hour behind stamps what it writes with Redis time, not its own', async () => {
    const real = Date.now.bind(Date);
    vi.spyOn(Date, 'now').mockImplementation(() => real() - HOUR);
    const cases = createCases({ redis, keys });
    const filed = submission();
    const before = await serverTime(redis);
    const created = await cases.create(filed, 'sam');
    const written = await cases.setStatus(filed.caseId, failed('the model answered no decision'));
    const after = await serverTime(redis);
    expect(created.status).toBe('created');
    expect(written.written).toBe(true);
    expect(created.record.createdAt).toBeGreaterThanOrEqual(before);
    expect(written.record.status.updatedAt).toBeGreaterThan(created.record.status.updatedAt);
    expect(written.record.status.updatedAt).toBeLessThanOrEqual(after + 1);
  });

  it("the newer failure, written by the worker whose clock is behind, supersedes the older failure's item: one stays open", async () => {
    const workerA = createCases({ redis, keys });
    // Its time an hour behind Redis's (an injected clock: what a status written by it would carry if its time were believed).
    const workerB = createCases({ redis, keys, now: async () => (await serverTime(redis)) - HOUR });
    const filed = submission();
    expect((await workerA.create(filed, 'sam')).status).toBe('created');

    // Worker A fails the case first; its item opens.
    const first = await workerA.setStatus(filed.caseId, failed('first failure'));
    expect(first.written).toBe(true);
    await openItemOf(first.record);
    // Submitted again (decision_invalid passes), worker B takes the job and fails it again, later.
    const reopened = await workerB.reopen(filed.caseId);
    expect(reopened.written).toBe(true);
    const second = await workerB.setStatus(filed.caseId, failed('second failure'));
    expect(second.written).toBe(true);
    const opened = await openItemOf(second.record);

    const firstId = caseFailureItemId(filed.caseId, first.record.status.updatedAt);
    const secondId = caseFailureItemId(filed.caseId, second.record.status.updatedAt);
    expect(reopened.record.status.updatedAt).toBeGreaterThan(first.record.status.updatedAt);
    expect(second.record.status.updatedAt).toBeGreaterThan(reopened.record.status.updatedAt);
    expect(opened.superseded).toEqual([firstId]);
    expect(await openFailureIds(filed.caseId)).toEqual([secondId]);

    // The older failure's opening met again late (a sweep, a run that died before opening it) opens nothing new.
    await openItemOf(first.record);
    expect(await openFailureIds(filed.caseId)).toEqual([secondId]);
  });
});
