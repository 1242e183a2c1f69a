// Property: whatever the interleaving of several gate instances on one Redis prefix, whatever crashes, faults,
// revocations and premise changes happen between their steps (and during them: a revocation or an expiry while a
// re-check reads the premises, a fenced-out sender's late definite answer, lookups that find objects with odd
// ids, premise reads and lookups that fail for a while), every effect lands at most once with its recorded
// payload, every send went out under an authorization given before its approval was revoked or expired, landed
// money stays within the shared caps (including caps set after money moved), the journal's answer agrees with the
// target once recovery is quiet, and every receipt verifies, approval scope included (I1, I2, I4, I5, I6, P,
// DESIGN §7, issue 6).
import fc from 'fast-check';
import { afterAll, describe, it } from 'vitest';
import type { Tier } from '../../src/core/decisions.js';
import { firstProposal, openDispatch } from '../../src/core/decisions.js';
import { canonicalJson } from '../../src/core/json.js';
import { ProcessCrash } from '../../src/core/target.js';
import { verify } from '../../src/core/verify.js';
import { PremiseReadError } from '../../src/gate/gate.js';
import type { Fault } from '../../src/targets/memory-target.js';
import { approvalTerms, createWorld, kill, sleep, type TestNode, type World } from '../support/harness.js';

const NODES = 3;
const SUBJECTS = ['pi_a', 'pi_b'] as const;
/** Effects 0 and 1 share payment pi_a and its approval; effect 2 is alone on pi_b. */
const EFFECTS = [
  { subject: 0, amount: 1_000 },
  { subject: 0, amount: 1_200 },
  { subject: 1, amount: 1_500 },
] as const;
/**
 * Shared caps (I6), tight enough to bind: pi_a's approval covers 2 500 cents, so e0 and e1 fit only at their first
 * amounts, not both re-decided; pi_b carries a subject cap of 1 500 cents that a re-decided e2 would pass.
 */
const CAPS = [
  { approvalCents: 2_500, subjectCents: null },
  { approvalCents: 10_000, subjectCents: 1_500 },
] as const;
const HOLDING_FACTS = { chargebacks: [], refunded_by_others: 0 };
const MOVED_FACTS = { chargebacks: ['dp_outage'], refunded_by_others: 0 };
/** Short timings so recovery's waits (send deadline plus settle margin, claim expiry) fit in a bounded run. */
const TIMING = { sendTimeoutMs: 150, settleMarginMs: 100, claimTtlMs: 500, dedupMarginMs: 1_000, heartbeatMs: 50, heartbeatTtlMs: 250 };
const COMMITTED_FAMILY = new Set(['COMMITTED', 'COMMITTED_ON_QUERY', 'COMMITTED_BY_RETRY', 'REAPPLIED_AFTER_QUERY', 'DUPLICATE_IGNORED']);

/** A submit may carry a fault armed just before it, so crashes meet sends often enough to matter. */
type Call = { op: 'submit'; node: number; effect: number; redecided: boolean; fault: Fault | null } | { op: 'recover'; node: number };
type Step =
  | Call
  /**
   * Calls run concurrently on distinct nodes. With `lapse`, that node's heartbeat is cleared `afterMs` into the
   * calls and a new node takes its slot and recovers, while the old call runs on: a paused or partitioned process
   * that others see as dead but that may still send and write. Fencing, the send deadline and the settle margin
   * must make it harmless.
   */
  | { op: 'together'; calls: Call[]; lapse: { node: number; afterMs: number } | null }
  | { op: 'fault'; fault: Fault }
  | { op: 'kill'; node: number; restartSameId: boolean }
  | { op: 'revoke'; subject: number }
  | { op: 'premise'; subject: number; holds: boolean }
  | { op: 'wait'; ms: number }
  /** The target forgets its idempotency keys, allowed only once every landing is older than its dedup window. */
  | { op: 'forget-keys' }
  /** Persistent lookup and premise failures end. */
  | { op: 'heal' }
  /** A subject cap is set after money may have moved: at what moved so far plus `extra` cents. */
  | { op: 'cap'; subject: number; extra: number }
  /** A call runs while the subject's approval is revoked `afterMs` into it (a re-check, a send in progress). */
  | { op: 'revoke-during'; call: Call; subject: number; afterMs: number };
