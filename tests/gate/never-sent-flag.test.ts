// Rule (ReadContext.neverSent, SendContext.neverSent): the gate tells the target that no send of the effect can have
// landed exactly when the chain it judged holds no dispatch: on the premise read and the send of a first dispatch (a
// new request, an effects job on its producer's PROPOSED), so that a target takes no object it finds for the effect's
// own (a refund made by hand, labelled with the effect id, is someone else's money out). Never on recovery's re-read
// and resend, and never on a dispatch that follows an earlier one (refused at recovery: its request may still land),
// whose own landed object must not count as someone else's: the facts read ahead as for a first dispatch are not used
// for it, they are read again without the flag.
import { afterEach, expect, it } from 'vitest';
import type { Target } from '../../src/core/target.js';
import { createProposalRecorder } from '../../src/interlock.js';
import { kill, refundProposal, startNode, type TestNode, type World } from '../support/harness.js';
import { FACTS, PAYMENT, gateWorld, grant, recoverUntilSettled, submitAndCrash } from './gate-support.js';

let world: World;
const nodes: TestNode[] = [];
afterEach(async () => {
  for (const node of nodes.splice(0)) await node.close().catch(() => undefined);
  await world.close();
});

/** What the target was told on each premise read and each send: the flag, or '-' when it was absent. */
type Told = { reads: string[]; sends: string[] };

/** A node whose target is the world's, recording the neverSent flag of every context the gate hands it. */
async function recordingNode(name: string): Promise<{ node: TestNode; told: Told }> {
  const told: Told = { reads: [], sends: [] };
  const shown = (flag: true | undefined) => (flag === true ? 'neverSent' : '-');
  const inner = world.target;
  const target: Target = {
    ...inner,
    readFacts: (effectId, effect, names, context) => {
      told.reads.push(shown(context.neverSent));
      return inner.readFacts(effectId, effect, names, context);
    },
    apply: (effectId, effect, context) => {
      told.sends.push(shown(context.neverSent));
      return inner.apply(effectId, effect, context);
    },
  };
  const node = await startNode({ config: world.config, target, key: world.key.key, workerId: name });
  nodes.push(node);
  return { node, told };
}

/** A refund dispatched by node a, which dies before its send; recovery (node b) refuses it on a chargeback read then. */
async function refusedAtRecovery(proposal: ReturnType<typeof refundProposal>, a: TestNode, b: TestNode): Promise<string> {
  world.target.inject({ kind: 'crash-before-send' });
  const effectId = await submitAndCrash(a, proposal);
  await kill(a);
  world.target.world.set(PAYMENT, { ...FACTS, chargebacks: ['dp_1'] });
  expect((await recoverUntilSettled(b, effectId)).settled).toEqual([expect.objectContaining({ outcome: 'REFUSED:stale_premise_at_recovery' })]);
  // The chargeback is lost by the merchant's evidence after all: the facts agree with the decision again.
  world.target.world.set(PAYMENT, { ...FACTS });
  return effectId;
}

it("a new request's premise read and send say that no send of the effect can have landed", async () => {
  world = await gateWorld();
  const { node, told } = await recordingNode('a');
  const { id } = await grant(node);
  expect((await node.gate.submit(refundProposal({ approval: id }))).outcome).toBe('COMMITTED');
  expect(told).toEqual({ reads: ['neverSent'], sends: ['neverSent'] });
});

it("an effects job on its producer's PROPOSED alone says so too", async () => {
  world = await gateWorld();
  const { node, told } = await recordingNode('a');
  const { id } = await grant(node);
  const recorded = await createProposalRecorder(node.stores)(refundProposal({ approval: id }));
  if (recorded.status !== 'recorded') throw new Error(`not recorded: ${recorded.status}`);
  expect((await node.gate.submitLatest(recorded.effectId, recorded.proposal, recorded.onlyEntry)).answer.outcome).toBe('COMMITTED');
  expect(told).toEqual({ reads: ['neverSent'], sends: ['neverSent'] });
});

it("recovery's re-read and resend of a dispatch whose sender died do not say it", async () => {
  world = await gateWorld();
  const { node: a } = await recordingNode('a');
  const { node: b, told } = await recordingNode('b');
  const { id } = await grant(a);
  world.target.inject({ kind: 'crash-before-send' });
  const effectId = await submitAndCrash(a, refundProposal({ approval: id }));
  await kill(a);
  expect((await recoverUntilSettled(b, effectId)).settled).toEqual([expect.objectContaining({ outcome: 'COMMITTED_BY_RETRY' })]);
  expect(told.sends).toEqual(['-']);
  expect(told.reads.every((flag) => flag === '-')).toBe(true);
});

it('a request dispatched again after a dispatch refused at recovery reads its facts again without the flag, and sends without it', async () => {
  world = await gateWorld();
  const { node: a } = await recordingNode('a');
  const { node: b, told } = await recordingNode('b');
  const { id } = await grant(a, { maxUses: 5 });
  const proposal = refundProposal({ approval: id });
  await refusedAtRecovery(proposal, a, b);
  told.reads.length = 0;
  told.sends.length = 0;
  // Submitted again: the read ahead is made as for a first dispatch (the chain is not known yet) and is not used.
  expect((await b.gate.submit(proposal)).outcome).toBe('COMMITTED');
  expect(told).toEqual({ reads: ['neverSent', '-'], sends: ['-'] });
});

it("an effects job whose producer's chain holds a dispatch refused at recovery since reads its facts again without the flag", async () => {
  world = await gateWorld();
  const { node: a } = await recordingNode('a');
  const { node: b, told } = await recordingNode('b');
  const { id } = await grant(a, { maxUses: 5 });
  const record = createProposalRecorder(a.stores);
  const proposal = refundProposal({ approval: id });
  const recorded = await record(proposal);
  if (recorded.status !== 'recorded') throw new Error(`not recorded: ${recorded.status}`);
  world.target.inject({ kind: 'crash-before-send' });
  await expect(a.gate.submitLatest(recorded.effectId, recorded.proposal, recorded.onlyEntry)).rejects.toThrow(/simulated crash/);
  await kill(a);
  world.target.world.set(PAYMENT, { ...FACTS, chargebacks: ['dp_1'] });
  expect((await recoverUntilSettled(b, recorded.effectId)).settled).toEqual([expect.objectContaining({ outcome: 'REFUSED:stale_premise_at_recovery' })]);
  world.target.world.set(PAYMENT, { ...FACTS });
  // The case is decided again under another approval (a new PROPOSED, the same payload).
  const again = await grant(a, { maxUses: 5 });
  expect((await record({ ...proposal, approval: again.id })).status).toBe('recorded');
  told.reads.length = 0;
  told.sends.length = 0;
  // The first job runs again with what it carries: its guess (the producer's PROPOSED alone) is wrong now.
  expect((await b.gate.submitLatest(recorded.effectId, recorded.proposal, recorded.onlyEntry)).answer.outcome).toBe('COMMITTED');
  expect(told).toEqual({ reads: ['neverSent', '-'], sends: ['-'] });
});
