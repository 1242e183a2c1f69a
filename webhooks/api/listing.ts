// Listing effects newest first: the effects-by-time index that binding writes for every effect (whoever proposed
// it: this API, a queue producer, a direct submit) is read a batch at a time from the newest down, and each page
// ends at a position `<bound at>.<effect id>` the next page resumes from exactly (no effect repeated or skipped). A
// page says there is more only when it found one more effect that passes its filters after its last: an older effect
// of another subject or state is no next page. A filtered page looks at most SCAN_BUDGET effects (STATE_SCAN_BUDGET
// when it filters by state or outcome, which reads the journal of each), those after its last included, and then
// answers what it found with a position to go on from, so a rare filter cannot make one request read everything. A
// request id names its effect directly (the effect id is derived from it), so `?request=` costs one lookup.
import { effectIdFor, effectsNewestFirst, entriesOfStored, unhashedEntriesOfStored, type EffectsPosition, type Entry, type Stores } from '../../src/interlock.js';
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

/** The state and outcome filters are read from an effect's journal; its subject is known from the index. */
const readsJournals = (filter: ListFilter) => filter.state !== undefined || filter.outcome !== undefined;

/**
 * An effect's entries when it passes the filters, else null (an effect being recorded right now has none yet: its
 * binding comes before its first entry). Whether it passes is read from its stored chain without hashing it
 * (unhashedEntriesOfStored): most effects a page filtered by state looks at do not pass, and hashing is most of what
 * reading a chain costs. One that passes, and a chain that does not read, are read in full as `entries` reads them (a
 * chain that does not read fails the request whatever its state, as 500 journal_damaged: entriesOfStored).
 */
function passing(effectId: string, stored: string | null, filter: ListFilter): Entry[] | null {
  if (readsJournals(filter)) {
    const said = unhashedEntriesOfStored(effectId, stored);
    if (said !== null && (said.length === 0 || !matches(said, filter))) return null;
  }
  const entries = entriesOfStored(effectId, stored);
  return entries.length === 0 || !matches(entries, filter) ? null : entries;
}

/**
 * At most this many index entries are looked at for one page filtered by subject alone (it reads their subjects, no
 * journal), so a rare filter cannot make one request scan everything.
 */
export const SCAN_BUDGET = 5_000;

/**
 * At most this many for a page filtered by state or outcome, which reads the journal of each effect it looks at (of
 * its subject, when it names one too): what one request of a read token can cost the event loop the gate shares.
 */
export const STATE_SCAN_BUDGET = 1_000;

function decode(token: string | undefined): EffectsPosition | null {
  const match = token === undefined ? null : LIST_CURSOR.exec(token);
  return match ? { boundAt: Number(match[1]), effectId: match[2] ?? '' } : null;
}

function encode(position: EffectsPosition): string {
  return `${position.boundAt}.${position.effectId}`;
}

/** `scanBudget`: the budget of every filtered page (tests), instead of SCAN_BUDGET or STATE_SCAN_BUDGET. */
export function createEffectListing(stores: Stores, options: { scanBudget?: number } = {}) {
  async function byRequest(filter: ListFilter): Promise<ListPage> {
    const effectId = effectIdFor({ requestId: filter.request, effect: null });
    const partition = await stores.journal.partitionOf(effectId);
    if (partition === null || (filter.subject !== undefined && filter.subject !== partition)) return { data: [], hasMore: false, next: null };
    const entries = await stores.journal.entries(partition, effectId);
    if (entries.length === 0 || !matches(entries, filter)) return { data: [], hasMore: false, next: null };
    return { data: [summaryOf(effectId, partition, entries, stores.config.creditCurrency)], hasMore: false, next: null };
  }

  return async function list(filter: ListFilter, limit: number, startingAfter: string | undefined): Promise<ListPage> {
    if (filter.request !== undefined) return byRequest(filter);
    const data: EffectSummary[] = [];
    const filtered = filter.subject !== undefined || readsJournals(filter);
    const budget = options.scanBudget ?? (readsJournals(filter) ? STATE_SCAN_BUDGET : SCAN_BUDGET);
    let position = decode(startingAfter);
    let examined = 0;
    // Where the page ended once it is full: from then on the listing looks only for one more match, its has_more.
    let pageEnd: EffectsPosition | null = null;
    for (;;) {
      // A filtered page may look at many effects for each it keeps; an unfiltered one keeps what it looks at.
      const want = filtered ? 200 : limit + 1;
      const batch = await effectsNewestFirst(stores, position, want);
      examined += batch.length;
      const candidates = batch.filter((item) => filter.subject === undefined || item.partition === filter.subject);
      // Entries are read a few at a time, about as many as the page and the one match after it still need, not the
      // whole batch.
      for (let from = 0; from < candidates.length; ) {
        const need = limit + 1 - data.length;
        const chunk = candidates.slice(from, from + (readsJournals(filter) ? Math.max(need, 25) : need));
        from += chunk.length;
        // Asked for in one turn of the event loop, so written to Redis together (redis/client.ts batchWrites): one
        // round trip for the chunk.
        const read = await Promise.all(chunk.map(async (item) => ({ item, stored: await stores.journal.storedChain(item.partition, item.effectId) })));
        for (const { item, stored } of read) {
          const entries = passing(item.effectId, stored, filter);
          if (entries === null) continue;
          if (pageEnd !== null) return { data, hasMore: true, next: encode(pageEnd) };
          data.push(summaryOf(item.effectId, item.partition, entries, stores.config.creditCurrency));
          if (data.length === limit) pageEnd = { boundAt: item.boundAt, effectId: item.effectId };
        }
      }
      const last = batch.at(-1);
      if (last === undefined || batch.length < want) return { data, hasMore: false, next: null };
      position = { boundAt: last.boundAt, effectId: last.effectId };
      // The budget spent: more may follow, from where the page ended (or, short of a full page, where it stopped).
      if (examined >= budget) return { data, hasMore: true, next: encode(pageEnd ?? position) };
    }
  };
}
