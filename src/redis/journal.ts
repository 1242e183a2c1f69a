// The Redis journal: per-effect signed chains, the effect's summary state beside them, claims with fencing
// epochs, and the open-dispatch indexes. All writes go through the Lua scripts; this module only seals entries
// (which needs the signing key, so it cannot happen inside Redis) and retries a compare-and-set that lost a race.
import { serverTime, type RedisClient } from './client.js';
import { sealEntry, type AnyDraft, type Draft, type Entry, type EntryKind, type EntryOf } from '../core/entries.js';
import type { SigningKey } from '../core/signing.js';
import { buildReceipt, type Receipt } from '../core/receipt.js';
import type { Keys } from './keys.js';
import { createScriptRunner } from './scripts.js';

export type EffectState = {
  head: string;
  count: number;
  epoch: number;
  open: boolean;
  committed: boolean;
  ambiguous: boolean;
  payloadHash: string;
  owner: string;
  nonce: string;
  claimExpires: number;
  sendDeadline: number;
  dispatchedAt: number;
  approvalId: string;
  amount: number;
};

type Raw = Record<string, string>;
const num = (raw: Raw, field: string) => Number(raw[field] ?? 0);
const str = (raw: Raw, field: string) => raw[field] ?? '';

function parseState(raw: Raw): EffectState {
  return {
    head: str(raw, 'head'),
    count: num(raw, 'count'),
    epoch: num(raw, 'epoch'),
    open: raw.open === '1',
    committed: raw.committed === '1',
    ambiguous: raw.ambiguous === '1',
    payloadHash: str(raw, 'payloadHash'),
    owner: str(raw, 'owner'),
    nonce: str(raw, 'nonce'),
    claimExpires: num(raw, 'claimExpires'),
    sendDeadline: num(raw, 'sendDeadline'),
    dispatchedAt: num(raw, 'dispatchedAt'),
    approvalId: str(raw, 'approvalId'),
    amount: num(raw, 'amount'),
  };
}

/** Raised when a compare-and-set kept losing: the effect is being written by others faster than we can append. */
export class JournalContentionError extends Error {
  readonly code = 'journal_contention';
  readonly retryable = true;
  constructor(effectId: string, what: string) {
    super(`Could not ${what} for effect ${effectId}: its chain kept moving under concurrent writers. Retry the request.`);
    this.name = 'JournalContentionError';
  }
}

export class JournalWriteError extends Error {
  readonly code = 'journal_write_refused';
  readonly retryable = false;
  constructor(effectId: string, reason: string) {
    super(`Redis refused an entry for effect ${effectId}: ${reason}. This is a bug in the writer, not a transient fault.`);
    this.name = 'JournalWriteError';
  }
}

type CasReply = { status: 'HEAD_MOVED' | 'BAD_TIME' | 'EPOCH_MOVED' } | { status: 'BAD_ENTRY'; reason: string };

export type DispatchReply =
  | { status: 'OK'; epoch: number; claimExpires: number; entry: EntryOf<'DISPATCHED'> }
  | { status: 'IN_FLIGHT'; owner: string; nonce: string; claimExpires: number; sendDeadline: number }
  | { status: 'COMMITTED' | 'AMBIGUOUS' | 'CONFLICTING_PAYLOAD' | 'TARGET_ERROR' }
  | { status: 'LEASE'; reason: string }
  | { status: 'OVER_CAP'; cap: string; limit: number; reserved: number };

export type SettleReply = { status: 'OK'; entry: Entry } | { status: 'NOT_OPEN' } | { status: 'FENCED'; epoch: number };
export type TakeOverReason = 'own' | 'expired' | 'owner-dead';
export type TakeOverReply =
  | { status: 'OK'; epoch: number; claimExpires: number; sendDeadline: number; now: number }
  | { status: 'NOT_OPEN' }
  | { status: 'MOVED'; epoch: number; owner: string }
  | { status: 'LIVE'; claimExpires: number; now: number };

export type ResendReply = { status: 'OK'; sendDeadline: number; claimExpires: number } | { status: 'NOT_OPEN' } | { status: 'FENCED'; epoch: number } | { status: 'TOO_LATE'; now: number };

export type OpenEffect = { effectId: string; partition: string; sendDeadline: number };

