// GET /metrics after a scripted run (issue 13 §5): one committed refund, one refused by its approval (over its
// amount), one refused because a premise changed, one recovery pass, a webhook event delivered twice and one with a
// bad signature. Every counter must have moved exactly as the run did, the scrape-time gauges must read Redis as it
// is, no label may carry an effect, payment or event id, and only auditors and operators may read it.
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRecovery } from '../../queues/recovery.js';
import { Rejected, signWebhookBody, startSender } from '../../src/interlock.js';
import { approvalRefusalClass, createMetrics } from '../../webhooks/ops/metrics.js';
import { gateWorld, grant, recoverUntilSettled, submitAndCrash } from '../gate/gate-support.js';
import { kill, refundProposal, sleep, type World } from '../support/harness.js';
import { signIn } from '../http/page-sessions.js';
import { approvalBody, bearer, refundBody, rigSuite, TOKENS, uid } from '../http/rig.js';

const SECRET = 'whsec_metricsTestSecret0123456789';

/** One sample's value from Prometheus text, by metric name and exact labels; undefined when absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const wanted = Object.entries(labels)
    .map(([key, value]) => `${key}="${value}"`)
    .sort()
    .join(',');
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const got = (match[2] ?? '')
      .split(/,(?=[a-zA-Z_]+=")/)
      .filter((part) => part !== '')
      .sort()
      .join(',');
    if (got === wanted) return Number(match[3]);
  }
  return undefined;
}

describe('GET /metrics after a scripted run', () => {
  const rig = rigSuite({ worker: true, metrics: true, webhookSecret: SECRET });
  let text: string;
  let committedId: string;
  let eventId: string;

  beforeAll(async () => {
    const approver = bearer(TOKENS.approver);
    const support = bearer(TOKENS.support);
    rig.target.world.set('payment:pi_m1', { chargebacks: [], refunded_by_others: 0 });
    rig.target.world.set('payment:pi_m2', { chargebacks: [], refunded_by_others: 0 });
    rig.target.world.set('payment:pi_m3', { chargebacks: ['du_m3'], refunded_by_others: 0 });

    const wide = approvalBody({ scope: 'payment:pi_m1' });
    expect((await request(rig.app).post('/v1/approvals').set(approver).send(wide)).status).toBe(201);
    const committed = await request(rig.app).post('/v1/refunds?wait=10').set(support).send(refundBody({ payment_intent: 'pi_m1', approval: wide.id }));
    expect(committed.body.outcome).toBe('COMMITTED');
    committedId = committed.body.effect_id;

    const narrow = approvalBody({ scope: 'payment:pi_m2', cap_cents: 1_000 });
    expect((await request(rig.app).post('/v1/approvals').set(approver).send(narrow)).status).toBe(201);
    // The support API refuses a new request over its approval's cap before recording it (invalid_approval); the gate's
    // own refusal (REFUSED:lease, over_amount) is what a proposal recorded through the queue meets.
    const atTheDoor = await request(rig.app).post('/v1/refunds?wait=10').set(support).send(refundBody({ payment_intent: 'pi_m2', approval: narrow.id, amount: 2_000 }));
    expect(atTheDoor.body.error?.code).toBe('invalid_approval');
    const refused = await rig.queue.propose({ requestId: `case-${uid()}`, agent: 'sam', approval: narrow.id, premises: { chargebacks: [], refunded_by_others: 0 }, effect: { kind: 'refund', paymentIntent: 'pi_m2', amount: 2_000 } });
    expect((await rig.queue.waitFor(refused.effectId, 10_000))?.outcome).toBe('REFUSED:lease');

    // Decided on "no chargebacks" while Stripe (the memory target's world) already has one: the gate's re-read refuses.
    const stale = approvalBody({ scope: 'payment:pi_m3' });
    expect((await request(rig.app).post('/v1/approvals').set(approver).send(stale)).status).toBe(201);
    const recorded = await rig.queue.propose({ requestId: `case-${uid()}`, agent: 'sam', approval: stale.id, premises: { chargebacks: [], refunded_by_others: 0 }, effect: { kind: 'refund', paymentIntent: 'pi_m3', amount: 500 } });
    expect((await rig.queue.waitFor(recorded.effectId, 10_000))?.outcome).toBe('REFUSED:stale_premise');

    const recovery = startRecovery(rig.stores, rig.sender!, { safetyIntervalMs: 3_600_000, onReport: (report) => void rig.metrics!.recoveryReported(report) });
    await recovery.started;
    await recovery.close();

    eventId = `evt_${uid()}`;
    // The refund the effect committed (a refund naming the effect in its metadata but not the one it committed is not its fact).
    const committedRefund = (await rig.stores.journal.entries('payment:pi_m1', committedId)).find((entry) => entry.kind === 'COMMITTED')?.found;
    const event = JSON.stringify({ id: eventId, object: 'event', type: 'refund.updated', created: 1, livemode: false, data: { object: { id: committedRefund, object: 'refund', status: 'succeeded', amount: 2_000, charge: 'ch_m1', payment_intent: 'pi_m1', metadata: { interlock_effect_id: committedId } } } });
    const signature = signWebhookBody(event, SECRET);
    const deliver = (sig: string) => request(rig.app).post('/webhooks/stripe').set('stripe-signature', sig).set('content-type', 'application/json').send(event);
    expect((await deliver(signature)).status).toBe(200);
    expect((await deliver(signature)).status).toBe(200);
    expect((await deliver(signWebhookBody(event, 'whsec_notOursAtAll0123456789'))).status).toBe(400);
    // The scrape comes once the facts worker has finished the event's job (appended its fact and reported it).
    for (let i = 0; i < 400 && (await rig.facts!.queue.getJobState(eventId)) !== 'completed'; i += 1) await new Promise((resolve) => setTimeout(resolve, 25));
    expect((await rig.stores.journal.entries('payment:pi_m1', committedId)).filter((entry) => entry.kind === 'OBSERVED')).toHaveLength(1);
    // An outage's worth of alerts written before the open-alerts index existed (the hash and the raised-at index
    // only: the first read of the index completes it), 30 of them resolved, and one exposure raised now.
    const outage = rig.redis.pipeline();
    for (let n = 0; n < 10_080; n += 1) {
      const id = `not_judged:${String(n).padStart(64, '0')}`;
      const at = 1_690_000_000_000 + n;
      outage.hset(rig.stores.keys.alerts, id, JSON.stringify({ id, kind: 'not_judged', effectId: id.slice(11), subject: 'payment:pi_m9', centsAtStake: 500, refund: null, disputes: [], sentence: 's', action: 'a', raisedAt: at, updatedAt: at, resolvedAt: n < 30 ? at + 1 : null, resolvedBy: n < 30 ? 'lee (support)' : null }));
      outage.zadd(rig.stores.keys.alertsByTime, at, id);
    }
    await outage.exec();
    await rig.stores.alerts.raise({ kind: 'exposure', effectId: committedId, subject: 'payment:pi_m1', centsAtStake: 2_000, refund: null, disputes: [], sentence: 's', action: 'a' });
    const scraped = await request(rig.app).get('/metrics').set(bearer(TOKENS.operator));
    expect(scraped.status).toBe(200);
    expect(scraped.headers['content-type']).toMatch(/^text\/plain/);
    text = scraped.text;
  }, 60_000);

  it('counts each effect once, by kind and outcome', () => {
    expect(sample(text, 'interlock_effects_total', { kind: 'refund', outcome: 'COMMITTED' })).toBe(1);
    expect(sample(text, 'interlock_effects_total', { kind: 'refund', outcome: 'REFUSED:lease' })).toBe(1);
    expect(sample(text, 'interlock_effects_total', { kind: 'refund', outcome: 'REFUSED:stale_premise' })).toBe(1);
    expect(sample(text, 'interlock_effects_total', { kind: 'refund', outcome: 'AMBIGUOUS' })).toBeUndefined();
  });

  it('times only the effect that was dispatched, from DISPATCHED to its settling entry', () => {
    expect(sample(text, 'interlock_dispatch_to_settle_seconds_count', { kind: 'refund' })).toBe(1);
    const seconds = sample(text, 'interlock_dispatch_to_settle_seconds_sum', { kind: 'refund' }) ?? -1;
    expect(seconds).toBeGreaterThanOrEqual(0);
    expect(seconds).toBeLessThan(10);
  });

  it('names the premise that changed and why the approval refused', () => {
    expect(sample(text, 'interlock_premise_violations_total', { field: 'chargebacks' })).toBe(1);
    expect(sample(text, 'interlock_approval_refusals_total', { reason: 'over_amount' })).toBe(1);
  });

  it('counts the recovery pass and what it found (nothing open)', () => {
    expect(sample(text, 'interlock_recovery_passes_total')).toBe(1);
    expect(sample(text, 'interlock_recovery_effects_total', { result: 'settled' })).toBe(0);
    expect(sample(text, 'interlock_settle_margin_waits_total')).toBe(0);
  });

  it('counts webhook requests received, verified (queued once, then a duplicate) and rejected by reason', () => {
    expect(sample(text, 'interlock_webhook_events_received_total')).toBe(3);
    expect(sample(text, 'interlock_webhook_events_verified_total', { result: 'queued' })).toBe(1);
    expect(sample(text, 'interlock_webhook_events_verified_total', { result: 'duplicate' })).toBe(1);
    expect(sample(text, 'interlock_webhook_events_duplicated_total')).toBe(1);
    expect(sample(text, 'interlock_webhook_events_rejected_total', { reason: 'bad_signature' })).toBe(1);
    expect(sample(text, 'interlock_facts_appended_total', { source: 'webhook' })).toBe(1);
  });

  it('reads queue depths, open alerts and Redis durability from Redis at scrape time', () => {
    for (const queue of ['effects', 'facts', 'decisions']) {
      for (const state of ['waiting', 'active', 'delayed', 'failed']) expect(sample(text, 'interlock_queue_jobs', { queue, state }), `${queue} ${state}`).toBe(0);
    }
    // Every open alert by kind, past the 10,000 a listing of alerts reads, and none resolved.
    expect(sample(text, 'interlock_alerts_open', { kind: 'exposure' })).toBe(1);
    expect(sample(text, 'interlock_alerts_open', { kind: 'not_judged' })).toBe(10_050);
    expect(sample(text, 'interlock_alerts_open', { kind: 'late_landing' })).toBe(0);
    // The machine's test Redis keeps nothing on disk, and the tests opt out.
    expect(sample(text, 'interlock_redis_durable')).toBe(0);
    expect(sample(text, 'interlock_redis_durability_opted_out')).toBe(1);
    expect(sample(text, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
  });

  it('carries no effect, payment, refund or event id in any label', () => {
    const labelled = text.split('\n').filter((line) => !line.startsWith('#') && line.includes('{'));
    expect(labelled.length).toBeGreaterThan(10);
    for (const line of labelled) {
      expect(line).not.toMatch(/[0-9a-f]{64}|pi_m|re_|evt_|ch_m|du_m|cus_/);
    }
    expect(text).not.toContain(committedId);
    expect(text).not.toContain(eventId);
  });

  it('answers auditors and operators, and no one else', async () => {
    expect((await request(rig.app).get('/metrics')).status).toBe(401);
    expect((await request(rig.app).get('/metrics').set(bearer(TOKENS.support))).status).toBe(403);
    expect((await request(rig.app).get('/metrics').set(bearer(TOKENS.approver))).status).toBe(403);
    expect((await request(rig.app).get('/metrics').set(bearer(TOKENS.auditor))).status).toBe(200);
    // The page's session (its sign-in cookie) is taken here too; a cookie holding a token is not one.
    expect((await request(rig.app).get('/metrics').set('cookie', (await signIn(rig.app, TOKENS.operator)).cookie)).status).toBe(200);
    expect((await request(rig.app).get('/metrics').set('cookie', (await signIn(rig.app, TOKENS.support)).cookie)).status).toBe(403);
    expect((await request(rig.app).get('/metrics').set('cookie', `interlock_session=${TOKENS.operator}`)).status).toBe(401);
  });
});

describe('approval refusal classes', () => {
  it('maps every reason the dispatch and resend scripts give to a bounded class', () => {
    expect(approvalRefusalClass('REFUSED:lease', 'approval ap_1 does not exist')).toBe('missing');
    expect(approvalRefusalClass('REFUSED:lease', 'approval ap_1 was revoked')).toBe('revoked');
    expect(approvalRefusalClass('REFUSED:lease', 'approval ap_1 has expired')).toBe('expired');
    expect(approvalRefusalClass('REFUSED:lease', 'approval ap_1 covers payment:pi_2, not payment:pi_1')).toBe('out_of_scope');
    expect(approvalRefusalClass('REFUSED:lease', 'approval ap_1 covers at most 1000 cents')).toBe('over_amount');
    // As the gate states it now, in the effect's currency (src/core/approval.ts overCapProblem), or as of one unknown.
    expect(approvalRefusalClass('REFUSED:lease', 'approval ap_1 covers at most 1000 JPY, not 2000 JPY')).toBe('over_amount');
    expect(approvalRefusalClass('REFUSED:lease', 'approval ap_1 covers at most 1000 (minor units, currency unknown), not 2000 (minor units, currency unknown)')).toBe('over_amount');
    expect(approvalRefusalClass('REFUSED:lease_at_recovery', 'approval ap_1 has used all 1 of its uses')).toBe('used_up');
    expect(approvalRefusalClass('REFUSED:over_cap', 'whatever the text')).toBe('over_cap');
    expect(approvalRefusalClass('REFUSED:lease', 'something new')).toBe('other');
  });

  // Rule: the class is why the approval refused, read after its id: approval ids are the approver's choice (1-200
  // letters, digits or _ . : -), and "ap_renewal_after_expired_card" over its cap is over_amount, not expired.
  it('classes by the phrase after the approval id, whatever words the id holds', () => {
    expect(approvalRefusalClass('REFUSED:lease', 'approval ap_after_expired_card covers at most 1000 cents')).toBe('over_amount');
    expect(approvalRefusalClass('REFUSED:lease', 'approval ap-not-revoked-7 covers payment:pi_2, not payment:pi_1')).toBe('out_of_scope');
    expect(approvalRefusalClass('REFUSED:lease', 'approval ap.does.not.exist has used all 1 of its uses')).toBe('used_up');
    expect(approvalRefusalClass('REFUSED:lease', 'approval ap_expired was revoked')).toBe('revoked');
    expect(approvalRefusalClass('REFUSED:lease', 'approval ap_revoked has expired')).toBe('expired');
    // Recovery's reason: every problem (src/core/approval.ts), joined with "; ", classed in the order above.
    expect(approvalRefusalClass('REFUSED:lease_at_recovery', 'approval ap_revoked_x expired at 2026-01-01T00:00:00.000Z; approval ap_revoked_x covers at most 1000 cents, not 2000')).toBe('expired');
    expect(approvalRefusalClass('REFUSED:lease_at_recovery', 'the approval does not exist')).toBe('missing');
    expect(approvalRefusalClass('REFUSED:lease', 'approval ap_expired_revoked')).toBe('other');
  });

  it('counts an over-cap refusal under an approval whose id says "expired" as over_amount', async () => {
    const world = await gateWorld();
    try {
      const a = await world.node('a');
      const approval = await grant(a, { id: `ap_after_expired_card_${Date.now()}`, capCents: 1_000 });
      const metrics = createMetrics({ stores: a.stores, defaultMetrics: false });
      const answer = await a.gate.submit(refundProposal({ approval: approval.id, amount: 2_000 }));
      expect(answer.outcome).toBe('REFUSED:lease');
      await metrics.effectAnswered(answer);
      const { text } = await metrics.render();
      expect(sample(text, 'interlock_approval_refusals_total', { reason: 'expired' })).toBeUndefined();
      expect(sample(text, 'interlock_approval_refusals_total', { reason: 'over_amount' })).toBe(1);
    } finally {
      await world.close();
    }
  }, 30_000);
});

// Rule: interlock_dispatch_to_settle_seconds times a DISPATCHED to the entry that settled it. A settle with no dispatch
// of its own (a re-decision refused by its approval before any send) is not observed: the time since an earlier
// dispatch, closed by an earlier settle, is how long the effect waited to be decided again, not send latency.
describe('dispatch-to-settle latency', () => {
  let world: World | undefined;
  afterAll(async () => {
    await world?.close();
  });

  it('is not observed for a re-decision refused before any send', async () => {
    world = await gateWorld();
    const [a, b] = [await world.node('a'), await world.node('b')];
    const first = await grant(a);
    world.target.inject({ kind: 'crash-before-send' });
    const requestId = `case-lat-${Date.now()}`;
    const effectId = await submitAndCrash(a, refundProposal({ requestId, approval: first.id }));
    await kill(a);
    // Revoked while its sender is dead: recovery closes the dispatch with REFUSED:lease_at_recovery (one sample).
    await b.approvals.revoke(first.id, 'dana');
    const metrics = createMetrics({ stores: b.stores, defaultMetrics: false });
    const sender = await startSender(b.stores, world.target, { workerId: 'c', events: metrics.gateEvents });
    try {
      const report = await recoverUntilSettled({ ...b, gate: sender.gate } as typeof b, effectId);
      expect(report.settled.find((item) => item.effectId === effectId)?.outcome).toBe('REFUSED:lease_at_recovery');
      await metrics.recoveryReported(report);
      const before = (await metrics.render()).text;
      expect(sample(before, 'interlock_dispatch_to_settle_seconds_count', { kind: 'refund' })).toBe(1);
      const sumBefore = sample(before, 'interlock_dispatch_to_settle_seconds_sum', { kind: 'refund' }) ?? -1;

      // A while later the same request, re-decided under an approval too small for it: refused before any send.
      await sleep(1_500);
      const small = await grant(b, { capCents: 1_000 });
      const answer = await sender.gate.submit(refundProposal({ requestId, approval: small.id }));
      expect({ effectId: answer.effectId, outcome: answer.outcome }).toEqual({ effectId, outcome: 'REFUSED:lease' });
      await metrics.effectAnswered(answer);
      const after = (await metrics.render()).text;
      expect(sample(after, 'interlock_effects_total', { kind: 'refund', outcome: 'REFUSED:lease' })).toBe(1);
      expect({ count: sample(after, 'interlock_dispatch_to_settle_seconds_count', { kind: 'refund' }), sum: sample(after, 'interlock_dispatch_to_settle_seconds_sum', { kind: 'refund' }) }).toEqual({ count: 1, sum: sumBefore });
    } finally {
      await sender.close();
    }
  }, 60_000);
});

// Rule: interlock_effects_total counts each UNRESOLVED:<error> answer, from an effects job or a recovery pass, as
// outcome="UNRESOLVED" (README "The metrics"): a rule alerting on Stripe's lookups failing must see it move.
describe('UNRESOLVED answers in interlock_effects_total', () => {
  it('counts an UNRESOLVED:lookup_failed answer and the recovery pass that still cannot look it up, one each', async () => {
    const world = await gateWorld();
    try {
      const a = await world.node('a');
      const { id } = await grant(a);
      // Stripe refuses the send and the lookup for an earlier attempt that may still land fails: nothing is known.
      world.target.apply = async (_effectId, _effect, context) => {
        await context.beforeWrite();
        throw new Rejected('card declined', { code: 'charge_declined', status: 402 });
      };
      world.target.query = async () => {
        throw new Error('Stripe is unreachable');
      };
      const metrics = createMetrics({ stores: a.stores, defaultMetrics: false });
      const answer = await a.gate.submit(refundProposal({ approval: id }));
      expect(answer.outcome).toBe('UNRESOLVED:lookup_failed');
      await metrics.effectAnswered(answer);
      expect(sample((await metrics.render()).text, 'interlock_effects_total', { kind: 'refund', outcome: 'UNRESOLVED' })).toBe(1);
      const report = await a.gate.recover({ only: [answer.effectId] });
      expect(report.unresolved.map((item) => item.effectId)).toEqual([answer.effectId]);
      await metrics.recoveryReported(report);
      const { text } = await metrics.render();
      expect(sample(text, 'interlock_effects_total', { kind: 'refund', outcome: 'UNRESOLVED' })).toBe(2);
      // No label carries the error's name, and nothing settled: no latency sample.
      expect(text).not.toMatch(/outcome="UNRESOLVED:/);
      expect(sample(text, 'interlock_dispatch_to_settle_seconds_count', { kind: 'refund' })).toBeUndefined();
    } finally {
      await world.close();
    }
  }, 30_000);
});

describe('takeovers', () => {
  it('counts the claim recovery takes from a dead sender, by why, as the gate reports it', async () => {
    const world = await gateWorld();
    try {
      const [a, b] = [await world.node('a'), await world.node('b')];
      const { id } = await grant(a);
      world.target.inject({ kind: 'crash-before-send' });
      await submitAndCrash(a, refundProposal({ approval: id }));
      await kill(a);
      const metrics = createMetrics({ stores: b.stores, defaultMetrics: false });
      const sender = await startSender(b.stores, world.target, { workerId: 'c', events: metrics.gateEvents });
      try {
        const report = await sender.gate.recover();
        expect(report.settled.map((item) => item.outcome)).toEqual(['COMMITTED_BY_RETRY']);
        await metrics.recoveryReported(report);
        const { text } = await metrics.render();
        expect(sample(text, 'interlock_recovery_takeovers_total', { reason: 'owner-dead' })).toBe(1);
        expect(sample(text, 'interlock_recovery_effects_total', { result: 'settled' })).toBe(1);
        expect(sample(text, 'interlock_effects_total', { kind: 'refund', outcome: 'COMMITTED_BY_RETRY' })).toBe(1);
        // The resend was dispatched before the crash and settled by recovery: one latency sample.
        expect(sample(text, 'interlock_dispatch_to_settle_seconds_count', { kind: 'refund' })).toBe(1);
      } finally {
        await sender.close();
      }
    } finally {
      await world.close();
    }
  }, 30_000);
});
