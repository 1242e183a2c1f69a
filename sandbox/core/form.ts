// Decodes Stripe's form encoding: `a[b]=v` nests, `a[0]=v` and `a[]=v` build arrays, an empty value means null.
// Brackets may arrive raw or percent-encoded. Containers have no prototype so keys like `__proto__` stay data.
import { invalidRequest } from './errors.js';

export type ParamValue = string | ParamValue[] | ParamMap;
export interface ParamMap {
  [key: string]: ParamValue;
}

const keyPattern = /^([^[\]]+)((?:\[[^[\]]*\])*)$/;

/**
 * How deep a parameter may nest (`a[b][c]` is 3). Stripe's deepest parameters are a handful of levels; the cap keeps
 * the recursive walks over parameters (normalising, validating, comparing for idempotency) off the end of the stack,
 * so a key with thousands of brackets is the client's 400, not the sandbox's 500. The limit is the sandbox's own.
 */
export const MAX_PARAM_DEPTH = 32;

export function tooDeep(param: string): never {
  throw invalidRequest(`Invalid ${param}: parameters can be nested at most ${MAX_PARAM_DEPTH} levels deep.`, { param });
}

function emptyMap(): ParamMap {
  return Object.create(null) as ParamMap;
}

export function parseForm(encoded: string): ParamMap {
  const root = emptyMap();
  if (encoded === '') return root;
  for (const [rawKey, value] of new URLSearchParams(encoded)) {
    const match = keyPattern.exec(rawKey);
    if (match === null) {
      root[rawKey] = value;
      continue;
    }
    const head = match[1] ?? rawKey;
    const path = [...(match[2] ?? '').matchAll(/\[([^[\]]*)\]/g)].map((m) => m[1] ?? '');
    if (path.length + 1 > MAX_PARAM_DEPTH) tooDeep(head);
    assign(root, [head, ...path], value);
  }
  return normaliseArrays(root) as ParamMap;
}

function assign(root: ParamMap, path: string[], value: string): void {
  let container: ParamMap | ParamValue[] = root;
  for (let i = 0; i < path.length; i++) {
    const segment = path[i] ?? '';
    const last = i === path.length - 1;
    if (Array.isArray(container)) {
      if (last) {
        container.push(value);
        return;
      }
      // `a[][b]=1` opens a new element for each pair, as Rack-style parsers do.
      const next = emptyMap();
      container.push(next);
      container = next;
      continue;
    }
    if (last) {
      container[segment] = value;
      return;
    }
    const nextSegment = path[i + 1] ?? '';
    let child: ParamValue | undefined = container[segment];
    if (child === undefined || typeof child === 'string') {
      child = nextSegment === '' ? [] : emptyMap();
      container[segment] = child;
    }
    container = child;
  }
}

/**
 * Turns maps whose keys are all indices (`a[0]`, `a[1]`) into arrays ordered by index. A `metadata` map is never one:
 * its keys are the caller's own strings, and `metadata[42]=x` keeps the key "42" (renumbering it would also make two
 * different requests look the same to the idempotency check, which compares these parameters).
 */
function normaliseArrays(value: ParamValue, name = ''): ParamValue {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return value.map((item) => normaliseArrays(item));
  const keys = Object.keys(value);
  for (const key of keys) value[key] = normaliseArrays(value[key] ?? '', key);
  if (name !== 'metadata' && keys.length > 0 && keys.every((key) => /^\d+$/.test(key))) {
    return keys.sort((a, b) => Number(a) - Number(b)).map((key) => value[key] ?? '');
  }
  return value;
}

/** Stable text form of parameters, for comparing an idempotent retry with its original. */
export function canonicalParams(value: ParamValue): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalParams).join(',')}]`;
  const keys = Object.keys(value).sort();
  return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalParams(value[key] ?? '')}`).join(',')}}`;
}
