// Rule: each field of a submitted proposal is read once, and what is recorded (and keyed) is exactly what was
// checked: a caller's getter or proxy that answers differently on a later read cannot slip an unchecked request id,
// agent, approval, premises or premise name into the journal. A request id read as NFC and then as NFD is one
// request: it lands once, or the proposal is refused.
import { afterEach, describe, expect, it } from 'vitest';
import { effectIdFor } from '../../src/core/effect-id.js';
import type { EntryOf } from '../../src/core/entries.js';
import { parseProposalAndEffect, ProposalError } from '../../src/core/proposal.js';
import { FACTS, gateWorld, grant } from '../gate/gate-support.js';
import { refundProposal, type TestNode, type World } from '../support/harness.js';

const NFC = 'case-caf\u00e9';
const NFD = 'case-cafe\u0301';
const good = { requestId: 'case-1', agent: 'support-bot', approval: 'ap_1', premises: { chargebacks: [], refunded_by_others: 0 }, effect: { kind: 'refund', paymentIntent: 'pi_1', amount: 2_000 } };

/** A copy of `base` whose `field` answers `first` on its first read and `later` on every read after. */
function flipping(base: object, field: string, first: unknown, later: unknown): { input: Record<string, unknown>; reads(): number } {
  let reads = 0;
  const input: Record<string, unknown> = { ...base };
  delete input[field];
  Object.defineProperty(input, field, {
    enumerable: true,
    get() {
      reads += 1;
      return reads === 1 ? first : later;
    },
  });
  return { input, reads: () => reads };
}

/** Premises whose names are `first` when first listed and `later` on every listing after (each name's value is 0). */
function premisesNamed(first: string[], later: string[]): object {
  let listings = 0;
  return new Proxy(
    {},
    {
      ownKeys() {
        listings += 1;
        return listings === 1 ? first : later;
      },
      getOwnPropertyDescriptor: () => ({ value: 0, enumerable: true, configurable: true, writable: true }),
      get: () => 0,
    },
  );
}

describe('a proposal read through getters', () => {
  it.each([
    ['requestId', NFC, NFD],
    ['requestId', 'case-1', ' case-1 '],
    ['agent', 'support-bot', ' support-bot '],
    ['approval', 'ap_1', 'ap 1'],
    ['premises', { ...FACTS }, { '1st': 0 }],
    ['decision', { model: 'claude-haiku-4-5-20251001', text: 'refund' }, { model: 'm\u200b', text: 'refund' }],
  ] as const)('reads %s once and keeps the value it checked', (field, first, later) => {
    const flip = flipping(good, field, first, later);
    const { proposal } = parseProposalAndEffect(flip.input);
    expect(proposal[field]).toEqual(first);
    expect(flip.reads()).toBe(1);
  });

  it('reads each field once on the schema road too, and refuses what it read first', () => {
    // An unknown field sends the proposal to the schema, which names the problems.
    const flip = flipping({ ...good, extra: 1 }, 'requestId', NFD, NFC);
    expect(() => parseProposalAndEffect(flip.input)).toThrow(/requestId.*NFC/s);
    expect(flip.reads()).toBe(1);
    const later = flipping(good, 'requestId', NFD, NFC);
    expect(() => parseProposalAndEffect(later.input)).toThrow(/requestId.*NFC/s);
  });

  it('keeps the value a decision field answered first', () => {
    const decision = flipping({ text: 'refund' }, 'model', 'claude-haiku-4-5-20251001', 'mod\u00adel');
    const { proposal } = parseProposalAndEffect({ ...good, decision: decision.input });
    expect(proposal.decision).toEqual({ model: 'claude-haiku-4-5-20251001', text: 'refund' });
    expect(decision.reads()).toBe(1);
  });

  it('checks the premise names of the copy it records, not only those it listed first', () => {
    expect(() => parseProposalAndEffect({ ...good, premises: premisesNamed(['chargebacks'], ['1st']) })).toThrow(/premises\.1st: the key premise names/);
    expect(parseProposalAndEffect({ ...good, premises: premisesNamed(['1st'], ['chargebacks']) }).proposal.premises).toEqual({ chargebacks: 0 });
  });

  it('refuses a field whose getter throws, naming it, instead of throwing the getter\'s error', () => {
    const input = Object.defineProperty({ ...good }, 'agent', {
      enumerable: true,
      get() {
        throw new Error('not loaded');
      },
    });
    expect(() => parseProposalAndEffect(input)).toThrow(ProposalError);
    expect(() => parseProposalAndEffect(input)).toThrow(/agent: could not be read \(not loaded\)/);
  });
});

