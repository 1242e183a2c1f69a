// Hostile input, the way an attacker or a careless caller would send it (issue 6). Proposals: every field, with
// lone surrogates, control characters, deep nesting, huge sizes, numbers that are not cents, prototype keys and
// wrong types, is refused with a ProposalError naming the field, and nothing at all is written. Receipts: verify()
// never throws on anything, and never calls a tampered receipt valid.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/core/json.js';
import { ProposalError } from '../../src/core/proposal.js';
import { quickShape, receiptSchema } from '../../src/core/receipt-schema.js';
import { verify } from '../../src/core/verify.js';
import { runCli, tempDir } from '../cli/run-cli.js';
import { createWorld, keysWrittenUnder, refundProposal, worldWithNode, type TestNode, type World } from '../support/harness.js';

let deep: unknown = 0;
for (let level = 0; level < 40; level += 1) deep = { deeper: deep };
const HUGE = 'x'.repeat(70_000);
// A hole in an array has no JSON form at all.
const sparse: unknown[] = [1];
sparse[2] = 3;

/** Values no field of a proposal may hold, with why. */
const HOSTILE_STRINGS = ['lone \ud800 surrogate', 'lone \udfff low', 'bell \u0007', 'nul \u0000', 'escape \u001b[31m', ' padded ', '', HUGE];
const HOSTILE_AMOUNTS: unknown[] = [0, -5, 12.5, 1e21, Number.NaN, Number.POSITIVE_INFINITY, '2000', null, 100_000_000, -0.5, [2000], { cents: 2000 }];

/** A proposal with one field replaced; `path` names the field the error must point at. */
type Case = { path: string; proposal: Record<string, unknown> };

function withField(path: string, value: unknown): Case {
  const proposal = JSON.parse(JSON.stringify(refundProposal({ requestId: 'case-hostile', approval: 'ap_hostile', paymentIntent: 'pi_hostile' }))) as Record<string, unknown>;
  const parts = path.split('.');
  let holder: Record<string, unknown> = proposal;
  for (const part of parts.slice(0, -1)) holder = (holder[part] ??= {}) as Record<string, unknown>;
  holder[parts.at(-1) ?? path] = value;
  return { path, proposal };
}

const stringFields = ['requestId', 'agent', 'approval', 'effect.paymentIntent', 'effect.reason', 'decision.model'];
const caseArb: fc.Arbitrary<Case> = fc.oneof(
  fc.tuple(fc.constantFrom(...stringFields), fc.constantFrom(...HOSTILE_STRINGS)).map(([path, value]) => withField(path, path === 'decision.model' ? value : value)),
  fc.constantFrom(...HOSTILE_AMOUNTS).map((value) => withField('effect.amount', value)),
  fc.constantFrom<unknown>(deep, { a: HUGE }, Number.NaN, sparse, 'x\ud800', { k: Number.POSITIVE_INFINITY }).map((value) => withField('premises.chargebacks', value)),
  fc.constantFrom<unknown>(deep, HUGE + HUGE).map((value) => withField('request', value)),
  fc.constantFrom('x\ud800', 'x\u0001').map((text) => withField('decision', { model: 'claude', text })),
  fc.constantFrom('kind', 'subject', 'paymentIntent', 'customer').map((field) => withField(`effect.${field}`, { nested: true })),
  fc.constantFrom<unknown>('refunds', 'payout', null, 7).map((kind) => withField('effect.kind', kind)),
  fc.constantFrom('__proto__', 'constructor', '1st', 'has space', 'x'.repeat(65)).map((name) => ({ path: `premises.${name}`, proposal: JSON.parse(`{"requestId":"case-hostile","agent":"bot","approval":"ap_hostile","effect":{"kind":"refund","paymentIntent":"pi_hostile","amount":2000},"premises":{${JSON.stringify(name)}:${name === 'constructor' ? '"x"' : '1'}}}`) as Record<string, unknown> })),
  fc.constantFrom('metadata', 'interlock_effect_id').map((key) => withField(key === 'metadata' ? 'effect.metadata' : `effect.metadata.${key}`, key === 'metadata' ? { 'k\u0000': 'v' } : 'mine')),
  fc.constantFrom('approvalId', 'amount', 'effects').map((extra) => withField(extra, 'typo')),
);

