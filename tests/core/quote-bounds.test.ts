// RULE: quote() does work bounded by its own budget (16,000 characters of output), whatever the shape of what it
// quotes, and never throws; values within its limits are quoted to exactly the bytes they always were.
// quote() records what a target handed back (a landed object, facts, an error). An answer that reuses one sub-object
// many times is small in memory but huge as a tree: 100 references to one list, four levels deep, is 100^4 values.
// Copied in full before being measured, it blocked the event loop for 24 s and then threw RangeError out of quote(),
// after the money had landed, so commit() never wrote the effect. Work is counted here as reads (getters and proxy
// traps), never timed; the hostile inputs throw past a read cap, so a quote() without bounds fails quickly instead
// of hanging the worker.
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/core/json.js';
import { QUOTE_LIMITS, quote, quoteError, quoteObject } from '../../src/core/quote.js';

/** A budget-sized quote reads a few thousand values; an unbounded one reads millions. */
const MAX_READS = 20_000;

/** Counts reads, and throws past `cap` so that quoting without bounds ends (as "[unreadable: …]") instead of hanging. */
function readCounter(cap = 200_000): { reads: () => number; read: () => void } {
  let reads = 0;
  return {
    reads: () => reads,
    read: () => {
      reads += 1;
      if (reads > cap) throw new Error(`read cap of ${cap} passed`);
    },
  };
}

/** `width` references to the same `inner`, nested `levels` deep. */
function shared(inner: unknown, width: number, levels: number): unknown {
  let node = inner;
  for (let level = 0; level < levels; level += 1) {
    const below = node;
    node = Array.from({ length: width }, () => below);
  }
  return node;
}

describe('quote() work is bounded by its budget', () => {
  it('quoting a target answer that shares sub-objects reads a bounded number of values', () => {
    const counter = readCounter(Number.POSITIVE_INFINITY);
    const leaf = Object.defineProperty({}, 'value', { enumerable: true, get: () => { counter.read(); return 'x'; } });
    const quoted = quoteObject({ id: 're_1', object: 'refund', status: 'succeeded', items: shared(leaf, 30, 4) });
    expect(JSON.stringify(quoted).length).toBeLessThanOrEqual(20_000);
    expect(quoted).toMatchObject({ truncated: true });
    // Without the budget: 810,000 reads (30^4), the whole shared tree copied before its size is looked at.
    expect(counter.reads()).toBeLessThanOrEqual(MAX_READS);
  });

  it('quoting an answer that hands back a new object on every read (a Proxy) stops once the budget is spent', () => {
    const counter = readCounter();
    const keys = Array.from({ length: 100 }, (_, index) => `k${index}`);
    const endless = (): object => new Proxy({}, {
      ownKeys: () => keys,
      getOwnPropertyDescriptor: () => ({ enumerable: true, configurable: true, value: null }),
      get: () => {
        counter.read();
        return endless();
      },
    });
    const quoted = quote({ id: 're_1', landed: endless() });
    expect(quoted).toMatchObject({ truncated: true });
    expect(counter.reads()).toBeLessThanOrEqual(MAX_READS);
  });

  it('an answer over the budget is previewed by the first characters its whole copy would have had', () => {
    const answer = { id: 're_1', items: shared({ value: 'x', amount: 2_000 }, 10, 4) };
    const whole = JSON.stringify(quote(answer, { ...QUOTE_LIMITS, totalChars: Number.POSITIVE_INFINITY }));
    expect(whole.length).toBeGreaterThan(100_000);
    expect(quote(answer)).toEqual({ truncated: true, preview: `${whole.slice(0, QUOTE_LIMITS.stringChars)}…` });
  });
});

