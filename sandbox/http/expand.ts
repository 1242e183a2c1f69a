// `expand[]`: replaces id strings along dotted paths with the objects they name (stripe-facts §7); list
// responses take paths starting with `data.`. Works on a copy so stored objects keep their ids.
import type { StripeObject } from '../core/store.js';

export type Finder = (id: string) => StripeObject | undefined;
/** Include-only fields such as `charge.refunds`, computed when expanded. */
export type VirtualExpansion = (object: Record<string, unknown>) => unknown;

const MAX_DEPTH = 4;

export function expand(result: unknown, paths: readonly string[], find: Finder, virtual: ReadonlyMap<string, VirtualExpansion>): unknown {
  if (paths.length === 0) return result;
  const copy: unknown = structuredClone(result);
  for (const path of paths) walk(copy, path.split('.').slice(0, MAX_DEPTH), find, virtual);
  return copy;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function walk(node: unknown, segments: readonly string[], find: Finder, virtual: ReadonlyMap<string, VirtualExpansion>): void {
  if (Array.isArray(node)) {
    for (const item of node) walk(item, segments, find, virtual);
    return;
  }
  const [key, ...rest] = segments;
  if (!isRecord(node) || key === undefined) return;
  const computed = virtual.get(`${String(node['object'])}.${key}`);
  if (computed !== undefined) node[key] = computed(node);
  const value = node[key];
  if (typeof value === 'string') {
    const found = find(value);
    if (found !== undefined) node[key] = structuredClone(found);
  }
  if (rest.length > 0) walk(node[key], rest, find, virtual);
}
