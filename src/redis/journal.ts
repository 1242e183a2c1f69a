// The Redis journal: per-effect signed chains, the effect's summary state beside them, claims with fencing
// epochs, the binding of effect ids to subjects and the open index. All writes go through the Lua scripts; this
// module seals entries (which needs the signing key, so it cannot happen inside Redis), keeps the Redis clock
// estimate fed, and reseals a batch whose compare-and-set lost a race.
import { randomBytes } from 'node:crypto';
import { Cluster } from 'ioredis';
import { buildReceipt, buildReceipts, type Receipt } from '../core/receipt.js';
import { completeBatch, ENTRY_VERSION, fromStored, prepareBatch, type AnyDraft, type Draft, type Entry, type EntryOf } from '../core/entries.js';
import { REFUNDS_HOLD } from '../core/effects.js';
import { InterlockError } from '../core/errors.js';
import { inlineSigner, type Signer, type SigningKey } from '../core/signing.js';
import { decodeStored } from '../core/stored-form.js';
import { createSealer } from '../keys/sealer.js';
import { serverTime, type RedisClient } from './client.js';
import { createRedisClock, type RedisClock } from './clock.js';
import { createReplicaWaits, masterConnector, masterServing, type ReplicaWaits, type WriteProof } from './replica-wait.js';
import type { Keys } from './keys.js';
import { createScriptRunner, type ScriptName } from './scripts.js';

export type EffectState = {
  head: string;
  count: number;
  epoch: number;
  open: boolean;
  committed: boolean;
  ambiguous: boolean;
  targetRefused: boolean;
  payloadHash: string;
  owner: string;
  nonce: string;
  claimExpires: number;
  sendDeadline: number;
  deathProvenAt: number | null;
  approvalId: string;
  amount: number;
  lastAt: number;
  /** A fenced-out sender's definite answer for the open dispatch, if one came. */
  late: 'landed' | 'rejected' | null;
  /** How many requests of the open dispatch got no definite answer (mark-unknown-1.lua), and when the last did. */
  unknowns: number;
  unknownAt: number | null;
  /** The committed refund failed for good and its cents were given back to its caps (release-failed-3.lua). */
  failedReleased: boolean;
};

type Raw = Record<string, string>;
const num = (raw: Raw, field: string) => Number(raw[field] ?? 0);
const str = (raw: Raw, field: string) => raw[field] ?? '';

function parseState(raw: Raw): EffectState {
  const late = raw.late;
  return {
    head: str(raw, 'head'),
    count: num(raw, 'count'),
    epoch: num(raw, 'epoch'),
    open: raw.open === '1',
    committed: raw.committed === '1',
    ambiguous: raw.ambiguous === '1',
    targetRefused: raw.targetRefused === '1',
    payloadHash: str(raw, 'payloadHash'),
    owner: str(raw, 'owner'),
    nonce: str(raw, 'nonce'),
    claimExpires: num(raw, 'claimExpires'),
    sendDeadline: num(raw, 'sendDeadline'),
    deathProvenAt: raw.deathProvenAt === undefined ? null : Number(raw.deathProvenAt),
    approvalId: str(raw, 'approvalId'),
    amount: num(raw, 'amount'),
    lastAt: num(raw, 'lastAt'),
    late: late === 'landed' || late === 'rejected' ? late : null,
    unknowns: num(raw, 'unknowns'),
    unknownAt: raw.unknownAt === undefined ? null : Number(raw.unknownAt),
    failedReleased: raw.failedReleased === '1',
  };
}

/** Raised when a compare-and-set kept losing: the effect is being written by others faster than we can append. */
export class JournalContentionError extends InterlockError {
  constructor(effectId: string, what: string) {
    super('journal_contention', `Could not ${what} for effect ${effectId}: its chain kept moving under concurrent writers. Retry the request.`);
    this.name = 'JournalContentionError';
  }
}

export class JournalWriteError extends InterlockError {
  constructor(effectId: string, reason: string) {
    super('journal_write_refused', `Redis refused an entry for effect ${effectId}: ${reason}. This is a bug in the writer, not a transient fault.`);
    this.name = 'JournalWriteError';
  }
}

/**
 * Raised instead of a receipt when an effect's chain disagrees with its state: every append writes both in one
 * script, so a chain shorter than the state's count, or whose entry at that count is not the state's head, was cut
 * or altered in Redis (or Redis lost writes). A receipt signed over it would call a chain valid that hides its end
 * (a COMMITTED, a refund's failure, a dispute).
 */
export class JournalInconsistentError extends InterlockError {
  constructor(effectIds: readonly string[]) {
    const named = `${effectIds.slice(0, 5).join(', ')}${effectIds.length > 5 ? `, and ${effectIds.length - 5} more` : ''}`;
    super('journal_inconsistent', `The journal of effect${effectIds.length === 1 ? '' : 's'} ${named} in Redis holds fewer entries than its state counts, or ends elsewhere than its head: it was cut or altered (or Redis lost writes), so no receipt is signed for it. Restore the journal from a backup of Redis, and compare it with receipts exported before.`);
    this.name = 'JournalInconsistentError';
  }
}

/**
 * Whether a chain read after its state (`head`, `count` from the state hash, read first) is that state's: its entry at
 * `count` is the head. It may hold more (an append landed between the two reads), never fewer.
 */
function chainMatchesState(entries: readonly Entry[], head: string | null, count: string | null): boolean {
  const counted = Number(count ?? 0);
  if (counted === 0) return entries.length === 0 || head === null;
  return entries.length >= counted && entries[counted - 1]?.hash === head;
}

/**
 * Where a batch goes: after `head` ('' for a new chain). `at`: that entry's time, when the caller read it (a batch is
 * never sealed before it: the script would refuse the time and cost a round trip more).
 */
export type Place = { head: string; at?: number };

type Misplaced = { status: 'HEAD_MOVED' | 'BAD_TIME'; head: string; lastAt: number; now: number };

/** What a LATE_RESULT did to the effect's state (late-5.lua). */
export type LateEffect = 'open' | 'committed' | 'relanded' | 'kept';

/**
 * Told by a binding script's check that the deployment marker (held by this process) is gone (`found` null) or holds
 * `found`: records the loss and returns the refusal the caller throws (durability.ts DurabilityMonitor.recordLoss).
 */
type MarkerLost = (found: string | null) => Error;

export type BindReply = { status: 'NEW' | 'BOUND'; now: number; token: string } | { status: 'OTHER_SUBJECT'; bound: string; now: number };

export type ProposeReply =
  | { status: 'OK'; epoch?: number; claimExpires?: number; sendDeadline?: number; now: number; entries: Entry[] }
  | { status: 'IN_FLIGHT'; owner: string; nonce: string; claimExpires: number; sendDeadline: number }
  | { status: 'COMMITTED' | 'AMBIGUOUS' | 'CONFLICTING_PAYLOAD' | 'TARGET_ERROR' | 'EPOCH_MOVED' | 'REBIND' }
  | Misplaced
  | { status: 'TERMS'; terms: string }
  | { status: 'LEASE'; reason: string; missing: boolean; revoked: boolean; revokedAt: number; reservedCents: number; uses: number; now: number; /** The approval's cap as Redis holds it, only for an amount over it (lib.lua). */ cap?: string }
  | { status: 'OVER_CAP'; cap: string; limit: string; reserved: string; reservedCents: number; uses: number; now: number }
  /** What the effect is sent for only once on its subject (`once`, a credit's incident) is held by effect `holder`. */
  | { status: 'ONCE'; once: string; holder: string; reservedCents: number; uses: number; now: number }
  /** Another refund on the payment (`holder`) holds its refunds (REFUNDS_HOLD): in flight or ambiguous. */
  | { status: 'WAIT'; holder: string; now: number }
  /** A refund on the payment let go of its refunds at `freed` (Redis ms), after this attempt's premise read began. */
  | { status: 'REREAD'; freed: number; now: number }
  /** This dispatch's premise read began more than premiseMaxAgeMs before the step (or is not dated): nothing was written. */
  | { status: 'STALE_READ'; readFrom: number; now: number };

/**
 * How much older than its own timeout a premise read may be when a dispatch (propose-5) or a resend (resend-2) is sent
 * on it (ms, from the read's start, on Redis's clock): premiseMaxAgeMs.
 */
export const PREMISE_MAX_AGE_MS = 10_000;

/**
 * The oldest a premise read may be when a dispatch or a resend is sent on it: the read's own timeout (the target's send
 * timeout, which bounds every read of it) and PREMISE_MAX_AGE_MS more. A worker paused for longer between its read and
 * that step reads the premises again, since what it read (no other refund, no dispute) may have changed meanwhile; a
 * read that was merely slow, answered within its timeout, is never too old by itself, so a slow Stripe delays sends
 * without stopping them.
 */
export function premiseMaxAgeMs(readTimeoutMs: number): number {
  return readTimeoutMs + PREMISE_MAX_AGE_MS;
}

export type ProposeRequest = {
  effectId: string;
  partition: string;
  mode: 'dispatch' | 'refuse';
  place: Place;
  epoch: number;
  payloadHash: string;
  owner: string;
  nonce: string;
  claimTtlMs: number;
  sendTimeoutMs: number;
  amount: number;
  approvalId: string;
  termsSha: string;
  boundAt: number;
  /**
   * What this effect may be sent for only once on its subject, held from its dispatch (in flight, landed or ambiguous)
   * until a resolving refusal: `incident:<id>` for a credit; REFUNDS_HOLD for a refund decided on the payment's other
   * refunds, held while it is in flight or ambiguous (src/core/effects.ts, holdOf); '' for nothing.
   */
  once: string;
  /**
   * When this attempt's premise read began, as a lower bound of Redis time (RedisClock.floor; 0 for not known): a
   * REFUNDS_HOLD let go at or after it (a landing the read may have missed) answers REREAD, and a dispatch more than
   * premiseMaxAgeMs after it (or with 0) answers STALE_READ.
   */
  readFrom: number;
  /** The batch, built once the entry time and the send deadline are known. */
  drafts: (place: { at: number; sendDeadline: number }) => AnyDraft[];
};

/**
 * `reread`: the effect settled COMMITTED or AMBIGUOUS on a subject a payment fact has marked (notePaymentFact), so its
 * facts are re-read now (settle-5.lua says why).
 */
