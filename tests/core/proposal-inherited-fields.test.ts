// Rule: a proposal's fields are read wherever the caller's object holds them, as a plain read finds them (a getter of
// its class, an inherited or non-enumerable field, a proxy's `get` whatever its `has` says), each once: a request id
// held so is the effect's key, never dropped in silence (the effect would be keyed by its payload, and the same
// request sent again as plain data would be a second effect, a second refund).
import { afterEach, describe, expect, it } from 'vitest';
import { parseProposalAndEffect } from '../../src/core/proposal.js';
import { gateWorld, grant } from '../gate/gate-support.js';
import { refundProposal, type World } from '../support/harness.js';
import { RefundRequest } from '../support/class-proposal.js';

/** A request whose id a wrapper adds: seen by a plain read, Object.keys, spread and JSON.stringify, not by `in`. */
function withRequestId<T extends object>(target: T, requestId: string): T {
  return new Proxy(target, {
    get: (t, k, r) => (k === 'requestId' ? requestId : Reflect.get(t, k, r)),
    ownKeys: (t) => [...Reflect.ownKeys(t), 'requestId'],
    getOwnPropertyDescriptor: (t, k) => (k === 'requestId' ? { value: requestId, enumerable: true, configurable: true, writable: true } : Reflect.getOwnPropertyDescriptor(t, k)),
  });
}

/** A virtual object over a Map: no `has` trap, and its target is empty. */
function overMap(fields: Record<string, unknown>): Record<string, unknown> {
  const map = new Map(Object.entries(fields));
  return new Proxy({} as Record<string, unknown>, {
    get: (_t, k) => (typeof k === 'string' ? map.get(k) : undefined),
    ownKeys: () => [...map.keys()],
    getOwnPropertyDescriptor: (_t, k) => (typeof k === 'string' && map.has(k) ? { value: map.get(k), enumerable: true, configurable: true, writable: true } : undefined),
  });
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

  it('a proxy whose `has` does not see what its `get` answers is read by its `get`', () => {
    const plain = refundProposal({ approval: 'ap_1', requestId: 'case-proxy' });
    const { requestId, ...rest } = plain;
    expect(parseProposalAndEffect(withRequestId(rest, requestId)).proposal.requestId).toBe('case-proxy');
    expect(parseProposalAndEffect(overMap(plain)).proposal).toMatchObject({ requestId: plain.requestId, agent: plain.agent, approval: plain.approval });
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