/**
 * With `shortDedupWindow` the target remembers keys for 600 ms only, so tier 1 must fall back to lookup. With
 * `expiresInMs` every approval expires that long after it was granted, often while a call is running.
 */
type Schedule = { shortDedupWindow: boolean; expiresInMs: number | null; steps: Step[] };
const SHORT_DEDUP = { windowMs: 600, marginMs: 300 };

function describeCall(call: Call): string {
  if (call.op === 'recover') return `n${call.node}.recover()`;
  return `n${call.node}.submit(e${call.effect}${call.redecided ? ', re-decided amount' : ''})${call.fault ? ` with fault ${JSON.stringify(call.fault)}` : ''}`;
}

function describeStep(step: Step): string {
  switch (step.op) {
    case 'submit':
    case 'recover':
      return describeCall(step);
    case 'together':
      return `together[ ${step.calls.map(describeCall).join(' | ')} ]${step.lapse ? `, n${step.lapse.node}'s heartbeat lapses after ${step.lapse.afterMs} ms while its call runs on, and its replacement recovers` : ''}`;
    case 'fault':
      return `fault ${JSON.stringify(step.fault)}`;
    case 'kill':
      return `kill n${step.node}, restart ${step.restartSameId ? 'with the same worker id' : 'as a new worker'}`;
    case 'revoke':
      return `revoke the approval on ${SUBJECTS[step.subject] ?? '?'}`;
    case 'premise':
      return `premises on ${SUBJECTS[step.subject] ?? '?'} ${step.holds ? 'hold again' : 'change (a chargeback appears)'}`;
    case 'wait':
      return `wait ${step.ms} ms`;
    case 'forget-keys':
      return 'the target forgets idempotency keys older than its window';
    case 'heal':
      return 'lookups and premise reads work again';
    case 'cap':
      return `cap ${SUBJECTS[step.subject] ?? '?'} at what moved so far + ${step.extra} cents`;
    case 'revoke-during':
      return `${describeCall(step.call)} while the approval on ${SUBJECTS[step.subject] ?? '?'} is revoked ${step.afterMs} ms into it`;
    default: {
      const never: never = step;
      return never;
    }
  }
}

function describeSchedule(schedule: Schedule): string {
  return [`${schedule.shortDedupWindow ? ` (dedup window ${SHORT_DEDUP.windowMs} ms)` : ''}${schedule.expiresInMs === null ? '' : ` (approvals expire after ${schedule.expiresInMs} ms)`}`, ...schedule.steps.map((step, index) => `  ${String(index + 1).padStart(2)}. ${describeStep(step)}`)].join('\n');
}

const nodeIndex = fc.integer({ min: 0, max: NODES - 1 });
const faultArb: fc.Arbitrary<Fault> = fc.oneof(
  { arbitrary: fc.constant({ kind: 'crash-before-send' } as const), weight: 3 },
  { arbitrary: fc.constant({ kind: 'crash-after-send' } as const), weight: 3 },
  fc.constant({ kind: 'error-before-send' } as const),
  { arbitrary: fc.constant({ kind: 'error-after-send' } as const), weight: 2 },
  fc.constant({ kind: 'reject' } as const),
  fc.constant({ kind: 'lookup-error' } as const),
  fc.constant({ kind: 'premise-error' } as const),
  // A slow send either times out and never lands, or is still on the wire after the sender gave up; then it
  // lands within the settle margin (the contract of DESIGN §7: later bytes are out of any gate's reach).
  fc.integer({ min: 20, max: 300 }).map((delayMs): Fault => ({ kind: 'slow-send', delayMs })),
  fc.integer({ min: 20, max: 90 }).map((delayMs): Fault => ({ kind: 'slow-send', delayMs, landsAfterAbort: true })),
  // A definite answer that arrives late, often after its sender was fenced out (issue 6, item 7).
  fc.record({ delayMs: fc.integer({ min: 20, max: 120 }), answer: fc.constantFrom('landed' as const, 'rejected' as const) }).map(({ delayMs, answer }): Fault => ({ kind: 'slow-answer', delayMs, answer })),
  // A lookup that finds the object but reports an odd id (item 6); failures that last until healed (item 8).
  fc.constantFrom<number | null>(7, null).map((id): Fault => ({ kind: 'odd-id', id })),
  fc.constant({ kind: 'lookup-down' } as const),
  fc.constant({ kind: 'premise-down' } as const),
  fc.integer({ min: 20, max: 200 }).map((delayMs): Fault => ({ kind: 'slow-read', delayMs })),
);

