// Quoting what the outside world said. Entries record facts a target read, objects it returned and errors it
// raised; none of that is under the caller's control, so it may be nested without end, huge, or hold strings with
// no canonical form. A refusal or a commit must never fail to be written because of what it quotes (issue 6, item
// 9), so every such value passes through quote(): the result is always plain, canonical, bounded JSON.
import { hasLoneSurrogate, type Json, type JsonObject } from './json.js';

export type QuoteLimits = { depth: number; stringChars: number; items: number; totalChars: number };

export const QUOTE_LIMITS: QuoteLimits = { depth: 8, stringChars: 2_000, items: 100, totalChars: 16_000 };

const CUT = '…';

function quoteString(text: string, limits: QuoteLimits): string {
  // A lone surrogate becomes U+FFFD, as a UTF-8 encoder would write it; the rest of the text is kept.
  const clean = hasLoneSurrogate(text) ? text.replace(/\p{Surrogate}/gu, '\ufffd') : text;
  return clean.length > limits.stringChars ? `${clean.slice(0, limits.stringChars)}${CUT}` : clean;
}

function quoteValue(value: unknown, depth: number, limits: QuoteLimits, seen: Set<object>): Json {
  switch (typeof value) {
    case 'string':
      return quoteString(value, limits);
    case 'number':
      return Number.isFinite(value) ? value : null;
    case 'boolean':
      return value;
    case 'bigint':
      return value.toString();
    case 'undefined':
    case 'function':
    case 'symbol':
      return null;
    case 'object': {
      if (value === null) return null;
      if (seen.has(value)) return '[circular]';
      if (depth >= limits.depth) return '[nested too deep]';
      if (value instanceof Date) return Number.isFinite(value.getTime()) ? value.toISOString() : null;
      if (value instanceof Uint8Array) return `[${value.byteLength} bytes]`;
      seen.add(value);
      try {
        if (Array.isArray(value)) {
          const items = value.slice(0, limits.items).map((item: unknown) => quoteValue(item, depth + 1, limits, seen));
          if (value.length > limits.items) items.push(`${CUT} ${value.length - limits.items} more`);
          return items;
        }
        const out: JsonObject = {};
        let kept = 0;
        const keys = Object.keys(value);
        for (const key of keys) {
          if (kept >= limits.items) {
            out[CUT] = `${keys.length - kept} more fields`;
            break;
          }
          // "__proto__" cannot be copied as data; its value is kept under a name that can.
          const name = key === '__proto__' ? '(__proto__)' : quoteString(key, limits);
          out[name] = quoteValue((value as Record<string, unknown>)[key], depth + 1, limits, seen);
          kept += 1;
        }
        return out;
      } finally {
        seen.delete(value);
      }
    }
    default:
      return null;
  }
}

/** Bounded, canonical JSON for anything a target handed back; never throws. */
export function quote(value: unknown, limits: QuoteLimits = QUOTE_LIMITS): Json {
  let quoted: Json;
  try {
    quoted = quoteValue(value, 0, limits, new Set());
  } catch (error) {
    // A getter that throws, a revoked proxy: the value cannot be read, which is itself the fact to record.
    return `[unreadable: ${quoteString(error instanceof Error ? error.message : String(error), limits)}]`;
  }
  const text = JSON.stringify(quoted);
  if (text.length <= limits.totalChars) return quoted;
  return { truncated: true, preview: `${text.slice(0, Math.min(limits.stringChars, limits.totalChars))}${CUT}` };
}

/** quote() for a value that must stay an object (a landed result, a set of facts). */
export function quoteObject(value: unknown, limits: QuoteLimits = QUOTE_LIMITS): JsonObject {
  const quoted = quote(value, limits);
  if (typeof quoted === 'object' && quoted !== null && !Array.isArray(quoted)) return quoted;
  return { value: quoted };
}

/** A short, safe message for an error, for entries and answers. */
export function quoteError(error: unknown): string {
  const text = error instanceof Error ? error.message : typeof error === 'string' ? error : (() => {
    try {
      return JSON.stringify(quote(error));
    } catch {
      return 'an unreadable error';
    }
  })();
  return quoteString(text, { ...QUOTE_LIMITS, stringChars: 500 });
}
