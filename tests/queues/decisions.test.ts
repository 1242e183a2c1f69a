// The decisions queue end to end, against the Stripe sandbox: a case is read (the facts the decider's tools
// return), decided, checked against its approval and, only when it stays inside it, proposed through the effects
// queue under the request id `case:<case id>`. The Anthropic decider runs through the real SDK against the local
// Messages API server. Nothing is proposed from a declined or failed case; a deviated one is recorded refused (never
// queued, never sent) with an inbox item a person acts on; and a case decided again after a crash never yields a
// second proposal: the first PROPOSED binds (I5).
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { caseEffectId, decisionBackoff, MAX_ASKED_WAIT_MS, storyDigest } from '../../queues/decisions.js';
import { caseView } from '../../webhooks/api/cases-routes.js';
import { createDecider, createProposalRecorder, publicKeyPem, publicKeySet, requestIdOf, verify, type CaseRecord, type CaseSubmission, type Decider, type Decision, type Entry } from '../../src/interlock.js';
import { replies } from '../decider/messages-server.js';
import { casesSuite, modelDecider } from '../support/cases-rig.js';
import { uid } from '../http/rig.js';

const { rig, server } = casesSuite();
const anthropic = () => modelDecider(server);

function refundCase(paymentIntent: string, approval: string, overrides: Partial<CaseSubmission> = {}): CaseSubmission {
  return {
    caseId: `case-${uid()}`,
    kind: 'refund',
    subject: paymentIntent,
    incident: null,
    story: 'The blender arrived with a cracked jar. Support approved a $20.00 goodwill partial refund; the customer keeps the blender.',
    approval,
    agent: 'support-bot',
    ...overrides,
  };
}

async function decided(submission: CaseSubmission): Promise<CaseRecord> {
  const submitted = await rig.decisions.submit(submission, 'sam');
  expect(submitted.status).toBe('created');
  const record = await rig.decisions.waitFor(submission.caseId, 15_000);
  if (record === null) throw new Error('the case is not stored');
  return record;
}

async function entriesOf(effectId: string): Promise<Entry[]> {
  const partition = await rig.stores.journal.partitionOf(effectId);
  return partition === null ? [] : rig.stores.journal.entries(partition, effectId);
}

describe('a case decided by the rules decider', () => {
  it('is proposed under case:<id> with the facts read at Stripe and committed once at the sandbox', async () => {
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    const submission = refundCase(paymentIntent, approval);
    const record = await decided(submission);
    expect(record.status).toMatchObject({ state: 'proposed', effectId: caseEffectId(submission.caseId), decision: { model: 'rules', action: 'refund', amountCents: 2_000 }, error: null, attempts: 1 });
    const effectId = record.status.effectId ?? '';
    expect(await rig.effects.waitFor(effectId, 15_000)).toMatchObject({ outcome: 'COMMITTED' });
    const refunds = await rig.refundsAt(paymentIntent);
    expect(refunds.map((refund) => [refund.amount, refund.status, refund.metadata?.interlock_request])).toEqual([[2_000, 'succeeded', requestIdOf(submission.caseId)]]);
    const [proposed] = await entriesOf(effectId);
    expect(proposed).toMatchObject({
      kind: 'PROPOSED',
      requestId: requestIdOf(submission.caseId),
      agent: 'support-bot',
      approval,
      decision: { model: 'rules' },
      // The customer's words the model decided on, committed to by the signed entry (the case record holds the text).
      request: { case_id: submission.caseId, token: 'sam', story_sha256: createHash('sha256').update(submission.story, 'utf8').digest('hex') },
      // The facts the decider was given are the premises the gate re-read before the send.
      premises: { chargebacks: [], refunded_by_others: 0, refundable: 10_000, charge_status: 'succeeded' },
    });
    expect((await entriesOf(effectId)).map((entry) => entry.kind)).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED']);
  });

  it('a case submitted twice is one case and one decision; another payload under its id is a conflict', async () => {
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    const submission = refundCase(paymentIntent, approval);
    const first = await rig.decisions.submit(submission, 'sam');
    const again = await rig.decisions.submit(submission, 'sam');
    expect([first.status, again.status]).toEqual(['created', 'exists']);
    const record = await rig.decisions.waitFor(submission.caseId, 15_000);
    expect(record?.status).toMatchObject({ state: 'proposed', attempts: 1 });
    expect(await rig.effects.waitFor(record?.status.effectId ?? '', 15_000)).toMatchObject({ outcome: 'COMMITTED' });
    const other = await rig.decisions.submit({ ...submission, story: `${submission.story} Actually, make it more.` }, 'sam');
    expect(other.status).toBe('conflict');
    expect(other.record.submission.story).toBe(submission.story);
    // Decided once, sent once.
    expect((await entriesOf(caseEffectId(submission.caseId))).filter((entry) => entry.kind === 'PROPOSED')).toHaveLength(1);
    expect(await rig.refundsAt(paymentIntent)).toHaveLength(1);
  });
});

