// Rule: a failed case's inbox item (case_failed) is named by its case and by when its failure was written, so the
// same failure names one item and a later failure another; it allows only a dismissal, is never acted on in an
// effect's chain, and says what to do as the case routes do it: a failure that passes (mayReopenCase) is decided
// afresh when the same case is submitted again, any other keeps the case failed under its id (a new case id).
import { describe, expect, it } from 'vitest';
import { caseEffectId } from '../../queues/decisions.js';
import { actionProblems, ALLOWED_ACTIONS, caseEffectIdOf, caseFailureAdvice, caseFailureItem, caseFailureItemId, inboxItemId, parseInboxItemId } from '../../src/core/inbox.js';
import type { EntryOf } from '../../src/core/entries.js';
import { INBOX_CURSOR } from '../../src/redis/inbox.js';
import { inboxItemParam, inboxQuery } from '../../webhooks/api/schemas.js';

const failure = { caseId: 'case-7:a#b.c', subject: 'payment:pi_1', approval: 'ap_1', code: 'unknown_approval' as const, message: 'No approval ap_1.', failedAt: 1_700_000_000_123, attempts: 1 };

describe('a case_failed item', () => {
  it('is named by the case (its effect id, hex) and the failure, and parses back to that effect', () => {
    const id = caseFailureItemId(failure.caseId, failure.failedAt);
    expect(caseEffectIdOf(failure.caseId)).toBe(caseEffectId(failure.caseId));
    expect(id).toBe(`case_failed:${caseEffectId(failure.caseId)}:1700000000123`);
    expect(caseFailureItemId(failure.caseId, failure.failedAt + 1)).not.toBe(id);
    expect(parseInboxItemId(id)).toEqual({ kind: 'case_failed', effectId: caseEffectId(failure.caseId) });
    // Taken by the API's path, the page's and the CLI's checks, and in a listing's cursor.
    expect(inboxItemParam.safeParse({ id }).success).toBe(true);
    expect(INBOX_CURSOR.exec(`1700000000999.${id}`)?.[2]).toBe(id);
    expect(inboxQuery.safeParse({ kind: 'case_failed' }).success).toBe(true);
    // Not a case_failed id without its failure, nor an effect kind's id with one.
    expect(parseInboxItemId(`case_failed:${caseEffectId(failure.caseId)}`)).toBeNull();
    expect(parseInboxItemId(`model_deviated:${caseEffectId(failure.caseId)}:1`)).toBeNull();
  });

  it('leaves the ids of the effect kinds as they were', () => {
    const effectId = 'a'.repeat(64);
    expect(inboxItemId('model_deviated', effectId)).toBe(`model_deviated:${effectId}`);
    expect(parseInboxItemId(`model_deviated:${effectId}`)).toEqual({ kind: 'model_deviated', effectId });
    expect(INBOX_CURSOR.exec(`12.exposure:${effectId}`)?.[2]).toBe(`exposure:${effectId}`);
    expect(ALLOWED_ACTIONS.model_deviated).toEqual(['reapprove', 'dismiss']);
  });

  it('carries the case, its code and message and what to do; nothing at stake; dismissal only', () => {
    const item = caseFailureItem(failure);
    expect(item).toMatchObject({
      kind: 'case_failed',
      effectId: caseEffectId(failure.caseId),
      subject: 'payment:pi_1',
      outcome: null,
      centsAtStake: 0,
      currency: null,
      changes: [],
      actions: ['dismiss'],
      detail: { case_id: failure.caseId, code: 'unknown_approval', message: 'No approval ap_1.', failed_at: '2023-11-14T22:13:20.123Z', attempts: 1, approval: 'ap_1', resubmit: 'new_case_id' },
    });
    expect(item.happened).toContain(`Case ${failure.caseId} failed (unknown_approval)`);
    expect(String(item.detail?.['what_to_do'])).toContain('submit the case under a new case id');
  });

  it('says to submit the same case again for a failure that passes, and a new case id for one that does not', () => {
    for (const code of ['decider_unavailable', 'decision_invalid', 'premise_read_failed', 'decision_interrupted'] as const) {
      expect(caseFailureAdvice('c1', code, 'payment:pi_1', 'ap_1')).toContain('submit case c1 again under the same id and payload');
      expect(caseFailureItem({ ...failure, code }).detail?.['resubmit']).toBe('same_case_id');
    }
    expect(caseFailureAdvice('c1', 'decider_unavailable', 'payment:pi_1', 'ap_1')).toMatch(/^Once the Messages API answers again/);
    for (const code of ['unknown_approval', 'invalid_request', 'invalid_config', 'conflicting_payload', 'internal'] as const) {
      const advice = caseFailureAdvice('c1', code, 'payment:pi_1', 'ap_1');
      expect(advice).toContain('new case id');
      expect(advice).toContain('case c1 stays failed under its id');
    }
  });

  it('is never acted on in an effect chain: verify() names a RESOLVED entry that names one', () => {
    const effectId = caseEffectId(failure.caseId);
    const entry = { kind: 'RESOLVED', item: caseFailureItemId(failure.caseId, 5), action: 'dismiss', by: { name: 'lee', role: 'approver' }, note: 'seen', resolution: null, reapproval: null } as unknown as EntryOf<'RESOLVED'>;
    expect(actionProblems(entry, effectId, null, false, new Set()).join(' ')).toContain("a failed case's, which is closed in the inbox index and never on a receipt");
  });
});
