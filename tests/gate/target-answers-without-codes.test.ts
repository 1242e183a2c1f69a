// Rule: whatever a target's own bad answers are, a caller of gate.submit meets the project's stable outcomes and
// codes, never a raw TypeError or the target's thrown value. A readFacts that answers or throws synchronously (not
// async) is read like an async one, or fails with premise_read_failed; an apply that throws a value that cannot be
// inspected (a Proxy whose traps throw, an Error whose `message` getter throws) is a send whose outcome is unknown:
// IN_FLIGHT, with the unknown answer marked for recovery. quoteError, slowDownOf and errorName never throw.
// Before: submit rejected with "ctx.target.readFacts(...).then is not a function", or with the target's inner error.
import { afterEach, expect, it } from 'vitest';
import { slowDownOf } from '../../src/core/errors.js';
import { quoteError } from '../../src/core/quote.js';
import { errorName } from '../../src/gate/context.js';
import { refundProposal, sleep, type World } from '../support/harness.js';
import { gateWorld, grant, openState } from './gate-support.js';

let world: World;
afterEach(async () => {
  await world?.close();
});

const hostile = () => new Proxy({}, {
  get() { throw new Error('get'); },
  ownKeys() { throw new Error('keys'); },
  getPrototypeOf() { throw new Error('proto'); },
  getOwnPropertyDescriptor() { throw new Error('descriptor'); },
});

function unreadableMessage(): Error {
  const error = new Error('x');
  Object.defineProperty(error, 'message', { get() { throw new Error('boom'); } });
  return error;
}

const outcomeOrError = (work: Promise<{ outcome: string }>) => work.then(
  (answer) => answer.outcome,
  (error: unknown) => `threw: ${(() => { try { return `${(error as Error).name}: ${(error as { code?: string }).code ?? 'no code'}: ${(error as Error).message}`; } catch { return 'unreadable'; } })()}`,
);

it('a readFacts that answers synchronously is read like an async one', async () => {
  world = await gateWorld();
  const a = await world.node('a');
  const { id } = await grant(a);
  world.target.readFacts = ((_effectId: string, _effect: unknown, names: readonly string[]) => Object.fromEntries(names.map((name) => [name, name === 'chargebacks' ? [] : 0]))) as never;
  expect(await outcomeOrError(a.gate.submit(refundProposal({ approval: id })))).toBe('COMMITTED');
});

it('a readFacts that throws synchronously fails the submit with premise_read_failed', async () => {
  world = await gateWorld();
  const a = await world.node('a');
  const { id } = await grant(a);
  world.target.readFacts = (() => {
    throw new Error('no socket');
  }) as never;
  expect(await outcomeOrError(a.gate.submit(refundProposal({ approval: id })))).toMatch(/^threw: PremiseReadError: premise_read_failed: .*no socket/);
  expect(world.target.sendStarts).toHaveLength(0);
});

it('a readFacts that throws a value that cannot be inspected fails the submit with premise_read_failed', async () => {
  world = await gateWorld();
  const a = await world.node('a');
  const { id } = await grant(a);
  world.target.readFacts = (() => {
    throw hostile();
  }) as never;
  expect(await outcomeOrError(a.gate.submit(refundProposal({ approval: id })))).toMatch(/^threw: PremiseReadError: premise_read_failed/);
});

it('apply throwing a value whose reading throws is answered IN_FLIGHT and recovered after a look', async () => {
  world = await gateWorld({ target: { tier: 2 } });
  const a = await world.node('a');
  const { id } = await grant(a);
  const apply = world.target.apply.bind(world.target);
  world.target.apply = async (_effectId, _effect, context) => {
    await context.beforeWrite();
    throw hostile();
  };
  const answer = await a.gate.submit(refundProposal({ approval: id }));
  expect(answer.outcome).toBe('IN_FLIGHT');
  // The unknown answer is marked: recovery looks before it sends again.
  const { state } = await openState(a, answer.effectId);
  expect(state.open).toBe(true);
  expect(state.unknowns).toBe(1);
  world.target.apply = apply;
  await sleep(900);
  const report = await a.gate.recover({ only: [answer.effectId] });
  expect(report.settled).toEqual([expect.objectContaining({ effectId: answer.effectId, outcome: 'REAPPLIED_AFTER_QUERY' })]);
  expect(world.target.landedCount(answer.effectId)).toBe(1);
});

it('apply throwing an Error whose message getter throws is answered IN_FLIGHT, not rethrown', async () => {
  world = await gateWorld();
  const a = await world.node('a');
  const { id } = await grant(a);
  world.target.apply = async (_effectId, _effect, context) => {
    await context.beforeWrite();
    throw unreadableMessage();
  };
  expect(await outcomeOrError(a.gate.submit(refundProposal({ approval: id })))).toBe('IN_FLIGHT');
});

it('quoteError, slowDownOf and errorName answer for any thrown value, never throwing', () => {
  const limited = Object.defineProperties(new Error('limited'), { rateLimited: { value: true }, retryAfterMs: { get() { throw new Error('late'); } } });
  const causes = new Error('outer', { cause: hostile() });
  for (const value of [hostile(), unreadableMessage(), limited, causes]) {
    expect(typeof quoteError(value)).toBe('string');
    expect(() => slowDownOf(value)).not.toThrow();
    expect(typeof errorName(value)).toBe('string');
  }
});
