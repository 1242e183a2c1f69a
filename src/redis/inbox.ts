// The escalation inbox in Redis (issue 13 §4): an index of items people must look at, and their actions.
//
// What decides is the effect's own chain: the entry that opened an item (AMBIGUOUS, a REFUSED) and the RESOLVED
// entry a person's action appends (act-3.lua, at most once per item, with who acted kept beside the effect's state).
// The index (keys.inbox*, one hash tag of its own) is how items are listed. It cannot be written in the same atomic
// step as those entries on a Redis Cluster (another slot), so it is written right after them and kept in step: an
// item is opened again, harmlessly, by whoever meets the settled effect later (a redelivered job, the next recovery
// pass), and an item whose chain already holds an action is shown and re-indexed as closed, whatever the index says.
//
// A failed case's item (case_failed) has no effect behind it (core/inbox.ts): the index is its only record. Opened
// once per failure (its id names the failure), it is closed in the index, first closure standing (close-inbox-3): by a
// person's dismissal, whose closure keeps who, when and why, or by the decisions worker once the case is decided or
// fails again (openCaseFailure, closeCaseFailures). A case's open items are indexed by case (keys.inboxCaseFailures)
// in the same scripts that open and close them, so finding them costs the same whatever else the inbox holds.
import { isEffectId } from '../core/effect-id.js';
import { actionsOf, creditCurrencyChange, decidedPremises, deviatedKind, exposureDisputesDecided, factsShownHash, inboxItemFor, inboxItemId, parseInboxItemId, reapprovedAlready, ALLOWED_ACTIONS, INBOX_KINDS, type EffectInboxKind, type InboxItemDraft, type InboxKind } from '../core/inbox.js';
import type { Actor, Draft, EntryOf, OperatorAction, Reapproval, Resolution } from '../core/entries.js';
import { InterlockError } from '../core/errors.js';
import type { JsonObject } from '../core/json.js';
import { alertIdOf, type Alerts } from './alerts.js';
import type { RedisClient } from './client.js';
import type { Journal } from './journal.js';
import type { Keys } from './keys.js';
import { batchesAfter, type IndexPosition } from './newest-first.js';
import { createScriptRunner } from './scripts.js';

/**
 * A re-approval between the moment its item is closed and the moment its proposal is recorded (keys.reapprovalsPending):
 * what the proposal needs that the item's closure does not hold. `premises` are the facts read for the person's
 * decision, so a proposal made later is judged against what they saw, never against facts read after it.
 */
export type PendingReapproval = { item: string; approval: string; by: Actor; note: string; premises: JsonObject; at: number };

/**
 * `unsigned`: set on the dismissal of an item whose effect's journal is gone (Redis holds no chain for it), saying why
 * the closure is kept in the index alone with no signed entry on a receipt. A failed case's item, which never has a
 * receipt, does not carry it.
 */
export type InboxClosure = { action: OperatorAction; by: Actor; note: string; resolution: Resolution | null; reapproval: Reapproval | null; at: number; unsigned?: string };
/**
 * `factsShown`: the fingerprint of the facts the item shows (factsShownHash), set by withFactsShown for a view a
 * re-approval is made from (null when the item offers none); absent where nobody asked for it.
 */
export type InboxItem = InboxItemDraft & { openedAt: number; status: 'open' | 'closed'; closure: InboxClosure | null; factsShown?: string | null };
export type InboxStatus = 'open' | 'closed';
export type InboxFilter = { status?: InboxStatus; kind?: InboxKind | undefined; subject?: string | undefined; effect?: string | undefined };
export type InboxPage = { data: InboxItem[]; hasMore: boolean; next: string | null };
export type ActRequest = { action: OperatorAction; by: Actor; note: string; resolution?: Resolution | null; reapproval?: Reapproval | null };

/** `<opened or closed at>.<item id>`: where a page ended, in the index's newest-first order. */
export const INBOX_CURSOR = /^(\d{1,16})\.((?:ambiguous|lease_at_recovery|stale_premise|stale_premise_at_recovery|model_deviated|exposure|reapproval_refused):[0-9a-f]{64}|case_failed:[0-9a-f]{64}:\d{1,16})$/;

/** Who the decisions worker closes a failed case's item as, once the case is decided or fails again. */
export const CASE_WORKER: Actor = { name: 'decisions', role: 'worker' };