export type SettleReply = { status: 'OK'; entry: Entry; now: number; reread: boolean } | { status: 'NOT_OPEN' } | { status: 'FENCED'; epoch: number } | { status: 'LATE'; late: 'landed' };
export type TakeOverReason = 'own' | 'expired' | 'owner-dead';
export type TakeOverReply =
  | { status: 'OK'; epoch: number; claimExpires: number; sendDeadline: number; deathProvenAt: number | null; late: string; unknowns: number; unknownAt: number; neverSent: boolean; now: number }
  | { status: 'NOT_OPEN' }
  | { status: 'MOVED'; epoch: number; owner: string }
  | { status: 'LIVE'; claimExpires: number; now: number };
export type ResendReply =
  | { status: 'OK'; sendDeadline: number; claimExpires: number; now: number }
  | { status: 'NOT_OPEN' }
  | { status: 'FENCED'; epoch: number }
  | { status: 'TOO_LATE'; now: number }
  | { status: 'LEASE'; reason: string; revoked: boolean; revokedAt: number; now: number }
  | { status: 'LATE'; late: string }
  | { status: 'STALE_READ'; readFrom: number; now: number };

/**
 * The answer of the last check before a request leaves (check-epoch-2.lua): true when it may leave, else why not, on
 * Redis's clock (`now`; `at`: when the deadline, the claim or the approval lapsed, or the approval was revoked).
 */
export type ClaimCheck =
  | true
  | { refused: 'claim_moved'; epoch: number; owner: string; now: number }
  | { refused: 'send_deadline' | 'claim_expired' | 'approval_revoked' | 'approval_expired'; at: number; now: number }
  | { refused: 'approval_missing'; now: number };

/** Where a reading of the committed effects stopped: the list (watch, or effects-by-time), the time and the effect id. */
export type WatchPosition = { list: 'watch' | 'bound'; score: number; member: string };

/** A stored position, or null when there is none or it cannot be read (the passes then start at the oldest). */
function watchPositionOf(text: string): WatchPosition | null {
  if (text === '') return null;
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value !== 'object' || value === null) return null;
    const { list, score, member } = value as Record<string, unknown>;
    if ((list !== 'watch' && list !== 'bound') || typeof score !== 'number' || !Number.isFinite(score) || typeof member !== 'string') return null;
    return { list, score, member };
  } catch {
    return null;
  }
}

/** Where the scheduled reconciliation passes stand (keys.reconcileCursor): the position to go on from, and the failed re-reads in a row the last pass ended on. */
export type ReconcileCursor = { position: WatchPosition | null; failedInARow: number };

/**
 * The deployment's catch-up window (keys.reconcileCursor `catchUpFrom`, take-reconcile-lease-2.lua): the Redis ms the
 * passes read from until one has read through to the last effect; `opened`, whether this turn opened it or, a
 * catch-up, found it open (either way the passes start over at its oldest effect); `lastEnded`, when the last pass ended before (Redis ms; null before the first);
 * `takenUp`, where the passes stood when this turn opened it back to there, before the horizon as of the last pass
 * (a catch-up the version before left part way), else null.
 */
export type CatchUpWindow = { since: number; opened: boolean; lastEnded: number | null; takenUp: WatchPosition | null };

/**
 * A request to run a reconciliation pass (take-reconcile-lease-2.lua): OK with the lease and the cursor; HELD while
 * another process runs one; EARLY, for a pass on the schedule, while the last pass began less than the interval ago
 * or Stripe's Retry-After lasts (`notBefore`). Times are Redis ms.
 */
export type ReconcileTurn = { status: 'OK'; now: number; cursor: ReconcileCursor; window: CatchUpWindow | null } | { status: 'HELD'; now: number } | { status: 'EARLY'; now: number; startedAt: number; notBefore: number };

/**
 * The open index also serves as the producers' outbox: a producer that records a proposal and queues its job (the
 * support API, the CLI) binds with a token that starts with this, and the job carries the token: its worker drops the
 * entry once the effect is judged (or the job fails for good). An entry of that kind left past OUTBOX_GRACE_MS is a
 * proposal recorded and maybe not judged (never queued, or its job removed): recovery has it queued, or, while its job
 * stands, keeps the entry for another grace (outboxLater).
 */
const OUTBOX_TOKEN = 'outbox.';

export function isOutboxEntry(entry: string): boolean {
  return entry.slice(entry.indexOf(':') + 1).startsWith(OUTBOX_TOKEN);
}

/** How old a producer's entry must be before recovery takes its proposal for one never queued (a queue add takes far less). */
export const OUTBOX_GRACE_MS = 30_000;

/** One entry of the open index: an effect a submit bound, maybe dispatched, and has not yet seen closed. */
export type OpenEffect = { effectId: string; partition: string | null; boundAt: number; entry: string };

export type Journal = ReturnType<typeof createRedisJournal>;

/**
 * The refund that holds a payment's refunds (REFUNDS_HOLD) and whether its dispatch is open, read so the two agree: the
 * hold, the holder's state, then the hold again. A settle closes the dispatch and lets go in one step, so a holder
 * whose dispatch reads closed and that still holds afterwards is one that kept it (AMBIGUOUS), never one that committed
 * between the reads. Null when none holds.
 */
export async function refundsHolder(journal: Pick<Journal, 'onceHolder' | 'readState'>, partition: string): Promise<{ holder: string; open: boolean } | null> {
  let holder = await journal.onceHolder(partition, REFUNDS_HOLD);
  for (let tries = 0; holder !== null && tries < 3; tries += 1) {
    const open = (await journal.readState(partition, holder)).state.open;
    const again = await journal.onceHolder(partition, REFUNDS_HOLD);
    if (again === holder) return { holder, open };
    holder = again;
  }
  // Taken by one refund after another while it read: taken as out (in flight), which is waited for, not refused.
  return holder === null ? null : { holder, open: true };
}

/** The stored entries of a chain: one per line of its string (push_batch in lib.lua). */
function storedLines(text: string | null): string[] {
  return text === null || text === '' ? [] : text.split('\n');
}

/**
 * A chain's entries from its stored text (storedChain), hashed and linked: what `entries` answers. A chain that does
 * not read is thrown as journal_damaged (damagedJournal).
 */
export function entriesOfStored(effectId: string, text: string | null): Entry[] {
  try {
    return fromStored(effectId, storedLines(text));
  } catch (error) {
    throw damagedJournal(effectId, error);
  }
}

/**
 * What a stored chain that does not read is thrown as. An entry that is not JSON, or that holds a value with no
 * canonical form (which hashing refuses as non_canonical_value, the words for a caller's own value), was edited or
 * damaged in Redis, since nothing the gate writes looks so: the service's fault, 500 journal_damaged naming the effect
 * and what to do, never a 400 telling a caller to change a request that holds no such value. Other errors (an entry
 * of a newer version) are left as they are.
 */
function damagedJournal(effectId: string, error: unknown): unknown {
  const nonCanonical = error instanceof InterlockError && error.code === 'non_canonical_value';
  if (!nonCanonical && !(error instanceof SyntaxError)) return error;
  const field = nonCanonical ? error.fields[0] : undefined;
  const what = field === undefined ? 'an entry is not JSON' : `an entry holds ${field.message} at ${field.path}, which has no canonical form`;
  return new InterlockError(
    'journal_damaged',
    `The journal of effect ${effectId} in Redis is damaged: ${what}. Interlock never writes such an entry, so the journal was edited or damaged in Redis: the request is not at fault, and whatever reads the effect fails until the journal is repaired. Restore the effect's journal from a backup of Redis, and check it against the receipts exported before (\`interlock receipt verify FILE\`).`,
    { cause: error },
  );
}

/**
 * What each entry of a stored chain says, without its hash: `hash` and `prev` are left empty, and its values are only
 * looked over, never serialised (computing the hashes is most of what reading a chain costs). Only for telling which
 * state an effect is in (a filtered listing, which then reads a match with entriesOfStored), never for a receipt or
 * anything signed. Null when an entry does not parse, holds a value with no canonical form, or is of a version newer
 * than this interlock knows: entriesOfStored then says what is wrong with the chain, as reading it always did, so a
 * chain that fails to read fails whichever filter looks at it.
 */
export function unhashedEntriesOfStored(effectId: string, text: string | null): Entry[] | null {
  const entries: Entry[] = [];
  let previousAt: number | null = null;
  // What hashing refuses (core/json.ts assertJson), looked for without hashing: a number that is not finite (`1e400`
  // parses as Infinity), a lone surrogate in a string or a key, a "__proto__" key, nesting past MAX_JSON_DEPTH (64).
  const canonical = (value: unknown, depth: number): boolean => {
    if (typeof value === 'number') return Number.isFinite(value);
    if (typeof value === 'string') return !/[\uD800-\uDFFF]/.test(value) || !/\p{Surrogate}/u.test(value);
    if (value === null || typeof value !== 'object') return true;
    if (depth >= 64) return false;
    for (const key in value) {
      if (key === '__proto__' || !canonical(key, depth) || !canonical((value as Record<string, unknown>)[key], depth + 1)) return false;
    }
    return true;
  };
  try {
    for (const item of storedLines(text)) {
      const stored = JSON.parse(decodeStored(item, previousAt)) as Record<string, unknown>;
      if (stored === null || typeof stored !== 'object' || (typeof stored.v === 'number' && stored.v > ENTRY_VERSION) || !canonical(stored, 0)) return null;
      previousAt = typeof stored.at === 'number' ? stored.at : null;
      entries.push(Object.assign(stored, { effectId, prev: '', hash: '', sig: stored.sig ?? null }) as unknown as Entry);
    }
  } catch {
    return null;
  }
  return entries;
}

/** How long after a failed index upkeep (journal.ts flushIndex) it is tried again. */
const UPKEEP_RETRY_MS = 1_000;

/** A dispatch must follow its binding within this window; recovery drops a stale index entry only past it. */
export const BIND_WINDOW_MS = 5 * 60_000;

/**
 * A commit within this long of the binding that put its effect in the effects-by-time index is found through that
 * index: the reconciler reads it this far before its window. Only a later commit (a resend after a crash, an effect
 * bound long before its commit, as by a caller that failed before recording and was retried hours later) goes on the
 * watch list, whichever process made the binding (lib.lua apply_upkeep reads its time in that index), so most
 * committed effects cost the watch list nothing.
 */
export const RECENT_COMMIT_MS = 10 * 60_000;

/**
 * How far past a binding step that found its effect bound already (an effects job's, on its producer's binding) the
 * watch-list check that step carries reaches (watchCheck): a settle of the effect this process seals within it needs
 * no command of its own to be on the watch list when late (settle). A job's send and settle take seconds; a later
 * settle (a slow target, a settle retried) checks again before it is written.
 */
