// Rule: the page's inbox shows a failed case's item (case_failed) as what it is: the case, its error code and what to
// do, nothing moved (not a sum of nothing in no currency, not a link to an effect that was never recorded), and only
// the dismiss form; an effect's item reads as it did. (The notice after a dismissal: tests/queues/case-failed-inbox.)
import { describe, expect, it } from 'vitest';
import { caseFailureItem, type InboxItem } from '../../src/interlock.js';
import { inboxItemPage, inboxListPage } from '../../webhooks/ui/inbox-pages.js';

const viewer = { name: 'alex', role: 'approver', csrf: 'token', sections: [] };
const draft = caseFailureItem({ caseId: 'case-42', subject: 'payment:pi_9', approval: 'ap_gone', code: 'unknown_approval', message: 'No approval ap_gone.', failedAt: 1_700_000_000_000, attempts: 1 });
const open: InboxItem = { ...draft, openedAt: 1_700_000_000_050, status: 'open', closure: null };
const page = (item: InboxItem, notice: string | null = null) => inboxItemPage({ viewer, item, canAct: true, canOpenEffects: true, notice, error: null }).text;

describe('a case_failed item on the page', () => {
  it('shows the case, its code and what to do, with the dismiss form only and no effect link', () => {
    const text = page(open);
    expect(text).toContain('<h1>case failed: case <code>case-42</code>, nothing moved</h1>');
    expect(text).toContain('<dt>Case</dt><dd><code>case-42</code> on <code>payment:pi_9</code>, under approval <code>ap_gone</code></dd>');
    expect(text).toContain('<dt>Error</dt><dd><code>unknown_approval</code></dd>');
    expect(text).toContain('Grant an approval that covers payment:pi_9');
    expect(text).not.toContain('/ui/effects/');
    expect(text).not.toContain('currency unknown');
    expect(text).toContain(`action="/ui/inbox/${open.id}/dismiss"`);
    expect(text).not.toContain('/reapprove"');
    expect(text).not.toContain('/resolve"');
  });

  it('lists it as nothing moved, and shows who dismissed it', () => {
    expect(inboxListPage({ viewer, items: [open], status: 'open', nextHref: null }).text).toContain('<td>nothing moved</td>');
    const closed: InboxItem = { ...open, status: 'closed', closure: { action: 'dismiss', by: { name: 'alex', role: 'approver' }, note: 'new case filed', resolution: null, reapproval: null, at: 1_700_000_100_000 } };
    const inboxPage = inboxItemPage({ viewer, item: closed, canAct: true, canOpenEffects: true, notice: null, error: null });
    expect(inboxPage.text).toContain('alex (approver) chose <strong>dismiss</strong>');
  });

  it("reads an effect's item as before", () => {
    const effectId = 'b'.repeat(64);
    const item: InboxItem = { id: `model_deviated:${effectId}`, kind: 'model_deviated', effectId, subject: 'payment:pi_9', outcome: 'REFUSED:lease', happened: 'MODEL_DEVIATED', centsAtStake: 3_000, currency: 'usd', changes: [], actions: ['reapprove', 'dismiss'], detail: null, openedAt: 1, status: 'open', closure: null };
    const text = page(item);
    expect(text).toContain('<h1>model deviated: $30.00 at stake</h1>');
    expect(text).toContain(`<dt>Effect</dt><dd><a href="/ui/effects/${effectId}"><code>${effectId}</code></a> on <code>payment:pi_9</code></dd>`);
    expect(text).toContain('<dt>Outcome</dt><dd>REFUSED:lease</dd>');
    expect(inboxListPage({ viewer, items: [item], status: 'open', nextHref: null }).text).toContain('<td>$30.00</td>');
  });
});
