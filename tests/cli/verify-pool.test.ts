// The pool behind `interlock receipt verify FILE FILE ...` (src/cli/verify-pool.ts): threads read and verify their
// shares and send back the lines the command prints. Every file is reported exactly once, with what one thread
// would have said of it, and within about 100 ms of finishing whatever its thread does next; a thread that dies costs
// only the file it died on. A call while another runs, and any call after a thread failed, are refused.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildReceipts } from '../../src/core/receipt.js';
import { sealBatch, type AnyDraft } from '../../src/core/entries.js';
import { effectIdFor } from '../../src/core/effect-id.js';
import { createReportPipe, pipeReader, pipeWriter, readReceiptText, startVerifiers, verifyMany, verifyShare, type FileReport } from '../../src/cli/verify-pool.js';
import { DEATH_CODE, HUGE_LINE, STALL_MS } from './verify-pool-thread.js';
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
  verifyShare(list, [publicPem], (report) => reports.push(report));
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

  const threadModule = new URL('./verify-pool-thread.ts', import.meta.url).href;

  it('prints a finished file within about 100 ms even while its thread is busy on the next one', async () => {
    const stalls = join(temp.dir, 'slow.stalls');
    const pool = await startVerifiers([publicPem], 2, { threadModule });
    try {
      const arrived = new Map<string, number>();
      await pool.verify([files[0] ?? '', stalls, files[1] ?? '', files[2] ?? ''], (report) => arrived.set((JSON.parse(report.line) as { file: string }).file, performance.now()));
      expect(arrived.size).toBe(4);
      // The first file shares its thread with the stalling one: its line is out long before the stall ends.
      expect((arrived.get(stalls) ?? 0) - (arrived.get(files[0] ?? '') ?? Infinity)).toBeGreaterThan(STALL_MS - 1_000);
    } finally {
      await pool.close();
    }
  });

  it('passes a line larger than a thread\'s pipe whole, in order with the lines around it', async () => {
    const huge = join(temp.dir, 'big.huge-line');
    const pool = await startVerifiers([publicPem], 2, { threadModule });
    try {
      // Two threads: the first verifies the first four (the huge line last), the other the last three.
      const given = [...files.slice(0, 3), huge, ...files.slice(3, 6)];
      const reports: FileReport[] = [];
      await pool.verify(given, (report) => reports.push(report));
      const lines = reports.map((report) => ({ ...(JSON.parse(report.line) as { file: string; filler?: string }), status: report.status }));
      expect(lines.map((line) => line.file).filter((file) => given.indexOf(file) < 4)).toEqual(given.slice(0, 4));
      expect(lines.map((line) => line.file).filter((file) => given.indexOf(file) >= 4)).toEqual(given.slice(4));
      expect(lines.find((line) => line.file === huge)).toMatchObject({ status: 'invalid', filler: 'x'.repeat(HUGE_LINE) });
      expect(lines.filter((line) => line.status === 'valid')).toHaveLength(6);
    } finally {
      await pool.close();
    }
  });

  it('a thread that dies costs only its file: reported unreadable saying why, the rest of its share verified on a new thread', async () => {
    const dies = [join(temp.dir, 'first.dies'), join(temp.dir, 'second.dies')];
    // Two threads: the first meets both deaths in a row, between valid files; the other is untouched.
    const given = [files[0] ?? '', dies[0] ?? '', dies[1] ?? '', ...files.slice(1, 5)];
    const pool = await startVerifiers([publicPem], 2, { threadModule });
    try {
      const reports: FileReport[] = [];
      await pool.verify(given, (report) => reports.push(report));
      const lines = new Map(reports.map((report) => [(JSON.parse(report.line) as { file: string }).file, { status: report.status, ...(JSON.parse(report.line) as { error?: string }) }]));
      expect(reports).toHaveLength(given.length);
      expect([...lines.keys()].sort()).toEqual([...given].sort());
      for (const file of dies) {
        expect(lines.get(file)).toMatchObject({ status: 'unreadable', error: `cannot verify ${file}: the thread verifying it stopped (it exited with code ${DEATH_CODE})` });
      }
      expect([...lines.values()].filter((line) => line.status === 'valid')).toHaveLength(5);
      // The pool is whole again for the next call.
      const again: FileReport[] = [];
      await pool.verify(files.slice(0, 4), (report) => again.push(report));
      expect(again.map((report) => report.status)).toEqual(['valid', 'valid', 'valid', 'valid']);
    } finally {
      await pool.close();
    }
  });

  it('a pipe hands back every report whole and in order as its bytes wrap around, in any UTF-8', () => {
    const pipe = createReportPipe();
    const write = pipeWriter(pipe, () => {
      throw new Error('the pipe filled although it was read after every few reports');
    });
    const reader = pipeReader(pipe);
    const sent: FileReport[] = [];
    const received: FileReport[] = [];
    // About 12 MB through a 1 MiB pipe, read every 100 reports (under 300 KB).
    for (let index = 0; index < 10_000; index += 1) {
      const report: FileReport = { status: (['valid', 'invalid', 'unauthenticated', 'unreadable'] as const)[index % 4] ?? 'valid', line: `${index}:${'é€😀x'.repeat((index * 7919) % 500)}` };
      write(report);
      sent.push(report);
      if (index % 100 === 99) received.push(...reader.read());
    }
    received.push(...reader.read());
    expect(received).toEqual(sent);
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

describe('reading a receipt file', () => {
  it('reads each file whole, in any UTF-8, whatever its size against the read buffer and whatever was read before it', () => {
    // Around the 256 KiB a thread reads into its own buffer: files below it are read there, larger ones on their own.
    const sizes = [0, 1, 4_000, 256 * 1024 - 1, 256 * 1024, 256 * 1024 + 1, 1024 * 1024, 3, 10_000];
    const texts = sizes.map((size, index) => {
      // Multi-byte characters too (é is 2 bytes, € 3, 😀 4), so a text sliced or decoded wrong cannot pass.
      const unit = `${index}é€😀`;
      let text = unit.repeat(Math.ceil(size / Buffer.byteLength(unit)));
      while (Buffer.byteLength(text) > size) text = text.slice(0, -1);
      return text;
    });
    const paths = texts.map((text, index) => {
      const file = join(temp.dir, `sized-${index}.json`);
      writeFileSync(file, text);
      return file;
    });
    paths.forEach((file, index) => expect(readReceiptText(file), `file ${index}`).toBe(texts[index]));
  });
});

describe('verifyMany: this thread verifies while the threads load', { timeout: 60_000 }, () => {
  it('verifies every file itself when it is done before any thread is ready, stops the threads unused and returns', async () => {
    const neverReady = new URL('./verify-pool-never-ready.ts', import.meta.url).href;
    const reports: FileReport[] = [];
    await verifyMany(files, [publicPem], (report) => reports.push(report), 2, { threadModule: neverReady });
    expect(reports).toEqual(inline(files));
  });

  it('hands the files left to the threads once they are ready, each file reported once', async () => {
    const threadModule = new URL('./verify-pool-thread.ts', import.meta.url).href;
    // This thread is slowed to 100 ms a file, so the threads are ready long before it reaches the marked files.
    const slow: typeof verifyShare = (list, pems, onReport) => {
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100);
      verifyShare(list, pems, onReport);
    };
    const real = files.slice(0, 60);
    const marked = Array.from({ length: 20 }, (_, index) => join(temp.dir, `${index}.on-a-thread`));
    const reports = new Map<string, FileReport[]>();
    await verifyMany([...real, ...marked], [publicPem], (report) => {
      const file = String((JSON.parse(report.line) as { file: string }).file);
      reports.set(file, [...(reports.get(file) ?? []), report]);
    }, 2, { threadModule, inline: slow });
    for (const [file, list] of reports) expect(list, file).toHaveLength(1);
    expect([...reports.keys()].sort()).toEqual([...real, ...marked].sort());
    const expected = new Map(inline(real).map((report) => [String((JSON.parse(report.line) as { file: string }).file), report]));
    for (const file of real) expect(reports.get(file)?.[0], file).toEqual(expected.get(file));
    // Verified on a thread (this thread would have found no such file), not here.
    for (const file of marked) expect(JSON.parse(reports.get(file)?.[0]?.line ?? '{}')).toMatchObject({ verifiedOn: 'a thread' });
  });
});