export type DispatchRequest = {
  effectId: string;
  partition: string;
  payloadHash: string;
  owner: string;
  nonce: string;
  claimTtlMs: number;
  sendTimeoutMs: number;
  amount: number;
  approvalId: string;
  /** Builds the DISPATCHED draft once the epoch and send deadline are known. */
  draft: (place: { epoch: number; sendDeadline: number }) => Draft<'DISPATCHED'>;
};

export type Journal = ReturnType<typeof createRedisJournal>;

export function createRedisJournal(deps: { redis: RedisClient; keys: Keys; signingKey: SigningKey; maxSkewMs?: number; casAttempts?: number }) {
  const { redis, keys, signingKey } = deps;
  const maxSkewMs = deps.maxSkewMs ?? 5_000;
  const casAttempts = deps.casAttempts ?? 50;
  const run = createScriptRunner(redis);

  async function readState(partition: string, effectId: string): Promise<{ now: number; state: EffectState }> {
    const reply = await run<{ now: number; state: Raw | unknown[] }>('read-state-1', [keys.state(partition, effectId)], []);
    // cjson writes an empty Lua table as [] or {}: both mean "no such effect yet".
    const raw = Array.isArray(reply.state) ? {} : reply.state;
    return { now: reply.now, state: parseState(raw) };
  }

  function seal<K extends EntryKind>(draft: Draft<K>, effectId: string, now: number, head: string): EntryOf<K> {
    return sealEntry(draft, { effectId, at: now, prev: head === '' ? null : head }, signingKey);
  }

  function unexpected(effectId: string, reply: CasReply | { status: string }): never {
    if (reply.status === 'BAD_ENTRY') throw new JournalWriteError(effectId, (reply as { reason: string }).reason);
    throw new JournalWriteError(effectId, `unexpected script reply ${JSON.stringify(reply)}`);
  }

  return {
    keys,

    /** Binds an effect to its partition on first sight; later calls get the first binding back (I5 holds across subjects). */
    async bindPartition(effectId: string, partition: string): Promise<string> {
      await redis.hsetnx(keys.effectPartitions, effectId, partition);
      const bound = await redis.hget(keys.effectPartitions, effectId);
      if (bound === null) throw new Error(`Effect ${effectId} has no partition after binding it; is Redis evicting keys? Set maxmemory-policy noeviction.`);
      await redis.sadd(keys.partitions, bound);
      return bound;
    },

    async partitionOf(effectId: string): Promise<string | null> {
      return redis.hget(keys.effectPartitions, effectId);
    },

    readState,

    async entries(partition: string, effectId: string): Promise<Entry[]> {
      const items = await redis.lrange(keys.entries(partition, effectId), 0, -1);
      return items.map((item) => JSON.parse(item) as Entry);
    },

    /** Appends an entry that opens or closes nothing. */
    async append<K extends EntryKind>(partition: string, effectId: string, draft: Draft<K>, options: { payloadHash?: string } = {}): Promise<EntryOf<K>> {
      for (let attempt = 0; attempt < casAttempts; attempt += 1) {
        const { now, state } = await readState(partition, effectId);
        const entry = seal(draft, effectId, now, state.head);
        const reply = await run<{ status: 'OK' } | CasReply>(
          'append-2',
          [keys.state(partition, effectId), keys.entries(partition, effectId)],
          [effectId, state.head, JSON.stringify(entry), options.payloadHash ?? '', maxSkewMs],
        );
        if (reply.status === 'OK') return entry;
        if (reply.status === 'HEAD_MOVED' || reply.status === 'BAD_TIME') continue;
        unexpected(effectId, reply);
      }
      throw new JournalContentionError(effectId, `append ${draft.kind}`);
    },

    async dispatch(request: DispatchRequest): Promise<DispatchReply> {
      const { effectId, partition } = request;
      for (let attempt = 0; attempt < casAttempts; attempt += 1) {
        const { now, state } = await readState(partition, effectId);
        const epoch = state.epoch + 1;
        const entry = seal(request.draft({ epoch, sendDeadline: now + request.sendTimeoutMs }), effectId, now, state.head);
        const reply = await run<DispatchReply | CasReply>(
          'dispatch-8',
          [
            keys.state(partition, effectId),
            keys.entries(partition, effectId),
            keys.open(partition),
            keys.approval(partition, request.approvalId),
            keys.approvalReservations(partition, request.approvalId),
            keys.approvalOpen(partition, request.approvalId),
            keys.subjectCap(partition),
            keys.subjectCapReservations(partition),
          ],
          [effectId, state.head, state.epoch, JSON.stringify(entry), request.payloadHash, request.owner, request.nonce, request.claimTtlMs, request.amount, maxSkewMs, request.approvalId],
        );
        switch (reply.status) {
          case 'OK':
            return { ...reply, entry };
          case 'HEAD_MOVED':
          case 'BAD_TIME':
          case 'EPOCH_MOVED':
            continue;
          case 'BAD_ENTRY':
            unexpected(effectId, reply);
            break;
          default:
            return reply;
        }
      }
      throw new JournalContentionError(effectId, 'dispatch');
    },

    /** Closes the open dispatch with a COMMITTED, an AMBIGUOUS or a resolving REFUSED, as the holder of `epoch`. */
    async settle(partition: string, effectId: string, epoch: number, draft: AnyDraft): Promise<SettleReply> {
      for (let attempt = 0; attempt < casAttempts; attempt += 1) {
        const { now, state } = await readState(partition, effectId);
        const entry = seal(draft as Draft<EntryKind>, effectId, now, state.head) as Entry;
        const approvalId = state.approvalId === '' ? '-' : state.approvalId;
        const reply = await run<{ status: 'OK' } | { status: 'NOT_OPEN' } | { status: 'FENCED'; epoch: number } | CasReply>(
          'settle-6',
          [
            keys.state(partition, effectId),
            keys.entries(partition, effectId),
            keys.open(partition),
            keys.approvalReservations(partition, approvalId),
            keys.approvalOpen(partition, approvalId),
            keys.subjectCapReservations(partition),
          ],
          [effectId, state.head, epoch, JSON.stringify(entry), maxSkewMs],
        );
        switch (reply.status) {
          case 'OK':
            return { status: 'OK', entry };
          case 'NOT_OPEN':
          case 'FENCED':
            return reply;
          case 'HEAD_MOVED':
          case 'BAD_TIME':
            continue;
          default:
            unexpected(effectId, reply);
        }
      }
      throw new JournalContentionError(effectId, `settle with ${draft.kind}`);
    },

    async takeOver(partition: string, effectId: string, expected: { epoch: number; owner: string; nonce: string }, claimant: { owner: string; nonce: string; claimTtlMs: number }, reason: TakeOverReason): Promise<TakeOverReply> {
      return run<TakeOverReply>(
        'take-over-1',
        [keys.state(partition, effectId)],
        [expected.epoch, expected.owner, expected.nonce, claimant.owner, claimant.nonce, claimant.claimTtlMs, reason],
      );
    },

    /** The claim holder announces a resend; the send deadline moves to its end. */
    async resend(partition: string, effectId: string, holder: { owner: string; epoch: number }, timing: { sendTimeoutMs: number; claimTtlMs: number; notAfter: number }): Promise<ResendReply> {
      return run<ResendReply>('resend-2', [keys.state(partition, effectId), keys.open(partition)], [effectId, holder.owner, holder.epoch, timing.sendTimeoutMs, timing.claimTtlMs, timing.notAfter]);
    },

    async releaseClaim(partition: string, effectId: string, owner: string, epoch: number): Promise<boolean> {
      const reply = await run<{ status: 'OK' | 'NOT_HELD' }>('release-claim-1', [keys.state(partition, effectId)], [owner, String(epoch)]);
      return reply.status === 'OK';
    },

    /** Every open dispatch, partition by partition, soonest send deadline first within a partition. */
    async openEffects(): Promise<OpenEffect[]> {
      const partitions = await redis.smembers(keys.partitions);
      const open: OpenEffect[] = [];
      for (const partition of partitions.sort()) {
        // RESP3 with native replies answers [member, score] pairs; RESP2 and the legacy mapping a flat list.
        const members = (await redis.zrange(keys.open(partition), '0', '-1', 'WITHSCORES')).flat();
        for (let i = 0; i + 1 < members.length; i += 2) {
          open.push({ effectId: String(members[i]), partition, sendDeadline: Number(members[i + 1]) });
        }
      }
      return open;
    },

    async serverTime(): Promise<number> {
      return serverTime(redis);
    },

    async receipt(effectId: string): Promise<Receipt | null> {
      const partition = await redis.hget(keys.effectPartitions, effectId);
      if (partition === null) return null;
      const items = await redis.lrange(keys.entries(partition, effectId), 0, -1);
      if (items.length === 0) return null;
      const entries = items.map((item) => JSON.parse(item) as Entry);
      return buildReceipt(effectId, entries, signingKey, await this.serverTime());
    },
  };
}
