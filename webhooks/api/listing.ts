// Listing effects without an index of its own: the effect -> partition hash that binding writes for every effect
// (whoever proposed it: this API, a queue producer, a direct submit) is read with HSCAN, and each page ends at a
// position HSCAN can resume from. That position is HSCAN's cursor plus, when a page ends inside one HSCAN batch, the
// last effect id handed out from it, so a page never costs more than a few HSCAN steps whatever the total. HSCAN's
// guarantee carries over: an effect present for the whole listing is listed at least once; one may be listed twice
// (when the hash grows past a resize mid-listing), and the order is Redis's, not time. A request id names its
// effect directly (the effect id is derived from it), so `?request=` costs one lookup.
import { effectIdFor, scanEffects, type Entry, type Stores } from '../../src/interlock.js';
import { stateOf, summaryOf, type EffectSummary } from './effect-view.js';
import { LIST_CURSOR, type EffectState } from './schemas.js';

export type ListFilter = { request?: string | undefined; subject?: string | undefined; state?: EffectState | undefined; outcome?: string | undefined };

/** Whether an effect's entries pass the state and outcome filters (the outcome is the one its state was read from). */
function matches(entries: readonly Entry[], filter: ListFilter): boolean {
  if (filter.state === undefined && filter.outcome === undefined) return true;
  const read = stateOf(entries);
  return (filter.state === undefined || read.state === filter.state) && (filter.outcome === undefined || read.outcome === filter.outcome);
}
export type ListPage = { data: EffectSummary[]; hasMore: boolean; next: string | null };

/** At most this many index entries are looked at for one page, so a rare filter cannot make one request scan everything. */
export const SCAN_BUDGET = 5_000;

type Position = { cursor: string; after: string | null };

function decode(token: string | undefined): Position {
  const match = token === undefined ? null : LIST_CURSOR.exec(token);
  return { cursor: match?.[1] ?? '0', after: match?.[2] ?? null };
}

function encode(position: Position): string {
  return position.after === null ? position.cursor : `${position.cursor}.${position.after}`;
}

export function createEffectListing(stores: Stores, options: { scanBudget?: number } = {}) {
  const budget = options.scanBudget ?? SCAN_BUDGET;

  async function entriesOf(partition: string, effectId: string): Promise<Entry[]> {
    return stores.journal.entries(partition, effectId);
  }

  async function byRequest(filter: ListFilter): Promise<ListPage> {
    const effectId = effectIdFor({ requestId: filter.request, effect: null });
    const partition = await stores.journal.partitionOf(effectId);
    if (partition === null || (filter.subject !== undefined && filter.subject !== partition)) return { data: [], hasMore: false, next: null };
    const entries = await entriesOf(partition, effectId);
    if (entries.length === 0 || !matches(entries, filter)) return { data: [], hasMore: false, next: null };
    return { data: [summaryOf(effectId, partition, entries)], hasMore: false, next: null };
  }

  return async function list(filter: ListFilter, limit: number, startingAfter: string | undefined): Promise<ListPage> {
    if (filter.request !== undefined) return byRequest(filter);
    const data: EffectSummary[] = [];
    let position = decode(startingAfter);
    let examined = 0;
    for (;;) {
      // A filtered page may look at many entries for each it keeps; an unfiltered one keeps about what it looks at.
      const batch = await scanEffects(stores, position.cursor, filter.subject !== undefined || filter.state !== undefined || filter.outcome !== undefined ? 500 : Math.max(limit, 20));
      let items = batch.effects;
      if (position.after !== null) {
        const at = items.findIndex((item) => item.effectId === position.after);
        // The batch changed since (the hash was resized): take it whole; HSCAN may repeat, never skip.
        if (at >= 0) items = items.slice(at + 1);
      }
      examined += items.length;
      const candidates = items.filter((item) => filter.subject === undefined || item.partition === filter.subject);
      // Entries are read a few at a time, about as many as the page still needs, not the whole batch.
      for (let from = 0; from < candidates.length; ) {
        const need = limit - data.length;
        const chunk = candidates.slice(from, from + (filter.state === undefined && filter.outcome === undefined ? need : Math.max(need, 25)));
        from += chunk.length;
        const read = await Promise.all(chunk.map(async (item) => ({ item, entries: await entriesOf(item.partition, item.effectId) })));
        for (const [index, { item, entries }] of read.entries()) {
          // A binding comes before the first entry: an effect being recorded right now has none yet.
          if (entries.length === 0) continue;
          if (!matches(entries, filter)) continue;
          data.push(summaryOf(item.effectId, item.partition, entries));
          if (data.length === limit) {
            const lastOfBatch = from === candidates.length && index === read.length - 1 && candidates.at(-1) === items.at(-1);
            const next: Position = lastOfBatch ? { cursor: batch.cursor, after: null } : { cursor: position.cursor, after: item.effectId };
            const hasMore = !(lastOfBatch && batch.cursor === '0');
            return { data, hasMore, next: hasMore ? encode(next) : null };
          }
        }
      }
      if (batch.cursor === '0') return { data, hasMore: false, next: null };
      position = { cursor: batch.cursor, after: null };
      if (examined >= budget) return { data, hasMore: true, next: encode(position) };
    }
  };
}
