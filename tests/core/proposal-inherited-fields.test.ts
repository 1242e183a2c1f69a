// Rule: a proposal's fields are read wherever the caller's object holds them, as a plain read finds them (a getter of
// its class, an inherited or non-enumerable field), each once: a request id held so is the effect's key, never dropped
// in silence (the effect would be keyed by its payload, and the same request sent again as plain data would be a
// second effect, a second refund).
import { afterEach, describe, expect, it } from 'vitest';
import { parseProposalAndEffect } from '../../src/core/proposal.js';
import { gateWorld, grant } from '../gate/gate-support.js';
import { refundProposal, type World } from '../support/harness.js';

/** A library caller's request object: its id held privately and read through a getter of the class. */
class RefundRequest {
  readonly #requestId: string;
  /** Reads of the request id, of every instance. */
  static reads = 0;
  agent: string;
  approval: string;
  premises: Record<string, unknown>;
  effect: Record<string, unknown>;
  constructor(plain: ReturnType<typeof refundProposal>) {
    this.#requestId = plain.requestId;
    this.agent = plain.agent;
    this.approval = plain.approval;
    this.premises = plain.premises;
    this.effect = plain.effect;
  }
  get requestId(): string {
    RefundRequest.reads += 1;
    return this.#requestId;
  }
}

describe('fields the caller holds other than as own enumerable data', () => {
  let world: World | undefined;
  afterEach(async () => {
    await world?.close();
  });

  it('a getter of the class, an inherited field and a non-enumerable one are read, once', () => {
    const plain = refundProposal({ approval: 'ap_1', requestId: 'case-class-getter' });
    const instance = new RefundRequest(plain);
    RefundRequest.reads = 0;
    expect(parseProposalAndEffect(instance).proposal.requestId).toBe('case-class-getter');
    expect(RefundRequest.reads).toBe(1);
    const inherited = Object.assign(Object.create({ requestId: 'case-inherited', agent: plain.agent }) as Record<string, unknown>, { approval: plain.approval, premises: plain.premises, effect: plain.effect });
    expect(parseProposalAndEffect(inherited).proposal).toMatchObject({ requestId: 'case-inherited', agent: plain.agent });
    const hidden: Record<string, unknown> = { ...plain };
    Object.defineProperty(hidden, 'requestId', { value: 'case-hidden', enumerable: false });
    expect(parseProposalAndEffect(hidden).proposal.requestId).toBe('case-hidden');
  });

  it('one request submitted as a class instance and again as plain data lands once', async () => {
    world = await gateWorld();
    const node = await world.node('a');
    const { id } = await grant(node, { capCents: 10_000, maxUses: 5 });
    const plain = refundProposal({ approval: id, requestId: 'case-once', amount: 1_000 });
    expect((await node.gate.submit(new RefundRequest(plain))).outcome).toBe('COMMITTED');
    expect((await node.gate.submit(plain)).outcome).toBe('DUPLICATE_IGNORED');
    expect(world.target.landings.filter((landing) => landing.effect.kind === 'refund')).toHaveLength(1);
  });
});
