// The service's commands from src/main.ts as an operator runs them (`node bin/interlock.js …` against the sandbox
// and a private key prefix): `serve --roles worker`, `refund`, `credit`, `effect show`, `recover`, `reconcile`, and
// every exit code of `refund`/`credit`/`effect show`: 0 committed or already committed, 3 refused, 4 not settled
// within --wait, 2 bad input or configuration (nothing recorded), 1 anything else. The commands that need no
// shared state run at the same time, so the file costs a few process starts, not one per check.
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import type Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { effectIdFor, explainOutcome, ProcessCrash, shownUrl, startSender, type ApprovalTerms, type Target } from '../../src/interlock.js';
import { openPipeline, spawnWorker, type Pipeline, type WorkerProcess } from '../pipeline/pipeline-support.js';
import { pay, startStripeWorld, type StripeWorld } from '../stripe/stripe-support.js';
import { runCli, type CliRun } from './run-cli.js';

let world: StripeWorld;
let pipeline: Pipeline;
let worker: WorkerProcess;
beforeAll(async () => {
  world = await startStripeWorld();
  pipeline = await openPipeline(world.sandbox);
  worker = spawnWorker(pipeline.env(), ['serve', '--roles', 'worker', '--concurrency', '4']);
  await worker.ready;
}, 120_000);
afterAll(async () => {
  await worker.stop();
  await pipeline.close();
  await world.close();
});

// Generous: a command is a process start (tsx compiles the tree), and several run at once on a shared machine.
const CLI_TIMEOUT_MS = 280_000;
const cli = (args: string[], env: Record<string, string> = {}): Promise<CliRun> => runCli(args, { ...pipeline.env(), ...env }, { timeoutMs: CLI_TIMEOUT_MS });
const json = (run: CliRun): Record<string, unknown> => {
  try {
    return JSON.parse(run.stdout) as Record<string, unknown>;
  } catch {
    throw new Error(`not one JSON object (exit ${run.code}):\n${run.stdout}\n${run.stderr}`);
  }
};

let approvals = 0;
async function approve(scope: string, capCents: number): Promise<string> {
  approvals += 1;
  const terms: ApprovalTerms = { id: `ap_cli_${approvals}_${pipeline.config.keyPrefix}`, approver: 'dana@support', capCents, expiresAt: Date.now() + 3_600_000, maxUses: 2, scope };
  await pipeline.stores.approvals.grant(terms);
  return terms.id;
}

/**
 * A $20 refund whose sender died right before its send (DISPATCHED durable, nothing sent), its heartbeat gone with
 * it: only recovery (a command, or a worker's start) can settle it.
 */
async function deadSenderLeftOpen(quiet: Pipeline, name: string): Promise<{ paymentIntent: string; effectId: string }> {
  const { paymentIntent } = await pay(world.stripe, 'pm_card_visa', 5_000);
  const terms: ApprovalTerms = { id: `ap_cli_${name}_${quiet.config.keyPrefix}`, approver: 'dana@support', capCents: 2_000, expiresAt: Date.now() + 3_600_000, maxUses: 1, scope: `payment:${paymentIntent}` };
  await quiet.stores.approvals.grant(terms);
  const dying: Target = { ...quiet.stripe.target, apply: () => Promise.reject(new ProcessCrash('killed before the send')) };
  const sender = await startSender(quiet.stores, dying);
  const proposal = { requestId: `case-cli-${quiet.config.keyPrefix}-${name}`, agent: 'cli-test', approval: terms.id, premises: { chargebacks: [], refunded_by_others: 0, refundable: 5_000, charge_status: 'succeeded' }, effect: { kind: 'refund', paymentIntent, amount: 2_000 } };
  await expect(sender.gate.submit(proposal)).rejects.toThrow(/killed before the send/);
  await sender.heartbeat.stop({ clear: true });
  await sender.close().catch(() => undefined);
  return { paymentIntent, effectId: sender.gate.effectIdOf(proposal) };
}

const refundArgs = (request: string, paymentIntent: string, amount: number, approval: string, wait = '30') => ['refund', '--request', request, '--payment-intent', paymentIntent, '--amount', String(amount), '--approval', approval, '--reason', 'arrived damaged', '--wait', wait];

