// Shared wiring for the gate's behavioural tests: short timings (so every wait is a fraction of a second), facts
// that hold for the standard payment, and helpers that read what the journal and the receipts say.
import { pino } from 'pino';
import { expect } from 'vitest';
import type { Config } from '../../src/config.js';
import type { ApprovalTerms } from '../../src/core/approval.js';
import { ProcessCrash } from '../../src/core/target.js';
import { verify, type Verification } from '../../src/core/verify.js';
import { createGate, type Gate, type GateDeps, type GateResult, type RecoveryReport } from '../../src/gate/gate.js';
import type { MemoryTargetOptions } from '../../src/targets/memory-target.js';
import { recorded } from '../support/outcomes.js';
import { approvalTerms, createWorld, kill, refundProposal, sleep, type TestNode, type World } from '../support/harness.js';

export const PAYMENT = 'payment:pi_1';
/** The facts the standard refund proposal was decided on; the world starts out agreeing with them. */
export const FACTS = { chargebacks: [], refunded_by_others: 0 };

/**
 * Timings short enough that waiting out a send deadline plus the settle margin costs half a second, and still
 * valid for the gate: claim TTL above the send timeout, dedup margin above send timeout + settle margin.
 */
export const FAST: Partial<Config> = { sendTimeoutMs: 600, settleMarginMs: 150, claimTtlMs: 2_000, heartbeatMs: 100, heartbeatTtlMs: 500 };

/** A slow send that still finishes inside the send timeout, leaving other nodes time to act while it is on the wire. */
export const SLOW_SEND_MS = 400;

export async function gateWorld(options: { target?: Partial<MemoryTargetOptions>; config?: Partial<Config> } = {}): Promise<World> {
  const world = await createWorld({ target: options.target ?? {}, config: { ...FAST, ...options.config } });
  world.target.world.set(PAYMENT, { ...FACTS });
  return world;
}

/**
 * A world of a tier-2 target (looked up, never deduped) and one node whose $20 refund got no definite answer: the
 * connection dropped before the request was written, so nothing landed and the dispatch stays open for recovery.
 */
export async function unknownSend(): Promise<{ world: World; node: TestNode; effectId: string }> {
  const world = await gateWorld({ target: { tier: 2 } });
  const node = await world.node('a');
  const { id } = await grant(node);
  world.target.inject({ kind: 'error-before-send' });
  const answer = await node.gate.submit(refundProposal({ approval: id }));
  expect(answer.outcome).toBe('IN_FLIGHT');
  return { world, node, effectId: answer.effectId };
}

export async function grant(node: TestNode, overrides: Partial<ApprovalTerms> = {}): Promise<ApprovalTerms> {
  const terms = approvalTerms({ scope: PAYMENT, ...overrides });
  await node.approvals.grant(terms);
  return terms;
}

/** Submits a proposal whose send the target turns into a process death (an injected crash fault). */
export async function submitAndCrash(node: TestNode, proposal: ReturnType<typeof refundProposal>): Promise<string> {
  await expect(node.gate.submit(proposal)).rejects.toBeInstanceOf(ProcessCrash);
  return node.gate.effectIdOf(proposal);
}

/**
 * Node a grants an approval, dies on the send of one refund under it (before the send) and is killed; node b, alive,
 * is left to recover it.
 */
export async function crashedBeforeSend(world: World): Promise<{ a: TestNode; b: TestNode; approval: string; effectId: string }> {
  const [a, b] = [await world.node('a'), await world.node('b')];
  const { id } = await grant(a);
  world.target.inject({ kind: 'crash-before-send' });
  const effectId = await submitAndCrash(a, refundProposal({ approval: id }));
  await kill(a);
  return { a, b, approval: id, effectId };
}

/**
 * One request of 2000 cents on PAYMENT (whose subject cap is 2000), refused twice at recovery: dispatched under `ap1`
 * by node a, which stalls before its send is recorded (a frozen sender); ap1 revoked, a killed, b refuses it. Decided
 * again under `ap2` by node c, which dies the same way; ap2 revoked, refused again. Both approvals hold 5000 cents and
 * 5 uses. ap1's sender may then report its landing (a late landing under an approval that is not the last dispatch's).
 */
export async function refusedUnderTwoApprovals(world: World, requestId: string): Promise<{ b: TestNode; ap1: ApprovalTerms; ap2: ApprovalTerms; effectId: string }> {
  const [a, b, c] = [await world.node('a'), await world.node('b'), await world.node('c')];
  const ap1 = await grant(b, { capCents: 5_000, maxUses: 5 });
  const ap2 = await grant(b, { capCents: 5_000, maxUses: 5 });
  await b.approvals.setSubjectCap(PAYMENT, 2_000);
  world.target.inject({ kind: 'crash-before-send' });
  const first = refundProposal({ requestId, approval: ap1.id, amount: 2_000 });
  const effectId = await submitAndCrash(a, first);
  await b.approvals.revoke(ap1.id, 'lee@risk');
  await kill(a);
  expect((await recoverUntilSettled(b, effectId)).settled).toEqual([expect.objectContaining({ outcome: 'REFUSED:lease_at_recovery' })]);
  world.target.inject({ kind: 'crash-before-send' });
  await submitAndCrash(c, { ...first, approval: ap2.id });
  await b.approvals.revoke(ap2.id, 'lee@risk');
  await kill(c);
  expect((await recoverUntilSettled(b, effectId)).settled).toEqual([expect.objectContaining({ outcome: 'REFUSED:lease_at_recovery' })]);
  return { b, ap1, ap2, effectId };
}