const SETTLE_CHECKED_AHEAD_MS = 60_000;

/** How much later than its first attempt a settle's check before it is written covers its attempts again (settle). */
const SETTLE_RETRY_SLACK_MS = 1_000;

/** How many effects a journal remembers the watch-list check of their binding step for (watchChecked). */
const WATCH_CHECKED_KEPT = 10_000;

/**
 * The longest window `interlock reconcile --since` takes (src/main.ts refuses a longer one). A watch-list entry older
 * than it, and than the scheduled passes' horizon, is one no reconciliation can ask for: the end of each scheduled
 * pass drops such entries (queues/facts.ts, trimWatch).
 */
export const LONGEST_RECONCILE_SINCE_MS = 400 * 86_400_000;

/** The address replica-wait.ts knows a single server by (its one master). */
const SERVER = 'server';

export function createRedisJournal(deps: { redis: RedisClient; keys: Keys; signingKey: SigningKey; signer?: Signer; maxSkewMs?: number; casAttempts?: number; clock?: RedisClock; bindWindowMs?: number }) {
  const { redis, keys, signingKey } = deps;
  // Batches sealed in the same turn of the event loop share one signature (src/keys/sealer.ts).
  const sealer = createSealer(deps.signer ?? inlineSigner(signingKey), { domain: 'entries' });
  const maxSkewMs = deps.maxSkewMs ?? 5_000;
  const casAttempts = deps.casAttempts ?? 50;
  const bindWindowMs = deps.bindWindowMs ?? BIND_WINDOW_MS;
  const clock = deps.clock ?? createRedisClock();
  const run = createScriptRunner(redis);
  // Replicas' acknowledgements are asked on connections of their own (replica-wait.ts), opened at the first send that needs them.
  let replicaWaits: ReplicaWaits | null = null;
  // Index tokens need only be unique among submits: this journal's boot tag and a counter.
  const bootTag = randomBytes(6).toString('hex');
  let tokens = 0;
  // Index upkeep carried by the next bind (or by flushIndex when no bind comes soon): entries of finished submits
  // to drop, and effects settled after a send for the watch list, as (effect id, settled at) pairs (the script leaves
  // off those effects-by-time finds: lib.lua apply_upkeep).
  let finished: string[] = [];
  let watching: string[] = [];
  let flushTimer: NodeJS.Timeout | null = null;
  // Effects whose binding step in this process carried the watch-list check of a settle up to a time (Redis ms): the
  // step put the effect on the watch list if a settle then would be late (lib.lua apply_upkeep), so a settle by then
  // needs no check of its own (settle). Oldest first, at most WATCH_CHECKED_KEPT.
  const watchChecked = new Map<string, number>();

  /**
   * The members of a time-scored sorted set from `from` on, in order (time, then member), a page at a time;
   * after `position` when it is in this set's range. Entries added while it reads come later in the order or shift a
   * page by one (read twice, never skipped); none is taken out inside the range.
   */
  async function* inOrder(key: string, from: number, position: WatchPosition | null): AsyncGenerator<{ member: string; score: number }[]> {
    const resume = position !== null && position.score >= from ? position : null;
    const page = 1_000;
    for (let offset = 0; ; offset += page) {
      // RESP3 with native replies answers [member, score] pairs; RESP2 and the legacy mapping a flat list.
      const flat = (await redis.zrangebyscore(key, resume?.score ?? from, '+inf', 'WITHSCORES', 'LIMIT', offset, page)).flat();
      const items: { member: string; score: number }[] = [];
      for (let i = 0; i + 1 < flat.length; i += 2) {
        const member = String(flat[i]);
        const score = Number(flat[i + 1]);
        if (resume === null || score > resume.score || member > resume.member) items.push({ member, score });
      }
      if (items.length > 0) yield items;
      if (flat.length < 2 * page) return;
    }
  }

  /** `checks`: (effect id, time) pairs this call's own step checks besides the settles waiting (watchCheck). */
  function takeUpkeep(checks: readonly string[] = []): { args: string[]; restore(): void } {
    const dropping = finished;
    const adding = watching;
    finished = [];
    watching = [];
    return {
      // As lib.lua apply_upkeep takes it: the window it places settles by, the entries to drop, the settles.
      args: [String(RECENT_COMMIT_MS), String(dropping.length), ...dropping, ...adding, ...checks],
      restore() {
        finished.push(...dropping);
        watching.push(...adding);
      },
    };
  }

  function scheduleUpkeep(flushMs: number): void {
    flushTimer ??= setTimeout(() => {
      // A flush Redis refused (OOM, READONLY, a timeout) keeps what it held (flushIndex restores it) and is tried
      // again: the watch list's late commits would otherwise wait for the next bind, which may never come.
      // A connection that was closed (the process stopping) ends the retries.
      flushIndex().catch(() => {
        if (redis.status !== 'end') scheduleUpkeep(UPKEEP_RETRY_MS);
      });
    }, flushMs);
    flushTimer.unref();
  }

  async function flushIndex(): Promise<void> {
    if (flushTimer) clearTimeout(flushTimer);
    flushTimer = null;
    if (finished.length === 0 && watching.length === 0) return;
    const upkeep = takeUpkeep();
    try {
      await run('upkeep-3', [keys.openIndex, keys.watch, keys.effectsByTime], upkeep.args);
    } catch (error) {
      upkeep.restore();
      throw error;
    }
  }

  // A new effect's binding rides on its dispatch step on one server; a cluster keeps the binding in another slot.
  const bindsWithDispatch = !(redis instanceof Cluster);

  // The deployment's marker as this process holds it (holdMarker), which every binding script checks first ('' until
  // one is held: nothing is checked), and whom a script that found it gone or changed tells (markerLost).
  const markerHolders: { held: string; lost: MarkerLost }[] = [];
  const heldMarker = (): string => markerHolders[0]?.held ?? '';
  /**
   * A binding script (or checkMarker) found the marker gone or changed (`found`, '' for gone) and wrote nothing: every
   * holder records the loss, and the first one's refusal is thrown (its monitor's, as the guard throws it from then on).
   */
  function markerLost(found: string): never {
    const refusals = markerHolders.map((holder) => holder.lost(found === '' ? null : found));
    throw refusals[0] ?? new Error(`the deployment marker ${keys.deployment} is gone or changed: Redis lost its data`);
  }

  function nextToken(outbox = false): string {
    tokens += 1;
    return `${outbox ? OUTBOX_TOKEN : ''}${bootTag}.${tokens.toString(36)}`;
  }

  /**
   * The watch-list check a binding step (bind-5, bind-existing-5, bind-propose-10) carries for the settle its submit
   * may make: the effect as if settled at `through` (Redis ms), which apply_upkeep puts on the watch list, scored
   * `through`, if that is more than RECENT_COMMIT_MS after the binding's time in effects-by-time, and only when the
   * effect was bound before the step ('~': a binding the step makes is new, and its time comes back to the submit).
   * Rides in the step's own command. None while the clock has no estimate (the settle checks instead).
   */
  function watchCheck(effectId: string, estimate: number | null): { pairs: string[]; through: number } | null {
    if (estimate === null) return null;
    const through = estimate + SETTLE_CHECKED_AHEAD_MS;
    return { pairs: [effectId, `~${through}`], through };
  }

  /** Remembers that the binding step checked `effectId`'s settles up to `through` (watchCheck). */
  function checkedThrough(effectId: string, through: number): void {
    watchChecked.delete(effectId);
    watchChecked.set(effectId, through);
    if (watchChecked.size > WATCH_CHECKED_KEPT) watchChecked.delete(watchChecked.keys().next().value ?? '');
  }

  /**
   * Before a settle of `effectId` that Redis may record as late as `latest` (Redis ms): puts the effect on the watch
   * list, scored `latest`, when that may be more than RECENT_COMMIT_MS after its binding, and waits for the write. The
   * entry is then in Redis before the settle is (an entry for a settle that is then not written is an effect still
   * open, or settled by another holder: one the reconciler reads anyway). `boundAt`, the binding's time when the
   * settler made it, decides here; otherwise the check its binding step carried (watchChecked) does, or upkeep-3 reads
   * the binding's time in effects-by-time as apply_upkeep does, carrying the index upkeep waiting (one command, for a
   * settle nothing checked: recovery's, or one long after its binding step). A prompt settle under its own binding,
   * or within the check its binding step carried, sends nothing here.
   */
  async function watchBeforeSettle(effectId: string, latest: number, boundAt: number | undefined): Promise<void> {
    if (boundAt !== undefined && latest - boundAt <= RECENT_COMMIT_MS) return;
    if (boundAt === undefined && (watchChecked.get(effectId) ?? -Infinity) >= latest) return;
    if (flushTimer) clearTimeout(flushTimer);
    flushTimer = null;
    const upkeep = takeUpkeep([effectId, String(latest)]);
    try {
      await run('upkeep-3', [keys.openIndex, keys.watch, keys.effectsByTime], upkeep.args);
    } catch (error) {
      upkeep.restore();
      if (finished.length > 0 || watching.length > 0) scheduleUpkeep(UPKEEP_RETRY_MS);
      throw error;
    }
  }

  /** One call of a binding script (bind-5, bind-existing-5), its index upkeep carried; the marker's loss is thrown. */
  async function bindCall(name: 'bind-5' | 'bind-existing-5', effectId: string, partition: string, outbox: boolean): Promise<BindReply | { status: 'UNBOUND'; now: number }> {
    const token = nextToken(outbox);
    const check = watchCheck(effectId, clock.estimate());
    const upkeep = takeUpkeep(check?.pairs);
    const reply = await call<{ status: 'NEW' | 'BOUND'; now: number } | { status: 'UNBOUND'; now: number } | { status: 'OTHER_SUBJECT'; bound: string; now: number } | { status: 'MARKER'; found: string }>(
      name,
      [keys.effectPartitions, keys.openIndex, keys.watch, keys.effectsByTime, keys.deployment],
      [effectId, partition, heldMarker(), token, ...upkeep.args],
    ).catch((error: unknown) => {
      upkeep.restore();
      throw error;
    });
    if (reply.status === 'MARKER') {
      upkeep.restore();
      markerLost(reply.found);
    }
    if (reply.status === 'OTHER_SUBJECT' || reply.status === 'UNBOUND') return reply;
    // Only a binding found: the check passed over a new one (NEW), whose time the submit settles by.
    if (check !== null && reply.status === 'BOUND') checkedThrough(effectId, check.through);
    return { status: reply.status, now: reply.now, token };
  }

  /**
   * The propose-5 keys and arguments of one sealed attempt at a dispatch; bind-propose-10 adds its own keys and
   * arguments after them (`moreKeys`, `moreArgs`), in the same lists.
   */
  function proposeCall(request: ProposeRequest, at: number, sendDeadline: number, count: number, pairs: readonly string[], moreKeys: readonly string[] = [], moreArgs: readonly string[] = []): { keys: string[]; args: (string | number)[] } {
    const { effectId, partition } = request;
    const args: (string | number)[] = [
      effectId, partition, request.place.head, request.epoch, request.mode, request.payloadHash, request.owner, request.nonce,
      request.claimTtlMs, request.amount, at, maxSkewMs, request.approvalId, request.termsSha, request.boundAt, bindWindowMs,
      sendDeadline, count, request.once, request.readFrom, premiseMaxAgeMs(request.sendTimeoutMs),
    ];
    for (const item of pairs) args.push(item);
    for (const item of moreArgs) args.push(item);
    return {
      keys: [keys.state(partition, effectId), keys.entries(partition, effectId), keys.approval(partition, request.approvalId), keys.approvalOpen(partition, request.approvalId), keys.subject(partition), ...moreKeys],
      args,
    };
  }

  /** propose-5 until the batch's time is one Redis accepts; `floor` is the least time to seal at. */
  /**
   * Dispatch steps whose answer was lost, by the request the caller made (lostDispatchHead): the last entry each sealed.
   * Not by the error: the client fails every command waiting on a lost connection with one and the same error.
   */
  const lostDispatchHeads = new WeakMap<ProposeRequest, string>();
  function lostDispatch(error: unknown, request: ProposeRequest, entries: readonly Entry[]): never {
    const head = entries.at(-1)?.hash;
    if (head !== undefined) lostDispatchHeads.set(request, head);
    throw error;
  }

  /** `asked`: the request as the caller made it, under which a lost answer's head is kept (`request` may be a copy). */
  async function proposeFrom(request: ProposeRequest, floor: number, attempts: number, asked: ProposeRequest = request): Promise<ProposeReply> {
    let least = Math.max(floor, request.place.at ?? 0);
    for (let attempt = 0; attempt < attempts; attempt += 1) {
      const at = await sealTime(least);
      const sendDeadline = at + request.sendTimeoutMs;
      const { entries, pairs } = await seal(request.effectId, request.drafts({ at, sendDeadline }), at, request.place.head);
      const planned = proposeCall(request, at, sendDeadline, entries.length, pairs);
      const reply = await call<ProposeReply>('propose-5', planned.keys, planned.args).catch((error: unknown) => lostDispatch(error, asked, entries));
      if (reply.status === 'OK') return Object.assign(reply, { entries });
      // Only the time can be fixed here; a moved head means the chain changed and the caller must look again.
      if (reply.status === 'BAD_TIME') {
        least = retryPlace(reply).floor;
        continue;
      }
      return reply;
    }
    throw new JournalContentionError(request.effectId, 'dispatch');
  }

  /** Runs a script and feeds the clock with the Redis time its reply carries. */
  async function call<T>(name: ScriptName, scriptKeys: readonly string[], args: readonly (string | number)[]): Promise<T> {
    const sentAt = clock.mark();
    const reply = await run<T>(name, scriptKeys, args);
    const now = (reply as { now?: unknown } | null)?.now;
    if (typeof now === 'number') clock.observe(now, sentAt);
    return reply;
  }

  async function now(): Promise<number> {
    const sentAt = clock.mark();
    const time = await serverTime(redis);
    clock.observe(time, sentAt);
    return time;
  }

  /**
   * A time to seal entries at: the estimate of Redis time, never before what Redis last said about this chain, nor
   * before a time this journal sealed at already. The estimate is the tightest upper bound over recent replies, so a
   * faster reply lowers it, below a time just sealed: a settle sealed then would precede its own dispatch, and the
   * script's refusal (BAD_TIME) would cost a round trip more.
   */
  let lastSealed = 0;
  async function sealTime(floor = 0): Promise<number> {
    const estimate = clock.estimate() ?? (await now());
    lastSealed = Math.max(estimate, floor, lastSealed);
    return lastSealed;
  }

  /** Seals a batch: hashed here, its seal signed with the batches sealed beside it (possibly on another thread). */
  async function seal(effectId: string, drafts: readonly AnyDraft[], at: number, head: string): Promise<{ entries: Entry[]; pairs: string[] }> {
    const batch = prepareBatch(drafts, { effectId, at, prev: head === '' ? null : head }, sealer.kid);
    const { entries, stored } = completeBatch(batch, await sealer.seal(batch.lastHash));
    const pairs = new Array<string>(2 * entries.length);
    for (let index = 0; index < entries.length; index += 1) {
      pairs[2 * index] = (entries[index] as Entry).hash;
      pairs[2 * index + 1] = stored[index] ?? '';
    }
    return { entries, pairs };
  }

  async function readState(partition: string, effectId: string): Promise<{ now: number; state: EffectState }> {
    const reply = await call<{ now: number; state: Raw | unknown[] }>('read-state-1', [keys.state(partition, effectId)], []);
    // cjson writes an empty Lua table as [] or {}: both mean "no such effect yet".
    const raw = Array.isArray(reply.state) ? {} : reply.state;
    return { now: reply.now, state: parseState(raw) };
  }

  /**
   * An effect's chain checked against its state, read first (an append between the two lengthens the chain, never
   * shortens it): a chain shorter than the state counts, or ending elsewhere than its head (cut, or gone while the
   * state stays), throws JournalInconsistentError. Null when the effect is bound to no subject.
   */
  async function checkedEntries(effectId: string): Promise<{ partition: string; entries: Entry[] } | null> {
    const partition = await redis.hget(keys.effectPartitions, effectId);
    if (partition === null) return null;
    const [head, count] = await redis.hmget(keys.state(partition, effectId), 'head', 'count');
    const entries = entriesOfStored(effectId, await redis.get(keys.entries(partition, effectId)));
    if (!chainMatchesState(entries, head ?? null, count ?? null)) throw new JournalInconsistentError([effectId]);
    return { partition, entries };
  }

  function unexpected(effectId: string, reply: { status: string; reason?: string }): never {
    throw new JournalWriteError(effectId, reply.reason ?? `unexpected script reply ${JSON.stringify(reply)}`);
  }

  /** After a lost compare-and-set: where to try next, from what the script said. */
  function retryPlace(reply: Misplaced): { head: string; floor: number } {
    if (reply.status === 'BAD_TIME') {
      clock.reset();
      lastSealed = 0;
    }
    return { head: reply.head, floor: Math.max(reply.lastAt, reply.now) };
  }

  /** A LATE_RESULT through late-5.lua: `from` a fenced-out sender (always kept) or the post-send facts (only if needed). */
  async function recordLate(partition: string, effectId: string, draft: Draft<'LATE_RESULT'>, approvalId: string, from: 'sender' | 'facts'): Promise<{ status: 'OK'; entry: EntryOf<'LATE_RESULT'>; effect: LateEffect } | { status: 'KNOWN'; effect: 'open' | 'committed' | 'unknown' }> {
    let head = (await readState(partition, effectId)).state.head;
    let floor = 0;
    const aid = approvalId === '' ? '-' : approvalId;
    for (let attempt = 0; attempt < casAttempts; attempt += 1) {
      const at = await sealTime(floor);
      const { entries, pairs } = await seal(effectId, [draft], at, head);
      const reply = await call<{ status: 'OK'; effect: LateEffect; now: number } | { status: 'KNOWN'; effect: 'open' | 'committed' | 'unknown'; now: number } | Misplaced>(
        'late-5',
        [keys.state(partition, effectId), keys.entries(partition, effectId), keys.approval(partition, aid), keys.approvalOpen(partition, aid), keys.subject(partition)],
        [effectId, head, at, maxSkewMs, draft.outcome, aid, from, ...pairs],
      );
      if (reply.status === 'OK') return { status: 'OK', entry: entries[0] as EntryOf<'LATE_RESULT'>, effect: reply.effect };
      if (reply.status === 'KNOWN') return { status: 'KNOWN', effect: reply.effect };
      ({ head, floor } = retryPlace(reply));
    }
    throw new JournalContentionError(effectId, 'record a late result');
  }

  return {
    keys,
    clock,
    bindWindowMs,
    readState,
    now,

    /**
     * Makes the binding scripts check the deployment's marker (keys.ts `deployment`) against `held`, the value this
     * process found at start (durability.ts holdDeploymentMarker), in the same atomic step as the binding: a Redis that
     * lost its data under the process binds nothing, whatever its durability monitor last read. `lost` is told the
     * value found (null: gone) and returns the refusal to throw. The first holder's value is checked; the returned
     * function stops telling `lost` (a sender that closed).
     */
    holdMarker(held: string, lost: MarkerLost): () => void {
      const holder = { held, lost };
      markerHolders.push(holder);
      return () => {
        const at = markerHolders.indexOf(holder);
        if (at >= 0) markerHolders.splice(at, 1);
      };
    },

    /**
     * Reads the deployment's marker once (one GET) and compares it with the one held (holdMarker), as a binding script
     * does: gone or changed, every holder records the loss and the first one's refusal is thrown. For a submit on a
     * cluster that read its effect's chain empty under a binding that found the effect bound already (submit.ts): the
     * binding's check came before that read, and the dispatch step (propose-5, another slot) cannot make one. Reads
     * nothing while no marker is held.
     */
    async checkMarker(): Promise<void> {
      const held = heldMarker();
      if (held === '') return;
      const found = await redis.get(keys.deployment);
      if (found !== held) markerLost(found ?? '');
    },

    /**
     * Binds an effect to its subject (the first binding wins for good) and indexes it as possibly open. `token`
     * identifies this submit's index entry, so only this submit's unindex removes it. `outbox`: the binding of a
     * producer that records a proposal and then queues it; its entry stays until the effect is judged (isOutboxEntry).
     * Throws the marker holder's refusal when Redis lost its data (holdMarker), binding nothing.
     */
    async bind(effectId: string, partition: string, options: { outbox?: boolean } = {}): Promise<BindReply> {
      const reply = await bindCall('bind-5', effectId, partition, options.outbox === true);
      if (reply.status === 'UNBOUND') throw new Error(`bind-5 answered UNBOUND for effect ${effectId}`);
      return reply;
    },

    /**
     * bind, for a submit that expects the effect's chain to exist (an effects job: its producer recorded the proposal,
     * binding first): it indexes this submit under the binding the effect holds, and never makes one (bind-existing-5).
     * UNBOUND: the effect is not bound, so no chain of it exists, and nothing was written. A job added with only the
     * queue's keys thus binds no request id to the payment it names.
     */
    async bindExisting(effectId: string, partition: string): Promise<BindReply | { status: 'UNBOUND'; now: number }> {
      return bindCall('bind-existing-5', effectId, partition, false);
    },

    /**
     * Marks this submit's index entry finished: it is dropped with the next bind, or within `flushMs` when none
     * comes. Until then it only makes recovery look at a settled effect once more; a worker that dies first leaves
     * it to recovery, which drops it once it is older than the bind window.
     */
    unindex(effectId: string, token: string, flushMs = 50): void {
      finished.push(`${effectId}:${token}`);
      scheduleUpkeep(flushMs);
    },

    /**
     * Settles where the reconciler finds an effect settled after a send (committed, or refused, or AMBIGUOUS: a send
     * went out, and what Stripe did with it may still show later): `boundAt` is when the caller's own binding put it
     * in the effects-by-time index, undefined when the caller did not make the binding. A settle within
     * RECENT_COMMIT_MS of it is found there, and costs nothing here. Any other is carried like unindex, and the
     * script that writes it (lib.lua apply_upkeep) reads the binding's time in effects-by-time and puts it on the watch
     * list unless it is within RECENT_COMMIT_MS of that: a binding made by another process (the API's, for the effects
     * worker's commit) is placed by its true time, however long before its first PROPOSED it was made. A late settle
     * is on the watch list before it is written (settle); this moves its place there to the time it was written, and
     * a process that dies first leaves it at the time checked for (a few seconds later, up to a minute for an effects
     * job's: SETTLE_CHECKED_AHEAD_MS).
     */
    settledAfterSend(effectId: string, settledAt: number, boundAt: number | undefined, flushMs = 50): void {
      if (boundAt !== undefined && settledAt - boundAt <= RECENT_COMMIT_MS) return;
      watching.push(effectId, String(settledAt));
      scheduleUpkeep(flushMs);
    },

    /**
     * Up to `limit` effects settled after a send since `since` (Redis ms): committed, or settled otherwise after a
     * dispatch (a late landing of those is what a missed webhook would leave unrecorded). They come as one sequence:
     * the watch list's, in settle order, then, oldest bound first, those bound from RECENT_COMMIT_MS before `since`
     * on that are committed or were dispatched and are not open now (which takes in every settle that stayed off the
     * watch list, and a few from just before `since`). `after` continues the sequence where an earlier call stopped;
     * `next` is where this one stopped, or null when it reached the end (the next call starts over), so calls that
     * pass each other's `next` cover every such effect however many there are. `positions` holds each listed effect's
     * own place in the sequence (beside `effectIds`, index for index): a reader that stops partway goes on from the
     * place of the last effect it finished, not from where this call began. The watch list is not trimmed here:
     * a reconcile over a longer window than the scheduled one still needs what lies beyond that; trimWatch drops only
     * what no window reaches (it holds only the settles the index would not place, a few bytes each). An entry whose
     * effect is recorded and was never dispatched is passed over: a binding step checks a settle its submit may never
     * make (watchCheck), and such an effect sent nothing a fact could follow.
     */
    async watched(since: number, limit = 1_000, after: WatchPosition | null = null): Promise<{ effectIds: string[]; positions: WatchPosition[]; next: WatchPosition | null }> {
      // Each effect once, at its first place in the sequence.
      const found = new Map<string, WatchPosition>();
      const listed = (next: WatchPosition | null) => ({ effectIds: [...found.keys()], positions: [...found.values()], next });
      let last: WatchPosition | null = null;
      if (after === null || after.list === 'watch') {
        for await (const page of inOrder(keys.watch, since, after)) {
          const ids = page.map((item) => item.member);
          const partitions = await redis.hmget(keys.effectPartitions, ...ids);
          const unsent = await Promise.all(ids.map(async (effectId, index) => {
            const partition = partitions[index];
            if (partition === null || partition === undefined) return false;
            const [head, committed, epoch] = await redis.hmget(keys.state(partition, effectId), 'head', 'committed', 'epoch');
            return head !== null && committed !== '1' && Number(epoch ?? 0) === 0;
          }));
          for (const [index, { member, score }] of page.entries()) {
            if (unsent[index]) {
              last = { list: 'watch', score, member };
              continue;
            }
            if (found.size >= limit) return listed(last);
            last = { list: 'watch', score, member };
            if (!found.has(member)) found.set(member, last);
          }
        }
      }
      for await (const page of inOrder(keys.effectsByTime, since - RECENT_COMMIT_MS, after?.list === 'bound' ? after : null)) {
        const ids = page.map((item) => item.member);
        const partitions = await redis.hmget(keys.effectPartitions, ...ids);
        const sent = await Promise.all(ids.map(async (effectId, index) => {
          const partition = partitions[index];
          if (partition === null || partition === undefined) return false;
          const [committed, open, epoch] = await redis.hmget(keys.state(partition, effectId), 'committed', 'open', 'epoch');
          // A committed effect drops its epoch; any other that was ever dispatched keeps it, and an open one is
          // still its sender's or recovery's.
          return committed === '1' || (open !== '1' && Number(epoch ?? 0) > 0);
        }));
        for (const [index, { member, score }] of page.entries()) {
          if (!sent[index]) {
            last = { list: 'bound', score, member };
            continue;
          }
          if (found.size >= limit) return listed(last);
          last = { list: 'bound', score, member };
          if (!found.has(member)) found.set(member, last);
        }
      }
      return listed(null);
    },

    /**
     * Asks for the reconciliation lease (take-reconcile-lease-2.lua): `token` is the asking pass's own random token,
     * held for `leaseMs` unless renewed; `gapMs`, for a pass on the schedule, the least time since the last pass
     * began (null for a pass asked for now). `catchUp`, for a process's pass at start, opens the catch-up window
     * back to `horizonMs` before the last pass ended, or to the start of a window still open, or to where the passes
     * stand when that is further back, never further back than `furthestMs`, and starts the passes over at its oldest
     * effect. While a window is open, the cursor's position is the one a
     * pass of that window wrote, else none (the passes start the window over at its oldest effect).
     */
    async takeReconcileLease(token: string, leaseMs: number, gapMs: number | null, catchUp: { horizonMs: number; furthestMs: number } | null = null): Promise<ReconcileTurn> {
      const reply = await call<{ status: 'OK'; now: number; position: string; failedInARow: number; catchUpFrom: number; opened: boolean; endedAt: number; takenUp: string } | { status: 'HELD'; now: number } | { status: 'EARLY'; now: number; startedAt: number; notBefore: number }>('take-reconcile-lease-2', [keys.reconcileLease, keys.reconcileCursor], [token, Math.ceil(leaseMs), gapMs === null ? '' : Math.floor(gapMs), catchUp === null ? '' : Math.floor(catchUp.horizonMs), catchUp === null ? '' : Math.floor(catchUp.furthestMs), RECENT_COMMIT_MS]);
      if (reply.status !== 'OK') return reply;
      const window = reply.catchUpFrom > 0 ? { since: reply.catchUpFrom, opened: reply.opened, lastEnded: reply.endedAt > 0 ? reply.endedAt : null, takenUp: watchPositionOf(reply.takenUp) } : null;
      return { status: 'OK', now: reply.now, cursor: { position: watchPositionOf(reply.position), failedInARow: reply.failedInARow }, window };
    },

    /** Keeps the reconciliation lease `token` holds another `leaseMs`; false when it is no longer its own. */
    async renewReconcileLease(token: string, leaseMs: number): Promise<boolean> {
      const reply = await call<{ status: 'OK' | 'LOST'; now?: number }>('renew-reconcile-lease-1', [keys.reconcileLease], [token, Math.ceil(leaseMs)]);
      return reply.status === 'OK';
    },

    /**
     * Records where the pass that holds the lease as `token` stopped, and gives the lease up, in one step
     * (end-reconcile-pass-2.lua): `startedAt` is the Redis ms the pass began, `holdMs` how long no pass on the schedule
     * may start from now; `readThrough`, that the pass read through to the last effect, closes the catch-up window.
     * False, and nothing written, when the lease is no longer its own.
     */
    async endReconcilePass(token: string, cursor: ReconcileCursor, startedAt: number, holdMs: number, readThrough = false): Promise<boolean> {
      const reply = await call<{ status: 'OK' | 'LOST'; now?: number }>('end-reconcile-pass-2', [keys.reconcileLease, keys.reconcileCursor], [token, cursor.position === null ? '' : JSON.stringify(cursor.position), cursor.failedInARow, startedAt, Math.max(0, Math.ceil(holdMs)), readThrough ? '1' : '0']);
      return reply.status === 'OK';
    },

    /** When the deployment's last scheduled reconciliation pass ended (Redis ms), whichever process ran it; null before the first. */
    async lastReconcileEnd(): Promise<number | null> {
      const ended = await redis.hget(keys.reconcileCursor, 'endedAt');
      return ended === null ? null : Number(ended);
    },

    /** Gives up the reconciliation lease `token` holds, recording nothing (a pass that failed); false when it was not its own. */
    async releaseReconcileLease(token: string): Promise<boolean> {
      const reply = await run<{ status: 'RELEASED' | 'NOT_OURS' }>('release-reconcile-lease-1', [keys.reconcileLease], [token]);
      return reply.status === 'RELEASED';
    },

    /** Drops every finished submit's index entry now (before a worker stops). */
    flushIndex,

    /** Drops an index entry of an effect recovery found not open, if no dispatch can still follow its binding. */
    async unindexStale(entry: string, readAt: number): Promise<boolean> {
      const reply = await run<{ status: 'OK'; removed: number }>('unindex-1', [keys.openIndex], ['stale', readAt - bindWindowMs - 1, entry]);
      return reply.removed > 0;
    },

    async partitionOf(effectId: string): Promise<string | null> {
      return redis.hget(keys.effectPartitions, effectId);
    },

    async entries(partition: string, effectId: string): Promise<Entry[]> {
      return entriesOfStored(effectId, await redis.get(keys.entries(partition, effectId)));
    },

    /**
     * The chain as Redis holds it (one stored entry a line; null when it has none), for a reader of many chains that
     * parses each only as far as it needs (unhashedEntriesOfStored, then entriesOfStored for the ones it keeps).
     */
    async storedChain(partition: string, effectId: string): Promise<string | null> {
      return redis.get(keys.entries(partition, effectId));
    },

    /** The batch that ends a submit's checks: PROPOSED, AUTHORIZED, then DISPATCHED or REFUSED:stale_premise. */
    async propose(request: ProposeRequest): Promise<ProposeReply> {
      return proposeFrom(request, 0, casAttempts);
    },

    /** Whether bindAndPropose can be used: on one server, not across a cluster's slots. */
    bindsWithDispatch,

    /**
     * bind and propose in one atomic step (bind-propose-10), for a submit that expects a new effect: it costs one
     * command and one round trip less. The batch is sealed for the chain the caller expects; when the effect was
     * bound already and its chain moved, the reply says so as propose's would, with the binding now held. When the
     * effect is bound to another subject, nothing is written and `reply` is null. A request that expects a chain (its
     * `place.head` not '') never makes the binding (bindExisting): when the effect is not bound, no chain of it exists,
     * nothing is written, and `bound` is UNBOUND. `request.boundAt` is not used.
     * Throws the marker holder's refusal when Redis lost its data (holdMarker), writing nothing.
     */
    async bindAndPropose(request: ProposeRequest): Promise<{ bound: Extract<BindReply, { status: 'OTHER_SUBJECT' }> | { status: 'UNBOUND'; now: number }; reply: null } | { bound: Extract<BindReply, { status: 'NEW' | 'BOUND' }>; reply: ProposeReply }> {
      if (!bindsWithDispatch) throw new Error('bindAndPropose needs a single Redis server; a cluster binds with bind() first');
      const token = nextToken();
      const at = await sealTime(request.place.at ?? 0);
      const sendDeadline = at + request.sendTimeoutMs;
      const check = watchCheck(request.effectId, at);
      const upkeep = takeUpkeep(check?.pairs);
      let sealed: { entries: Entry[]; pairs: string[] };
      let raw: (ProposeReply & { bind?: 'NEW' | 'BOUND'; boundAt?: number }) | { status: 'OTHER_SUBJECT'; bound: string; now: number } | { status: 'UNBOUND'; now: number } | { status: 'MARKER'; found: string };
      try {
        sealed = await seal(request.effectId, request.drafts({ at, sendDeadline }), at, request.place.head);
        const planned = proposeCall(request, at, sendDeadline, sealed.entries.length, sealed.pairs, [keys.effectPartitions, keys.openIndex, keys.watch, keys.effectsByTime, keys.deployment], [heldMarker(), token, ...upkeep.args]);
        const dispatched = sealed.entries;
        raw = await call<typeof raw>('bind-propose-10', planned.keys, planned.args).catch((error: unknown) => lostDispatch(error, request, dispatched));
      } catch (error) {
        upkeep.restore();
        throw error;
      }
      if (raw.status === 'MARKER') {
        upkeep.restore();
        markerLost(raw.found);
      }
      if (raw.status === 'OTHER_SUBJECT' || raw.status === 'UNBOUND') return { bound: raw, reply: null };
      const bound = { status: raw.bind ?? 'BOUND', now: raw.boundAt ?? 0, token } as const;
      if (check !== null && bound.status === 'BOUND') checkedThrough(request.effectId, check.through);
      if (raw.status === 'OK') return { bound, reply: Object.assign(raw, { entries: sealed.entries }) };
      // The binding holds now; a batch sealed at a time Redis refused is sealed again and proposed alone.
      if (raw.status === 'BAD_TIME') return { bound, reply: await proposeFrom({ ...request, boundAt: bound.now }, retryPlace(raw).floor, casAttempts - 1, request) };
      return { bound, reply: raw };
    },

    /**
     * Appends a batch that opens and closes nothing. With `place` it is written only right after that head (the
     * caller decided on that chain); without, after whatever the head is (a fact that holds whatever came before).
     */
    async append(partition: string, effectId: string, drafts: readonly AnyDraft[], options: { place?: Place; payloadHash?: string } = {}): Promise<{ status: 'OK'; entries: Entry[] } | { status: 'HEAD_MOVED' | 'CONFLICTING_PAYLOAD' }> {
      let head = options.place?.head ?? (await readState(partition, effectId)).state.head;
      let floor = options.place?.at ?? 0;
      const kinds = drafts.map((draft) => draft.kind).join(',');
      for (let attempt = 0; attempt < casAttempts; attempt += 1) {
        const at = await sealTime(floor);
        const { entries, pairs } = await seal(effectId, drafts, at, head);
        const reply = await call<{ status: 'OK'; now: number } | Misplaced | { status: 'CONFLICTING_PAYLOAD' } | { status: 'BAD_ENTRY'; reason: string }>(
          'append-2',
          [keys.state(partition, effectId), keys.entries(partition, effectId)],
          [effectId, head, at, maxSkewMs, options.payloadHash ?? '', kinds, entries.length, ...pairs],
        );
        switch (reply.status) {
          case 'OK':
            return { status: 'OK', entries };
          case 'CONFLICTING_PAYLOAD':
            return reply;
          case 'HEAD_MOVED':
            if (options.place) return { status: 'HEAD_MOVED' };
            ({ head, floor } = retryPlace(reply));
            continue;
          case 'BAD_TIME':
            ({ head, floor } = retryPlace(reply));
            continue;
          default:
            unexpected(effectId, reply);
        }
      }
      throw new JournalContentionError(effectId, `append ${kinds}`);
    },

    /**
     * Closes the open dispatch with a COMMITTED, an AMBIGUOUS or a resolving REFUSED, as the holder of `epoch`. A settle
     * the reconciler finds only through the watch list (late: more than RECENT_COMMIT_MS after the effect's binding;
     * `boundAt`, as settledAfterSend takes it) is put on that list before it is written (watchBeforeSettle): a process
     * that dies right after the settle leaves it there, not in its memory.
     */
    async settle(partition: string, effectId: string, epoch: number, draft: AnyDraft, options: { head?: string; approvalId: string; boundAt?: number }): Promise<SettleReply> {
      let head = options.head ?? (await readState(partition, effectId)).state.head;
      let floor = 0;
      const code = draft.kind === 'REFUSED' ? draft.code : '';
      let watchedThrough = -Infinity;
      for (let attempt = 0; attempt < casAttempts; attempt += 1) {
        const at = await sealTime(floor);
        // settle-5 refuses an entry time more than maxSkewMs behind Redis's (BAD_TIME): a settle sealed at `at` is
        // recorded by `at + maxSkewMs` at the latest. Checked a second further, so an attempt again after a moved
        // head (sealed a few ms later) needs no check of its own.
        if (at + maxSkewMs > watchedThrough) {
          watchedThrough = at + maxSkewMs + SETTLE_RETRY_SLACK_MS;
          await watchBeforeSettle(effectId, watchedThrough, options.boundAt);
        }
        const { entries, pairs } = await seal(effectId, [draft], at, head);
        const reply = await call<{ status: 'OK'; now: number; reread?: boolean } | { status: 'NOT_OPEN' } | { status: 'FENCED'; epoch: number } | { status: 'LATE'; late: 'landed' } | Misplaced | { status: 'BAD_ENTRY'; reason: string }>(
          'settle-5',
          [keys.state(partition, effectId), keys.entries(partition, effectId), keys.approval(partition, options.approvalId), keys.approvalOpen(partition, options.approvalId), keys.subject(partition)],
          [effectId, head, epoch, draft.kind, code, at, maxSkewMs, options.approvalId, ...pairs],
        );
        switch (reply.status) {
          case 'OK':
            return { status: 'OK', entry: entries[0] as Entry, now: reply.now, reread: reply.reread === true };
          case 'NOT_OPEN':
          case 'FENCED':
          case 'LATE':
            return reply;
          case 'HEAD_MOVED':
          case 'BAD_TIME':
            ({ head, floor } = retryPlace(reply));
            continue;
          default:
            unexpected(effectId, reply);
        }
      }
      throw new JournalContentionError(effectId, `settle with ${draft.kind}`);
    },

    /** Records a fenced-out sender's answer; the state acts on a definite one (late-5.lua). */
    async late(partition: string, effectId: string, draft: Draft<'LATE_RESULT'>, approvalId: string): Promise<{ entry: EntryOf<'LATE_RESULT'>; effect: LateEffect }> {
      const recorded = await recordLate(partition, effectId, draft, approvalId, 'sender');
      if (recorded.status !== 'OK') unexpected(effectId, recorded);
      return recorded;
    },

    /**
     * Records a landing the post-send facts found (a refund with the effect's id at Stripe), only while the effect
     * is settled without one; otherwise (open, committed, or a landing recorded already) writes nothing and says
     * which. The script decides, so two facts of one landing handled at once record it once (late-5.lua).
     */
    async lateLanding(partition: string, effectId: string, draft: Draft<'LATE_RESULT'>, approvalId: string): Promise<{ status: 'OK'; entry: EntryOf<'LATE_RESULT'>; effect: LateEffect } | { status: 'KNOWN'; effect: 'open' | 'committed' | 'unknown' }> {
      return recordLate(partition, effectId, draft, approvalId, 'facts');
    },

    /**
     * Gives a committed refund that Stripe failed for good back to its caps (release-failed-3.lua): `cents` to the
     * reserved cents of `approvalId` (the approval its send is counted on) and to the subject's total; the approval's use
     * stays spent. Once per effect, whoever asks and however often: `released` for the call that gave them back,
     * `released_before` when one had, `not_committed` for an effect that holds nothing a failure could give back.
     */
    async releaseFailed(partition: string, effectId: string, approvalId: string, cents: number): Promise<'released' | 'released_before' | 'not_committed'> {
      const aid = approvalId === '' ? '-' : approvalId;
      const reply = await call<{ status: 'OK'; released: number; now: number } | { status: 'RELEASED' } | { status: 'NOT_COMMITTED' }>(
        'release-failed-3',
        [keys.state(partition, effectId), keys.approval(partition, aid), keys.subject(partition)],
        [aid, cents],
      );
      return reply.status === 'OK' ? 'released' : reply.status === 'RELEASED' ? 'released_before' : 'not_committed';
    },

    /**
     * Appends a post-send fact at most once per (effect, `key`), the fingerprint of what the fact says (src/facts/apply.ts).
     * Written after whatever the chain holds by then: a fact holds whatever came before it.
     */
    async observe(partition: string, effectId: string, draft: Draft<'OBSERVED'>, key: string): Promise<{ status: 'OK'; entry: EntryOf<'OBSERVED'> } | { status: 'DUPLICATE' | 'UNKNOWN_EFFECT' }> {
      let head = (await readState(partition, effectId)).state.head;
      let floor = 0;
      for (let attempt = 0; attempt < casAttempts; attempt += 1) {
        const at = await sealTime(floor);
        const { entries, pairs } = await seal(effectId, [draft], at, head);
        const reply = await call<{ status: 'OK'; now: number } | { status: 'DUPLICATE' | 'UNKNOWN_EFFECT' } | Misplaced>(
          'observe-2',
          [keys.state(partition, effectId), keys.entries(partition, effectId)],
          [effectId, head, at, maxSkewMs, key, ...pairs],
        );
        if (reply.status === 'OK') return { status: 'OK', entry: entries[0] as EntryOf<'OBSERVED'> };
        if (reply.status === 'DUPLICATE' || reply.status === 'UNKNOWN_EFFECT') return { status: reply.status };
        ({ head, floor } = retryPlace(reply as Misplaced));
      }
      throw new JournalContentionError(effectId, 'record a post-send fact');
    },

    /**
     * Appends a person's action on an inbox item (act-3.lua): at most once per item, never while a dispatch is open.
     * `marker` (who acted, how, when) is kept beside the state, so the one who loses a race is told who won.
     */
    async act(
      partition: string,
      effectId: string,
      draft: Draft<'RESOLVED'>,
      marker: string,
      requires: 'ambiguous' | 'unsent' | '',
    ): Promise<{ status: 'OK'; entry: EntryOf<'RESOLVED'> } | { status: 'ACTED'; by: string } | { status: 'OPEN' | 'UNKNOWN_EFFECT' } | { status: 'STATE'; committed: boolean; ambiguous: boolean } | { status: 'REAPPROVED'; item: string }> {
      let head = (await readState(partition, effectId)).state.head;
      let floor = 0;
      for (let attempt = 0; attempt < casAttempts; attempt += 1) {
        const at = await sealTime(floor);
        const { entries, pairs } = await seal(effectId, [draft], at, head);
        const reply = await call<{ status: 'OK'; now: number } | { status: 'ACTED'; by: string } | { status: 'OPEN' | 'UNKNOWN_EFFECT' } | { status: 'STATE'; committed: boolean; ambiguous: boolean } | { status: 'REAPPROVED'; item: string } | Misplaced>(
          'act-3',
          [keys.state(partition, effectId), keys.entries(partition, effectId), keys.subject(partition)],
          // A person who found an AMBIGUOUS effect did not land lets go what it held to be sent once (act-3.lua).
          [effectId, head, at, maxSkewMs, draft.item, marker, requires, ...pairs, draft.action === 'resolve' && draft.resolution === 'did_not_land' ? 'release' : ''],
        );
        if (reply.status === 'OK') return { status: 'OK', entry: entries[0] as EntryOf<'RESOLVED'> };
        if (reply.status === 'ACTED' || reply.status === 'OPEN' || reply.status === 'UNKNOWN_EFFECT' || reply.status === 'STATE' || reply.status === 'REAPPROVED') return reply;
        ({ head, floor } = retryPlace(reply as Misplaced));
      }
      throw new JournalContentionError(effectId, 'record an operator action');
    },

    /** Who acted on an inbox item of the effect (the marker act-3 keeps), or null when nobody has. */
    async actedOn(partition: string, effectId: string, itemId: string): Promise<string | null> {
      return redis.hget(keys.state(partition, effectId), `i:${itemId}`);
    },

    /**
     * Puts effects on the reconciler's watch list from `at` (Redis ms), or moves them there: each is re-read by every
     * pass whose window reaches `at`, however long ago it was bound or settled (a facts job that failed for good:
     * its effects are re-read instead).
     */
    async watchFrom(effectIds: readonly string[], at: number): Promise<void> {
      if (effectIds.length === 0) return;
      await redis.zadd(keys.watch, ...effectIds.flatMap((effectId) => [at, effectId]));
    },

    /**
     * Scores outbox entries (isOutboxEntry) as bound at `at` (Redis ms), so recovery looks at them again only once
     * OUTBOX_GRACE_MS has passed since: their effects' jobs stand, and an entry is due again in case the job goes. An
     * entry dropped meanwhile (its job judged the effect) is not written again (XX).
     */
    async outboxLater(entries: readonly string[], at: number): Promise<void> {
      if (entries.length === 0) return;
      await redis.zadd(keys.openIndex, 'XX', ...entries.flatMap((entry) => [at, entry]));
    },

    /**
     * Drops the watch-list entries from before `before` (Redis ms), which no reconciliation asks for any more (the
     * scheduled reconciler calls it at the end of each pass); one ZREMRANGEBYSCORE, O(log n + dropped). Returns how
     * many it dropped.
     */
    async trimWatch(before: number): Promise<number> {
      return redis.zremrangebyscore(keys.watch, '-inf', `(${before}`);
    },

    /** The effects that committed on a subject (a payment or a customer), for facts that name the subject. */
    async effectsOn(partition: string): Promise<string[]> {
      const fields = await redis.hkeys(keys.subject(partition));
      return fields.filter((field) => field.startsWith('e:')).map((field) => field.slice(2));
    },

    /**
     * A payment fact (a dispute event) came for `partition`: marks the subject and, in the same step, lists the effects
     * committed on it (note-fact-1.lua), or null when nothing was ever dispatched on it (nothing is marked then). An
     * effect in flight now re-reads its facts when it settles (SettleReply's `reread`).
     */
    async notePaymentFact(partition: string): Promise<string[] | null> {
      const reply = await run<{ status: 'OK'; effects: unknown; now: number } | { status: 'UNKNOWN_SUBJECT' }>('note-fact-1', [keys.subject(partition)], []);
      if (reply.status !== 'OK') return null;
      // An empty Lua table comes back as a JSON object.
      return Array.isArray(reply.effects) ? reply.effects.filter((id): id is string => typeof id === 'string') : [];
    },

    /**
     * A customer's deletion (`deletion`, JSON) is applied: kept for the subject unless one is kept already (the first
     * deletion stands), the subject marked as for a payment fact (notePaymentFact), and its committed effects listed, in
     * one step (note-deletion-2.lua). A credit committed after that step sees the mark at its settle and re-reads its
     * facts, which finds the deletion kept. Returns the deletion that stands (this one, or the one kept before) and the
     * committed effects, or null when nothing was ever dispatched on the subject (nothing is kept then).
     */
    async noteCustomerDeletion(partition: string, deletion: string): Promise<{ deletion: string; effects: string[] } | null> {
      const reply = await run<{ status: 'OK'; deletion: unknown; effects: unknown; now: number } | { status: 'UNKNOWN_SUBJECT' }>('note-deletion-2', [keys.subject(partition), keys.customerDeletion(partition)], [deletion]);
      if (reply.status !== 'OK') return null;
      // An empty Lua table comes back as a JSON object.
      return { deletion: typeof reply.deletion === 'string' ? reply.deletion : deletion, effects: Array.isArray(reply.effects) ? reply.effects.filter((id): id is string => typeof id === 'string') : [] };
    },

    /**
     * Hands out the kept deletion's balance of a customer subject to its landed credits (share-deletion-1.lua), in one
     * step: `balanceCredit`, what the balance held as credit (cents, >= 0); `credits`, newest first, each with its balance
     * transaction (`made`), what of it may take a part (`unused`, cents, >= 0) and the part its chain's deletion fact
     * says already (`recorded`, null for none). A credit given a part before keeps it; one without takes what the parts
     * given before left, up to `unused`. Returns each credit's part (cents of credit, >= 0) by balance transaction.
     */
    async shareDeletion(partition: string, balanceCredit: number, credits: readonly { made: string; unused: number; recorded: number | null }[]): Promise<Map<string, number>> {
      const parts = new Map<string, number>();
      if (credits.length === 0) return parts;
      // Cents, whole and not negative; a value that is no finite number gives nothing out (a balance not known is not
      // room for every credit's whole part: Lua's nan compares false, and math.min would pass the other side).
      const cents = (value: number) => (Number.isFinite(value) ? String(Math.max(0, Math.trunc(value))) : '0');
      const args = [cents(balanceCredit), ...credits.flatMap(({ made, unused, recorded }) => [made, cents(unused), recorded === null ? '' : cents(recorded)])];
      const reply = await run<{ status: 'OK'; parts: unknown; given: number }>('share-deletion-1', [keys.customerDeletionParts(partition)], args);
      const given: unknown[] = Array.isArray(reply.parts) ? reply.parts : [];
      credits.forEach(({ made }, index) => {
        const part = given[index];
        if (typeof part !== 'number') throw new Error(`share-deletion-1 answered no part for ${made} (${JSON.stringify(reply).slice(0, 200)}); this is a bug in the script`);
        parts.set(made, part);
      });
      return parts;
    },

    /** The deletion kept for a customer subject (noteCustomerDeletion), JSON, or null when none was applied. */
    async customerDeletion(partition: string): Promise<string | null> {
      return redis.get(keys.customerDeletion(partition));
    },

    /** The effect that holds what is sent only once on a subject (`incident:<id>`, from its dispatch), or null. */
    async onceHolder(partition: string, once: string): Promise<string | null> {
      return redis.hget(keys.subject(partition), once);
    },

    /** Whether anything was ever dispatched on a subject (or a cap set on it): its totals hash exists. */
    async subjectKnown(partition: string): Promise<boolean> {
      return (await redis.exists(keys.subject(partition))) === 1;
    },

    async takeOver(partition: string, effectId: string, expected: { epoch: number; owner: string; nonce: string }, claimant: { owner: string; nonce: string; claimTtlMs: number }, reason: TakeOverReason): Promise<TakeOverReply> {
      return call<TakeOverReply>('take-over-1', [keys.state(partition, effectId)], [expected.epoch, expected.owner, expected.nonce, claimant.owner, claimant.nonce, claimant.claimTtlMs, reason]);
    },

    /** The claim holder announces a resend; the approval is checked in the same step, and the send deadline moves to its end. */
    /**
     * `timing.readFrom`: when the re-check's premise read began (Redis ms, a lower bound), judged as a dispatch's is, with
     * one read timeout more: recovery's lookup, bounded by it too, runs between the re-check and the resend.
     */
    async resend(partition: string, effectId: string, holder: { owner: string; epoch: number; approvalId: string }, timing: { sendTimeoutMs: number; claimTtlMs: number; notAfter: number; readFrom: number }): Promise<ResendReply> {
      return call<ResendReply>('resend-2', [keys.state(partition, effectId), keys.approval(partition, holder.approvalId)], [effectId, holder.owner, holder.epoch, timing.sendTimeoutMs, timing.claimTtlMs, timing.notAfter, holder.approvalId, timing.readFrom, premiseMaxAgeMs(2 * timing.sendTimeoutMs)]);
    },

    /**
     * A request of the open dispatch got no definite answer (mark-unknown-1.lua). The target may have stored that answer
     * under the key, so recovery looks the effect up before it resends under it. Any sender may record it; false when
     * the dispatch was settled meanwhile.
     */
    async markUnknown(partition: string, effectId: string): Promise<boolean> {
      const reply = await call<{ status: 'OK'; unknowns: number; now: number } | { status: 'NOT_OPEN' }>('mark-unknown-1', [keys.state(partition, effectId)], []);
      return reply.status === 'OK';
    },

    /**
     * Gives the claim up early. `unsent`: no request of the dispatch left under this claim, `first` from the worker
     * that dispatched it, `unsent` from a recoverer (release-claim-1.lua says what the next recoverer makes of it).
     */
    async releaseClaim(partition: string, effectId: string, owner: string, epoch: number, unsent: 'first' | 'unsent' | null = null, atHead = ''): Promise<boolean> {
      const reply = await run<{ status: 'OK' | 'NOT_HELD' }>('release-claim-1', [keys.state(partition, effectId)], [owner, String(epoch), unsent ?? '', atHead]);
      return reply.status === 'OK';
    },

    /**
     * The last entry the dispatch step of `request` (as given to propose or bindAndPropose) sealed when its answer was
     * lost (the command failed after it was sent): the head the chain has if that step opened the dispatch. Null when
     * its answer came, or nothing was sent.
     */
    lostDispatchHead(request: ProposeRequest): string | null {
      return lostDispatchHeads.get(request) ?? null;
    },

    /**
     * Whether `owner` may still send under its claim at `epoch`, the last check before a request leaves the process:
     * the claim is its own, neither it nor the send deadline lapsed, and approval `approvalId` (the dispatch's) is live,
     * all on Redis's clock (check-epoch-2.lua).
     */
    async holdsClaim(partition: string, effectId: string, owner: string, epoch: number, approvalId: string): Promise<ClaimCheck> {
      type Refused = Exclude<ClaimCheck, true>['refused'];
      const reply = await call<{ status: 'OK'; now: number } | { status: 'FENCED'; reason: Refused; epoch?: number; owner?: string; at?: number; now: number }>(
        'check-epoch-2',
        [keys.state(partition, effectId), keys.approval(partition, approvalId)],
        [owner, String(epoch), approvalId],
      );
      if (reply.status === 'OK') return true;
      const { reason, now } = reply;
      switch (reason) {
        case 'claim_moved':
          return { refused: reason, epoch: reply.epoch ?? 0, owner: reply.owner ?? '', now };
        case 'approval_missing':
          return { refused: reason, now };
        case 'send_deadline':
        case 'claim_expired':
        case 'approval_revoked':
        case 'approval_expired':
          return { refused: reason, at: reply.at ?? 0, now };
        default: {
          const never: never = reason;
          return never;
        }
      }
    },

    /** Every effect that may be open: bound recently or dispatched and not yet settled, oldest first. */
    async openEffects(options: { limit?: number } = {}): Promise<OpenEffect[]> {
      const limit = options.limit ?? 10_000;
      // RESP3 with native replies answers [member, score] pairs; RESP2 and the legacy mapping a flat list.
      const members = (await redis.zrange(keys.openIndex, '0', String(limit - 1), 'WITHSCORES')).flat();
      const found: { effectId: string; boundAt: number; entry: string }[] = [];
      for (let i = 0; i + 1 < members.length; i += 2) {
        const entry = String(members[i]);
        found.push({ effectId: entry.slice(0, entry.indexOf(':')), boundAt: Number(members[i + 1]), entry });
      }
      if (found.length === 0) return [];
      const partitions = await redis.hmget(keys.effectPartitions, ...new Set(found.map((item) => item.effectId)));
      const byId = new Map([...new Set(found.map((item) => item.effectId))].map((effectId, i) => [effectId, partitions[i] ?? null]));
      return found.map((item) => ({ ...item, partition: byId.get(item.effectId) ?? null }));
    },

    /** The effects whose dispatch is open right now (the index also holds recent submits that left nothing open). */
    async openDispatches(): Promise<{ effectId: string; partition: string }[]> {
      const seen = new Map<string, string>();
      for (const item of await this.openEffects()) if (item.partition !== null) seen.set(item.effectId, item.partition);
      const open: { effectId: string; partition: string }[] = [];
      for (const [effectId, partition] of seen) if ((await readState(partition, effectId)).state.open) open.push({ effectId, partition });
      return open;
    },

    serverTime: now,

    /**
     * Whether `replicas` replicas of each master that holds part of the effect in `partition` acknowledged this
     * worker's writes so far (Redis WAIT), so a failover to one of them cannot lose what is about to be acted on: the
     * DISPATCHED on the partition's master and, on a cluster, the binding and the open-dispatch index entry on the
     * index's master (recovery finds open dispatches, and receipts their chains, only through those). A master of
     * another shard that lost its replicas (one failed over, say) holds none of this effect and is not asked: asking it
     * held back every send of the deployment. A master the client holds no live connection to answers no: whatever
     * took the write may be gone; so does one that does not hold this send's DISPATCHED (its epoch) or binding, which
     * the WAIT's own connection may have reached instead after a failover (replica-wait.ts).
     */
    async replicated(holding: { partition: string; effectId: string; epoch: number; indexEntry?: string }, replicas: number, timeoutMs: number): Promise<{ ok: boolean; acknowledged: number }> {
      if (replicas <= 0) return { ok: true, acknowledged: 0 };
      const { partition, effectId, epoch } = holding;
      const waits = (replicaWaits ??= createReplicaWaits(masterConnector(redis)));
      // What each master must hold of this send: the DISPATCHED's epoch in the effect's state, and the open-dispatch
      // entry its submit wrote (the binding, written once by the first submit, proves only that one; a recoverer's
      // resend, which writes no entry of its own, is proved by the binding).
      const dispatched = { key: keys.state(partition, effectId), field: 'epoch', value: String(epoch) };
      const bound: WriteProof = holding.indexEntry === undefined ? { key: keys.effectPartitions, field: effectId, value: partition } : { key: keys.openIndex, member: holding.indexEntry };
      if (!(redis instanceof Cluster)) {
        const acknowledged = await waits.acknowledged(SERVER, { mark: keys.replicaMark, proof: dispatched, replicas, timeoutMs });
        return { ok: acknowledged >= replicas, acknowledged };
      }
      const [own, index] = [masterServing(redis, keys.subject(partition)), masterServing(redis, keys.effectPartitions)];
      if (own === null || index === null) return { ok: false, acknowledged: 0 };
      // Each master asked for what it holds of the send, marked with a key it serves: the partition's tag on the
      // effect's own master, the index's on the index's (one master holding both is asked for both).
      const rounds = [waits.acknowledged(own, { mark: keys.replicaMarkOf(partition), proof: dispatched, replicas, timeoutMs }), waits.acknowledged(index, { mark: keys.replicaMark, proof: bound, replicas, timeoutMs })];
      // The fewest replicas either has: each must hold its part of the effect.
      const acknowledged = Math.min(...(await Promise.all(rounds)));
      return { ok: acknowledged >= replicas, acknowledged };
    },

    /**
     * Replicas of the master serving `proof.key` that acknowledged every write it took before this call, `proof`'s
     * included: 0 when it does not hold `proof`, or when the client holds no live connection to it on a cluster
     * (replica-wait.ts). For what the facts rest on (a Stripe event's job or marker, an effect's chain after a facts
     * job applied it: queues/facts.ts), asked on the connections `replicated` keeps, so what is asked at once shares
     * one round per master. `mark`: a key in `proof.key`'s slot (replicaMarkOf its hash tag; replicaMark for the
     * index's keys). `writer`: the client that wrote `proof` (a queue's own connection), whose view of the cluster
     * says which master took it; this journal's by default.
     */
    async replicasHolding(ask: { proof: WriteProof; mark: string; replicas: number; timeoutMs: number }, writer: RedisClient = redis): Promise<number> {
      const address = masterServing(writer, ask.proof.key);
      if (address === null) return 0;
      const waits = (replicaWaits ??= createReplicaWaits(masterConnector(redis)));
      return waits.acknowledged(address, ask);
    },

    /** Closes the connections `replicated` and `replicasHolding` opened for WAIT (closeStores). */
    closeReplicaWaits(): void {
      replicaWaits?.close();
      replicaWaits = null;
    },

    checkedEntries,

    async receipt(effectId: string): Promise<Receipt | null> {
      const chain = await checkedEntries(effectId);
      if (chain === null || chain.entries.length === 0) return null;
      return buildReceipt(effectId, chain.entries, signingKey, await now());
    },

    /** The receipts of many effects, exported together (their heads share signatures); null for an effect with none. */
    async receipts(effectIds: readonly string[]): Promise<(Receipt | null)[]> {
      if (effectIds.length === 0) return [];
      const partitions = await redis.hmget(keys.effectPartitions, ...effectIds);
      // Each effect's state first, then its chain (as receipt() reads them).
      const states = await Promise.all(effectIds.map((effectId, index) => {
        const partition = partitions[index];
        return partition === null || partition === undefined ? null : redis.hmget(keys.state(partition, effectId), 'head', 'count');
      }));
      const texts = await Promise.all(effectIds.map((effectId, index) => {
        const partition = partitions[index];
        return partition === null || partition === undefined ? null : redis.get(keys.entries(partition, effectId));
      }));
      const chains = effectIds.map((effectId, index) => ({ effectId, entries: entriesOfStored(effectId, texts[index] ?? null) }));
      const inconsistent = chains.filter((chain, index) => {
        const [head, count] = states[index] ?? [null, null];
        return !chainMatchesState(chain.entries, head ?? null, count ?? null);
      });
      if (inconsistent.length > 0) throw new JournalInconsistentError(inconsistent.map((chain) => chain.effectId));
      const found = chains.filter((chain) => chain.entries.length > 0);
      const built = new Map(buildReceipts(found, signingKey, await now()).map((receipt) => [receipt.effectId, receipt]));
      return effectIds.map((effectId) => built.get(effectId) ?? null);
    },
  };
}
