// Alerts for people (issue 10 §4): money at stake that no gate could prevent, because it happened after the send: a
// refund that succeeded on a charge later charged back (the merchant is out both), a refund that failed after the
// gate answered landed, a refund that landed after its effect was refused or left ambiguous, a credit that landed while
// billing compensated the same incident with a credit note (the customer paid twice). Each alert names the
// effect, the money at stake and what a person should do. One alert per (effect, kind): raising it again updates it;
// the facts worker resolves one that later facts undid, and opens it again when still later facts call for it.
//
// One alert is about money that has not moved yet: `not_judged`, a recorded proposal whose effects job failed for good
// before the gate judged it (a premise read Stripe refused with 401/403, or Stripe or Redis away for longer than the
// job retries). Nothing was sent and nothing will be until someone sends the same request again; the effects worker
// raises it and resolves it once the effect is judged.
//
// `send_unanswered`: an open effect whose sends Stripe has given no definite answer to for longer than
// INTERLOCK_UNANSWERED_ALERT_MS (a Stripe outage, timeouts). Recovery raises it and resolves it when the effect settles.
//
// Each of those two is about one failure (a job that failed for good, a dispatch left unanswered), and the same effect
// can fail again after its alert was resolved (a re-decision's job failing for good too, a later dispatch unanswered
// too): a raise about a failure newer than the one resolved opens the alert again, whoever resolved it (raise,
// newerFailure); a raise about the failure resolved (a pass that raced the settle) leaves it resolved.
import { performance } from 'node:perf_hooks';
import { FACT_ALERT_KINDS } from '../core/alert-rules.js';
import { InterlockError } from '../core/errors.js';
import type { RedisClient } from './client.js';
import type { Keys } from './keys.js';
import { batchesAfter, goesOnAfter } from './newest-first.js';
import { createScriptRunner } from './scripts.js';

export const ALERT_KINDS = ['exposure', 'failed_after_landed', 'late_landing', 'not_judged', 'compensated_twice', 'send_unanswered'] as const;
export type AlertKind = (typeof ALERT_KINDS)[number];

export type Alert = {
  id: string;
  kind: AlertKind;
  effectId: string;
  subject: string;
  /** What the merchant may lose, in `currency`'s smallest unit (cents, or whole yen: Stripe's count). */
  centsAtStake: number;
  /**
   * The currency of `centsAtStake` (lowercase ISO code): the refund's, the credit's. Null when nothing recorded says
   * it, absent on alerts raised before alerts carried one: either reads as of a currency unknown (moneyText), never in dollars.
   */
  currency?: string | null;
  refund: string | null;
  disputes: string[];
  /**
   * Each of `disputes`' status, in the same order, as the raise that last wrote the alert saw it. Absent on alerts
   * written before alerts carried it (and on kinds that name no dispute): each of their disputes reads as not decided.
   */
  disputeStatuses?: string[];
  /**
   * compensated_twice: the others' compensations for the incident it names (credit notes, then balance credits). An
   * alert written before this field named its first note as `refund` only.
   */
  compensations?: string[];
  sentence: string;
  action: string;
  raisedAt: number;
  updatedAt: number;
  resolvedAt: number | null;
  resolvedBy: string | null;
  /**
   * What the alert said when it was resolved: its action, and its disputes' statuses by dispute id. Raises keep it
   * while the alert stays resolved (they refresh what the alert says), so whether a person's resolution still stands is
   * judged on what that person acted on, not on a later refresh. Absent while open, and on alerts resolved before
   * alerts kept it: their action and statuses as they stand are read instead.
   */
  resolvedOn?: { action: string; disputes: Record<string, string> };
  /**
   * When a raise last opened the alert again after someone resolved it (ms; raise's rules). Absent on an alert never
   * reopened. What tells an alert reopened after its exposure item was closed from one whose resolution a process
   * that died left unwritten (the half the exposure repair closes).
   */
  reopenedAt?: number;
  /**
   * Every dispute and compensation a person's resolution of the alert named, gathered over all of them and kept
   * through reopens: what a person already handled. A raise never counts one as new (it never reopens the alert for
   * it) and never drops one from the alert, open or resolved: a raise from another facts process's older read lacks
   * it. A resolution by the facts empties it (they found none of it standing; their next raise opens the alert
   * anyway). Absent on alerts never resolved by a person, and on alerts resolved before alerts kept it.
   */
  handled?: Handled;
  /**
   * not_judged and send_unanswered: when the newest failure a raise named happened (Redis ms): the job's failure for
   * good, the unanswered dispatch. Given by the raise (`occurredAt`), or for a not_judged raise that gives none, the
   * raise's own time (one raise is made as each job fails for good). What tells a raise about a newer failure from one
   * about the failure a resolution was about (newerFailure). Absent on other kinds, on send_unanswered alerts whose
   * raises gave none, and on alerts raised before alerts kept it.
   */
  occurredAt?: number;
};