describe('a credit case decided by the rules decider', () => {
  it('credits the approved amount for the incident, with the credit facts as premises, once at the sandbox', async () => {
    const customer = await rig.stripe.customers.create({ name: 'Subscriber' });
    const approval = `ap_${uid()}`;
    await rig.stores.approvals.grant({ id: approval, approver: 'support-lead', capCents: 1_000, scope: `customer:${customer.id}`, expiresAt: Date.now() + 3_600_000, maxUses: 1 });
    const submission: CaseSubmission = { caseId: `case-${uid()}`, kind: 'credit', subject: customer.id, incident: 'INC-0efaf1', story: 'Three days without access during the outage; support approved one $10 credit.', approval, agent: 'support-bot' };
    const record = await decided(submission);
    expect(record.status).toMatchObject({ state: 'proposed', decision: { model: 'rules', action: 'credit', amountCents: 1_000 } });
    const effectId = record.status.effectId ?? '';
    expect(await rig.effects.waitFor(effectId, 15_000)).toMatchObject({ outcome: 'COMMITTED' });
    const [proposed] = await entriesOf(effectId);
    expect(proposed).toMatchObject({ kind: 'PROPOSED', premises: { subscription_status: null, incident_compensation: 0 }, effect: { kind: 'credit', customer: customer.id, amount: 1_000, incident: 'INC-0efaf1' } });
    const credits = (await rig.stripe.customers.listBalanceTransactions(customer.id)).data;
    expect(credits.map((credit) => [credit.amount, credit.metadata?.interlock_incident])).toEqual([[-1_000, 'INC-0efaf1']]);
  });
});