const submitArb = (node: fc.Arbitrary<number>): fc.Arbitrary<Call> =>
  fc.record({
    op: fc.constant('submit' as const),
    node,
    effect: fc.integer({ min: 0, max: EFFECTS.length - 1 }),
    redecided: fc.integer({ min: 0, max: 5 }).map((roll) => roll === 0),
    fault: fc.option(faultArb, { freq: 2, nil: null }),
  });
const callArb = (node: fc.Arbitrary<number>): fc.Arbitrary<Call> => fc.oneof({ arbitrary: submitArb(node), weight: 3 }, { arbitrary: fc.record({ op: fc.constant('recover' as const), node }), weight: 1 });

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { arbitrary: callArb(nodeIndex), weight: 6 },
  {
    arbitrary: fc
      .tuple(fc.array(callArb(fc.constant(0)), { minLength: 2, maxLength: NODES }), fc.option(fc.record({ node: fc.integer({ min: 0, max: 1 }), afterMs: fc.integer({ min: 0, max: 60 }) }), { freq: 3, nil: null }))
      .map(([calls, lapse]): Step => ({ op: 'together', calls: calls.map((call, node) => ({ ...call, node })), lapse })),
    weight: 3,
  },
  { arbitrary: faultArb.map((fault): Step => ({ op: 'fault', fault })), weight: 4 },
  { arbitrary: fc.record({ op: fc.constant('kill' as const), node: nodeIndex, restartSameId: fc.boolean() }), weight: 2 },
  { arbitrary: fc.record({ op: fc.constant('revoke' as const), subject: fc.integer({ min: 0, max: SUBJECTS.length - 1 }) }), weight: 1 },
  { arbitrary: fc.record({ op: fc.constant('premise' as const), subject: fc.integer({ min: 0, max: SUBJECTS.length - 1 }), holds: fc.boolean() }), weight: 2 },
  { arbitrary: fc.record({ op: fc.constant('wait' as const), ms: fc.integer({ min: 0, max: 350 }) }), weight: 2 },
  { arbitrary: fc.constant({ op: 'forget-keys' } as const), weight: 1 },
  { arbitrary: fc.constant({ op: 'heal' } as const), weight: 1 },
  { arbitrary: fc.record({ op: fc.constant('cap' as const), subject: fc.integer({ min: 0, max: SUBJECTS.length - 1 }), extra: fc.constantFrom(0, 500, 1_000, 2_500) }), weight: 1 },
  {
    arbitrary: fc.record({ op: fc.constant('revoke-during' as const), call: callArb(nodeIndex), subject: fc.integer({ min: 0, max: SUBJECTS.length - 1 }), afterMs: fc.integer({ min: 0, max: 150 }) }),
    weight: 2,
  },
);

const scheduleArb: fc.Arbitrary<Schedule> = fc
  .tuple(fc.boolean(), fc.option(fc.integer({ min: 300, max: 1_500 }), { freq: 3, nil: null }), fc.array(stepArb, { minLength: 1, maxLength: 14 }))
  .map(([shortDedupWindow, expiresInMs, steps]) => {
    const schedule: Schedule = { shortDedupWindow, expiresInMs, steps };
    return Object.assign(schedule, { [fc.toStringMethod]: () => describeSchedule(schedule) });
  });

