// The webhook signature check (issue 10 §1) through the official SDK: a body signed with any configured secret
// (a rotation) is an event; no header, another secret, a tampered body, a timestamp outside the tolerance either
// way, a signed body that is not JSON or not an event (a thin event notification among them) each get their own reason; configuration without a usable
// whsec_ secret is refused at start. A header with no single readable t= is refused, so a captured old delivery
// cannot be given a fresh time.
import { describe, expect, it } from 'vitest';
import { createWebhookVerifier, signWebhookBody } from '../../src/stripe/index.js';

const OLD = 'whsec_0ld5ecret0ld5ecret0ld5ecret';
const NEW = 'whsec_n3w5ecretn3w5ecretn3w5ecret';
const NOW = 1_800_000_000;
const event = { id: 'evt_1', object: 'event', type: 'refund.failed', created: NOW - 5, data: { object: { id: 're_1', object: 'refund', status: 'failed' } } };
const body = JSON.stringify(event);
const verifier = createWebhookVerifier([NEW, OLD], { nowSeconds: () => NOW });

describe('webhook signatures', () => {
  it('accepts a body signed with any configured secret and returns the event', () => {
    for (const secret of [NEW, OLD]) {
      const verdict = verifier(Buffer.from(body), signWebhookBody(body, secret, NOW - 10));
      expect(verdict).toEqual({ ok: true, event: { id: 'evt_1', type: 'refund.failed', created: NOW - 5, data: event.data } });
    }
  });

  it('refuses a missing header, another secret and a tampered body', () => {
    expect(verifier(Buffer.from(body), undefined)).toMatchObject({ ok: false, reason: 'missing_signature' });
    expect(verifier(Buffer.from(body), '  ')).toMatchObject({ ok: false, reason: 'missing_signature' });
    expect(verifier(Buffer.from(body), signWebhookBody(body, 'whsec_someoneelse', NOW))).toMatchObject({ ok: false, reason: 'bad_signature' });
    const tampered = body.replace('failed', 'succeeded');
    expect(verifier(Buffer.from(tampered), signWebhookBody(body, NEW, NOW))).toMatchObject({ ok: false, reason: 'bad_signature' });
    expect(verifier(Buffer.from(body), 'v1=abc')).toMatchObject({ ok: false, reason: 'bad_signature' });
    expect(verifier(Buffer.from(body), `t=${NOW},v1=${'0'.repeat(64)}`)).toMatchObject({ ok: false, reason: 'bad_signature' });
  });

  // Rule: stale_timestamp ("a replay, or a clock that is off") is only for a delivery a configured secret signed; a
  // signature that matches none is bad_signature whatever time it claims, as the SDK orders its checks, so a sender
  // without the secret cannot choose which rejection the logs and the rejected-events metric report.
  it('refuses a forgery as a bad signature whatever time it claims, past or future', () => {
    for (const at of [NOW - 3_600, NOW + 3_600, NOW - 30 * 24 * 3600]) {
      expect(verifier(Buffer.from(body), signWebhookBody(body, 'whsec_someoneelse', at)), String(at)).toMatchObject({ ok: false, reason: 'bad_signature' });
    }
  });

  it('refuses a timestamp more than the tolerance away, past or future, even when the signature is right', () => {
    expect(verifier(Buffer.from(body), signWebhookBody(body, NEW, NOW - 301))).toMatchObject({ ok: false, reason: 'stale_timestamp' });
    expect(verifier(Buffer.from(body), signWebhookBody(body, NEW, NOW + 301))).toMatchObject({ ok: false, reason: 'stale_timestamp' });
    expect(verifier(Buffer.from(body), signWebhookBody(body, NEW, NOW - 300))).toMatchObject({ ok: true });
    const strict = createWebhookVerifier([NEW], { nowSeconds: () => NOW, toleranceSeconds: 10 });
    expect(strict(Buffer.from(body), signWebhookBody(body, NEW, NOW - 11))).toMatchObject({ ok: false, reason: 'stale_timestamp' });
  });

  it('refuses an old signed delivery whose header was edited to carry a second or unreadable time', () => {
    // A delivery captured a month ago, signed and refused as stale as it is. Our check and the SDK's must read the
    // same time: with a fresh t= put in front (the SDK reads the last), or the old one made unreadable to a strict
    // reader (t=…x, which parseInt still reads), it would be a month-old event accepted as new.
    const old = NOW - 30 * 24 * 3600;
    const captured = signWebhookBody(body, NEW, old);
    expect(verifier(Buffer.from(body), captured)).toMatchObject({ ok: false, reason: 'stale_timestamp' });
    for (const edited of [`t=${NOW},${captured}`, `${captured},t=${NOW}`, captured.replace(`t=${old}`, `t=${old}x`), captured.replace(`t=${old}`, `t=${old}.5`), captured.replace(`t=${old},`, '')]) {
      expect(verifier(Buffer.from(body), edited), edited).toMatchObject({ ok: false, reason: 'bad_signature' });
    }
    // Two times, both fresh and equal, are still refused: Stripe sends one.
    const fresh = signWebhookBody(body, NEW, NOW);
    expect(verifier(Buffer.from(body), `t=${NOW},${fresh}`)).toMatchObject({ ok: false, reason: 'bad_signature' });
    expect(verifier(Buffer.from(body), fresh)).toMatchObject({ ok: true });
  });

  it('refuses a signed body that is not JSON or not an event', () => {
    for (const text of ['not json', '[]', '{"id":"evt_1","type":"refund.failed"}', '{"id":"evt_1","type":"x","data":{"object":[]}}', '{"id":"","type":"x","data":{"object":{}}}', '{"id":"x","object":"refund","type":"x","data":{"object":{}}}']) {
      expect(verifier(Buffer.from(text), signWebhookBody(text, NEW, NOW)), text).toMatchObject({ ok: false, reason: 'not_an_event' });
    }
  });

  // Rule: a signed body that is not UTF-8 is not_an_event: the SDK checks the signature over its lenient decoding (a
  // Latin-1 é reads as U+FFFD), so it verifies, but Stripe sends only UTF-8 and what would be recorded is not what was sent.
  it('refuses a signed body that is not UTF-8, naming the byte', () => {
    const latin1 = Buffer.concat([Buffer.from(body.slice(0, -2)), Buffer.from(',"note":"caf\xe9"}}', 'latin1')]);
    const verdict = verifier(latin1, signWebhookBody(latin1.toString('utf8'), NEW, NOW));
    expect(verdict).toMatchObject({ ok: false, reason: 'not_an_event' });
    expect(verdict.ok ? '' : verdict.message).toContain(`byte ${latin1.indexOf(0xe9)} is not part of a UTF-8 character`);
    // The same event in UTF-8 is taken.
    const utf8 = `${body.slice(0, -2)},"note":"café"}}`;
    expect(verifier(Buffer.from(utf8), signWebhookBody(utf8, NEW, NOW))).toMatchObject({ ok: true });
  });

  it('a thin event notification signed with a configured secret is not_an_event naming what it is, not a secret that matches nothing', () => {
    // From an event destination set to thin payloads: the signature matches, and the SDK refuses the payload after it.
    const thin = JSON.stringify({ id: 'evt_test_65R9Ijk8cMnR8GMQTB316JqNQ0U2SQ', object: 'v2.core.event', type: 'v1.billing.meter.error_report_triggered', created: '2026-01-01T00:00:00.000Z', related_object: { id: 'mtr_1', type: 'billing.meter', url: '/v1/billing/meters/mtr_1' } });
    for (const secret of [NEW, OLD]) {
      const verdict = verifier(Buffer.from(thin), signWebhookBody(thin, secret, NOW));
      expect(verdict).toMatchObject({ ok: false, reason: 'not_an_event' });
      expect(verdict.ok === false && verdict.message).toContain('thin event');
    }
    // Signed with a secret nobody configured, it is still a signature that matches none.
    expect(verifier(Buffer.from(thin), signWebhookBody(thin, 'whsec_someoneelse', NOW))).toMatchObject({ ok: false, reason: 'bad_signature' });
  });

  // Rule: the verifier keeps what tells the route an event is not the service's to apply: its mode (`livemode`) and a
  // Connect event's connected account (`account`, non-empty); an event of the other mode than the key's is refused.
  it('keeps livemode and a Connect account, and refuses an event of the other mode than the service\'s key', () => {
    const connect = JSON.stringify({ ...event, livemode: false, account: 'acct_1Connected' });
    expect(verifier(Buffer.from(connect), signWebhookBody(connect, NEW, NOW))).toEqual({ ok: true, event: { id: 'evt_1', type: 'refund.failed', created: NOW - 5, livemode: false, account: 'acct_1Connected', data: event.data } });
    const live = JSON.stringify({ ...event, livemode: true });
    const testKey = createWebhookVerifier([NEW], { nowSeconds: () => NOW, mode: 'test' });
    expect(testKey(Buffer.from(live), signWebhookBody(live, NEW, NOW))).toMatchObject({ ok: false, reason: 'livemode_mismatch', message: expect.stringContaining('live-mode event (evt_1)') });
    expect(createWebhookVerifier([NEW], { nowSeconds: () => NOW, mode: 'live' })(Buffer.from(live), signWebhookBody(live, NEW, NOW))).toMatchObject({ ok: true });
    // An event that does not say its mode (Stripe's always do) is not refused for it.
    expect(testKey(Buffer.from(body), signWebhookBody(body, NEW, NOW))).toMatchObject({ ok: true });
  });

  it('refuses configuration without a usable secret, naming the setting', () => {
    expect(() => createWebhookVerifier([])).toThrow(/STRIPE_WEBHOOK_SECRET/);
    expect(() => createWebhookVerifier([' '])).toThrow(/STRIPE_WEBHOOK_SECRET/);
    expect(() => createWebhookVerifier(['sk_test_123'])).toThrow(expect.objectContaining({ code: 'invalid_config' }));
  });
});