describe('a case decided by the model (the real SDK against the local Messages API)', () => {
  it('issue_refund of 3000 against a 2000 approval is MODEL_DEVIATED: recorded refused, never queued, an inbox item opened, hooked, nothing at Stripe', async () => {
    rig.useDecider(anthropic());
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    server.script(replies.toolUse('get_payment', {}), replies.toolUse('issue_refund', { amount_cents: 3000, reason: 'The jar was cracked; a bigger refund seems fair.' }));
    const submission = refundCase(paymentIntent, approval);
    const record = await decided(submission);
    const effectId = caseEffectId(submission.caseId);
    expect(record.status).toMatchObject({ state: 'deviated', effectId, decision: { model: 'claude-haiku-4-5-20251001', action: 'refund', amountCents: 3_000 } });
    expect(record.status.problems.join(' ')).toContain(`the model decided $30.00, but approval ${approval} covers at most $20.00`);
    expect(rig.deviations.map((deviated) => deviated.submission.caseId)).toContain(submission.caseId);
    // The model read the facts the worker read at Stripe through the get_payment tool.
    const toolResult = JSON.stringify(server.received[1]?.body.messages[2]);
    expect(toolResult).toContain(paymentIntent);
    expect(toolResult).toContain('refundable');
    // The model's decision is on a receipt, refused in the same append that recorded it, and no job carries it.
    const entries = await entriesOf(effectId);
    expect(entries.map((entry) => entry.kind)).toEqual(['PROPOSED', 'REFUSED']);
    expect(entries[0]).toMatchObject({ effect: { kind: 'refund', paymentIntent, amount: 3_000 }, decision: { model: 'claude-haiku-4-5-20251001' }, request: { story_sha256: storyDigest(submission.story) } });
    expect(entries[1]).toMatchObject({ code: 'REFUSED:lease', reason: expect.stringMatching(/^MODEL_DEVIATED: the model decided \$30\.00/) });
    const receipt = await rig.stores.journal.receipt(effectId);
    expect(receipt).not.toBeNull();
    expect(verify(receipt, { publicKeys: publicKeySet([publicKeyPem(rig.stores.signingKey)]) })).toMatchObject({ valid: true, happened: false, outcome: 'REFUSED:lease' });
    expect(await rig.effects.queue.getJob(effectId)).toBeUndefined();
    const item = await rig.stores.inbox.get(`model_deviated:${effectId}`);
    expect(item).toMatchObject({ kind: 'model_deviated', status: 'open', centsAtStake: 3_000, actions: ['reapprove', 'dismiss'], detail: { case_id: submission.caseId, decided_cents: 3_000, approved_cents: 2_000 } });
    expect(await rig.refundsAt(paymentIntent)).toEqual([]);
  });

  /** As if the worker died right after the refused record: the case not noted, the inbox item not opened. */
  async function forgetNoting(first: CaseRecord, effectId: string): Promise<void> {
    // Written raw: the store never moves a case off a decision the journal holds.
    const itemId = `model_deviated:${effectId}`;
    const redis = new Redis(rig.stores.config.redisUrl);
    await redis.set(rig.stores.keys.case(first.submission.caseId), JSON.stringify({ ...first, status: { ...first.status, state: 'queued', effectId: null, problems: [] } }));
    await redis.hdel(rig.stores.keys.inbox, itemId);
    await redis.zrem(rig.stores.keys.inboxOpen, itemId);
    await redis.quit();
    await (await rig.decisions.queue.getJob(effectId))?.remove();
  }

  it('a worker that died after recording the deviation and before noting it: the case run again finishes the deviation without asking the model again', async () => {
    rig.useDecider(anthropic());
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    server.script(replies.toolUse('get_payment', {}), replies.toolUse('issue_refund', { amount_cents: 3000, reason: 'A bigger refund seems fair.' }));
    const submission = refundCase(paymentIntent, approval);
    const first = await decided(submission);
    const effectId = caseEffectId(submission.caseId);
    expect(first.status.state).toBe('deviated');
    const itemId = `model_deviated:${effectId}`;
    await forgetNoting(first, effectId);
    const asked = server.received.length;
    // Submitted again, as the redelivered job would run it.
    expect((await rig.decisions.submit(submission, 'sam')).status).toBe('exists');
    const again = await rig.decisions.waitFor(submission.caseId, 15_000);
    if (again === null) throw new Error('the case is not stored');
    expect(again.status).toMatchObject({ state: 'deviated', effectId, decision: { action: 'refund', amountCents: 3_000 } });
    expect(again.status.problems.join(' ')).toContain(`the model decided $30.00, but approval ${approval} covers at most $20.00`);
    expect(server.received.length).toBe(asked);
    expect((await entriesOf(effectId)).map((entry) => entry.kind)).toEqual(['PROPOSED', 'REFUSED']);
    expect(await rig.stores.inbox.get(itemId)).toMatchObject({ kind: 'model_deviated', status: 'open', centsAtStake: 3_000, detail: { approved_cents: 2_000 } });
    expect(await rig.refundsAt(paymentIntent)).toEqual([]);
  });

  it('a deviation of the wrong kind (a credit on a refund case) run again after such a death still says the model decided a credit', async () => {
    rig.useDecider(anthropic());
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    server.script(replies.toolUse('get_payment', {}), replies.toolUse('issue_credit', { amount_cents: 2000, description: 'Store credit instead.' }));
    const submission = refundCase(paymentIntent, approval);
    const first = await decided(submission);
    expect(first.status).toMatchObject({ state: 'deviated', decision: { action: 'credit', amountCents: 2_000 } });
    const effectId = caseEffectId(submission.caseId);
    await forgetNoting(first, effectId);
    expect((await rig.decisions.submit(submission, 'sam')).status).toBe('exists');
    const again = await rig.decisions.waitFor(submission.caseId, 15_000);
    expect(again?.status).toMatchObject({ state: 'deviated', effectId, decision: { action: 'credit', amountCents: 2_000 } });
    expect(await rig.stores.inbox.get(`model_deviated:${effectId}`)).toMatchObject({ detail: { decided_action: 'credit' } });
  });

  it('a decline closes the case as declined and proposes nothing', async () => {
    rig.useDecider(anthropic());
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    server.script(replies.toolUse('decline', { reason: 'The payment was charged back.' }));
    const submission = refundCase(paymentIntent, approval);
    const record = await decided(submission);
    expect(record.status).toMatchObject({ state: 'declined', effectId: null, decision: { action: 'decline', amountCents: null } });
    expect(record.status.decision?.text).toContain('The payment was charged back.');
    expect(await rig.stores.journal.partitionOf(caseEffectId(submission.caseId))).toBeNull();
    expect(await rig.refundsAt(paymentIntent)).toEqual([]);
  });

  it('a malformed tool input fails the case with decision_invalid at once (asking again would be a new decision)', async () => {
    rig.useDecider(anthropic());
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    // A string where the schema wants an integer, readable and within the approval: malformed, nothing asked beyond it.
    // (An amount that cannot be read, 'twenty dollars', may hide an ask for more: a deviation, tests/decider.)
    server.script(replies.toolUse('issue_refund', { amount_cents: '2000', reason: 'cracked jar' }));
    const submission = refundCase(paymentIntent, approval);
    const record = await decided(submission);
    expect(record.status).toMatchObject({ state: 'failed', effectId: null, decision: null, attempts: 1, error: { code: 'decision_invalid' } });
    expect(record.status.error?.message).toContain('amount_cents');
    expect(server.received).toHaveLength(1);
    expect(await rig.stores.journal.partitionOf(caseEffectId(submission.caseId))).toBeNull();
  });

  it('a 429 retries the job with backoff and the next attempt decides; a model unavailable for longer than the job\'s attempts is waited out, and the case decided once it answers', async () => {
    rig.useDecider(anthropic());
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    server.script(replies.error(429, { retryAfter: '0' }), replies.toolUse('get_payment', {}), replies.toolUse('issue_refund', { amount_cents: 2000, reason: 'Goodwill for the cracked jar.' }));
    const submission = refundCase(paymentIntent, approval);
    const record = await decided(submission);
    expect(record.status).toMatchObject({ state: 'proposed', attempts: 2, decision: { amountCents: 2_000 } });
    expect(await rig.effects.waitFor(record.status.effectId ?? '', 15_000)).toMatchObject({ outcome: 'COMMITTED' });

    const second = await rig.paymentWithApproval(2_000);
    // The rig's decisions queue makes 3 attempts; an outage uses up none of them (tests/queues/decisions-decider-outage.test.ts
    // has the case that fails once the outage outlasts INTERLOCK_RETRY_FOR_MS, and is decided when submitted again).
    server.script(replies.error(529), replies.error(529), replies.error(503), replies.error(529), replies.toolUse('get_payment', {}), replies.toolUse('issue_refund', { amount_cents: 2000, reason: 'Goodwill for the cracked jar.' }));
    const unavailable = refundCase(second.paymentIntent, second.approval);
    const waited = await decided(unavailable);
    expect(waited.status).toMatchObject({ state: 'proposed', attempts: 5, error: null, decision: { amountCents: 2_000 } });
    expect(await rig.effects.waitFor(waited.status.effectId ?? '', 15_000)).toMatchObject({ outcome: 'COMMITTED' });
    expect(await rig.refundsAt(second.paymentIntent)).toHaveLength(1);
  });

  it('a case that failed on a decision that is not one (nothing recorded) is asked again when it is submitted again, as its error says', async () => {
    rig.useDecider(anthropic());
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    // Malformed (a string, no reason) but readable and within the approval; 'all of it' would be a deviation (tests/decider).
    server.script(replies.toolUse('issue_refund', { amount_cents: '2000' }));
    const submission = refundCase(paymentIntent, approval);
    const failed = await decided(submission);
    expect(failed.status).toMatchObject({ state: 'failed', attempts: 1, error: { code: 'decision_invalid' } });
    expect(failed.status.error?.message).toContain('submit the case again (the same id and payload) to ask the model again');
    expect(server.received).toHaveLength(1);
    server.script(replies.toolUse('get_payment', {}), replies.toolUse('issue_refund', { amount_cents: 2000, reason: 'Goodwill for the cracked jar.' }));
    const again = await rig.decisions.submit(submission, 'sam');
    expect(again).toMatchObject({ status: 'exists', record: { status: { state: 'queued', error: { code: 'decision_invalid' } } } });
    const redecided = await rig.decisions.waitFor(submission.caseId, 15_000);
    expect(redecided?.status).toMatchObject({ state: 'proposed', error: null, decision: { amountCents: 2_000 } });
    expect(await rig.effects.waitFor(redecided?.status.effectId ?? '', 15_000)).toMatchObject({ outcome: 'COMMITTED' });
    expect(server.received).toHaveLength(3);
  });

  it('a worker asked to stop during a model call ends the call at once; its case goes back to the queue, that attempt not counted, and the next worker decides it', async () => {
    // A model that would keep the call open for a minute: the stop must not wait for it.
    rig.useDecider(createDecider({ apiKey: 'sk-ant-test-key', model: 'claude-haiku-4-5-20251001', baseURL: server.url, maxTokens: 1024, timeoutMs: 60_000, maxRetries: 0, maxTurns: 4 }));
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    server.script(replies.hang(), replies.toolUse('get_payment', {}), replies.toolUse('issue_refund', { amount_cents: 2000, reason: 'Goodwill for the cracked jar.' }));
    const submission = refundCase(paymentIntent, approval);
    expect((await rig.decisions.submit(submission, 'sam')).status).toBe('created');
    await expect.poll(() => server.received.length, { timeout: 10_000 }).toBe(1);
    const stopping = Date.now();
    await rig.restartDecisionsWorker({ force: false });
    expect(Date.now() - stopping, 'the stop waited for the model call').toBeLessThan(30_000);
    const record = await rig.decisions.waitFor(submission.caseId, 15_000);
    // Two runs of the case asked the model; only the one that finished counts against the job's attempts.
    expect(record?.status).toMatchObject({ state: 'proposed', attempts: 2, decision: { amountCents: 2_000 } });
    const job = await rig.decisions.queue.getJob(caseEffectId(submission.caseId));
    expect({ started: job?.attemptsStarted, counted: job?.attemptsMade }).toEqual({ started: 2, counted: 1 });
    expect(await rig.effects.waitFor(record?.status.effectId ?? '', 15_000)).toMatchObject({ outcome: 'COMMITTED' });
  });

  it("a 429 that asks for longer than the job's backoff is retried after the wait it asked for, not sooner", async () => {
    rig.useDecider(anthropic());
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    // The rig's backoff is 50 ms; the API asks for 1.5 s.
    server.script(replies.error(429, { retryAfter: '1.5' }), replies.toolUse('get_payment', {}), replies.toolUse('issue_refund', { amount_cents: 2000, reason: 'Goodwill for the cracked jar.' }));
    const submission = refundCase(paymentIntent, approval);
    const record = await decided(submission);
    expect(record.status).toMatchObject({ state: 'proposed', attempts: 2, decision: { amountCents: 2_000 } });
    // The 429, then the next attempt's first call (its lookup).
    const [first, second] = server.received.slice(0, 2);
    expect((second?.at ?? 0) - (first?.at ?? 0)).toBeGreaterThanOrEqual(1_450);
  });
});

