// Two credits for one incident of a customer are never both sent (issue 4 and DESIGN I6: what is shared is reserved in
// the dispatch step itself). The credit target's own check reads what has landed at Stripe, so two requests for one
// incident decided and submitted together both passed it and both credits landed. The dispatch step now holds the
// incident for the first effect dispatched for it: while it is in flight, once it landed and while it is AMBIGUOUS
// (it may have landed), another effect for the incident is REFUSED:over_cap, naming the holder, before anything is
// sent. A resolving refusal (nothing landed) lets it go, as does a person's finding that an AMBIGUOUS credit did not
// land; a landing reported after either takes it back, from whichever credit took it meanwhile.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { approvalTerms, createWorld, sleep, type World } from '../support/harness.js';

let world: World;
beforeEach(async () => {
  world = await createWorld();
});
afterEach(() => world.close());

const credit = (incident = 'INC-1', customer = 'cus_1') => ({ kind: 'credit' as const, customer, amount: 1_000, incident });

async function grant(node: Awaited<ReturnType<World['node']>>, customer = 'cus_1') {
  const terms = approvalTerms({ scope: `customer:${customer}`, capCents: 10_000, maxUses: 10 });
  await node.approvals.grant(terms);
  return terms.id;
}

const proposal = (approval: string, requestId: string, effect = credit()) => ({ requestId, agent: 'support-bot', approval, premises: {}, effect });