type Run = {
  world: World;
  nodes: TestNode[];
  workerIds: string[];
  approvals: string[];
  trace: string[];
  /** Outcomes callers were told, per effect index. */
  told: string[][];
  /** Every dispatch and resend Redis allowed, with the Redis time it allowed it at. */
  authorizations: { effectId: string; at: number }[];
  /** Subject caps set during the run (Redis time). */
  caps: { subject: string; at: number; limit: number }[];
};

/** Records, for the invariants, each dispatch and resend a node's journal was allowed to make. */
function watched(run: Run, node: TestNode): TestNode {
  const { journal } = node;
  const propose = journal.propose.bind(journal);
  const resend = journal.resend.bind(journal);
  journal.propose = async (request) => {
    const reply = await propose(request);
    if (reply.status === 'OK' && request.mode === 'dispatch') run.authorizations.push({ effectId: request.effectId, at: reply.now });
    return reply;
  };
  // On one server a new effect's dispatch step also binds it: the same authorization, made in one script.
  const bindAndPropose = journal.bindAndPropose.bind(journal);
  journal.bindAndPropose = async (request) => {
    const made = await bindAndPropose(request);
    if (made.reply?.status === 'OK' && request.mode === 'dispatch') run.authorizations.push({ effectId: request.effectId, at: made.reply.now });
    return made;
  };
  journal.resend = async (...args) => {
    const reply = await resend(...args);
    if (reply.status === 'OK') run.authorizations.push({ effectId: args[1], at: reply.now });
    return reply;
  };
  return node;
}

function proposal(run: Run, effect: number, redecided: boolean) {
  const spec = EFFECTS[effect];
  if (!spec) throw new Error(`no effect ${effect}`);
  const subject = SUBJECTS[spec.subject] ?? 'pi_a';
  return {
    requestId: `case-${effect}`,
    agent: 'support-bot',
    approval: run.approvals[spec.subject] ?? '',
    premises: HOLDING_FACTS,
    // A model that re-decides on a retry asks for more than the recorded amount (I5 must keep the first).
    effect: { kind: 'refund', paymentIntent: subject, amount: spec.amount + (redecided ? 500 : 0), reason: 'requested_by_customer' },
  };
}

async function restart(run: Run, slot: number, sameId: boolean): Promise<void> {
  const dead = run.nodes[slot];
  if (dead) await kill(dead);
  const workerId = sameId ? run.workerIds[slot] : undefined;
  const fresh = watched(run, await run.world.node(workerId));
  run.nodes[slot] = fresh;
  run.workerIds[slot] = fresh.heartbeat.workerId;
}

async function call(run: Run, c: Call): Promise<string> {
  const node = run.nodes[c.node];
  const replaced = () => run.nodes[c.node] !== node;
  if (!node) throw new Error(`no node ${c.node}`);
  try {
    if (c.op === 'submit') {
      if (c.fault) run.world.target.inject(c.fault);
      const answer = await node.gate.submit(proposal(run, c.effect, c.redecided));
      run.told[c.effect]?.push(answer.outcome);
      return `${describeCall(c)} -> ${answer.outcome}`;
    }
    const report = await node.gate.recover();
    return `${describeCall(c)} -> settled ${JSON.stringify(report.settled.map((s) => s.outcome))}, waiting ${report.waiting.length}, skipped ${report.skipped.length}, unresolved ${JSON.stringify(report.unresolved.map((u) => u.outcome))}`;
  } catch (error) {
    if (error instanceof ProcessCrash) {
      // A node already declared dead (its heartbeat lapsed) has been replaced; the crash only ends its call.
      if (!replaced()) await restart(run, c.node, false);
      return `${describeCall(c)} -> CRASHED (${error.message}); node replaced`;
    }
    if (error instanceof PremiseReadError) return `${describeCall(c)} -> threw PremiseReadError`;
    throw error;
  }
}

