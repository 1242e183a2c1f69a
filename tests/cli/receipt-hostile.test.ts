// Receipts built to hurt the verifier (no key needed to make them): verify() and `receipt verify` must answer each
// one, in time about linear in its size, and go on to the next file.
// - A first proposal's payload was hashed again for every later PROPOSED and DISPATCHED: a 1 MiB payload and 1,500
//   tiny entries took 9 to 11 s, the same bytes elsewhere 0.1 s.
// - A `rechecked` nested 100,000 deep was handed back as it was, and writing the answer out overflowed the stack: the
//   command printed no verification at all.
// - Text from the receipt was repeated in every problem: a 1 MiB refund id and 520 OBSERVED refunds made 545 M
//   characters, and `receipt verify` stopped at that file ("Invalid string length") without reporting the others.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { signingKeyFromPem } from '../../src/core/signing.js';
import { verify } from '../../src/core/verify.js';
import { generateSigningKeyPem } from '../../src/keys/key-store.js';
import { chainReceipt, checks, drafts } from '../core/entry-chain.js';
import { runCli, tempDir } from './run-cli.js';

const temp = tempDir('receipt-hostile');
afterAll(() => temp.remove());

const EFFECT_ID = 'a'.repeat(64);
const BASE = { v: 3, effectId: EFFECT_ID, at: 0, prev: null, hash: 'h', sig: null };

function receiptText(entries: unknown[]): string {
  return JSON.stringify({ format: 'interlock.receipt/v3', effectId: EFFECT_ID, entries, head: { format: 'interlock.receipt-head/v2', effectId: EFFECT_ID, count: entries.length, lastHash: 'h', signedAt: 0, kid: 'k', sig: 's' } });
}

const proposed = (effect: Record<string, unknown>) => ({ ...BASE, kind: 'PROPOSED', agent: 'a', approval: null, premises: {}, effect, request: null, decision: null });

function timed(input: unknown): number {
  const started = performance.now();
  expect(verify(input).valid).toBe(false);
  return performance.now() - started;
}

describe('verify() on hostile receipts', () => {
  it('a 1 MiB first payload before 1,500 tiny proposals costs about what the same bytes cost anywhere else (measured side by side)', { timeout: 120_000 }, () => {
    const big = { kind: 'refund', paymentIntent: 'pi_1', amount: 100, note: 'x'.repeat(1 << 20) };
    const tiny = Array.from({ length: 1_500 }, () => proposed({}));
    const first = JSON.parse(receiptText([proposed(big), ...tiny])) as unknown;
    const last = JSON.parse(receiptText([proposed({}), ...tiny.slice(1), proposed(big)])) as unknown;
    // Each twice, interleaved; the first payload hashed for each entry made the first about 90 times the second.
    const ratios = [0, 1].map(() => timed(first) / timed(last));
    expect(Math.min(...ratios)).toBeLessThan(5);
  });
});

describe('receipt verify on hostile receipts', () => {
  it('a rechecked value nested 100,000 deep: the verification is printed (invalid, exit 1), not a stack overflow', { timeout: 60_000 }, async () => {
    const pem = generateSigningKeyPem();
    const key = signingKeyFromPem(pem.privatePem);
    const receipt = chainReceipt('hostile_deep', [drafts.proposed(), drafts.authorized(), drafts.dispatched(), drafts.committed('re_deep')], key);
    const copy = JSON.parse(JSON.stringify(receipt)) as { entries: Record<string, unknown>[] };
    (copy.entries[3] as Record<string, unknown>).rechecked = { ...checks(), changes: [{ field: 'chargebacks', was: 'DEEP', now: [] }] };
    const depth = 100_000;
    writeFileSync(join(temp.dir, 'deep.json'), JSON.stringify(copy).replace('"was":"DEEP"', `"was":${'['.repeat(depth)}${']'.repeat(depth)}`));
    writeFileSync(join(temp.dir, 'public-key.pem'), pem.publicPem);
    const run = await runCli(['receipt', 'verify', join(temp.dir, 'deep.json'), '--public-key', join(temp.dir, 'public-key.pem')], { INTERLOCK_DATA_DIR: join(temp.dir, 'data') });
    expect(run.stderr).not.toContain('Maximum call stack size exceeded');
    const printed = JSON.parse(run.stdout) as { valid: boolean | null; recheckedAtRecovery: unknown; problems: string[] };
    expect(printed.valid).toBe(false);
    expect(printed.recheckedAtRecovery).toBeNull();
    expect(printed.problems.join(' ')).toContain('cannot be hashed');
    expect(run.code).toBe(1);
  });

  it('one file whose problems would repeat a 1 MiB id 520 times: every file is reported, the summary printed, exit 1', { timeout: 120_000 }, async () => {
    const pem = generateSigningKeyPem();
    const key = signingKeyFromPem(pem.privatePem);
    const good = JSON.stringify(chainReceipt('hostile_many', [drafts.proposed(), drafts.authorized(), drafts.dispatched(), drafts.committed('re_ok')], key));
    const entries: unknown[] = [proposed({ kind: 'refund', paymentIntent: 'pi_1', amount: 100 }), { ...BASE, kind: 'COMMITTED', via: 'send', result: null, found: 'r'.repeat(1 << 20), rechecked: null, epoch: 1 }];
    for (let index = 0; index < 520; index += 1) {
      entries.push({ ...BASE, kind: 'OBSERVED', source: 'webhook', eventId: null, eventType: 'refund.updated', objectType: 'refund', objectId: `re_${index}`, status: 'succeeded', failureReason: null, amount: null, charge: null, disputeStatus: null, disputeReason: null, created: null });
    }
    const file = (name: string) => join(temp.dir, name);
    writeFileSync(file('a-good.json'), good);
    writeFileSync(file('b-hostile.json'), receiptText(entries));
    writeFileSync(file('c-good.json'), good);
    writeFileSync(file('public-key.pem'), pem.publicPem);
    const files = [file('a-good.json'), file('b-hostile.json'), file('c-good.json')];
    const run = await runCli(['receipt', 'verify', ...files, '--public-key', file('public-key.pem'), '--threads', '1'], { INTERLOCK_DATA_DIR: file('data') }, { timeoutMs: 110_000 });
    expect(run.stderr).not.toContain('Invalid string length');
    const lines = run.stdout.trim().split('\n').map((line) => JSON.parse(line) as { file: string; status: string; problems?: string[] });
    expect(lines.map((line) => line.file).sort()).toEqual(files);
    const hostile = lines.find((line) => line.file === file('b-hostile.json'));
    expect(hostile?.status).toBe('invalid');
    // At most 200 problems, the rest counted, each quoting at most a short cut of the receipt's text.
    expect(hostile?.problems?.length).toBeLessThanOrEqual(200);
    expect(hostile?.problems?.at(-1)).toMatch(/^and \d+ more problems$/);
    expect(Math.max(...(hostile?.problems ?? []).map((problem) => problem.length))).toBeLessThan(1_000);
    expect(run.stderr).toContain('3 receipts:');
    expect(run.code).toBe(1);
  });
});