describe('quote() output', () => {
  it('quotes a value within the limits to the same bytes as before (receipts sign them)', () => {
    const charge = { id: 'ch_1' };
    const answer: Record<string, unknown> = {
      id: 're_1', object: 'refund', amount: 2000, status: 'succeeded',
      metadata: { b: 'x', 2: 'two', 1: 'one' },
      created: new Date(0), never: new Date(Number.NaN), raw: new Uint8Array(4), big: 12345678901234567890n,
      nan: Number.NaN, missing: undefined, fn: () => 1, text: 'x\ud800y', long: 'z'.repeat(2_005),
      list: Array.from({ length: 102 }, (_, index) => index),
      wide: Object.fromEntries(Array.from({ length: 101 }, (_, index) => [`f${index}`, index])),
      charges: [charge, charge],
    };
    let deep: unknown = 'bottom';
    for (let level = 0; level < 9; level += 1) deep = [deep];
    answer.deep = deep;
    answer.self = answer;
    Object.defineProperty(answer, '__proto__', { value: 'kept', enumerable: true });
    const numbers = Array.from({ length: 100 }, (_, index) => index).join(',');
    const fields = Array.from({ length: 100 }, (_, index) => `"f${index}":${index}`).join(',');
    expect(JSON.stringify(quote(answer))).toBe(
      '{"id":"re_1","object":"refund","amount":2000,"status":"succeeded","metadata":{"1":"one","2":"two","b":"x"},'
      + '"created":"1970-01-01T00:00:00.000Z","never":null,"raw":"[4 bytes]","big":"12345678901234567890","nan":null,'
      + `"missing":null,"fn":null,"text":"x\ufffdy","long":"${'z'.repeat(2_000)}…","list":[${numbers},"… 2 more"],`
      + `"wide":{${fields},"…":"1 more fields"},"charges":[{"id":"ch_1"},{"id":"ch_1"}],`
      + '"deep":[[[[[[["[nested too deep]"]]]]]]],"self":"[circular]","(__proto__)":"kept"}',
    );
  });

  it('never throws, and always returns canonical JSON, whatever it is handed', () => {
    const { proxy: revoked, revoke } = Proxy.revocable({}, {});
    revoke();
    const holed: unknown[] = [1, 2, 3];
    delete holed[1];
    const sparse: unknown[] = [];
    sparse.length = 2 ** 32 - 1;
    sparse[1] = 'one';
    const unsayable = new Error('unused');
    Object.defineProperty(unsayable, 'message', { get: () => { throw new Error('no message either'); } });
    const hostile: [unknown, unknown][] = [
      [{ get status() { throw new Error('boom'); } }, '[unreadable: boom]'],
      [{ landed: revoked }, expect.stringMatching(/^\[unreadable: .*revoked/)],
      [{ get status() { throw unsayable; } }, '[unreadable: an error that cannot be read]'],
      [{ get status() { throw Object.create(null); } }, '[unreadable: an error that cannot be read]'],
      [{ text: 'y'.repeat(10_000_000) }, { text: `${'y'.repeat(2_000)}…` }],
      // A hole is written as null, never kept as a hole (which canonical JSON refuses).
      [holed, [1, null, 3]],
      [sparse, [null, 'one', ...Array.from({ length: 98 }, () => null), `… ${2 ** 32 - 101} more`]],
      // A cut through a surrogate pair leaves no lone half behind.
      [`${'a'.repeat(1_999)}😀`, `${'a'.repeat(1_999)}\ufffd…`],
    ];
    for (const [value, expected] of hostile) {
      const quoted = quote(value);
      expect(quoted).toEqual(expected);
      expect(() => canonicalJson(quoted)).not.toThrow();
    }
  });

  it('quoteError never throws, for an error whose message cannot be read or an answer too big to quote', () => {
    const unsayable = new Error('unused');
    Object.defineProperty(unsayable, 'message', { get: () => { throw new Error('no message either'); } });
    expect(quoteError(unsayable)).toBe('an error that cannot be read');
    const counter = readCounter();
    const leaf = Object.defineProperty({}, 'value', { enumerable: true, get: () => { counter.read(); return 'x'; } });
    expect(quoteError(shared(leaf, 100, 4))).toMatch(/^\{"truncated":true,"preview":"\[\[\[\[/);
    expect(counter.reads()).toBeLessThanOrEqual(MAX_READS);
  });
});