async function runStep(run: Run, step: Step): Promise<void> {
  switch (step.op) {
    case 'submit':
    case 'recover':
      run.trace.push(await call(run, step));
      return;
    case 'together': {
      const { lapse } = step;
      // The new node recovers at start, as a restarted worker does, while the old one's call may still be sending.
      const lapsing = lapse && lapse.node < step.calls.length
        ? sleep(lapse.afterMs).then(() => restart(run, lapse.node, false)).then(() => call(run, { op: 'recover', node: lapse.node })).then((line) => `after the lapse ${line}`)
        : null;
      const lines = await Promise.all([...step.calls.map((c) => call(run, c)), ...(lapsing ? [lapsing] : [])]);
      run.trace.push(`together: ${lines.join(' | ')}`);
      return;
    }
    case 'fault':
      run.world.target.inject(step.fault);
      break;
    case 'kill':
      await restart(run, step.node, step.restartSameId);
      break;
    case 'revoke': {
      const approval = run.approvals[step.subject] ?? '';
      const node = run.nodes[0];
      if (node) await node.approvals.revoke(approval, 'risk-team');
      break;
    }
    case 'premise':
      run.world.target.world.set(`payment:${SUBJECTS[step.subject] ?? 'pi_a'}`, step.holds ? HOLDING_FACTS : MOVED_FACTS);
      break;
    case 'wait':
      await sleep(step.ms);
      break;
    case 'heal':
      run.world.target.heal();
      break;
    case 'cap': {
      const node = run.nodes[0];
      const partition = `payment:${SUBJECTS[step.subject] ?? 'pi_a'}`;
      if (!node) break;
      const moved = run.world.target.landings.filter((l) => l.effect.kind === 'refund' && `payment:${l.effect.paymentIntent}` === partition).reduce((sum, l) => sum + l.effect.amount, 0);
      const at = await node.journal.serverTime();
      await node.approvals.setSubjectCap(partition, moved + step.extra);
      run.caps.push({ subject: partition, at, limit: moved + step.extra });
      break;
    }
    case 'revoke-during': {
      const approval = run.approvals[step.subject] ?? '';
      const node = run.nodes[0];
      const revoking = sleep(step.afterMs).then(() => node?.approvals.revoke(approval, 'risk-team'));
      const [line] = await Promise.all([call(run, step.call), revoking]);
      run.trace.push(`${line} (revoked ${step.afterMs} ms in)`);
      return;
    }
    case 'forget-keys': {
      const { target } = run.world;
      if (target.landings.every((landing) => landing.at <= Date.now() - target.dedupWindowMs)) {
        target.forgetKeys();
        seen.set('keys forgotten', (seen.get('keys forgotten') ?? 0) + 1);
      } else {
        run.trace.push('the target keeps its keys (a landing is younger than the window)');
        return;
      }
      break;
    }
    default: {
      const never: never = step;
      return never;
    }
  }
  run.trace.push(describeStep(step));
}

/** Kills every node, then one fresh node recovers until no dispatch is open (P: recovery resolves everything). */
async function recoverUntilQuiet(run: Run): Promise<TestNode> {
  for (const node of run.nodes) await kill(node);
  // P is promised for a world that answers again: failures that last until healed end here.
  run.world.target.heal();
  let node = watched(run, await run.world.node());
  for (let pass = 0; pass < 60; pass += 1) {
    if ((await node.journal.openDispatches()).length === 0) return node;
    try {
      const report = await node.gate.recover();
      run.trace.push(`final recover -> settled ${JSON.stringify(report.settled.map((s) => s.outcome))}, waiting ${report.waiting.length}, unresolved ${JSON.stringify(report.unresolved.map((u) => u.outcome))}`);
      const now = await node.journal.serverTime();
      await sleep(report.nextAt === null ? 20 : Math.min(1_000, Math.max(10, report.nextAt - now + 5)));
    } catch (error) {
      if (!(error instanceof ProcessCrash)) throw error;
      run.trace.push('final recover -> CRASHED; node replaced');
      await kill(node);
      node = watched(run, await run.world.node());
    }
  }
  throw new Error(`recovery never became quiet: ${JSON.stringify(await node.journal.openDispatches())}`);
}