export async function openState(node: TestNode, effectId: string) {
  const partition = await node.journal.partitionOf(effectId);
  if (partition === null) throw new Error(`effect ${effectId} is unknown`);
  return node.journal.readState(partition, effectId);
}

export async function entryKinds(node: TestNode, effectId: string): Promise<string[]> {
  const partition = await node.journal.partitionOf(effectId);
  if (partition === null) return [];
  return (await node.journal.entries(partition, effectId)).map((entry) => entry.kind);
}

/** Sleeps until the Redis clock, which every deadline in the journal is on, reaches `at`. */
export async function untilRedisTime(node: TestNode, at: number): Promise<void> {
  for (;;) {
    const now = await node.journal.serverTime();
    if (now >= at) return;
    await sleep(at - now + 5);
  }
}

/** Polls a condition that another node's request makes true soon (a dispatch opening, a claim moving). */
export async function eventually(check: () => Promise<boolean>, what: string, timeoutMs = 3_000): Promise<void> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

/** Starts a submit whose send is slow and returns once its dispatch is open, while the send is on the wire. */
export async function submitSlowly(world: World, node: TestNode, proposal: ReturnType<typeof refundProposal>): Promise<{ effectId: string; sending: Promise<GateResult> }> {
  const effectId = node.gate.effectIdOf(proposal);
  world.target.inject({ kind: 'slow-send', delayMs: SLOW_SEND_MS });
  const sending = node.gate.submit(proposal);
  await eventually(async () => (await openState(node, effectId).catch(() => null))?.state.open === true, 'the dispatch to open');
  return { effectId, sending };
}

/** Runs recovery passes, each at the instant the previous one asked for, until the effect settles. */
export async function recoverUntilSettled(node: TestNode, effectId: string, maxPasses = 5): Promise<RecoveryReport> {
  for (let pass = 0; pass < maxPasses; pass += 1) {
    const report = await node.gate.recover({ only: [effectId] });
    if (report.settled.some((item) => item.effectId === effectId)) return report;
    if (report.nextAt !== null) await untilRedisTime(node, report.nextAt);
  }
  throw new Error(`effect ${effectId} did not settle in ${maxPasses} recovery passes`);
}

/** The receipt of an effect, verified offline with the world's public key; it must be valid. */
export async function verifiedReceipt(world: World, node: TestNode, effectId: string): Promise<Verification> {
  const receipt = await node.gate.receipt(effectId);
  expect(receipt).not.toBeNull();
  const verification = verify(JSON.parse(JSON.stringify(receipt)), { publicKeys: world.key.publicKeys });
  expect(verification.problems).toEqual([]);
  expect(verification).toMatchObject({ valid: true, chainIntact: true, signed: true, effectId });
  return verification;
}

/** A second gate on a node's adapters with some of them swapped, to place another writer at an exact moment. */
export function gateWith(node: TestNode, swapped: Partial<GateDeps>): Gate {
  const timing = { claimTtlMs: node.config.claimTtlMs, settleMarginMs: node.config.settleMarginMs, dedupMarginMs: node.config.dedupMarginMs };
  return recorded(createGate({ journal: node.journal, approvals: node.approvals, heartbeat: node.heartbeat, target: node.target, logger: pino({ level: 'silent' }), timing, ...swapped }));
}

/**
 * Stripe after a 500 it stored under the key (stripe-facts §3): every request with the key, the first included, is
 * answered with that 500. With `landsFirst` the first request's refund was created before the 500. `answerAgain`
 * ends it as an outage ends whose 500s Stripe did not store: requests are sent and answered again.
 */
export function storedError(world: World, options: { landsFirst: boolean }) {
  const { target } = world;
  const apply = target.apply.bind(target);
  const query = target.query.bind(target);
  let requests = 0;
  let queries = 0;
  target.apply = async (effectId, effect, context) => {
    requests += 1;
    if (requests === 1 && options.landsFirst) await apply(effectId, effect, context);
    else await context.beforeWrite();
    throw Object.assign(new Error('Stripe gave no definite answer to POST /v1/refunds (500 api_error)'), { statusCode: 500 });
  };
  target.query = async (...args) => {
    queries += 1;
    return query(...args);
  };
  return {
    requests: () => requests,
    queries: () => queries,
    answerAgain() {
      target.apply = apply;
    },
  };
}