/** At most this many index entries are looked at for one page, so a rare filter cannot make one request scan everything. */
const SCAN_BUDGET = 5_000;
/** Index entries read per round trip while a page is looked for. */
const SCAN_BATCH = 200;
/** Tries of one refresh against other refreshes of the same item; each lost try means another refresh was written. */
const REFRESH_TRIES = 10;

export type Inbox = ReturnType<typeof createInbox>;

/**
 * Whether the item an index member names may pass `filter`'s kind and effect: an item's id names both
 * (parseInboxItemId), so a listing reads no item of another kind or effect; an id that names neither is read to tell.
 */
function mayPass(id: string, filter: InboxFilter): boolean {
  const named = parseInboxItemId(id);
  return named === null || ((filter.kind === undefined || named.kind === filter.kind) && (filter.effect === undefined || named.effectId === filter.effect));
}

function closureOf(entry: EntryOf<'RESOLVED'>): InboxClosure {
  return { action: entry.action, by: entry.by, note: entry.note, resolution: entry.resolution, reapproval: entry.reapproval, at: entry.at };
}

function parsePending(text: string): PendingReapproval | null {
  try {
    const value = JSON.parse(text) as Partial<PendingReapproval> | null;
    const by = value?.by;
    const ok = typeof value?.item === 'string' && typeof value.approval === 'string' && typeof value.note === 'string' && typeof value.at === 'number' && typeof by?.name === 'string' && typeof by.role === 'string' && typeof value.premises === 'object' && value.premises !== null && !Array.isArray(value.premises);
    return ok ? (value as PendingReapproval) : null;
  } catch {
    return null;
  }
}

/** Why an item whose effect's journal is gone is dismissed in the index alone (InboxClosure.unsigned). */
export const JOURNAL_GONE = "The effect's journal is gone (Redis holds no entries for it), so no signed entry could be written on its receipt: the inbox index alone keeps who dismissed the item, when and why.";

/** Whether the action can succeed on the effect as its state stands (act-3.lua's rule), or its journal is gone (null). */
function actionStands(action: OperatorAction, state: { committed: boolean; ambiguous: boolean; reapproved: boolean } | null): boolean {
  if (action === 'dismiss') return true;
  if (state === null) return false;
  if (action === 'resolve') return state.ambiguous && !state.committed;
  return !state.committed && !state.ambiguous && !state.reapproved;
}

function describeActor(marker: string): string {
  try {
    const parsed = JSON.parse(marker) as { by?: Actor; action?: string };
    return `${parsed.by?.name ?? 'someone'} (${parsed.by?.role ?? 'unknown role'}) already chose ${parsed.action ?? 'an action'}`;
  } catch {
    return 'someone already acted';
  }
}

/**
 * `alerts`: where an exposure item's alert is resolved once a person closes the item (the alert and the item are one
 * matter; resolveAlert in src/interlock.ts closes the item when the alert is resolved first).
 */