/** What a person's resolutions of an alert named (Alert.handled). */
export type Handled = { disputes: string[]; compensations: string[] };

export type Alerts = ReturnType<typeof createAlerts>;
export type AlertPage = { data: Alert[]; next: string | null };

/** `<raised at>.<alert id>`: where a page of alerts ended, in the index's newest-first order. */
export const ALERT_CURSOR = new RegExp(`^(\\d{1,16})\\.((?:${ALERT_KINDS.join('|')}):[0-9a-f]{64})$`);

/** One alert per (effect, kind), under this id. */
export const alertIdOf = (effectId: string, kind: AlertKind) => `${kind}:${effectId}`;

/** Who an alert names when the facts resolved it (settle): an alert they resolved opens again when they call for it again. */
export const FACTS_RESOLVER = 'facts';

/** The statuses in which a dispute is decided: Stripe's answer to a chargeback (or to its appeal). */
const DECIDED: readonly string[] = ['won', 'lost'];

/** An alert's disputes' statuses by dispute id (those it carries: none on an alert written before it carried them). */
function statusesOf(alert: Pick<Alert, 'disputes' | 'disputeStatuses'>): Record<string, string> {
  const statuses: Record<string, string> = {};
  for (const [i, dispute] of alert.disputes.entries()) {
    const status = alert.disputeStatuses?.[i];
    if (status !== undefined) statuses[dispute] = status;
  }
  return statuses;
}

/** What a resolved alert said when it was resolved (`resolvedOn`), or, resolved before alerts kept that, what it says. */
function resolvedOn(known: Alert): { action: string; disputes: Record<string, string> } {
  return known.resolvedOn ?? { action: known.action, disputes: statusesOf(known) };
}

/**
 * The disputes a resolved alert named when it was resolved: those `resolvedOn` carries a status for, and those the
 * alert names now (a raise that keeps it resolved never adds one, and keeps those it names: keptNamed), which covers an
 * alert resolved before its disputes carried statuses.
 */
function namedWhenResolved(seen: { disputes: Record<string, string> }, known: Pick<Alert, 'disputes'>): string[] {
  return [...new Set([...known.disputes, ...Object.keys(seen.disputes)])];
}

/** The compensations an alert names: `compensations`, or a compensated_twice alert written before it, its `refund`. */
function compensationsOf(alert: Pick<Alert, 'kind' | 'refund' | 'compensations'>): string[] {
  return alert.compensations ?? (alert.kind === 'compensated_twice' && alert.refund !== null ? [alert.refund] : []);
}

function union(first: Handled, second: Handled): Handled {
  return { disputes: [...new Set([...first.disputes, ...second.disputes])], compensations: [...new Set([...first.compensations, ...second.compensations])] };
}

const NOTHING_HANDLED: Handled = { disputes: [], compensations: [] };

/**
 * How recovery names itself resolving a send_unanswered alert (src/gate/recover.ts watchUnanswered): the effect
 * settled, so the dispatch the alert was about is closed.
 */
const RECOVERY_RESOLVER_PREFIX = 'recovery:';