describe.concurrent('the service commands and their exit codes', () => {
  it('refund --wait: 0 and the committed effect; the same again: 0, nothing sent twice; another amount: 3 conflicting_payload; effect show by id and by request: 0', async () => {
    const { paymentIntent } = await pay(world.stripe, 'pm_card_visa', 5_000);
    const approval = await approve(`payment:${paymentIntent}`, 2_000);
    const request = `case-cli-${pipeline.config.keyPrefix}-refund`;
    const first = await cli(refundArgs(request, paymentIntent, 2_000, approval));
    expect(first.code, first.stderr).toBe(0);
    const effect = json(first);
    expect(effect).toMatchObject({ outcome: 'COMMITTED', state: 'settled', journal: ['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED'], verification: { valid: true, happened: true }, premises: { chargebacks: [], refunded_by_others: 0, refundable: 5_000, charge_status: 'succeeded' } });
    const [again, conflict, byId, byRequest] = await Promise.all([
      cli(refundArgs(request, paymentIntent, 2_000, approval)),
      cli(refundArgs(request, paymentIntent, 1_500, approval)),
      cli(['effect', 'show', String(effect.effectId)]),
      cli(['effect', 'show', '--request', request]),
    ]);
    expect([again.code, conflict.code, byId.code, byRequest.code], [again.stderr, conflict.stderr, byId.stderr, byRequest.stderr].join('\n')).toEqual([0, 3, 0, 0]);
    // Answered from the journal: still one dispatch and one commit (the conflicting proposal, run at the same time,
    // may have added its REFUSED as evidence).
    const journal = json(again).journal as string[];
    expect(json(again)).toMatchObject({ effectId: effect.effectId, outcome: 'COMMITTED' });
    expect([journal.filter((kind) => kind === 'DISPATCHED').length, journal.filter((kind) => kind === 'COMMITTED').length]).toEqual([1, 1]);
    // The refusal of this request on top (the outcome's sentence, the reason, the request id), and under `recorded` the
    // effect as recorded: its payload, its journal (with the REFUSED the conflict appended, as evidence, and the
    // refund's facts as they come); not an empty journal.
    expect(json(conflict)).toMatchObject({ outcome: 'REFUSED:conflicting_payload', sentence: explainOutcome('REFUSED:conflicting_payload'), reason: expect.stringContaining('another payload'), requestId: request, recorded: { effectId: effect.effectId, outcome: 'COMMITTED', payload: { kind: 'refund', paymentIntent, amount: 2_000 }, verification: { valid: true } } });
    const conflictJournal = (json(conflict).recorded as { journal: string[] }).journal;
    expect(conflictJournal.slice(0, 4)).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED']);
    // The refusal by its code: another payload refused under the request id, not this effect refused.
    expect(conflictJournal).toContain('REFUSED:conflicting_payload');
    expect(json(byId)).toMatchObject({ effectId: effect.effectId, outcome: 'COMMITTED', finalMoney: { status: 'returned' } });
    // The same effect by its request id (the conflict, run at the same time, may add its REFUSED between the two).
    expect(json(byRequest)).toMatchObject({ effectId: effect.effectId, subject: `payment:${paymentIntent}`, outcome: 'COMMITTED', finalMoney: { status: 'returned' } });
    const refunds = (await world.stripe.refunds.list({ payment_intent: paymentIntent })).data;
    expect(refunds.map((refund) => refund.amount)).toEqual([2_000]);
  }, 600_000);

  it('credit --wait: 0 and one balance credit for the incident', async () => {
    const price = await world.stripe.prices.create({ unit_amount: 3_000, currency: 'usd', recurring: { interval: 'month' }, product_data: { name: 'plan' } });
    const customer = await world.stripe.customers.create({ name: 'cli credit', payment_method: 'pm_card_visa', invoice_settings: { default_payment_method: 'pm_card_visa' } });
    await world.stripe.subscriptions.create({ customer: customer.id, items: [{ price: price.id }] });
    const approval = await approve(`customer:${customer.id}`, 1_000);
    const run = await cli(['credit', '--request', `case-cli-${pipeline.config.keyPrefix}-credit`, '--customer', customer.id, '--amount', '1000', '--incident', 'INC-cli1', '--approval', approval, '--wait', '30']);
    expect(run.code, run.stderr).toBe(0);
    expect(json(run)).toMatchObject({ outcome: 'COMMITTED', premises: { subscription_status: 'active', incident_compensation: 0 }, verification: { valid: true } });
    expect(((await world.stripe.customers.retrieve(customer.id)) as Stripe.Customer).balance).toBe(-1_000);
  }, 600_000);

  it("refund and case hold the approval's rules as the support API does: its approver proposing under a four-eyes approval, 1; an approval that does not exist: 2; one line, nothing recorded or queued; someone else: 0", async () => {
    const { paymentIntent } = await pay(world.stripe, 'pm_card_visa', 5_000);
    approvals += 1;
    const terms: ApprovalTerms = { id: `ap_cli_eyes_${approvals}_${pipeline.config.keyPrefix}`, approver: 'dana@support', capCents: 2_000, expiresAt: Date.now() + 3_600_000, maxUses: 2, scope: `payment:${paymentIntent}` };
    await pipeline.stores.approvals.grant(terms, JSON.stringify({ four_eyes: true, granted_by: 'lee@support' }));
    const request = (name: string) => `case-cli-${pipeline.config.keyPrefix}-${name}`;
    const [self, granter, missing, kase] = await Promise.all([
      cli([...refundArgs(request('eyes-self'), paymentIntent, 2_000, terms.id), '--agent', 'Dana@SUPPORT']),
      cli([...refundArgs(request('eyes-granter'), paymentIntent, 2_000, terms.id), '--agent', 'lee@support']),
      cli(refundArgs(request('eyes-missing'), paymentIntent, 2_000, `ap_missing_${pipeline.config.keyPrefix}`)),
      cli(['case', '--case', `cli-eyes-${pipeline.config.keyPrefix}`, '--payment-intent', paymentIntent, '--story', 'The jar was cracked.', '--approval', terms.id, '--agent', 'dana@support']),
    ]);
    expect([self.code, granter.code, missing.code, kase.code], [self, granter, missing, kase].map((run) => run.stderr).join('\n')).toEqual([1, 1, 2, 1]);
    expect(self.stderr).toMatch(/^Approval ap_cli_eyes_\S+ asks for four eyes and was approved by dana@support, whose name compares as the proposer Dana@SUPPORT's, so Dana@SUPPORT cannot propose under it\./);
    expect(granter.stderr).toMatch(/asks for four eyes and was granted by the token lee@support, so lee@support cannot propose under it/);
    expect(missing.stderr).toMatch(/^No approval ap_missing_\S+; nothing was recorded\. Grant it first/);
    expect(kase.stderr).toMatch(/asks for four eyes and was approved by dana@support, so dana@support cannot propose under it/);
    for (const name of ['eyes-self', 'eyes-granter', 'eyes-missing']) expect(await pipeline.stores.journal.partitionOf(effectIdFor({ requestId: request(name), effect: { kind: 'refund', paymentIntent, amount: 2_000 } }))).toBeNull();
    expect(await pipeline.stores.cases.get(`cli-eyes-${pipeline.config.keyPrefix}`)).toBeNull();
    const other = await cli([...refundArgs(request('eyes-other'), paymentIntent, 2_000, terms.id), '--agent', 'sam@support']);
    expect(other.code, other.stderr).toBe(0);
    expect(json(other)).toMatchObject({ outcome: 'COMMITTED' });
  }, 600_000);

  it('bad input or configuration: 2 with one line on stderr and nothing recorded (effect show with an empty --request, or with both an id and --request); an unknown effect: 1', async () => {
    const { paymentIntent } = await pay(world.stripe, 'pm_card_visa', 5_000);
    const [amount, missing, roles, redis, unknown, emptyRequest, both, longReason, reserved] = await Promise.all([
      cli(refundArgs('case-cli-bad-amount', paymentIntent, 2_000, 'ap_x').map((arg) => (arg === '2000' ? '20.5' : arg))),
      cli(['credit', '--request', 'case-cli-no-incident', '--customer', 'cus_x', '--amount', '100', '--approval', 'ap_x']),
      cli(['serve', '--roles', 'worker,printer']),
      cli(['effect', 'show', 'a'.repeat(64)], { REDIS_URL: 'redis://127.0.0.1:1' }),
      cli(['effect', 'show', 'b'.repeat(64)]),
      cli(['effect', 'show', '--request', '']),
      cli(['effect', 'show', 'b'.repeat(64), '--request', 'case-cli-both']),
      cli(refundArgs('case-cli-long-reason', paymentIntent, 2_000, 'ap_x').map((arg) => (arg === 'arrived damaged' ? 'x'.repeat(16_001) : arg))),
      // A request id the service derives itself (a case's): taken first, it would bind the case's payload.
      cli(refundArgs(`case:cli-${pipeline.config.keyPrefix}`, paymentIntent, 2_000, 'ap_x')),
    ]);
    expect([amount.code, missing.code, roles.code, redis.code, unknown.code, emptyRequest.code, both.code, longReason.code, reserved.code], [amount, missing, roles, redis, unknown, emptyRequest, both, longReason, reserved].map((run) => run.stderr).join('\n')).toEqual([2, 2, 2, 2, 1, 2, 2, 2, 2]);
    expect(reserved.stderr).toMatch(/^The proposal is invalid \(--request: may not start with "case:": the service derives the request ids of cases/);
    // A problem with a value the command was given is named by its option: --reason, not the request it is kept in.
    expect(longReason.stderr.trim()).toBe('The proposal is invalid (--reason: is larger than 16000 characters of JSON). Nothing was recorded.');
    expect(emptyRequest.stderr).toMatch(/--request is empty/);
    expect(both.stderr).toMatch(/not both/);
    expect(amount.stderr).toMatch(/--amount must be a whole number of cents/);
    expect(missing.stderr).toMatch(/--incident/);
    expect(roles.stderr).toMatch(/"printer" is not one/);
    expect(unknown.stderr.trim().split('\n')).toEqual([`No effect ${'b'.repeat(64)} in the Redis at ${shownUrl(pipeline.config.redisUrl)} under key prefix ${pipeline.config.keyPrefix} (from REDIS_URL).`]);
    for (const run of [amount, missing, roles, redis, unknown, emptyRequest, both, longReason, reserved]) expect(run.stderr).not.toMatch(/\n\s+at /);
    expect(await pipeline.stores.journal.partitionOf('a'.repeat(64))).toBeNull();
    expect(await pipeline.stores.journal.partitionOf(effectIdFor({ requestId: `case:cli-${pipeline.config.keyPrefix}`, effect: null }))).toBeNull();
  }, 600_000);

  it('recover: one pass settles what a dead sender left (0, the report); reconcile re-reads committed effects (0, the report)', async () => {
    // A second prefix without a worker, so only the command can settle what the dead sender left.
    const quiet = await openPipeline(world.sandbox);
    try {
      const { paymentIntent, effectId } = await deadSenderLeftOpen(quiet, 'recover');
      // Run with the service's environment, INTERLOCK_WORKER_ID included: the pass beats under an id of its own, so the
      // running worker under that id (its heartbeat below) is not superseded by it.
      const live = new Redis(quiet.config.redisUrl);
      const liveKey = quiet.stores.keys.heartbeat('svc-live');
      await live.set(liveKey, 'live-nonce', 'PX', 120_000);
      const [recovered, reconciled] = await Promise.all([runCli(['recover'], { ...quiet.env(), INTERLOCK_WORKER_ID: 'svc-live' }, { timeoutMs: CLI_TIMEOUT_MS }), cli(['reconcile', '--hours', '1'])]);
      expect(await live.get(liveKey)).toBe('live-nonce');
      await live.quit();
      expect([recovered.code, reconciled.code], `${recovered.stderr}\n${reconciled.stderr}`).toEqual([0, 0]);
      expect(json(recovered)).toMatchObject({ settled: [{ effectId, outcome: 'COMMITTED_BY_RETRY' }], waiting: [], unresolved: [] });
      expect((await world.stripe.refunds.list({ payment_intent: paymentIntent })).data.map((refund) => refund.amount)).toEqual([2_000]);
      expect(Object.keys(json(reconciled)).length).toBeGreaterThan(0);
    } finally {
      await quiet.close();
    }
  }, 600_000);

  it('serve refused for its configuration (a decider setting, an API limit, a token file, a port in use, a host not of this machine) exits 2 before recovery or any worker runs: what a dead sender left stays open and nothing is sent', async () => {
    const quiet = await openPipeline(world.sandbox);
    const taken = createNetServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    try {
      const { paymentIntent, effectId } = await deadSenderLeftOpen(quiet, 'config');
      const port = String((taken.address() as AddressInfo).port);
      const serve = (env: Record<string, string>, roles = 'worker,api', args: string[] = ['--port', '0']) => runCli(['serve', '--roles', roles, ...args], { ...quiet.env(), ...env }, { timeoutMs: CLI_TIMEOUT_MS });
      const runs = await Promise.all([
        serve({ INTERLOCK_MODEL_MAX_TOKENS: 'abc' }),
        serve({ INTERLOCK_API_BODY_LIMIT: '12' }),
        serve({ INTERLOCK_API_TOKENS: join(quiet.config.dataDir, 'no-such-tokens.json') }),
        serve({}, 'worker,webhooks', ['--port', port]),
        serve({ INTERLOCK_HOST: '192.0.2.1' }),
        serve({ INTERLOCK_HOST: 'no-such-host.invalid' }),
      ]);
      expect(runs.map((run) => run.code), runs.map((run) => run.stderr).join('\n')).toEqual([2, 2, 2, 2, 2, 2]);
      expect(runs[3]?.stderr).toContain(`127.0.0.1:${port} is in use by another program`);
      expect(runs[4]?.stderr).toContain('192.0.2.1 is not an address of this machine, so the service did not start. Correct the address (INTERLOCK_HOST).');
      expect(runs[5]?.stderr).toMatch(/no-such-host\.invalid does not resolve to an address \((ENOTFOUND|EAI_AGAIN)\), so the service did not start/);
      expect(await quiet.stores.journal.readState(`payment:${paymentIntent}`, effectId)).toMatchObject({ state: { open: true } });
      expect((await world.stripe.refunds.list({ payment_intent: paymentIntent })).data).toEqual([]);
    } finally {
      taken.close();
      await quiet.close();
    }
  }, 600_000);

  it('serve: the worker ends on SIGTERM with exit 0 after its sends', async () => {
    const extra = spawnWorker(pipeline.env(), ['serve', '--roles', 'worker']);
    await extra.ready;
    // The start-up lines come once the signal handlers are in place (a SIGTERM before them ends the process as
    // Node's default does).
    while (!extra.logs().includes('Interlock for Stripe is running')) await new Promise((resolve) => setTimeout(resolve, 50));
    await extra.stop();
    expect(await extra.exited, extra.logs().slice(-1500)).toEqual({ code: 0, signal: null });
    expect(extra.logs()).toMatch(/"msg":"stopped"/);
  }, 600_000);
});

// Alone: its slowness at the sandbox is for its own refund's create (slowDown is taken by the first one to come).
describe('the service commands: a refund not settled within --wait 0', () => {
  it('refund refused by the gate (over its payment\'s shared cap): 3; not settled within --wait 0: 4, and it settles afterwards', async () => {
    const [capped, queued] = await Promise.all([pay(world.stripe, 'pm_card_visa', 5_000), pay(world.stripe, 'pm_card_visa', 5_000)]);
    // An approval that covers the refund, on a payment whose shared cap does not: only the gate refuses it (an approval
    // whose own cap is below the amount is refused before anything is recorded, exit 2).
    const [small, enough] = await Promise.all([approve(`payment:${capped.paymentIntent}`, 2_000), approve(`payment:${queued.paymentIntent}`, 2_000)]);
    await pipeline.stores.approvals.setSubjectCap(`payment:${capped.paymentIntent}`, 1_000);
    // The queued refund's create is slow at Stripe, so a worker cannot settle it before `--wait 0` answers (it did
    // once with no slowness). Only the create (POST): the commands' own premise reads (GET /v1/refunds) came first.
    // The slowness is taken by the first refund created at the sandbox, so no other test may create one meanwhile:
    // this one runs after the concurrent ones (run beside them, another test's refund took it and this one settled
    // within --wait 0).
    await world.sandbox.control.slowDown({ path: '/v1/refunds', method: 'POST', ms: 1_500, count: 1 });
    const [refused, unsettled] = await Promise.all([
      cli(refundArgs(`case-cli-${pipeline.config.keyPrefix}-capped`, capped.paymentIntent, 2_000, small)),
      cli(refundArgs(`case-cli-${pipeline.config.keyPrefix}-nowait`, queued.paymentIntent, 2_000, enough, '0')),
    ]);
    expect([refused.code, unsettled.code], `${refused.stderr}\n${unsettled.stderr}`).toEqual([3, 4]);
    expect(json(refused)).toMatchObject({ outcome: 'REFUSED:over_cap' });
    expect(json(unsettled)).toMatchObject({ outcome: null });
    const settled = await pipeline.untilSettled([String(json(unsettled).effectId)], 60_000);
    expect([...settled.values()].map((answer) => answer.outcome)).toEqual(['COMMITTED']);
    expect((await world.stripe.refunds.list({ payment_intent: capped.paymentIntent })).data).toEqual([]);
  }, 600_000);
});
