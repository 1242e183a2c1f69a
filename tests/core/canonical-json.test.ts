// Canonical JSON is what every hash, effect id and signature is computed over, so it must be exactly RFC 8785 and
// must refuse, with the offending path, any value that has no single canonical form.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { assertJson, canonicalFields, canonicalJson, canonicalJsonWithout, joinFields, nestsDeeperThan, NonCanonicalValueError } from '../../src/core/json.js';

/** A double from its IEEE 754 bits, the way RFC 8785 Appendix B lists its number vectors. */
function fromBits(hex: string): number {
  const view = new DataView(new ArrayBuffer(8));
  view.setBigUint64(0, BigInt(`0x${hex}`));
  return view.getFloat64(0);
}

function rejection(value: unknown): NonCanonicalValueError {
  try {
    canonicalJson(value);
  } catch (error) {
    expect(error).toBeInstanceOf(NonCanonicalValueError);
    return error as NonCanonicalValueError;
  }
  throw new Error(`canonicalJson accepted ${String(value)}`);
}

describe('canonical JSON (RFC 8785)', () => {
  it('serialises the RFC 8785 §3.2.2 example exactly: sorted keys, ES6 numbers, minimal string escapes', () => {
    const input = String.raw`{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001],"string":"\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/","literals":[null,true,false]}`;
    const expected = String.raw`{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`;
    expect(canonicalJson(JSON.parse(input))).toBe(expected);
  });

  it('sorts keys by UTF-16 code units, not by code points (RFC 8785 §3.2.3 example)', () => {
    const input = {
      '\u20ac': 'Euro Sign',
      '\r': 'Carriage Return',
      '\ufb33': 'Hebrew Letter Dalet With Dagesh',
      '1': 'One',
      '\ud83d\ude00': 'Emoji: Grinning Face',
      '\u0080': 'Control',
      '\u00f6': 'Latin Small Letter O With Diaeresis',
    };
    // U+1F600 (surrogates D83D DE00) sorts before U+FB33 in UTF-16 order, though its code point is larger.
    const expected = '{"\\r":"Carriage Return","1":"One","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis","\u20ac":"Euro Sign","\ud83d\ude00":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}';
    expect(canonicalJson(input)).toBe(expected);
  });

  it('sorts nested objects too and keeps array order', () => {
    expect(canonicalJson({ b: [3, 1, { z: 1, a: 2 }], a: { d: null, c: false } })).toBe('{"a":{"c":false,"d":null},"b":[3,1,{"a":2,"z":1}]}');
  });

  it.each([
    ['0000000000000000', '0'],
    ['8000000000000000', '0'],
    ['0000000000000001', '5e-324'],
    ['8000000000000001', '-5e-324'],
    ['7fefffffffffffff', '1.7976931348623157e+308'],
    ['ffefffffffffffff', '-1.7976931348623157e+308'],
    ['4340000000000000', '9007199254740992'],
    ['c340000000000000', '-9007199254740992'],
    ['4430000000000000', '295147905179352830000'],
    ['44b52d02c7e14af5', '9.999999999999997e+22'],
    ['44b52d02c7e14af6', '1e+23'],
    ['44b52d02c7e14af7', '1.0000000000000001e+23'],
    ['444b1ae4d6e2ef4e', '999999999999999700000'],
    ['444b1ae4d6e2ef4f', '999999999999999900000'],
    ['444b1ae4d6e2ef50', '1e+21'],
    ['3eb0c6f7a0b5ed8c', '9.999999999999997e-7'],
    ['3eb0c6f7a0b5ed8d', '0.000001'],
    ['41b3de4355555553', '333333333.3333332'],
    ['41b3de4355555554', '333333333.33333325'],
    ['41b3de4355555555', '333333333.3333333'],
    ['41b3de4355555556', '333333333.3333334'],
    ['41b3de4355555557', '333333333.33333343'],
    ['becbf647612f3696', '-0.0000033333333333333333'],
    ['43143ff3c1cb0959', '1424953923781206.2'],
  ])('writes the double with bits %s as %s (RFC 8785 Appendix B)', (bits, text) => {
    expect(canonicalJson(fromBits(bits))).toBe(text);
  });

  it('every object is written with its own keys sorted, whatever shapes came before it (json.ts keeps the sorted key lists of shapes it has seen)', () => {
    /** The obvious serialiser, to check the fast one against. */
    const reference = (value: unknown): string => {
      if (value === null || typeof value !== 'object') return JSON.stringify(value);
      if (Array.isArray(value)) return `[${value.map(reference).join(',')}]`;
      const object = value as Record<string, unknown>;
      return `{${Object.keys(object).sort().map((key) => `${JSON.stringify(key)}:${reference(object[key])}`).join(',')}}`;
    };
    // Few key names, so objects share first keys and key sets in other orders and lengths.
    const key = fc.constantFrom('a', 'b', 'c', 'kind', 'v', 'amount', 'z');
    const json = fc.letrec((tie) => ({
      value: fc.oneof({ depthSize: 'small' }, fc.integer(), fc.string(), fc.boolean(), fc.constant(null), tie('object'), fc.array(tie('value'), { maxLength: 3 })),
      object: fc.dictionary(key, tie('value'), { maxKeys: 6 }),
    }));
    fc.assert(
      fc.property(json.object, (object) => {
        expect(canonicalJson(object)).toBe(reference(object));
        expect(canonicalJsonWithout(object, new Set(['a']))).toBe(reference(Object.fromEntries(Object.entries(object).filter(([name]) => name !== 'a'))));
        expect(joinFields(canonicalFields(object))).toBe(reference(object));
      }),
      { numRuns: 2_000 },
    );
  });

  it('writes any string as JSON.stringify does, and refuses exactly those with a lone surrogate (strings with nothing to escape are quoted as they are)', () => {
    // Any UTF-16 code units: controls, quotes, backslashes, paired and lone surrogates, in values and in keys.
    const unit = fc.oneof(fc.integer({ min: 0, max: 0xffff }), fc.constantFrom(0x22, 0x5c, 0x00, 0x1f, 0x20, 0x7f, 0xd800, 0xdbff, 0xdc00, 0xdfff)).map((code) => String.fromCharCode(code));
    const text = fc.array(unit, { maxLength: 12 }).map((units) => units.join(''));
    const lone = (value: string) => /\p{Surrogate}/u.test(value);
    fc.assert(
      fc.property(text, text, (value, key) => {
        if (lone(value)) expect(() => canonicalJson(value)).toThrow(NonCanonicalValueError);
        else expect(canonicalJson(value)).toBe(JSON.stringify(value));
        if (lone(value) || lone(key)) expect(() => canonicalJson({ [key]: [value] })).toThrow(NonCanonicalValueError);
        else expect(canonicalJson({ [key]: [value] })).toBe(`{${JSON.stringify(key)}:[${JSON.stringify(value)}]}`);
      }),
      { numRuns: 5_000 },
    );
  });

  it('writes any finite number as JSON.stringify does', () => {
    fc.assert(
      fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (value) => {
        expect(canonicalJson([value])).toBe(`[${JSON.stringify(value)}]`);
      }),
      { numRuns: 5_000 },
    );
  });

  it('writes -0 as 0 and 1e21 in exponent form', () => {
    expect(canonicalJson({ zero: -0, big: 1e21, below: 1e20 })).toBe('{"below":100000000000000000000,"big":1e+21,"zero":0}');
  });

  it('escapes only the control characters, the quote and the backslash, with short forms where JSON has them', () => {
    expect(canonicalJson('\b\t\n\f\r\u0000\u001f"\\/\u007f\u2028é')).toBe('"\\b\\t\\n\\f\\r\\u0000\\u001f\\"\\\\/\u007f\u2028é"');
  });

  it('drops undefined object properties, as JSON does, and accepts objects without a prototype', () => {
    const bare = Object.create(null) as Record<string, unknown>;
    bare.b = 1;
    bare.a = undefined;
    expect(canonicalJson({ a: undefined, b: 1 })).toBe('{"b":1}');
    expect(canonicalJson(bare)).toBe('{"b":1}');
  });

  describe('refuses values that have no canonical form, naming where they are', () => {
    class Refund {
      amount = 1;
    }

    it.each([
      ['NaN', { amount: Number.NaN }, '$.amount', 'NaN'],
      ['Infinity', { a: { b: Number.POSITIVE_INFINITY } }, '$.a.b', 'Infinity'],
      ['-Infinity', [Number.NEGATIVE_INFINITY], '$[0]', '-Infinity'],
      ['undefined inside an array', { list: [1, undefined, 3] }, '$.list[1]', 'undefined inside an array'],
      ['a Date', { when: new Date(0) }, '$.when', 'Date'],
      ['a Map', { facts: new Map([['a', 1]]) }, '$.facts', 'Map'],
      ['a Set', [new Set([1])], '$[0]', 'Set'],
      ['a class instance', { refund: new Refund() }, '$.refund', 'Refund'],
      ['a bigint', { amount: 10n }, '$.amount', 'bigint'],
      ['a function', { toJSON: () => 'x' }, '$.toJSON', 'function'],
      ['a symbol', { s: Symbol('x') }, '$.s', 'symbol'],
    ])('refuses %s', (_what, value, path, mentions) => {
      const error = rejection(value);
      expect(error.code).toBe('non_canonical_value');
      expect(error.path).toBe(path);
      expect(error.message).toContain(path);
      expect(error.message).toContain(mentions);
    });

    it('refuses undefined at the top level', () => {
      expect(rejection(undefined).path).toBe('$');
    });

    it('refuses a hole in a sparse array, which would otherwise be written as "[1,,2]" (not JSON at all)', () => {
      // eslint-disable-next-line no-sparse-arrays
      const error = rejection({ list: [1, , 2] });
      expect(error.path).toBe('$.list[1]');
    });

    it('refuses a string with a lone surrogate (RFC 8785 §3.2.2.2), in a value or in a key', () => {
      expect(rejection({ note: 'a\udead' }).path).toBe('$.note');
      expect(rejection({ ['k\ud800']: 1 }).message).toContain('surrogate');
    });

    it('refuses a "__proto__" key instead of silently dropping it from the hashed form', () => {
      // JSON.parse makes "__proto__" an own property; copying it by assignment would set a prototype instead, and
      // the field would vanish from the canonical bytes while still being there for anyone who reads the object.
      const error = rejection(JSON.parse('{"amount":1,"__proto__":{"amount":999}}'));
      expect(error.path).toBe('$.__proto__');
    });

    it('refuses a circular structure with an error instead of overflowing the stack', () => {
      const loop: Record<string, unknown> = { a: 1 };
      loop.self = { back: loop };
      expect(rejection(loop).path).toBe('$.self.back');
    });
  });

  it('assertJson returns a plain copy whose canonical form equals the input\'s', () => {
    const value = { b: [1, 'x', null, true], a: { c: 1.5 } };
    const copy = assertJson(value);
    expect(copy).toEqual(value);
    expect(copy).not.toBe(value);
    expect(canonicalJson(copy)).toBe(canonicalJson(value));
  });
});

describe('nestsDeeperThan (the depth rule of proposals, case facts and webhook events)', () => {
  const nested = (levels: number): unknown => {
    let value: unknown = 1;
    for (let i = 0; i < levels; i += 1) value = i % 2 === 0 ? { a: value } : [value];
    return value;
  };
  it('counts {} and [] as one level each, a scalar as none, and answers exactly at the bound', () => {
    expect(nestsDeeperThan(7, 0)).toBe(false);
    expect(nestsDeeperThan({}, 0)).toBe(true);
    expect(nestsDeeperThan(nested(64), 64)).toBe(false);
    expect(nestsDeeperThan(nested(65), 64)).toBe(true);
    expect(nestsDeeperThan({ shallow: 1, deep: nested(65) }, 64)).toBe(true);
  });
  it('answers for nesting far past what recursion survives', () => {
    expect(nestsDeeperThan(nested(200_000), 64)).toBe(true);
  });
});