export function createInbox(deps: { redis: RedisClient; keys: Keys; journal: Journal; alerts: Pick<Alerts, 'resolve'>; /** INTERLOCK_CREDIT_CURRENCY: a credit item's currency when its chain records none (inboxItemFor). */ creditCurrency?: string }) {
  const { redis, keys, journal } = deps;
  const run = createScriptRunner(redis);

  /** Closes an item in the index; false when it was closed already (the first closure stands). */
  async function close(id: string, closure: InboxClosure): Promise<boolean> {
    const reply = await run<{ status: 'CLOSED' | 'KNOWN' }>('close-inbox-3', [keys.inboxClosed, keys.inboxOpen, keys.inboxClosedByTime], [id, JSON.stringify(closure), closure.at]);
    return reply.status === 'CLOSED';
  }

  function assemble(id: string, itemText: string | null, closureText: string | null): InboxItem | null {
    if (itemText === null) return null;
    const draft = JSON.parse(itemText) as InboxItemDraft & { openedAt: number };
    const closure = closureText === null ? null : (JSON.parse(closureText) as InboxClosure);
    return { ...draft, id, status: closure === null ? 'open' : 'closed', closure };
  }

  /** Opens (indexes) an item once; an item known already is left as it was. */
  async function open(draft: InboxItemDraft): Promise<{ item: InboxItem; created: boolean }> {
    const openedAt = await journal.serverTime();
    const reply = await run<{ status: 'OPENED' | 'KNOWN' }>('open-inbox-2', [keys.inbox, keys.inboxOpen], [draft.id, JSON.stringify({ ...draft, openedAt }), openedAt]);
    const item = await get(draft.id);
    if (item === null) throw new InterlockError('internal', `inbox item ${draft.id} was opened but cannot be read back`);
    return { item, created: reply.status === 'OPENED' };
  }

  /**
   * The item as it stands. When the chain holds an action the index has not caught up with (the process that
   * appended it died before closing the item), the item is closed from the chain now. When the chain calls for an
   * item the index does not hold yet (the entry that settled the effect is written, the item is opened right after
   * it), the item is opened from the chain now: whoever reads a settled effect and acts on it at once finds its item.
   */
  async function get(id: string): Promise<InboxItem | null> {
    const [itemText, closureText] = await Promise.all([redis.hget(keys.inbox, id), redis.hget(keys.inboxClosed, id)]);
    const item = assemble(id, itemText, closureText);
    if (item === null) return openFromChain(id);
    // A failed case's item has no chain: the index's closure is its only one.
    if (item.closure !== null || item.kind === 'case_failed') return item;
    const chain = await standing(item);
    const open = { ...item, actions: chain.actions };
    if (chain.partition === null || chain.acted === null) return open;
    const entry = actionsOf(await journal.entries(chain.partition, item.effectId)).get(id);
    if (!entry) return open;
    const closure = closureOf(entry);
    await close(id, closure);
    return { ...item, status: 'closed', closure };
  }

  /**
   * An open item's effect as it stands (one read of its state, the fields act-3.lua decides on): whether the chain
   * holds an action on the item (the `i:<item id>` marker), and which of the item's actions can succeed now. An
   * effect whose money moved after the item opened (committed: a re-decision of its request sent, a landing reported
   * late) is never re-approved, nor resolved on a person's word; one re-approved through another of its items is not
   * re-approved again; an effect whose journal is gone (no partition, no state) is only dismissed, in the index.
   */
  async function standing(item: InboxItem): Promise<{ partition: string | null; acted: string | null; actions: OperatorAction[] }> {
    const partition = await journal.partitionOf(item.effectId);
    const fields = partition === null ? [] : await redis.hmget(keys.state(partition, item.effectId), `i:${item.id}`, 'head', 'committed', 'ambiguous', 'reapproved');
    const [acted = null, head = null, committed = null, ambiguous = null, reapproved = null] = fields;
    const state = head === null ? null : { committed: committed === '1', ambiguous: ambiguous === '1', reapproved: (reapproved ?? '') !== '' };
    // An item an earlier version opened may list reapprove on a credit whose currency changed, or on a model deviation of
    // another kind than its case's (itemActions leaves it off both now).
    const reapprovable = creditCurrencyChange(item) === null && deviatedKind(item) === null;
    return { partition, acted, actions: item.actions.filter((action) => actionStands(action, state) && (action !== 'reapprove' || reapprovable)) };
  }

  /**
   * Items the index holds open, as they stand: each listing the actions that can succeed now (standing), or null when
   * its chain holds an action (act-3 appended it, the process stopped before close-inbox-3) and it is closed from the
   * chain now, as get() does, so a listing never shows as open an item its own page shows closed.
   */
  async function asTheyStand(items: readonly InboxItem[]): Promise<(InboxItem | null)[]> {
    const chains = await Promise.all(items.map(async (item) => (item.kind === 'case_failed' ? null : standing(item))));
    const stood: (InboxItem | null)[] = [];
    for (const [at, item] of items.entries()) {
      const chain = chains[at] ?? null;
      if (chain !== null && chain.acted !== null && (await get(item.id))?.status === 'closed') stood.push(null);
      else stood.push(chain === null ? item : { ...item, actions: chain.actions });
    }
    return stood;
  }

  /** Opens the item the effect's current outcome calls for, if any (AMBIGUOUS, a refusal at recovery, a stale premise). */
  async function openFor(effectId: string): Promise<InboxItem | null> {
    const partition = await journal.partitionOf(effectId);
    if (partition === null) return null;
    const draft = inboxItemFor(effectId, partition, await journal.entries(partition, effectId), deps.creditCurrency ?? null);
    return draft === null ? null : (await open(draft)).item;
  }

  /** The item `id` names, opened now if the effect's chain calls for exactly that item. */
  async function openFromChain(id: string): Promise<InboxItem | null> {
    const named = parseInboxItemId(id);
    // A failed case's item is opened by the decisions worker alone: no chain calls for it.
    if (named === null || named.kind === 'case_failed') return null;
    const item = await openFor(named.effectId);
    return item?.id === id ? item : null;
  }

  /**
   * Resolves the alert of an exposure item a person closed, when it names no dispute beyond those the closing decided
   * on (exposureDisputesDecided): an alert naming another (a second chargeback) is new money at stake, not what they
   * closed, and stays open for a person, as repairExposures in src/interlock.ts leaves it.
   */
  async function resolveDecided(item: InboxItem, by: Actor): Promise<void> {
    const decided = exposureDisputesDecided(item);
    // Decided on the alert as it stands when it is written: a chargeback raised after a read would be resolved unseen.
    await deps.alerts.resolve(alertIdOf(item.effectId, 'exposure'), `${by.name} (${by.role})`, (alert) => alert.disputes.every((dispute) => decided.includes(dispute)));
  }

  /**
   * Closes a failed case's items in the index (close-case-failures-4), first closure standing: `only` that one, or
   * every item of the case still open (its index of open items, keys.inboxCaseFailures: the cost does not grow with
   * the inbox). The ids it closed now.
   */
  async function closeCaseFailures(caseEffectId: string, closure: InboxClosure, only: string | null): Promise<string[]> {
    const reply = await run<{ closed: unknown }>('close-case-failures-4', [keys.inboxClosed, keys.inboxOpen, keys.inboxClosedByTime, keys.inboxCaseFailures(caseEffectId)], [JSON.stringify(closure), closure.at, only ?? '']);
    // An empty Lua table is encoded as an object.
    return Array.isArray(reply.closed) ? reply.closed.map(String) : [];
  }

  /** The decisions worker's closure of a failed case's item, now (Redis time). */
  async function workerClosure(note: string): Promise<InboxClosure> {
    return { action: 'dismiss', by: CASE_WORKER, note, resolution: null, reapproval: null, at: await journal.serverTime() };
  }

  /**
   * A person dismisses a failed case's item: closed in the index, with who, why and when (Redis time), since no effect
   * holds a chain to append to. Of two dismissals at once, the first closure stands and the other is told who acted.
   */
  async function dismissCaseFailure(item: InboxItem, request: ActRequest): Promise<{ item: InboxItem; entry: null }> {
    const closure: InboxClosure = { action: 'dismiss', by: request.by, note: request.note, resolution: null, reapproval: null, at: await journal.serverTime() };
    if ((await closeCaseFailures(item.effectId, closure, item.id)).includes(item.id)) return { item: { ...item, status: 'closed', closure }, entry: null };
    const known = await get(item.id);
    if (known?.closure) throw closedError(item.id, known.closure, request);
    throw new InterlockError('inbox_item_closed', `Inbox item ${item.id} was closed already. Nothing was recorded.`);
  }

  /**
   * An action on an item whose effect's journal is gone (it was opened from the chain, which Redis no longer holds:
   * a failover that lost it, keys deleted by hand): nothing is left to check a resolution or a re-approval against, nor
   * to append a signed entry to. A dismissal closes it in the index alone, as a failed case's item is dismissed, its
   * closure saying why (JOURNAL_GONE); of two at once, the first closure stands.
   */
  async function actWithJournalGone(item: InboxItem, request: ActRequest): Promise<{ item: InboxItem; entry: null }> {
    if (request.action !== 'dismiss') {
      throw new InterlockError('action_not_allowed', `Effect ${item.effectId}'s journal is gone (Redis holds no entries for it), so item ${item.id} cannot be ${request.action === 'reapprove' ? 're-approved' : 'resolved'}: nothing is left to check it against or to sign it on. Dismiss it with a note, which closes it in the inbox index alone. Nothing was recorded.`);
    }
    const closure: InboxClosure = { action: 'dismiss', by: request.by, note: request.note, resolution: null, reapproval: null, at: await journal.serverTime(), unsigned: JOURNAL_GONE };
    if (await close(item.id, closure)) return { item: { ...item, actions: ['dismiss'], status: 'closed', closure }, entry: null };
    const known = await get(item.id);
    if (known?.closure) throw closedError(item.id, known.closure, request);
    throw new InterlockError('inbox_item_closed', `Inbox item ${item.id} was closed already. Nothing was recorded.`);
  }

  /**
   * The open items of effect `effectId` (of `kind` only, when given) after `from`, in the open index's order (newest
   * first, one millisecond's in reverse byte order, as batchesAfter reads them), in one batch: what a walk of the open
   * index would find of them, looked up by id instead, so the cost is the same whatever else the inbox holds. An
   * effect's items are named by it (inboxItemId, one per kind); a failed case's open items, named also by when each
   * failure was written, by its case's own index (keys.inboxCaseFailures, with the case's effect id).
   */
  async function* openItemsOf(effectId: string, kind: InboxKind | undefined, from: IndexPosition | null): AsyncGenerator<IndexPosition[]> {
    const kinds = INBOX_KINDS.filter((each): each is EffectInboxKind => each !== 'case_failed' && (kind === undefined || each === kind));
    const failed = kind === undefined || kind === 'case_failed' ? await redis.smembers(keys.inboxCaseFailures(effectId)) : [];
    const ids = [...kinds.map((each) => inboxItemId(each, effectId)), ...failed];
    if (ids.length === 0) return;
    const scores = await redis.zmscore(keys.inboxOpen, ...ids);
    const open: IndexPosition[] = [];
    for (const [at, id] of ids.entries()) {
      const score = scores[at];
      if (score === null || score === undefined) continue;
      const member = { id, score: Number(score) };
      if (from === null || member.score < from.score || (member.score === from.score && member.id < from.id)) open.push(member);
    }
    open.sort((a, b) => b.score - a.score || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
    if (open.length > 0) yield open;
  }

  async function list(filter: InboxFilter, limit: number, startingAfter?: string): Promise<InboxPage> {
    const status = filter.status ?? 'open';
    const index = status === 'open' ? keys.inboxOpen : keys.inboxClosedByTime;
    const cursor = startingAfter === undefined ? null : INBOX_CURSOR.exec(startingAfter);
    const data: InboxItem[] = [];
    // Each batch is read from the last member the one before it ended on, so items opened or closed while the
    // listing runs (newer than where it stands) never shift a later batch: no item is listed twice or passed over.
    const from = cursor?.[2] === undefined ? null : { score: Number(cursor[1]), id: cursor[2] };
    let looked = 0;
    // Where the page ended once it is full: from then on the listing looks only for one more item that passes the
    // filters, its hasMore (an index that goes on with items of other kinds or subjects is no next page).
    let pageEnd: string | null = null;
    // An effect's open items are looked up by their ids (openItemsOf); any other filter walks the index.
    const batches = status === 'open' && filter.effect !== undefined && isEffectId(filter.effect) ? openItemsOf(filter.effect, filter.kind, from) : batchesAfter(redis, index, from, SCAN_BATCH);
    for await (const batch of batches) {
      looked += batch.length;
      const named = batch.filter((member) => mayPass(member.id, filter));
      const ids = named.map((member) => member.id);
      const [items, closures] = ids.length === 0 ? [[], []] : await Promise.all([redis.hmget(keys.inbox, ...ids), redis.hmget(keys.inboxClosed, ...ids)]);
      const wanted: { member: IndexPosition; item: InboxItem }[] = [];
      for (const [at, member] of named.entries()) {
        const item = assemble(member.id, items[at] ?? null, closures[at] ?? null);
        if (item === null || item.status !== status) continue;
        if ((filter.kind !== undefined && item.kind !== filter.kind) || (filter.subject !== undefined && item.subject !== filter.subject) || (filter.effect !== undefined && item.effectId !== filter.effect)) continue;
        wanted.push({ member, item });
      }
      // The chain is asked about no more items than the page and the one item after it still need: two reads for each
      // item taken in, and get()'s reads for each found acted on (closed now, so no later page pays for it again).
      for (let start = 0; start < wanted.length; ) {
        const chunk = wanted.slice(start, start + limit + 1 - data.length);
        start += chunk.length;
        const stood = status === 'open' ? await asTheyStand(chunk.map(({ item }) => item)) : chunk.map(({ item }) => item);
        for (const [at, { member }] of chunk.entries()) {
          const item = stood[at] ?? null;
          if (item === null) continue;
          if (pageEnd !== null) return { data, hasMore: true, next: pageEnd };
          data.push(item);
          if (data.length === limit) pageEnd = `${member.score}.${member.id}`;
        }
      }
      const last = batch.at(-1);
      // The budget spent: more may follow, from where the page ended (or, short of a full page, where it stopped).
      if (batch.length === SCAN_BATCH && looked >= SCAN_BUDGET && last !== undefined) return { data, hasMore: true, next: pageEnd ?? `${last.score}.${last.id}` };
    }
    return { data, hasMore: false, next: null };
  }

  /**
   * The item with the fingerprint of the facts it shows (`factsShown`: factsShownHash over the premises its refusal was
   * judged against, decidedPremises, and the changes it lists), for a view a re-approval is made from: the re-approval
   * gives it back, and is refused when the item shows other facts by then. Null when the item offers no re-approval
   * (closed, of a kind that allows none, its money moved) or its chain holds no proposal.
   */
  async function withFactsShown(item: InboxItem): Promise<InboxItem> {
    if (item.closure !== null || !item.actions.includes('reapprove')) return { ...item, factsShown: null };
    const partition = await journal.partitionOf(item.effectId);
    const decided = partition === null ? null : decidedPremises(await journal.entries(partition, item.effectId));
    return { ...item, factsShown: decided === null ? null : factsShownHash(decided, item.changes) };
  }

  return {
    open,
    get,
    openFor,
    withFactsShown,

    /**
     * Opens a failed case's item (caseFailureItem), once per failure: the same failure met again (a job run again after
     * the worker died) opens nothing new, and an item a person dismissed stays so. In the same step (open-case-failure-5)
     * the case's items of earlier failures still open are closed as superseded by it, naming it: one open item per
     * case, the latest failure's. An item of a newer failure is never superseded: the caller, which read the case
     * before opening, reads it again and closes this item when the case no longer stands at its failure.
     */
    async openCaseFailure(draft: InboxItemDraft): Promise<{ item: InboxItem; created: boolean; superseded: string[] }> {
      if (draft.kind !== 'case_failed' || parseInboxItemId(draft.id)?.kind !== 'case_failed') throw new InterlockError('internal', `openCaseFailure was given an item of kind ${draft.kind}; it opens case_failed items only`);
      const superseding = await workerClosure(`The case failed again; item ${draft.id} stands for its latest failure.`);
      const openedAt = superseding.at;
      const reply = await run<{ status: 'OPENED' | 'KNOWN'; superseded: unknown }>(
        'open-case-failure-5',
        [keys.inbox, keys.inboxOpen, keys.inboxClosed, keys.inboxClosedByTime, keys.inboxCaseFailures(draft.effectId)],
        [draft.id, JSON.stringify({ ...draft, openedAt }), openedAt, JSON.stringify(superseding)],
      );
      const item = await get(draft.id);
      if (item === null) throw new InterlockError('internal', `inbox item ${draft.id} was opened but cannot be read back`);
      return { item, created: reply.status === 'OPENED', superseded: Array.isArray(reply.superseded) ? reply.superseded.map(String) : [] };
    },

    /**
     * Closes the open items of a failed case that was decided (`caseEffectId`: the case's, caseEffectIdOf), as the
     * decisions worker, with `note` saying how it was decided; an item a person dismissed stays as they left it. The
     * ids it closed.
     */
    async closeCaseFailures(caseEffectId: string, note: string): Promise<string[]> {
      return closeCaseFailures(caseEffectId, await workerClosure(note), null);
    },

    /**
     * Closes one failed case's item `id` as the decisions worker, with `note`: opened for a failure the case no longer
     * stands at (it was decided, or failed again, while the item was on its way). False when it was closed already.
     */
    async closeCaseFailure(id: string, note: string): Promise<boolean> {
      const named = parseInboxItemId(id);
      if (named?.kind !== 'case_failed') throw new InterlockError('internal', `closeCaseFailure was given item ${id.slice(0, 100)}; it closes case_failed items only`);
      return (await closeCaseFailures(named.effectId, await workerClosure(note), id)).includes(id);
    },

    /**
     * Rewrites what an open item says: `change` gets the item as stored and answers it as it should read now (what it
     * may change is the caller's rule: an exposure's money at stake, never its id or kind). Asked again when another
     * refresh wrote in between. Null when there is no such item or it is closed (it keeps what the person acted on);
     * after REFRESH_TRIES lost tries it gives up and the item says what the last refresh wrote.
     */
    async refresh(id: string, change: (known: InboxItemDraft & { openedAt: number }) => InboxItemDraft & { openedAt: number }): Promise<InboxItem | null> {
      let text = await redis.hget(keys.inbox, id);
      for (let tries = 0; text !== null && tries < REFRESH_TRIES; tries += 1) {
        const known = JSON.parse(text) as InboxItemDraft & { openedAt: number };
        // An action already in the chain closes the item whatever the index says yet (act-3 ran, close-inbox-3 not
        // yet): it keeps what the person acted on, and get() closes the index from the chain.
        const partition = await journal.partitionOf(known.effectId);
        if (partition !== null && (await journal.actedOn(partition, known.effectId, id)) !== null) return get(id);
        const next = JSON.stringify(change(known));
        const reply = await run<{ status: 'REFRESHED' } | { status: 'CLOSED' } | { status: 'MOVED'; item: string }>('refresh-inbox-2', [keys.inbox, keys.inboxClosed], [id, text, next]);
        if (reply.status === 'CLOSED') return null;
        if (reply.status === 'REFRESHED') return get(id);
        text = reply.item === '' ? null : reply.item;
      }
      return text === null ? null : get(id);
    },

    /** Notes a re-approval about to close its item (PendingReapproval); `field` names the attempt. */
    async markReapproval(field: string, pending: PendingReapproval): Promise<void> {
      await redis.hset(keys.reapprovalsPending, field, JSON.stringify(pending));
    },

    /** Forgets a re-approval whose proposal is recorded, or that closed nothing. */
    async clearReapproval(field: string): Promise<void> {
      await redis.hdel(keys.reapprovalsPending, field);
    },

    /** The note of one re-approval attempt (`field` as markReapproval took it), or null when none is pending. */
    async pendingReapproval(field: string): Promise<PendingReapproval | null> {
      const text = await redis.hget(keys.reapprovalsPending, field);
      return text === null ? null : parsePending(text);
    },

    /**
     * The re-approvals noted and not yet cleared: those on their way now, and those a process left behind. The hash
     * holds only these (each is deleted once its proposal is recorded), so it is read whole; a field whose value is
     * not a pending re-approval (written by hand) comes back as null, to be cleared.
     */
    async pendingReapprovals(): Promise<{ field: string; pending: PendingReapproval | null }[]> {
      const all = await redis.hgetall(keys.reapprovalsPending);
      return Object.entries(all).map(([field, text]) => ({ field, pending: parsePending(text) }));
    },

    /**
     * Items newest first (open ones by when they opened, closed ones by when they closed), filtered, a page at a time.
     * `startingAfter` is the `next` of the page before. An effect's open items are looked up by id (openItemsOf); any
     * other listing walks the index, up to SCAN_BUDGET entries a page, reading only the items whose ids name the kind
     * and effect asked for (mayPass).
     */
    list,

    /**
     * Records a person's action on an item: a RESOLVED entry on the effect's receipt, at most once per item. The one
     * who loses a race, or comes after, gets inbox_item_closed naming who acted. A failed case's item, which no effect
     * stands behind, is dismissed in the index alone (dismissCaseFailure), and so is an item whose effect's journal is
     * gone (actWithJournalGone, its only action): their `entry` is null.
     */
    async act(id: string, request: ActRequest): Promise<{ item: InboxItem; entry: EntryOf<'RESOLVED'> | null }> {
      const item = await get(id);
      const named = parseInboxItemId(id);
      if (item === null || named === null) throw new InterlockError('unknown_inbox_item', `No inbox item ${id.slice(0, 100)}. GET /v1/inbox (or \`interlock inbox list\`) lists the open ones.`);
      if (!ALLOWED_ACTIONS[item.kind].includes(request.action)) {
        throw new InterlockError('action_not_allowed', `An item of kind ${item.kind} cannot be ${request.action === 'reapprove' ? 're-approved' : `${request.action}d`}; it allows ${ALLOWED_ACTIONS[item.kind].join(', ')}.`);
      }
      // Never a re-approval of a deviation the model made in another kind of money than its case's: its recorded effect
      // is the case's, which the model never decided (deviatedKind; src/inbox/actions.ts says why before it gets here).
      if (request.action === 'reapprove' && item.closure === null && deviatedKind(item) !== null) {
        throw new InterlockError('action_not_allowed', `Item ${id} cannot be re-approved: its model chose another kind of money than its case asks for. Dismiss it with a note. Nothing was recorded.`);
      }
      if (item.closure !== null) throw closedError(id, item.closure, request);
      if (item.kind === 'case_failed') return dismissCaseFailure(item, request);
      const partition = await journal.partitionOf(item.effectId);
      if (partition === null) return actWithJournalGone(item, request);
      const draft: Draft<'RESOLVED'> = { kind: 'RESOLVED', item: id, action: request.action, by: request.by, note: request.note, resolution: request.resolution ?? null, reapproval: request.reapproval ?? null };
      const marker = JSON.stringify({ action: request.action, by: request.by });
      // What the effect's state must be, checked in the same step as the append (act-3.lua).
      const requires = request.action === 'resolve' ? 'ambiguous' : request.action === 'reapprove' ? 'unsent' : '';
      const reply = await journal.act(partition, item.effectId, draft, marker, requires);
      switch (reply.status) {
        case 'OK': {
          const closure = closureOf(reply.entry);
          await close(id, closure);
          // One alert id per (kind, effect): an exposure item's alert is `exposure:<effect id>`. One already resolved stays so.
          if (item.kind === 'exposure') await resolveDecided(item, request.by);
          return { item: { ...item, status: 'closed', closure }, entry: reply.entry };
        }
        case 'ACTED': {
          const known = await get(id);
          if (known?.closure) throw closedError(id, known.closure, request);
          throw new InterlockError('inbox_item_closed', `Inbox item ${id} was acted on already: ${describeActor(reply.by)}. Nothing was recorded.`);
        }
        case 'OPEN':
          throw new InterlockError('effect_in_flight', `Effect ${item.effectId} is being sent right now; act on item ${id} once it has settled. Nothing was recorded.`);
        case 'UNKNOWN_EFFECT':
          return actWithJournalGone(item, request);
        case 'STATE':
          throw new InterlockError(
            'action_not_allowed',
            reply.committed
              ? `Effect ${item.effectId} landed (Stripe reported it after the item opened), so item ${id} cannot be ${request.action === 'resolve' ? 'resolved on a person\'s word' : 're-approved'}; dismiss it with a note. Nothing was recorded.`
              : `Effect ${item.effectId} is ${reply.ambiguous ? 'AMBIGUOUS: it may have landed, so it is never re-approved; resolve it after checking Stripe' : 'not AMBIGUOUS, so there is nothing to resolve'}. Nothing was recorded.`,
          );
        case 'REAPPROVED':
          throw new InterlockError('action_not_allowed', reapprovedAlready(item.effectId, reply.item, id));
        default: {
          const never: never = reply;
          return never;
        }
      }
    },
  };
}

/**
 * The item was closed before this action: by someone else (named, so the two can talk), or by the same person, who is
 * told it was their own earlier action (a double submit, a second tab) rather than that somebody beat them to it. Of
 * the same person's, a request for exactly what was recorded (the same action, resolution and approval; its note may
 * differ, and the one given then stands) is told it asks for the same, and only another is told what else it asks.
 */
function closedError(id: string, closure: InboxClosure, request: Pick<ActRequest, 'action' | 'by' | 'note' | 'resolution' | 'reapproval'>): InterlockError {
  const how = closure.action === 'resolve' ? `resolved it (${closure.resolution === 'landed' ? 'landed' : 'did not land'})` : closure.action === 'reapprove' ? `re-approved it under ${closure.reapproval?.approval ?? 'a new approval'}` : 'dismissed it';
  const at = new Date(closure.at).toISOString();
  if (closure.by.name === request.by.name) {
    const mine = `You (${closure.by.name}, ${closure.by.role}) already ${how} at ${at}, which closed inbox item ${id}`;
    const same =
      closure.action === request.action &&
      (request.action !== 'resolve' || closure.resolution === (request.resolution ?? null)) &&
      (request.action !== 'reapprove' || (request.reapproval?.approval !== undefined && closure.reapproval?.approval === request.reapproval.approval));
    if (same) {
      const note = closure.note === request.note ? '' : ' with another note';
      return new InterlockError('inbox_item_closed', `${mine}; this request asks for the same${note}, so nothing new was recorded: the item stands as that action left it${note === '' ? '' : ', with the note given then'}.`);
    }
    // A re-approval asked without its approval is one under another (reapprove() asks act() so only then).
    const asked =
      request.action === 'resolve'
        ? `to resolve it (${request.resolution === 'landed' ? 'landed' : 'did not land'})`
        : request.action === 'dismiss'
          ? 'to dismiss it'
          : request.reapproval
            ? `to re-approve it under ${request.reapproval.approval}`
            : closure.action === 'reapprove'
              ? 'to re-approve it under another approval'
              : 'to re-approve it';
    return new InterlockError('inbox_item_closed', `${mine}; this request asks ${asked}, so it was not recorded. Read the item to see what stands.`);
  }
  return new InterlockError('inbox_item_closed', `Inbox item ${id} was closed already: ${closure.by.name} (${closure.by.role}) ${how} at ${at}. Nothing was recorded.`);
}