/**
 * Whether a raise of a not_judged or send_unanswered alert is about a failure newer than the one the resolution of
 * `known` was about. `occurredAt`: when the raise's failure happened (Redis ms), when the raise says.
 * - Said: newer than the newest failure the alert named by its resolution (`occurredAt`), or, for an alert that named
 *   none, than the resolution itself. A raise about the failure resolved, or an older one, is not.
 * - not_judged, unsaid: newer. The effects worker raises it once per job failing for good, as the job fails, and only
 *   while the effect stands unjudged; a later raise is a later failure.
 * - send_unanswered, unsaid: newer only when recovery resolved it because the effect settled. Recovery raises it only
 *   for an open dispatch, so after that settle a raise is about a later dispatch (a pass that raced the settle is
 *   resolved again by recovery right after its raise); after a person's resolution it is, for all the store can tell,
 *   about the dispatch they resolved, which recovery raises again with every pass while it stays open.
 */
function newerFailure(known: Alert, kind: AlertKind, occurredAt: number | undefined): boolean {
  if (occurredAt !== undefined) return occurredAt > (known.occurredAt ?? known.resolvedAt ?? Number.POSITIVE_INFINITY);
  if (kind === 'not_judged') return true;
  return known.resolvedBy?.startsWith(RECOVERY_RESOLVER_PREFIX) === true;
}

/** The kinds whose alert is about one failure of the effect, raised and resolved by workers (not the facts). */
const FAILURE_KINDS: readonly AlertKind[] = ['not_judged', 'send_unanswered'];

/**
 * What a raise's disputes and statuses become with the `named` disputes (what was handled) it lacks added back, in
 * `named`'s order before the raise's others, each with the status the alert last carried for it ('' when none: read as
 * not decided); nothing when it lacks none.
 */
function keptNamed(alert: Pick<Alert, 'disputes' | 'disputeStatuses'>, named: readonly string[], known: Pick<Alert, 'disputes' | 'disputeStatuses' | 'resolvedOn'>): Partial<Pick<Alert, 'disputes' | 'disputeStatuses'>> {
  const lacking = named.filter((dispute) => !alert.disputes.includes(dispute));
  if (lacking.length === 0) return {};
  const carried = { ...known.resolvedOn?.disputes, ...statusesOf(known) };
  const disputes = [...new Set([...named, ...alert.disputes])];
  if (alert.disputeStatuses === undefined && known.disputeStatuses === undefined) return { disputes };
  const statuses = statusesOf(alert);
  return { disputes, disputeStatuses: disputes.map((dispute) => statuses[dispute] ?? carried[dispute] ?? '') };
}

/**
 * Whether `next` names a dispute as decided (won or lost) that was not at that status when the alert was resolved: one
 * then open, under review or under appeal, or whose status the alert did not carry (read as not decided).
 */
function decidedSince(seen: Record<string, string>, next: Pick<Alert, 'disputes' | 'disputeStatuses'>): boolean {
  return Object.entries(statusesOf(next)).some(([dispute, status]) => DECIDED.includes(status) && seen[dispute] !== status);
}

/** Index entries read per round trip while looking for open alerts. */
const LIST_BATCH = 500;
/**
 * How long one alert write keeps trying while others keep changing the alert (ms). Each lost try means another
 * writer's change was kept; eight facts jobs re-raising one alert lose many tries in a row, and a raise given up is a
 * fact's alert lost (its job's retry finds the fact recorded and raises nothing), so the bound is time, not tries.
 */
const WRITE_BUDGET_MS = 5_000;
/**
 * The longest pause after a lost try (ms). Pauses grow from 1 ms, each a random part of its bound, so writers that
 * collided try again at different moments instead of colliding again.
 */
const MAX_PAUSE_MS = 50;
/** Alerts read per step of the open-alerts index's backfill (index-open-alerts-3.lua): one step blocks Redis briefly. */
const BACKFILL_BATCH = 500;