describe('the decisions backoff', () => {
  it('is exponential from the delay, or the wait the error (or its cause) asked for when longer, at most 15 minutes', () => {
    expect([1, 2, 3, 4].map((attempt) => decisionBackoff(attempt, 2_000, new Error('x')))).toEqual([2_000, 4_000, 8_000, 16_000]);
    const asked = (ms: number) => Object.assign(new Error('429'), { retryAfterMs: ms });
    expect(decisionBackoff(1, 2_000, asked(60_000))).toBe(60_000);
    expect(decisionBackoff(4, 2_000, asked(1_000))).toBe(16_000);
    expect(decisionBackoff(1, 2_000, new Error('wrapped', { cause: asked(30_000) }))).toBe(30_000);
    expect(decisionBackoff(1, 2_000, asked(86_400_000))).toBe(MAX_ASKED_WAIT_MS);
    expect(decisionBackoff(1, 2_000, asked(Number.NaN))).toBe(2_000);
    expect(decisionBackoff(1, 2_000, asked(-5))).toBe(2_000);
  });
});

describe('two runs of one case (its lock lapsed and its job was handed to a second worker): the case ends as the journal holds it', () => {
  const premisesOf = (input: { facts: { get_payment?: unknown } }) => {
    const { payment_intent: _paymentIntent, ...premises } = input.facts.get_payment as Record<string, unknown>;
    return premises;
  };

  it('the other run proposed 2000 (accepted and sent) while this run decides 3000 (outside the approval): the case is proposed with that effect, nobody is paged, one refund', async () => {
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    const submission = refundCase(paymentIntent, approval);
    rig.useDecider({
      name: 'rules',
      async decide(input) {
        // Meanwhile the other run's accepted decision is recorded and queued, as decide() proposes it.
        await rig.effects.propose({ requestId: requestIdOf(input.caseId), agent: submission.agent, approval, premises: premisesOf(input), effect: { kind: 'refund', paymentIntent, amount: 2_000, reason: 'requested_by_customer', metadata: { case_id: input.caseId } }, request: { case_id: input.caseId, token: 'sam' }, decision: { model: 'scripted', text: 'other run: 2000' } });
        return { action: 'refund', amountCents: 3_000, reason: 'more', model: 'scripted', text: 'this run: 3000' };
      },
    });
    const record = await decided(submission);
    const effectId = caseEffectId(submission.caseId);
    expect(record.status).toMatchObject({ state: 'proposed', effectId, problems: [], decision: { amountCents: 2_000, text: 'other run: 2000' } });
    expect(await rig.effects.waitFor(effectId, 15_000)).toMatchObject({ outcome: 'COMMITTED' });
    expect(rig.deviations.filter((deviated) => deviated.submission.caseId === submission.caseId)).toEqual([]);
    expect(await rig.stores.inbox.get(`model_deviated:${effectId}`)).toBeNull();
    expect((await caseView(rig.stores, record)).state).toBe('proposed');
    expect((await rig.refundsAt(paymentIntent)).map((refund) => refund.amount)).toEqual([2_000]);
  });

  /**
   * A decider whose case meanwhile got another run's decision of 3000, recorded refused as recordDeviation records
   * it (the approval allows 2000), and which then answers `thisRun`.
   */
  function afterOtherRunDeviated(submission: CaseSubmission, paymentIntent: string, thisRun: Decision): Decider {
    const { approval } = submission;
    return {
      name: 'rules',
      async decide(input) {
        const { snapshot } = await rig.stores.approvals.describe(approval);
        if (snapshot === null) throw new Error('the approval is not stored');
        await createProposalRecorder(rig.stores)(
          { requestId: requestIdOf(input.caseId), agent: submission.agent, approval, premises: premisesOf(input), effect: { kind: 'refund', paymentIntent, amount: 3_000, metadata: { case_id: input.caseId } }, request: { case_id: input.caseId, deviated: { problems: [`the model decided 3000 cents, but approval ${approval} covers at most 2000`], approved_cents: 2_000 } }, decision: { model: 'scripted', text: 'other run: 3000' } },
          { refuse: { reason: 'MODEL_DEVIATED: the model decided 3000 cents', approval: snapshot } },
        );
        return thisRun;
      },
    };
  }

  it('the other run recorded its deviation (3000, refused) while this run decides 2000 (accepted): the case is deviated on that record and nothing is sent', async () => {
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    const submission = refundCase(paymentIntent, approval);
    rig.useDecider(afterOtherRunDeviated(submission, paymentIntent, { action: 'refund', amountCents: 2_000, reason: 'ok', model: 'scripted', text: 'this run: 2000' }));
    const record = await decided(submission);
    const effectId = caseEffectId(submission.caseId);
    expect(record.status).toMatchObject({ state: 'deviated', effectId, decision: { amountCents: 3_000 } });
    expect(record.status.problems.join(' ')).toContain('the model decided 3000 cents');
    expect((await caseView(rig.stores, record)).links.inbox).toBe(`/v1/inbox/model_deviated:${effectId}`);
    // This run's proposal is refused as another payload under the request id: the recorded deviation stands.
    expect((await entriesOf(effectId)).map((entry) => (entry.kind === 'REFUSED' ? entry.code : entry.kind))).toEqual(['PROPOSED', 'REFUSED:lease', 'REFUSED:conflicting_payload']);
    expect(await rig.refundsAt(paymentIntent)).toEqual([]);
  });

  it('the other run recorded its deviation (3000, refused) while this run decides the same 3000: the case is deviated on that record, and this run adds no second pair', async () => {
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    const submission = refundCase(paymentIntent, approval);
    rig.useDecider(afterOtherRunDeviated(submission, paymentIntent, { action: 'refund', amountCents: 3_000, reason: 'more', model: 'scripted', text: 'this run: 3000' }));
    const record = await decided(submission);
    const effectId = caseEffectId(submission.caseId);
    expect(record.status).toMatchObject({ state: 'deviated', effectId, decision: { amountCents: 3_000, text: 'other run: 3000' } });
    expect((await entriesOf(effectId)).map((entry) => (entry.kind === 'REFUSED' ? entry.code : entry.kind))).toEqual(['PROPOSED', 'REFUSED:lease']);
    expect(await rig.refundsAt(paymentIntent)).toEqual([]);
  });

  it('the other run recorded 2000 while this run decides the same 2000 on its own reading: the first recorded proposal stands, and this run adds no second one', async () => {
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    const submission = refundCase(paymentIntent, approval);
    rig.useDecider({
      name: 'rules',
      async decide(input) {
        // Meanwhile the other run records the same payload, decided in its own words on its own reading of the facts.
        await createProposalRecorder(rig.stores)({ requestId: requestIdOf(input.caseId), agent: submission.agent, approval, premises: premisesOf(input), effect: { kind: 'refund', paymentIntent, amount: 2_000, reason: 'requested_by_customer', metadata: { case_id: input.caseId } }, request: { case_id: input.caseId, token: 'sam' }, decision: { model: 'scripted', text: 'other run: 2000' } });
        return { action: 'refund', amountCents: 2_000, reason: 'same amount', model: 'scripted', text: 'this run: 2000' };
      },
    });
    const record = await decided(submission);
    const effectId = caseEffectId(submission.caseId);
    expect(record.status).toMatchObject({ state: 'proposed', effectId, decision: { amountCents: 2_000, text: 'other run: 2000' } });
    expect((await entriesOf(effectId)).filter((entry) => entry.kind === 'PROPOSED')).toHaveLength(1);
    expect(await rig.effects.waitFor(effectId, 15_000)).toMatchObject({ outcome: 'COMMITTED' });
    expect((await rig.refundsAt(paymentIntent)).map((refund) => refund.amount)).toEqual([2_000]);
  });

  it('a status write never moves a case off the effect the journal decided it on; a case decided with no effect yields to one that names it', async () => {
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    const submission = refundCase(paymentIntent, approval);
    const { cases } = rig.stores;
    expect((await cases.create(submission, 'sam')).status).toBe('created');
    const effectId = caseEffectId(submission.caseId);
    const proposed = { state: 'proposed' as const, decision: null, effectId, problems: [], error: null, attempts: 1 };
    // One run declined (no effect); the other run's proposal, recorded first, replaces that.
    expect((await cases.setStatus(submission.caseId, { ...proposed, state: 'declined', effectId: null })).written).toBe(true);
    expect((await cases.setStatus(submission.caseId, proposed)).written).toBe(true);
    // The slower run's late writes (failed, deviated with no effect, queued again, deciding) change nothing.
    for (const state of ['failed', 'deviated', 'queued', 'deciding'] as const) {
      const late = await cases.setStatus(submission.caseId, { ...proposed, state, effectId: null, error: { code: 'internal', message: 'late' } });
      expect(late).toMatchObject({ written: false, record: { status: { state: 'proposed', effectId, error: null } } });
    }
    expect((await cases.get(submission.caseId))?.status).toMatchObject({ state: 'proposed', effectId });
  });

  it('two status writes at once on a case not decided yet: the write naming the effect stands, the other run\'s failed is not written over it', async () => {
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    const { cases } = rig.stores;
    const ids = Array.from({ length: 10 }, () => refundCase(paymentIntent, approval));
    await Promise.all(ids.map((submission) => cases.create(submission, 'sam')));
    await Promise.all(
      ids.flatMap((submission) => {
        const effectId = caseEffectId(submission.caseId);
        // Both read the case queued; the failed write is sent last.
        return [
          cases.setStatus(submission.caseId, { state: 'proposed', decision: null, effectId, problems: [], error: null, attempts: 1 }),
          cases.setStatus(submission.caseId, { state: 'failed', decision: null, effectId: null, problems: [], error: { code: 'internal', message: 'late' }, attempts: 1 }),
        ];
      }),
    );
    for (const submission of ids) expect((await cases.get(submission.caseId))?.status).toMatchObject({ state: 'proposed', effectId: caseEffectId(submission.caseId) });
  });
});