async function checkInvariants(run: Run, tier: Tier, node: TestNode): Promise<string[]> {
  const problems: string[] = [];
  const target = run.world.target;
  for (const index of EFFECTS.keys()) {
    const effectId = node.gate.effectIdOf(proposal(run, index, false));
    const landed = target.landedCount(effectId);
    const name = `e${index}`;
    if (landed > 1) problems.push(`${name} landed ${landed} times at the target`);
    const receipt = await node.journal.receipt(effectId);
    if (receipt === null) {
      if (landed > 0) problems.push(`${name} landed but has no journal`);
      continue;
    }
    // I4: every request that left a sender followed an authorization Redis gave (a dispatch or a resend), and
    // every such authorization came before its approval was revoked or expired, whatever happened during it.
    const authorized = run.authorizations.filter((item) => item.effectId === effectId);
    const sends = target.sendStarts.filter((item) => item.effectId === effectId);
    if (sends.length > 0 && authorized.length === 0) problems.push(`${name} was sent ${sends.length} times but never authorized`);
    const approvalId = run.approvals[EFFECTS[index]?.subject ?? 0] ?? '';
    const { snapshot } = await node.approvals.describe(approvalId);
    for (const item of authorized) {
      // Within one millisecond Redis's order is not visible in the times; the scripts are atomic either way.
      if (snapshot?.revokedAt !== null && snapshot?.revokedAt !== undefined && item.at > snapshot.revokedAt) problems.push(`${name} was authorized at ${item.at}, after its approval was revoked at ${snapshot.revokedAt}`);
      if (snapshot && item.at >= snapshot.expiresAt) problems.push(`${name} was authorized at ${item.at}, after its approval expired at ${snapshot.expiresAt}`);
    }
    const recorded = firstProposal(receipt.entries)?.effect;
    for (const landing of target.landings.filter((l) => l.effectId === effectId)) {
      if (canonicalJson(landing.effect) !== canonicalJson(recorded ?? null)) problems.push(`${name} landed with ${canonicalJson(landing.effect)}, not the first recorded payload`);
    }
    if (openDispatch(receipt.entries)) problems.push(`${name} still has an open dispatch after recovery went quiet`);
    const verification = verify(JSON.parse(JSON.stringify(receipt)), { publicKeys: run.world.key.publicKeys });
    if (verification.valid !== true) problems.push(`${name}'s receipt does not verify: ${verification.problems.join('; ')}`);
    if (verification.authorizedWhenFired === false) problems.push(`${name}'s receipt shows a send without a live approval on its subject`);
    const { happened } = verification;
    const tally = (what: string) => seen.set(`${what}@tier${tier}`, (seen.get(`${what}@tier${tier}`) ?? 0) + 1);
    tally(verification.outcome ?? 'none');
    if (receipt.entries.some((entry) => entry.kind === 'LATE_RESULT')) tally('with LATE_RESULT');
    if (happened === true && landed !== 1) problems.push(`${name}: the journal says it landed (${verification.outcome ?? '-'}) but the target has ${landed} landings`);
    if (happened === false && landed !== 0) problems.push(`${name}: the journal says it never landed (${verification.outcome ?? '-'}) but the target has it`);
    if (happened === 'unknown' && tier !== 3) problems.push(`${name}: the journal cannot tell (${verification.outcome ?? '-'}) although a tier-${tier} target can settle it`);
    const toldLanded = (run.told[index] ?? []).filter((outcome) => COMMITTED_FAMILY.has(outcome));
    if (toldLanded.length > 0 && landed !== 1) problems.push(`${name}: a caller was told ${toldLanded.join(', ')} but the target has ${landed} landings`);
  }
  for (const [index, subject] of SUBJECTS.entries()) {
    const caps = CAPS[index] ?? CAPS[0];
    // A cap set during the run replaces the starting one; the invariant below judges it.
    const recapped = run.caps.some((cap) => cap.subject === `payment:${subject}`);
    const limit = Math.min(caps.approvalCents, recapped ? Infinity : (caps.subjectCents ?? Infinity));
    const landedCents = target.landings.filter((l) => l.effect.kind === 'refund' && l.effect.paymentIntent === subject).reduce((sum, l) => sum + Number(l.effect.amount), 0);
    if (landedCents > limit) problems.push(`${landedCents} cents landed on ${subject}, past its shared cap of ${limit}`);
  }
  // A cap set after money moved counts that money too (issue 6, item 4): once the last cap was set, whatever
  // was dispatched after it and landed keeps everything landed on the subject within it.
  for (const subject of SUBJECTS.map((name) => `payment:${name}`)) {
    const last = run.caps.filter((cap) => cap.subject === subject).at(-1);
    if (!last) continue;
    let before = 0;
    let after = 0;
    for (const index of EFFECTS.keys()) {
      const effectId = node.gate.effectIdOf(proposal(run, index, false));
      const landing = target.landings.find((item) => item.effectId === effectId && item.effect.kind === 'refund' && `payment:${item.effect.paymentIntent}` === subject);
      if (!landing) continue;
      const receipt = await node.journal.receipt(effectId);
      const dispatchedAt = receipt?.entries.filter((entry) => entry.kind === 'DISPATCHED').at(-1)?.at ?? 0;
      if (dispatchedAt >= last.at) after += landing.effect.amount;
      else before += landing.effect.amount;
    }
    if (after > 0 && before + after > last.limit) problems.push(`${before + after} cents landed on ${subject} (${after} dispatched after its cap of ${last.limit} was set)`);
  }
  return problems;
}

