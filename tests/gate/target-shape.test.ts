// Rule: the gate refuses to start over a target declared wrong (createGate, core/target.ts targetProblems), with
// invalid_config naming every problem in one message: a tier other than the number 1, 2 or 3 (a "1" read from a
// setting reads as tier 3 in recoveryMode, so every crashed send of a tier-1 target would settle AMBIGUOUS instead of
// being resent under its key), a `queryable` that is not a boolean, `kinds` that is not a non-empty list of known
// effect kinds, `facts` that is neither null nor a list of names (left out, every submit threw a raw TypeError), or a
// missing apply, query or readFacts; a tier 2 that cannot be queried (tier 2 is "queryable only": recovery could only
// settle its crashed sends AMBIGUOUS, even one never sent, which tier 3 sends once). A declared value the refusal
// quotes never makes the refusal itself throw (a BigInt or an object without a prototype among the kinds). A target
// may declare refusalProvesNothingLanded only as a boolean and only at tier 1 (the gate then settles a first send's
// refusal without a lookup, so a wrong declaration would record a landed send as refused).
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { afterEach, expect, it } from 'vitest';
import { createInterlock, type Interlock } from '../../src/interlock.js';
import { createMemoryTarget } from '../../src/targets/memory-target.js';
import type { Target } from '../../src/core/target.js';
import { removePrefixes, testConfig, testKey } from '../support/harness.js';

const prefixes: string[] = [];
const started: Interlock[] = [];
afterEach(async () => {
  for (const interlock of started.splice(0)) await interlock.close().catch(() => undefined);
  await removePrefixes(prefixes.splice(0));
});

async function start(target: Target): Promise<{ code: string; message: string }> {
  const keyPrefix = `t-target-shape-${randomBytes(4).toString('hex')}`;
  prefixes.push(keyPrefix);
  return createInterlock({ config: testConfig({ keyPrefix }), target, signingKey: testKey().key, logger: pino({ level: 'silent' }) }).then(
    (interlock) => {
      started.push(interlock);
      return { code: 'started', message: '' };
    },
    (error: Error & { code?: string }) => ({ code: error.code ?? 'no code', message: error.message }),
  );
}

const base = () => createMemoryTarget({ tier: 1, sendTimeoutMs: 1_000 });

it('refuses a target whose tier is not the number 1, 2 or 3', async () => {
  for (const tier of ['1', 4, 0, undefined]) {
    const refused = await start({ ...base(), tier: tier as never });
    expect(refused.code).toBe('invalid_config');
    expect(refused.message).toMatch(/tier .* must be the number 1, 2 or 3/);
  }
});

it('refuses a target without its facts or its kinds, or with kinds it cannot name', async () => {
  expect((await start({ ...base(), facts: undefined as never })).message).toMatch(/facts \(undefined\) must be null/);
  expect((await start({ ...base(), facts: ['chargebacks', 3] as never })).code).toBe('invalid_config');
  expect((await start({ ...base(), kinds: undefined as never })).message).toMatch(/kinds \(undefined\) must be a non-empty list of refund, credit/);
  expect((await start({ ...base(), kinds: [] })).code).toBe('invalid_config');
  expect((await start({ ...base(), kinds: ['payout'] as never })).code).toBe('invalid_config');
});

it('refuses a target whose queryable is not a boolean or that lacks one of its calls', async () => {
  expect((await start({ ...base(), queryable: 'yes' as never })).message).toMatch(/queryable \("yes"\) must be true or false/);
  expect((await start({ ...base(), readFacts: undefined as never })).message).toMatch(/readFacts \(undefined\) must be a function/);
});

it('refuses a tier-2 target that cannot be queried, naming tier 3 for one that can neither dedupe nor look', async () => {
  const refused = await start({ ...createMemoryTarget({ tier: 2, sendTimeoutMs: 1_000 }), queryable: false });
  expect(refused.code).toBe('invalid_config');
  expect(refused.message).toMatch(/tier-2 target .* must be queryable.*tier 3/);
});

it('quotes any declared value in its refusal: a BigInt or a prototype-less object among the kinds is named, not a TypeError', async () => {
  const refused = await start({ ...base(), kinds: ['refund', 5n, Object.create(null)] as never, name: Symbol('t') as never });
  expect(refused.code).toBe('invalid_config');
  expect(refused.message).toMatch(/kinds \(\["refund", 5n, an object\]\) must be a non-empty list/);
  expect(refused.message).toMatch(/name \(Symbol\(t\)\) must be a non-empty string/);
});

it('names every problem of a target in one refusal, its timing included', async () => {
  const refused = await start({ ...base(), tier: 4 as never, facts: undefined as never, sendTimeoutMs: 'slow' as never });
  expect(refused.code).toBe('invalid_config');
  expect(refused.message).toMatch(/tier \(4\)/);
  expect(refused.message).toMatch(/facts \(undefined\)/);
  expect(refused.message).toMatch(/sendTimeoutMs \(slow\)/);
});

it('starts over a target declared right, of every tier and with facts null or listed', async () => {
  for (const tier of [1, 2, 3] as const) expect((await start(createMemoryTarget({ tier, sendTimeoutMs: 1_000 }))).code).toBe('started');
  expect((await start({ ...base(), facts: ['chargebacks', 'refunded_by_others'] })).code).toBe('started');
});

it('refuses refusalProvesNothingLanded on a target that cannot prove it (not a boolean, or not tier 1), and takes it on tier 1', async () => {
  const notBoolean = await start({ ...base(), refusalProvesNothingLanded: 'yes' as never });
  expect(notBoolean).toMatchObject({ code: 'invalid_config', message: expect.stringContaining('refusalProvesNothingLanded ("yes") must be true or false when given') });
  const tierTwo = await start({ ...createMemoryTarget({ tier: 2, sendTimeoutMs: 1_000 }), refusalProvesNothingLanded: true });
  expect(tierTwo).toMatchObject({ code: 'invalid_config', message: expect.stringContaining('refusalProvesNothingLanded needs a tier-1 target') });
  expect(await start({ ...base(), refusalProvesNothingLanded: true })).toEqual({ code: 'started', message: '' });
});