describe('a crash of the decisions worker between deciding and proposing', () => {
  /** A decider that decides 2000 the first time and 1500 every time after, counting its calls. */
  function changingDecider(): Decider & { calls: number } {
    const decider = {
      name: 'rules' as const,
      calls: 0,
      async decide() {
        decider.calls += 1;
        const amountCents = decider.calls === 1 ? 2_000 : 1_500;
        return { action: 'refund' as const, amountCents, reason: `decision ${decider.calls}`, model: 'scripted', text: `decision ${decider.calls}: ${amountCents}` };
      },
    };
    return decider;
  }

  it('after the proposal was recorded: the run again adopts the first PROPOSED, asks no decider, and one refund is sent', async () => {
    const decider = changingDecider();
    rig.useDecider(decider);
    let crashes = 0;
    rig.wrapSink((sink) => ({
      async propose(proposal, how) {
        const recorded = await sink.propose(proposal, how);
        if (crashes === 0) {
          crashes += 1;
          throw new Error('the worker died right after recording the proposal');
        }
        return recorded;
      },
    }));
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    const submission = refundCase(paymentIntent, approval);
    const record = await decided(submission);
    expect(crashes).toBe(1);
    expect(decider.calls).toBe(1);
    expect(record.status).toMatchObject({ state: 'proposed', decision: { amountCents: 2_000, text: 'decision 1: 2000' } });
    expect(await rig.effects.waitFor(record.status.effectId ?? '', 15_000)).toMatchObject({ outcome: 'COMMITTED' });
    const entries = await entriesOf(caseEffectId(submission.caseId));
    expect(entries.filter((entry) => entry.kind === 'PROPOSED')).toHaveLength(1);
    expect(entries.some((entry) => entry.kind === 'REFUSED')).toBe(false);
    expect((await rig.refundsAt(paymentIntent)).map((refund) => refund.amount)).toEqual([2_000]);
  });

  it('a proposal recorded and queued whose enqueue answers an error on every attempt: the case is proposed with that effect, never failed, and its one refund is sent', async () => {
    rig.wrapSink((sink) => ({
      async propose(proposal, how) {
        await sink.propose(proposal, how);
        // As effects.propose raises when queue.add answers after the Redis timeout: recorded, queued late.
        throw new Error('Effect was recorded, but Redis did not answer within 100 ms while it was being queued, so it may or may not be queued.');
      },
    }));
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    const submission = refundCase(paymentIntent, approval);
    const record = await decided(submission);
    const effectId = caseEffectId(submission.caseId);
    expect(record.status).toMatchObject({ state: 'proposed', effectId, attempts: 1, decision: { amountCents: 2_000 }, error: { message: expect.stringContaining('may or may not be queued') } });
    expect(await rig.effects.waitFor(effectId, 15_000)).toMatchObject({ outcome: 'COMMITTED' });
    const view = await caseView(rig.stores, record);
    expect(view).toMatchObject({ state: 'proposed', effect: { effect_id: effectId }, links: { effect: expect.any(String) } });
    expect((await entriesOf(effectId)).filter((entry) => entry.kind === 'PROPOSED')).toHaveLength(1);
    expect((await rig.refundsAt(paymentIntent)).map((refund) => refund.amount)).toEqual([2_000]);
  });

  it('a proposal under case:<id> the case did not record (a caller took the id before case: ids were refused) is never adopted: the case fails conflicting_payload, undecided, and nothing is sent', async () => {
    const decider = changingDecider();
    rig.useDecider(decider);
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    const submission = refundCase(paymentIntent, approval);
    // As POST /v1/refunds recorded it: the case's approval, another payload, a decision text of the caller's.
    const forged = await createProposalRecorder(rig.stores)({ requestId: requestIdOf(submission.caseId), agent: 'sam', approval, premises: { chargebacks: [], refunded_by_others: 0 }, effect: { kind: 'refund', paymentIntent, amount: 1_999 }, request: { request_id: requestIdOf(submission.caseId), token: 'sam' }, decision: { model: 'rules', text: 'forged' } });
    expect(forged.status).toBe('recorded');
    const record = await decided(submission);
    expect(record.status).toMatchObject({ state: 'failed', decision: null, effectId: null, error: { code: 'conflicting_payload' } });
    expect(record.status.error?.message).toContain(`Request ${requestIdOf(submission.caseId)} already holds a proposal case ${submission.caseId} did not record`);
    expect(decider.calls).toBe(0);
    expect((await entriesOf(caseEffectId(submission.caseId))).map((entry) => entry.kind)).toEqual(['PROPOSED']);
    expect(await rig.refundsAt(paymentIntent)).toEqual([]);
  });

  it('before anything was recorded: the run again decides anew, and that decision is the only proposal', async () => {
    const decider = changingDecider();
    rig.useDecider(decider);
    let crashes = 0;
    rig.wrapSink((sink) => ({
      async propose(proposal, how) {
        if (crashes === 0) {
          crashes += 1;
          throw new Error('the worker died after deciding, before recording');
        }
        return sink.propose(proposal, how);
      },
    }));
    const { paymentIntent, approval } = await rig.paymentWithApproval(2_000);
    const submission = refundCase(paymentIntent, approval);
    const record = await decided(submission);
    expect(decider.calls).toBe(2);
    expect(record.status).toMatchObject({ state: 'proposed', decision: { amountCents: 1_500 } });
    expect(await rig.effects.waitFor(record.status.effectId ?? '', 15_000)).toMatchObject({ outcome: 'COMMITTED' });
    expect((await entriesOf(caseEffectId(submission.caseId))).filter((entry) => entry.kind === 'PROPOSED')).toHaveLength(1);
    expect((await rig.refundsAt(paymentIntent)).map((refund) => refund.amount)).toEqual([1_500]);
  });
});