export function createAlerts(deps: { redis: RedisClient; keys: Keys; now: () => Promise<number>; random?: () => number }) {
  const { redis, keys } = deps;
  const random = deps.random ?? Math.random;

  const run = createScriptRunner(redis);

  async function read(id: string): Promise<Alert | null> {
    const text = await redis.hget(keys.alerts, id);
    return text === null ? null : (JSON.parse(text) as Alert);
  }

  /** The alerts of `ids`, in order, in one read; null where there is none. */
  async function readAll(ids: readonly string[]): Promise<(Alert | null)[]> {
    if (ids.length === 0) return [];
    return (await redis.hmget(keys.alerts, ...ids)).map((text) => (typeof text === 'string' ? (JSON.parse(text) as Alert) : null));
  }

  /**
   * Changes one alert atomically (set-alert-3.lua): `change` gets the alert as it stands and answers what to write, or
   * null to leave it. When another writer changed it in between, `change` is asked again about what that writer left,
   * so no resolution or refresh is ever lost. Answers the alert as it stands after, and whether this call wrote it.
   * Tries again after a short random pause for up to WRITE_BUDGET_MS, then throws `alert_contention` (retryable).
   */
  async function update(id: string, change: (known: Alert | null, now: number) => Alert | null): Promise<{ alert: Alert | null; written: boolean }> {
    let text = await redis.hget(keys.alerts, id);
    const startedAt = performance.now();
    for (let lost = 0; ; lost += 1) {
      const known = text === null ? null : (JSON.parse(text) as Alert);
      const next = change(known, await deps.now());
      if (next === null) return { alert: known, written: false };
      const reply = await run<{ status: 'SET' } | { status: 'MOVED'; alert: string }>('set-alert-3', [keys.alerts, keys.alertsByTime, keys.alertsOpen], [id, text ?? '', JSON.stringify(next), next.raisedAt, next.resolvedAt === null ? '1' : '']);
      if (reply.status === 'SET') return { alert: next, written: true };
      text = reply.alert === '' ? null : reply.alert;
      const spent = performance.now() - startedAt;
      if (spent >= WRITE_BUDGET_MS) {
        throw new InterlockError('alert_contention', `Alert ${id} kept changing while it was written: ${lost + 1} tries in ${Math.round(spent)} ms each found another writer's change first; nothing was changed by this call. Try again.`);
      }
      await new Promise((wait) => setTimeout(wait, random() * Math.min(MAX_PAUSE_MS, 2 ** lost)));
    }
  }

  /** Runs the open-alerts index's backfill to its end: how many alerts it added (0 once the index was complete). */
  async function backfill(): Promise<number> {
    let added = 0;
    for (let cursor = '0'; ; ) {
      const step = await run<{ status: 'DONE'; added: number } | { status: 'MORE'; added: number; cursor: string }>('index-open-alerts-3', [keys.alerts, keys.alertsOpen, keys.alertsOpenComplete], [cursor, BACKFILL_BATCH]);
      added += step.added;
      if (step.status === 'DONE') return added;
      cursor = step.cursor;
    }
  }

  // Once per store: after the backfill ended, the index stays complete (set-alert-3 keeps it with every write).
  let complete: Promise<number> | null = null;
  /** Waits until the open-alerts index holds every open alert; a backfill that failed is tried again by the next call. */
  function openIndexComplete(): Promise<number> {
    complete ??= backfill().catch((error: unknown) => {
      complete = null;
      throw error;
    });
    return complete;
  }

  return {
    /**
     * Adds the alerts written before the open-alerts index existed (set-alert-2) to it, a batch at a time, once for
     * good: the last batch marks the index complete in the same step, and every call after, in any process, reads only
     * that mark. Safe while alerts are written and while other processes run it too. Readers of the index call it
     * first; returns how many alerts this store's run added.
     */
    completeOpenIndex: async (): Promise<number> => openIndexComplete(),
    /**
     * Raises (or refreshes) the alert of `kind` for an effect; returns it and whether it is new. An alert a person
     * resolved stays resolved (they decided; the raise refreshes what it says), unless it now puts money in front of
     * them they did not act on: a dispute or a compensation it did not name, or a dispute decided (won or lost) since
     * that changed what it tells them to do. One the facts resolved because they no longer called for it opens again:
     * the facts call for it again (billing issued another note for the incident). A not_judged or send_unanswered
     * alert, whoever resolved it, opens again when the raise is about a newer failure of the effect (newerFailure:
     * `occurredAt`, Redis ms, says when the raise's failure happened).
     */
    async raise(alert: Omit<Alert, 'id' | 'raisedAt' | 'updatedAt' | 'resolvedAt' | 'resolvedBy' | 'resolvedOn' | 'reopenedAt' | 'handled'>): Promise<{ alert: Alert; created: boolean }> {
      const id = alertIdOf(alert.effectId, alert.kind);
      const failure = FAILURE_KINDS.includes(alert.kind);
      let created = false;
      const { alert: raised } = await update(id, (known, now) => {
        created = known === null;
        // The failure this raise is about: when the raise says, else, for a not_judged raise (made as its job fails),
        // now. Kept as the newest the alert named, so a later raise about an older one is told from a newer one.
        const occurred = failure ? (alert.occurredAt ?? (alert.kind === 'not_judged' ? now : undefined)) : undefined;
        const occurredAt = occurred === undefined ? known?.occurredAt : Math.max(occurred, known?.occurredAt ?? occurred);
        const failsAgain = failure && known !== null && known.resolvedAt !== null && newerFailure(known, alert.kind, alert.occurredAt);
        // Reopened when the facts had resolved it and call for it again, and when a person had resolved it but it now
        // names a dispute or a compensation it did not (a second chargeback, billing's further note for the incident:
        // new money at stake, not what that person handled).
        const factsAgain = known?.resolvedBy === FACTS_RESOLVER && (FACT_ALERT_KINDS as readonly AlertKind[]).includes(known.kind);
        const seen = known === null || known.resolvedAt === null ? null : resolvedOn(known);
        // A dispute or compensation is new when no person's resolution named it (handled: every one of them, and the
        // one standing, resolvedOn), not when the alert as it stands does not: a raise from another facts job's older
        // read (before the second chargeback was recorded) rewrites the alert without it, and the newer read's raise
        // naming it again is not money the person has not seen. What the facts resolved, they reopen anyway.
        const standing = seen === null || known === null || factsAgain ? NOTHING_HANDLED : { disputes: namedWhenResolved(seen, known), compensations: compensationsOf(known) };
        const handled = known === null || factsAgain ? NOTHING_HANDLED : union(known.handled ?? NOTHING_HANDLED, standing);
        const newDispute = seen !== null && alert.disputes.some((dispute) => !handled.disputes.includes(dispute));
        const newCompensation = seen !== null && (alert.compensations ?? []).some((compensation) => !handled.compensations.includes(compensation));
        // And when a dispute it names was decided since and the action changed with it: the person acted on "wait for
        // the dispute" or "reply to it", and its end changed what is owed (won: the customer is owed the failed refund;
        // lost: the merchant paid twice). Neither alone: the action's text also changes while nothing is owed anew (a
        // chargeback the person answered moves to under_review, "reply" becomes "wait"; an amount reads differently
        // once the charge is read), and a decision the action does not turn on (a dispute on another charge) leaves
        // what the person did standing. Both are judged on what the alert said when it was resolved (resolvedOn), not
        // on a refresh since: a refresh from a facts job's older read (the dispute back under review) followed by the
        // newer read's must not make a loss the person already handled look new again.
        const decided = seen !== null && alert.action !== seen.action && decidedSince(seen.disputes, alert);
        const reopens = factsAgain || newDispute || newCompensation || decided || failsAgain;
        const resolvedAt = reopens ? null : (known?.resolvedAt ?? null);
        const reopenedAt = reopens ? now : known?.reopenedAt;
        // While it stays resolved it keeps naming every dispute and compensation a person handled: an older read's
        // raise that lacks one never drops it from what the person resolved. Open (or opened again), it shows what the
        // facts name now (a dispute since won is no longer at stake); what was handled is kept in `handled`, so a raise
        // naming it again is never new.
        const keeps = known !== null && resolvedAt !== null;
        const lacking = keeps && (handled.disputes.some((dispute) => !alert.disputes.includes(dispute)) || (alert.compensations !== undefined && handled.compensations.some((compensation) => !alert.compensations?.includes(compensation))));
        const { occurredAt: _said, ...raisedNow } = alert;
        return {
          ...raisedNow,
          ...(!keeps || known === null ? {} : keptNamed(alert, handled.disputes, known)),
          ...(!keeps || alert.compensations === undefined ? {} : { compensations: [...new Set([...handled.compensations, ...alert.compensations])] }),
          // Such a raise's amount and sentence count only what it names: the alert keeps saying what the last raise
          // that named all of it said, until the next raise that does.
          ...(lacking && known !== null ? { centsAtStake: known.centsAtStake, sentence: known.sentence } : {}),
          ...(handled.disputes.length + handled.compensations.length === 0 ? {} : { handled }),
          id,
          raisedAt: known?.raisedAt ?? now,
          updatedAt: now,
          resolvedAt,
          resolvedBy: reopens ? null : (known?.resolvedBy ?? null),
          ...(seen === null || resolvedAt === null ? {} : { resolvedOn: seen }),
          ...(reopenedAt === undefined ? {} : { reopenedAt }),
          ...(occurredAt === undefined ? {} : { occurredAt }),
        };
      });
      if (raised === null) throw new InterlockError('internal', `Alert ${id} was raised but cannot be read back.`);
      return { alert: raised, created };
    },
    async get(id: string): Promise<Alert | null> {
      return read(id);
    },
    /**
     * Newest first (by when each was raised); open ones only unless `all`. Open ones are read from the open-alerts
     * index: an alert still open is money at stake, and it shows however many newer ones were resolved since, without
     * reading any of those.
     */
    async list(options: { all?: boolean; limit?: number } = {}): Promise<Alert[]> {
      return (await this.page({ all: options.all ?? false, limit: options.limit ?? 100 })).data;
    },
    /**
     * A page of `list`, and `next`: the cursor to pass as `cursor` for the page after it (null on the last page; the API
     * answers it as `next_starting_after` and takes it as `starting_after`). A
     * cursor names where the page ended (when that alert was raised, and its id), not a position, so alerts raised
     * after it never shift the pages that follow: each older alert is listed once.
     */
    async page(options: { all: boolean; limit: number; cursor?: string | undefined }): Promise<AlertPage> {
      const at = options.cursor === undefined ? null : ALERT_CURSOR.exec(options.cursor);
      if (options.cursor !== undefined && at === null) throw new InterlockError('invalid_request', `"${options.cursor.slice(0, 100)}" is not an alerts cursor: pass the \`next\` of the page before (over the API, its \`next_starting_after\`), unchanged.`);
      // Each batch continues from the last (raised at, id) read, never from an offset: an alert raised meanwhile, even
      // in the millisecond a page stands at, is newer than where the page is, so it never shifts what comes next.
      // Open ones come from the open-alerts index (both indexes score an alert by when it was raised, so a cursor
      // means the same in either): a page reads no resolved alert, and its `next` is null when no open one follows.
      // An alert resolved between the index read and the alert's own is still skipped.
      if (!options.all) await openIndexComplete();
      const source = options.all ? keys.alertsByTime : keys.alertsOpen;
      const data: Alert[] = [];
      for await (const batch of batchesAfter(redis, source, at ? { score: Number(at[1]), id: at[2] ?? '' } : null, LIST_BATCH)) {
        const alerts = await readAll(batch.map((member) => member.id));
        for (const [index, member] of batch.entries()) {
          const alert = alerts[index] ?? null;
          if (alert === null || (!options.all && alert.resolvedAt !== null)) continue;
          data.push(alert);
          if (data.length === options.limit) {
            const more = await goesOnAfter(redis, source, batch, index, LIST_BATCH);
            return { data, next: more ? `${member.score}.${member.id}` : null };
          }
        }
      }
      return { data, next: null };
    },
    /**
     * Resolves an open alert, naming who. Of people resolving one alert at once exactly one is recorded (`resolved`
     * true); every other one, and anyone after, gets `resolved` false with the alert naming who resolved it. Null when
     * there is no such alert. `still`, when given, is asked of the alert as it stands at the write (asked again if a
     * raise changed it since): false leaves it open (`resolved` false), so a caller that decided on what an alert said
     * never resolves what it says after a raise in between (a second chargeback).
     */
    async resolve(id: string, by: string, still?: (alert: Alert) => boolean): Promise<{ alert: Alert; resolved: boolean } | null> {
      const { alert, written } = await update(id, (known, now) => {
        if (known === null || known.resolvedAt !== null || (still !== undefined && !still(known))) return null;
        const { handled, ...rest } = known;
        const resolution = { ...rest, resolvedAt: now, resolvedBy: by, resolvedOn: { action: known.action, disputes: statusesOf(known) } };
        // A person handled what it names now (and what they handled before); the facts found none of it standing.
        return by === FACTS_RESOLVER ? resolution : { ...resolution, handled: union(handled ?? NOTHING_HANDLED, { disputes: known.disputes, compensations: compensationsOf(known) }) };
      });
      return alert === null ? null : { alert, resolved: written };
    },
    /**
     * Resolves the effect's open alerts of the kinds the facts decide (FACT_ALERT_KINDS) that are no longer called
     * for: later facts undid what raised them (a chargeback's exposure gone once the refund it met failed). Kinds the
     * facts say nothing of (`not_judged`, `send_unanswered`) are left to the workers that raise them. Each is resolved
     * naming FACTS_RESOLVER. Returns those resolved.
     */
    async settle(effectId: string, standing: readonly AlertKind[]): Promise<Alert[]> {
      const resolved: Alert[] = [];
      for (const kind of FACT_ALERT_KINDS) {
        if (standing.includes(kind)) continue;
        const done = await this.resolve(alertIdOf(effectId, kind), FACTS_RESOLVER);
        if (done?.resolved) resolved.push(done.alert);
      }
      return resolved;
    },
    /**
     * The open alerts of `kind`, newest raised first, read from the open-alerts index a batch at a time: what is
     * resolved is never read, however many alerts were. The first read in a process completes the index first
     * (completeOpenIndex), so alerts written before it existed are listed too.
     */
    async *openOf(kind: AlertKind): AsyncGenerator<Alert> {
      await openIndexComplete();
      for await (const batch of batchesAfter(redis, keys.alertsOpen, null, LIST_BATCH)) {
        for (const alert of await readAll(batch.map((member) => member.id).filter((id) => id.startsWith(`${kind}:`)))) {
          if (alert !== null && alert.resolvedAt === null) yield alert;
        }
      }
    },
    /**
     * How many alerts are open, however many: the size of the open-alerts index (one command), which set-alert-3 keeps
     * with every write and the backfill completed with the alerts written before it.
     */
    async openCount(): Promise<number> {
      await openIndexComplete();
      return redis.zcard(keys.alertsOpen);
    },
    /**
     * How many alerts of each kind are open (the open-alerts gauge): counted from the open-alerts index's ids, which
     * start with their kind, a batch at a time; no alert is read, and resolved ones are never looked at.
     */
    async openCountByKind(): Promise<Record<AlertKind, number>> {
      await openIndexComplete();
      const counts = Object.fromEntries(ALERT_KINDS.map((kind) => [kind, 0])) as Record<AlertKind, number>;
      for await (const batch of batchesAfter(redis, keys.alertsOpen, null, LIST_BATCH)) {
        for (const member of batch) {
          const kind = member.id.slice(0, member.id.indexOf(':')) as AlertKind;
          if (kind in counts) counts[kind] += 1;
        }
      }
      return counts;
    },
  };
}