describe('hostile proposals', () => {
  let world: World;
  let node: TestNode;
  let redis: Redis;
  let close: () => Promise<void>;
  beforeAll(async () => {
    ({ world, node, redis, close } = await worldWithNode());
  });
  afterAll(() => close());

  it('refuses every hostile field with a ProposalError that names it, and writes nothing at all', async () => {
    await fc.assert(
      fc.asyncProperty(caseArb, async ({ path, proposal }) => {
        // `constructor` is a legal premise name; only the others must be refused.
        if (path === 'premises.constructor') return;
        const error = await node.gate.submit(proposal).then(
          (answer) => new Error(`accepted: ${answer.outcome}`),
          (caught: unknown) => caught,
        );
        expect(error, path).toBeInstanceOf(ProposalError);
        const fields = (error as ProposalError).fields.map((field) => field.path);
        const root = path.split('.')[0] ?? path;
        expect(fields.some((field) => field === path || field.startsWith(`${root}`) || path.startsWith(field)), `${path} not named in ${fields.join(', ')}`).toBe(true);
        expect((error as Error).message).toMatch(/^The proposal is invalid \(/);
        const written = (await keysWrittenUnder(redis, world.config.keyPrefix));
        expect(written).toEqual([]);
      }),
      { numRuns: 150 },
    );
  });

  it('refuses a proposal that is not an object at all, naming the proposal', async () => {
    for (const input of [null, 'refund me', 42, [], undefined]) {
      await expect(node.gate.submit(input)).rejects.toBeInstanceOf(ProposalError);
    }
  });
});

describe('hostile receipts', () => {
  let world: World;
  let receipt: unknown;
  beforeAll(async () => {
    world = await createWorld();
    const node = await world.node();
    world.target.world.set('payment:pi_1', { chargebacks: [], refunded_by_others: 0 });
    await node.approvals.grant({ id: 'ap_receipt', approver: 'dana@support', capCents: 5_000, expiresAt: Date.now() + 3_600_000, maxUses: 5, scope: 'payment:pi_1' });
    const done = await node.gate.submit(refundProposal({ approval: 'ap_receipt' }));
    receipt = JSON.parse(JSON.stringify(await node.gate.receipt(done.effectId)));
  });
  afterAll(async () => {
    await world.close();
  });

  const hostileValue = fc.oneof(
    fc.constantFrom<unknown>(null, true, 0, -1, 1e308, '', 'x\ud800', '\u0000', [], {}, deep, HUGE),
    fc.string(),
    fc.integer(),
    fc.jsonValue(),
  );

  /** Every path into a JSON value, so a mutation can land anywhere in the receipt. */
  function paths(value: unknown, prefix: (string | number)[] = []): (string | number)[][] {
    if (value === null || typeof value !== 'object') return [prefix];
    const inner = Array.isArray(value) ? value.map((item, index) => paths(item, [...prefix, index])) : Object.entries(value).map(([key, item]) => paths(item, [...prefix, key]));
    return [prefix, ...inner.flat()];
  }

  function mutate(input: unknown, path: (string | number)[], value: unknown, mode: 'set' | 'delete' | 'add'): unknown {
    const copy = JSON.parse(JSON.stringify(input)) as unknown;
    if (path.length === 0) return value;
    let holder = copy as Record<string | number, unknown>;
    for (const part of path.slice(0, -1)) holder = holder[part] as Record<string | number, unknown>;
    const last = path.at(-1) as string | number;
    if (mode === 'delete') {
      if (Array.isArray(holder)) holder.splice(Number(last), 1);
      else delete holder[last];
    } else if (mode === 'add' && typeof holder[last] === 'object' && holder[last] !== null && !Array.isArray(holder[last])) {
      (holder[last] as Record<string, unknown>).smuggled = value;
    } else {
      holder[last] = value;
    }
    return copy;
  }

  /** Where a batch's `covers` count sits: an integer too large to be exact once made the fast path and the schema disagree. */
  function receiptCoversIndex(): number {
    return paths(receipt).findIndex((path) => path.at(-1) === 'covers');
  }

  function receiptKindIndex(): number {
    return paths(receipt).findIndex((path) => path.length === 3 && path[0] === 'entries' && path[2] === 'kind');
  }

  it('verify() never throws on a mutated receipt, and never calls a changed one valid', () => {
    const all = paths(receipt);
    fc.assert(
      fc.property(fc.integer({ min: 0, max: all.length - 1 }), hostileValue, fc.constantFrom('set', 'delete', 'add' as const), (index, value, mode) => {
        const mutated = mutate(receipt, all[index] ?? [], value, mode);
        let unchanged: boolean;
        try {
          unchanged = canonicalJson(mutated) === canonicalJson(receipt);
        } catch {
          unchanged = false;
        }
        // The hand-checked fast path accepts nothing the schema would refuse.
        if (quickShape(mutated) !== null) expect(receiptSchema.safeParse(mutated).success, `fast path accepted a mutation at ${JSON.stringify(all[index])}`).toBe(true);
        const result = verify(mutated, { publicKeys: world.key.publicKeys });
        expect(typeof result.valid === 'boolean' || result.valid === null).toBe(true);
        if (!unchanged) expect(result.valid, `mutation at ${JSON.stringify(all[index])}`).not.toBe(true);
        expect(verify(mutated).valid).not.toBe(true);
      }),
      // An entry's kind set to a name every object inherits: a lookup by kind must find only the kinds there are.
      { numRuns: 400, examples: [[receiptCoversIndex(), 1e308, 'set'], ...['__proto__', 'toString', 'constructor', 'hasOwnProperty'].map((kind) => [receiptKindIndex(), kind, 'set'] as [number, unknown, 'set'])] },
    );
  });

  it('verify() answers, and does not throw, for a hostile head, getters that throw, and values with no JSON form', () => {
    const hostile: unknown[] = [
      { ...(receipt as object), head: { ...((receipt as { head: object }).head), effectId: 'x\ud800' } },
      { ...(receipt as object), effectId: 'x\ud800' },
      Object.defineProperty({}, 'entries', { get: () => { throw new Error('boom'); }, enumerable: true }),
      { format: 'interlock.receipt/v2', effectId: 'e', entries: [deep], head: null },
      new Proxy({}, { get: () => { throw new Error('proxy'); } }),
      Symbol('receipt'),
      () => receipt,
    ];
    for (const input of hostile) {
      const result = verify(input, { publicKeys: world.key.publicKeys });
      expect(result.valid).toBe(false);
      expect(result.problems.length).toBeGreaterThan(0);
    }
  });

  it('the CLI prints JSON and exits 1 for a receipt whose head names a lone surrogate, never a stack trace (item 10)', async () => {
    const temp = tempDir('hostile-receipt');
    try {
      const file = join(temp.dir, 'hostile.json');
      const head = { ...((receipt as { head: object }).head), effectId: 'x\ud800' };
      // JSON.stringify writes the lone surrogate as an escape, as a hostile file would hold it.
      writeFileSync(file, JSON.stringify({ ...(receipt as object), head }));
      const run = await runCli(['receipt', 'verify', file], { INTERLOCK_DATA_DIR: temp.dir });
      expect(run.code, run.stderr).toBe(1);
      expect(run.stderr).not.toMatch(/\n\s+at /);
      expect(JSON.parse(run.stdout)).toMatchObject({ valid: false });
    } finally {
      temp.remove();
    }
  });
});