async function execute(tier: Tier, schedule: Schedule): Promise<void> {
  const world = schedule.shortDedupWindow
    ? await createWorld({ target: { tier, dedupWindowMs: SHORT_DEDUP.windowMs }, config: { ...TIMING, dedupMarginMs: SHORT_DEDUP.marginMs } })
    : await createWorld({ target: { tier }, config: TIMING });
  const run: Run = { world, nodes: [], workerIds: [], approvals: [], trace: [], told: EFFECTS.map(() => []), authorizations: [], caps: [] };
  try {
    for (let slot = 0; slot < NODES; slot += 1) {
      const node = watched(run, await world.node());
      run.nodes.push(node);
      run.workerIds.push(node.heartbeat.workerId);
    }
    for (const [index, subject] of SUBJECTS.entries()) {
      const caps = CAPS[index] ?? CAPS[0];
      const expiresAt = schedule.expiresInMs === null ? Date.now() + 3_600_000 : (await world.nodes[0]?.journal.serverTime() ?? Date.now()) + schedule.expiresInMs;
      const terms = approvalTerms({ scope: `payment:${subject}`, capCents: caps.approvalCents, maxUses: 10, expiresAt });
      await run.nodes[0]?.approvals.grant(terms);
      if (caps.subjectCents !== null) await run.nodes[0]?.approvals.setSubjectCap(`payment:${subject}`, caps.subjectCents);
      run.approvals.push(terms.id);
      world.target.world.set(`payment:${subject}`, HOLDING_FACTS);
    }
    for (const step of schedule.steps) await runStep(run, step);
    const survivor = await recoverUntilQuiet(run);
    // A send still on the wire lands within 90 ms (see faultArb); give it time before counting.
    await sleep(120);
    const problems = await checkInvariants(run, tier, survivor);
    if (problems.length > 0) throw new Error(`${problems.join('\n')}\n\nwhat happened:\n  ${run.trace.join('\n  ')}`);
  } finally {
    await world.close();
  }
}

/** Final journal outcomes across runs, printed so a reader can see the schedules reach recovery's branches. */
const seen = new Map<string, number>();
const started = Date.now();
afterAll(() => {
  const outcomes = [...seen.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([outcome, count]) => `${outcome} ${count}`);
  process.stdout.write(`crash interleavings: ${Date.now() - started} ms; final outcomes: ${outcomes.join(', ')}\n`);
});

describe('random interleavings of gate instances with crashes, revocations and premise changes', () => {
  it.each([1, 2, 3] as const)('tier %i: every effect lands at most once, within the shared caps, the journal agrees with the target and every receipt verifies', async (tier) => {
    await fc.assert(
      fc.asyncProperty(scheduleArb, (schedule) => execute(tier, schedule)),
      { numRuns: Number(process.env.INTERLOCK_PROPERTY_RUNS ?? 13) },
    );
  }, 120_000);
});
