// The pool behind `interlock receipt verify FILE FILE ...` (src/cli/verify-pool.ts): threads read and verify their
// shares and send back the lines the command prints. Every file is reported exactly once, with what one thread
// would have said of it; a call while another runs, and any call after a thread failed, are refused.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildReceipts } from '../../src/core/receipt.js';
import { sealBatch, type AnyDraft } from '../../src/core/entries.js';
import { effectIdFor } from '../../src/core/effect-id.js';
import { startVerifiers, verifyShare, type FileReport } from '../../src/cli/verify-pool.js';
import { testKey } from '../support/harness.js';
import { tempDir } from './run-cli.js';

const { key, publicPem } = testKey();
const temp = tempDir('verify-pool');
afterAll(() => temp.remove());

/** `count` committed refunds exported together, one file each, then an altered one, a non-JSON one and a missing one. */
function receiptFiles(count: number): string[] {
  const effect = { kind: 'refund', paymentIntent: 'pi_pool', amount: 500, reason: 'requested_by_customer' };
  const snapshot = { id: 'ap_pool', approver: 'dana@support', capCents: 5_000, expiresAt: 4e12, maxUses: 50, scope: 'payment:pi_pool', revoked: false, revokedAt: null, reservedCents: null, uses: null };
  const premises = { chargebacks: [], refunded_by_others: 0 };
  const chains = Array.from({ length: count }, (_, index) => {
    const effectId = effectIdFor({ requestId: `pool-${index}`, effect });
    const drafts: AnyDraft[] = [
      { kind: 'PROPOSED', agent: 'support-bot', approval: 'ap_pool', premises, effect, request: null, decision: null },
      { kind: 'AUTHORIZED', approval: snapshot },
      { kind: 'DISPATCHED', subject: 'payment:pi_pool', approval: 'ap_pool', premises, checks: { approvalLive: true, approval: null, approvalProblems: [], violations: [], changes: [] }, owner: 'w1', epoch: 1, sendDeadline: 1_800_000_030_000 },
    ];
    const entries = sealBatch(drafts, { effectId, at: 1_800_000_000_000, prev: null }, key);
    entries.push(...sealBatch([{ kind: 'COMMITTED', via: 'send', result: { id: `re_${index}`, object: 'refund', status: 'succeeded', amount: 500 }, found: `re_${index}`, rechecked: null, epoch: 1 }], { effectId, at: 1_800_000_000_001, prev: entries.at(-1)?.hash ?? null }, key));
    return { effectId, entries };
  });
  const files = buildReceipts(chains, key, 1_800_000_000_002).map((receipt, index) => {
    const file = join(temp.dir, `${String(index).padStart(3, '0')}.json`);
    writeFileSync(file, `${JSON.stringify(receipt, null, 2)}\n`);
    return file;
  });
  const altered = buildReceipts(chains.slice(0, 1), key, 1_800_000_000_002)[0] as { entries: { effect?: { amount: number } }[] };
  if (altered.entries[0]?.effect) altered.entries[0].effect.amount = 90_000;
  writeFileSync(join(temp.dir, 'altered.json'), JSON.stringify(altered));
  writeFileSync(join(temp.dir, 'not-json.json'), '{"format": ');
  return [...files, join(temp.dir, 'altered.json'), join(temp.dir, 'not-json.json'), join(temp.dir, 'missing.json')];
}

const files = receiptFiles(150);

/** What one thread, in this process, says of every file: the reference the pool must agree with. */
function inline(list: readonly string[]): FileReport[] {
  const reports: FileReport[] = [];
  verifyShare(list, [publicPem], (batch) => reports.push(...batch));
  return reports;
}

describe('receipt verify on several threads', { timeout: 60_000 }, () => {
  it('reports every file exactly once, each with the line one thread prints for it', async () => {
    const expected = inline(files);
    expect(expected.map((report) => report.status)).toEqual([...Array(150).fill('valid'), 'invalid', 'unreadable', 'unreadable']);
    const pool = await startVerifiers([publicPem], 2);
    try {
      const reports: FileReport[] = [];
      await pool.verify(files, (report) => reports.push(report));
      expect(reports).toHaveLength(files.length);
      const sort = (list: FileReport[]) => [...list].sort((a, b) => a.line.localeCompare(b.line));
      expect(sort(reports)).toEqual(sort(expected));
      // The same threads take a second call once the first is done.
      const again: FileReport[] = [];
      await pool.verify(files.slice(0, 3), (report) => again.push(report));
      expect(sort(again)).toEqual(sort(expected.slice(0, 3)));
    } finally {
      await pool.close();
    }
  });

  it('a thread sends its lines every 64 files, or sooner once the oldest has waited 100 ms, so slow files print as they finish', () => {
    const sizes = (clock: () => number) => {
      const batches: number[] = [];
      verifyShare(files.slice(0, 150), [publicPem], (batch, last) => batches.push(last ? -batch.length : batch.length), clock);
      return batches;
    };
    // Fast files: batches of 64, the rest with the last message (marked negative here).
    expect(sizes(() => 0)).toEqual([64, 64, -22]);
    // Each file takes 30 ms: the fifth finishes 120 ms after the first, the first past 100 ms, so five go together.
    let t = 0;
    const batches = sizes(() => (t += 30));
    expect(batches.slice(0, 3)).toEqual([5, 5, 5]);
    expect(batches.reduce((sum, size) => sum + Math.abs(size), 0)).toBe(150);
  });

  it('refuses a call while another runs, without disturbing it', async () => {
    const pool = await startVerifiers([publicPem], 2);
    try {
      const reports: FileReport[] = [];
      const first = pool.verify(files, (report) => reports.push(report));
      await expect(pool.verify(files, () => undefined)).rejects.toThrow('already verifying');
      await first;
      expect(reports).toHaveLength(files.length);
    } finally {
      await pool.close();
    }
  });

  it('a thread that fails fails the call, and the pool refuses every call after it', async () => {
    const pool = await startVerifiers(['-----BEGIN PUBLIC KEY-----\nnot a key\n-----END PUBLIC KEY-----\n'], 2);
    try {
      await expect(pool.verify(files, () => undefined)).rejects.toThrow('a verifying thread failed');
      await expect(pool.verify(files.slice(0, 1), () => undefined)).rejects.toThrow('cannot be used again');
    } finally {
      await pool.close();
    }
  });
});