describe('the gate, given a proposal read through getters', () => {
  let world: World;
  afterEach(async () => {
    await world?.close();
  });

  const refunds = () => world.target.landings.filter((landing) => landing.effect.kind === 'refund').length;
  const recorded = async (node: TestNode, requestId: string, effect: object) => (await node.journal.partitionOf(effectIdFor({ requestId, effect }))) !== null;

  it('lands a request id read as NFC and then as NFD once, under the NFC id only', async () => {
    world = await gateWorld();
    const node = await world.node('a');
    const { id } = await grant(node, { capCents: 10_000, maxUses: 5 });
    const base = refundProposal({ approval: id, requestId: NFC, amount: 1_000 });
    expect((await node.gate.submit(base)).outcome).toBe('COMMITTED');
    const again = await node.gate.submit(flipping(base, 'requestId', NFC, NFD).input);
    expect(again.outcome).toBe('DUPLICATE_IGNORED');
    expect(refunds()).toBe(1);
    expect(await recorded(node, NFD, base.effect)).toBe(false);
  });

  it('refuses a request id read as NFD first, whatever it answers after, and records nothing', async () => {
    world = await gateWorld();
    const node = await world.node('a');
    const { id } = await grant(node);
    const base = refundProposal({ approval: id, requestId: NFC });
    await expect(node.gate.submit(flipping(base, 'requestId', NFD, NFC).input)).rejects.toThrow(ProposalError);
    expect(refunds()).toBe(0);
    expect([await recorded(node, NFC, base.effect), await recorded(node, NFD, base.effect)]).toEqual([false, false]);
  });

  it('records the request id, agent, approval and premises it checked when each answers another value later', async () => {
    world = await gateWorld();
    const node = await world.node('a');
    const { id } = await grant(node);
    let proposal: Record<string, unknown> = refundProposal({ approval: id, requestId: 'case-read-once' });
    const effect = proposal.effect as object;
    for (const [field, later] of [
      ['requestId', ' case-read-once '],
      ['agent', ' support-bot\u200b'],
      ['approval', 'ap 1'],
      ['premises', { '1st': 0 }],
    ] as const) {
      proposal = flipping(proposal, field, proposal[field], later).input;
    }
    expect((await node.gate.submit(proposal)).outcome).toBe('COMMITTED');
    expect(refunds()).toBe(1);
    expect(await recorded(node, ' case-read-once ', effect)).toBe(false);
    const effectId = effectIdFor({ requestId: 'case-read-once', effect });
    const partition = await node.journal.partitionOf(effectId);
    expect(partition).not.toBeNull();
    const entries = await node.journal.entries(partition ?? '', effectId);
    const proposed = entries.filter((entry): entry is EntryOf<'PROPOSED'> => entry.kind === 'PROPOSED');
    expect(proposed.map(({ requestId, agent, approval, premises }) => ({ requestId, agent, approval, premises }))).toEqual([{ requestId: 'case-read-once', agent: 'support-bot', approval: id, premises: FACTS }]);
  });

  it('refuses premises whose names change to a bad one after the quick check, and nothing lands', async () => {
    world = await gateWorld();
    const node = await world.node('a');
    const { id } = await grant(node);
    const base = refundProposal({ approval: id, requestId: 'case-premise-names' });
    await expect(node.gate.submit({ ...base, premises: premisesNamed(['chargebacks'], ['1st']) })).rejects.toThrow(/premises\.1st/);
    expect(refunds()).toBe(0);
    expect(await recorded(node, 'case-premise-names', base.effect)).toBe(false);
  });
});
