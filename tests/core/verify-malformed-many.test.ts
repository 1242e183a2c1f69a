// Rule: verify() answers a receipt of millions of malformed elements with its first few problems, in time and memory
// about linear in its size and small against it, never an out-of-memory abort (a receipt file may be 32 MiB,
// src/cli/verify-pool.ts MAX_RECEIPT_BYTES).
//
// A receipt whose `entries` holds millions of non-entries ("entries":[0,0,0,...]) fails the quick shape check, and the
// schema then built an issue object, with its path and message, for every element before parseReceipt kept the first
// 10: about 700 bytes of heap and 6 µs an element, so 2 MB of text took 6 s and 700 MB, and a 16 MiB file aborted
// `interlock receipt verify FILE` with "JavaScript heap out of memory" and no verdict. A list inside one entry (a
// refusal's `changes`) did the same.
import { describe, expect, it } from 'vitest';
import { verifyReceiptText } from '../../src/core/receipt-text.js';

function timed(text: string): { ms: number; problems: string[] } {
  const started = performance.now();
  const read = verifyReceiptText(text);
  const ms = performance.now() - started;
  if (!read.json) throw new Error(read.error);
  expect(read.verification.valid).toBe(false);
  return { ms, problems: read.verification.problems };
}

const COUNT = 1_000_000;
const ZEROS = `${'0,'.repeat(COUNT - 1)}0`;
// The same length of text, malformed once: the list one long string.
const ONE_STRING = `"${'0'.repeat(2 * COUNT - 3)}"`;

function refusal(changes: string): string {
  return `{"format":"interlock.receipt/v3","effectId":"a","entries":[{"v":3,"effectId":"a","at":0,"prev":null,"hash":"h","sig":null,"kind":"REFUSED","code":"c","reason":"r","checks":null,"rechecked":null,"resolves":true,"changes":${changes}}],"head":{}}`;
}

describe('verify() on a receipt with millions of malformed elements', () => {
  it('answers a million non-entries about as fast as the same bytes in one malformed value, naming the first ten', () => {
    const many = `{"format":"interlock.receipt/v3","effectId":"a","entries":[${ZEROS}],"head":{}}`;
    const once = `{"format":"interlock.receipt/v3","effectId":"a","entries":${ONE_STRING},"head":{}}`;
    expect(Math.abs(many.length - once.length)).toBeLessThan(10);
    const slow = timed(many);
    const fast = timed(once);
    expect(slow.problems).toHaveLength(10);
    expect(slow.problems[0]).toBe('receipt is malformed at entries.0: Invalid input: expected object, received number');
    expect(slow.problems[9]).toMatch(/^receipt is malformed at entries\.9: /);
    expect(fast.problems[0]).toBe('receipt is malformed at entries: Invalid input: expected array, received string');
    // Parsing the text is common to both; the first was about 1,000 times the second (6 s against a few ms).
    expect(slow.ms).toBeLessThan(Math.max(50 * fast.ms, 500));
  });

  it('answers one entry whose list holds a million bad elements as fast as the same bytes malformed once', () => {
    const many = refusal(`[${ZEROS}]`);
    const once = refusal(ONE_STRING);
    const slow = timed(many);
    const fast = timed(once);
    expect(slow.problems).toHaveLength(10);
    expect(slow.problems[0]).toBe('receipt is malformed at entries.0.changes.0: Invalid input: expected object, received number');
    expect(fast.problems[0]).toBe('receipt is malformed at entries.0.changes: Invalid input: expected array, received string');
    expect(slow.ms).toBeLessThan(Math.max(50 * fast.ms, 500));
  });
});

// Rule: a problem is one short line: a receipt with a hundred thousand extra keys is told the first few and how many
// more, not every key (zod's message names them all: a line of megabytes on the terminal and in logs).
describe('verify() on a receipt with many unrecognized keys', () => {
  it('names the first five and counts the rest', () => {
    const extra = Array.from({ length: 100_000 }, (_, i) => `"x${i}":0`).join(',');
    const text = `{"format":"interlock.receipt/v3","effectId":"a","entries":[],"head":{},${extra}}`;
    const read = verifyReceiptText(text);
    if (!read.json) throw new Error(read.error);
    const problem = read.verification.problems.find((line) => line.includes('Unrecognized keys'));
    expect(problem).toBe('receipt is malformed at (root): Unrecognized keys: "x0", "x1", "x2", "x3", "x4" and 99995 more');
  });
});