describe('one credit per incident of a customer', () => {
  it('two requests for one incident submitted at once, on two workers: one is sent, the other refused over_cap naming the first', async () => {
    const [a, b] = [await world.node('a'), await world.node('b')];
    const approval = await grant(a);
    world.target.inject({ kind: 'slow-send', delayMs: 150 });
    const answers = await Promise.all([a.gate.submit(proposal(approval, 'ticket-1')), b.gate.submit(proposal(approval, 'ticket-2'))]);
    expect(answers.map((answer) => answer.outcome).sort()).toEqual(['COMMITTED', 'REFUSED:over_cap']);
    const sent = answers.find((answer) => answer.outcome === 'COMMITTED');
    const refused = answers.find((answer) => answer.outcome === 'REFUSED:over_cap');
    expect(refused?.reason).toContain(`incident INC-1 of customer:cus_1 is compensated once, and effect ${sent?.effectId ?? ''} was sent for it already`);
    expect(world.target.landings.map((landing) => landing.effectId)).toEqual([sent?.effectId]);
  });

  it('holds the incident once the credit landed, and only that incident of that customer', async () => {
    const a = await world.node('a');
    const approval = await grant(a);
    expect((await a.gate.submit(proposal(approval, 'ticket-1'))).outcome).toBe('COMMITTED');
    expect((await a.gate.submit(proposal(approval, 'ticket-2'))).outcome).toBe('REFUSED:over_cap');
    expect((await a.gate.submit(proposal(approval, 'ticket-3', credit('INC-2')))).outcome).toBe('COMMITTED');
    const other = await grant(a, 'cus_2');
    expect((await a.gate.submit(proposal(other, 'ticket-4', credit('INC-1', 'cus_2')))).outcome).toBe('COMMITTED');
    // A resend of the holder itself is its own: answered as the duplicate it is.
    expect((await a.gate.submit(proposal(approval, 'ticket-1'))).outcome).toBe('DUPLICATE_IGNORED');
  });

  it('lets the incident go when the credit is refused outright (nothing landed), so the next request for it is sent', async () => {
    const a = await world.node('a');
    const approval = await grant(a);
    world.target.inject({ kind: 'reject', code: 'customer_deleted' });
    expect((await a.gate.submit(proposal(approval, 'ticket-1'))).outcome).toBe('REFUSED:target_error');
    expect((await a.gate.submit(proposal(approval, 'ticket-2'))).outcome).toBe('COMMITTED');
    expect(world.target.landings).toHaveLength(1);
  });

  it('takes it back when a landing of the refused credit is reported after all, unless another credit was sent for it since', async () => {
    const a = await world.node('a');
    const approval = await grant(a);
    world.target.inject({ kind: 'reject', code: 'timeout_at_the_bank' });
    const refused = await a.gate.submit(proposal(approval, 'ticket-1'));
    expect(refused.outcome).toBe('REFUSED:target_error');
    const landing = { kind: 'LATE_RESULT' as const, owner: 'facts', epoch: 1, outcome: 'landed' as const, result: { id: 'cbtxn_late', object: 'customer_balance_transaction' }, error: null };
    expect(await a.journal.lateLanding('customer:cus_1', refused.effectId, landing, approval)).toMatchObject({ status: 'OK', effect: 'relanded' });
    const second = await a.gate.submit(proposal(approval, 'ticket-2'));
    expect(second.outcome).toBe('REFUSED:over_cap');
    expect(second.reason).toContain(`effect ${refused.effectId} was sent for it already`);
  });

  it('a late landing takes it back from a credit sent meanwhile, whose refusal then frees nothing', async () => {
    const a = await world.node('a');
    const approval = await grant(a);
    world.target.inject({ kind: 'reject', code: 'timeout_at_the_bank' });
    const first = await a.gate.submit(proposal(approval, 'ticket-1'));
    expect(first.outcome).toBe('REFUSED:target_error');
    // B is dispatched for the incident (it holds it now); its answer is slow, and a refusal in the end.
    world.target.inject({ kind: 'slow-answer', delayMs: 400, answer: 'rejected' });
    const second = a.gate.submit(proposal(approval, 'ticket-2'));
    await sleep(150);
    // Meanwhile A's landing is reported after all: money moved for the incident.
    const landing = { kind: 'LATE_RESULT' as const, owner: 'facts', epoch: 1, outcome: 'landed' as const, result: { id: 'cbtxn_late', object: 'customer_balance_transaction' }, error: null };
    expect(await a.journal.lateLanding('customer:cus_1', first.effectId, landing, approval)).toMatchObject({ status: 'OK', effect: 'relanded' });
    expect((await second).outcome).toBe('REFUSED:target_error');
    const third = await a.gate.submit(proposal(approval, 'ticket-3'));
    expect(third.outcome).toBe('REFUSED:over_cap');
    expect(third.reason).toContain(`effect ${first.effectId} was sent for it already`);
  });

  it('a person\'s finding that an AMBIGUOUS credit did not land lets the incident go; its landing reported later takes it back', async () => {
    await world.close();
    world = await createWorld({ target: { tier: 3 } });
    const a = await world.node('a');
    const approval = await grant(a);
    // The connection drops before the request is written: nothing landed, but a tier-3 target cannot be asked.
    world.target.inject({ kind: 'error-before-send' });
    const first = await a.gate.submit(proposal(approval, 'ticket-1'));
    let outcome = first.outcome;
    for (let pass = 0; pass < 60 && outcome !== 'AMBIGUOUS'; pass += 1) {
      await a.gate.recover();
      outcome = (await a.gate.submit(proposal(approval, 'ticket-1'))).outcome;
      if (outcome !== 'AMBIGUOUS') await sleep(100);
    }
    expect(outcome).toBe('AMBIGUOUS');
    expect((await a.gate.submit(proposal(approval, 'ticket-2'))).outcome).toBe('REFUSED:over_cap');
    await a.stores.inbox.act(`ambiguous:${first.effectId}`, { action: 'resolve', resolution: 'did_not_land', note: 'no balance transaction for it', by: { name: 'dana', role: 'approver' } });
    const again = await a.gate.submit(proposal(approval, 'ticket-3'));
    expect(again.outcome).toBe('COMMITTED');
    // Had it landed after all, its landing holds the incident again (a third credit is refused).
    const landing = { kind: 'LATE_RESULT' as const, owner: 'facts', epoch: 1, outcome: 'landed' as const, result: { id: 'cbtxn_late', object: 'customer_balance_transaction' }, error: null };
    expect(await a.journal.lateLanding('customer:cus_1', first.effectId, landing, approval)).toMatchObject({ status: 'OK' });
    const fourth = await a.gate.submit(proposal(approval, 'ticket-4'));
    expect(fourth.outcome).toBe('REFUSED:over_cap');
    expect(fourth.reason).toContain(`effect ${first.effectId} was sent for it already`);
  });

  it('keeps holding it while the credit is in flight and once it is AMBIGUOUS: it may have landed', async () => {
    await world.close();
    world = await createWorld({ target: { tier: 3 } });
    const a = await world.node('a');
    const approval = await grant(a);
    world.target.inject({ kind: 'error-after-send' });
    expect((await a.gate.submit(proposal(approval, 'ticket-1'))).outcome).toBe('IN_FLIGHT');
    expect((await a.gate.submit(proposal(approval, 'ticket-2'))).outcome).toBe('REFUSED:over_cap');
    let outcome = '';
    for (let pass = 0; pass < 50 && outcome !== 'AMBIGUOUS'; pass += 1) {
      await a.gate.recover();
      outcome = (await a.gate.submit(proposal(approval, 'ticket-1'))).outcome;
      if (outcome !== 'AMBIGUOUS') await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(outcome).toBe('AMBIGUOUS');
    expect((await a.gate.submit(proposal(approval, 'ticket-3'))).outcome).toBe('REFUSED:over_cap');
  });
});
