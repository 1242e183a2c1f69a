// Reading a sorted-set index newest first from a position, for listings that page through an index while it grows.
import type { RedisClient } from './client.js';

/** A member of a newest-first index and its score (Redis ms): where a listing of it stands. */
export type IndexPosition = { id: string; score: number };

/**
 * Up to `count` members of `key` after `position` in newest-first order (score descending; members of one score in
 * reverse byte order, as Redis orders them), or from the newest when it is null. Read from the position, never by an
 * offset: members added while a listing runs (all newer than where it stands, or of its score with a greater id) do
 * not shift what it reads next, so no member present for the whole listing is read twice or missed.
 */
export async function membersAfter(redis: RedisClient, key: string, position: IndexPosition | null, count: number): Promise<IndexPosition[]> {
  const members: IndexPosition[] = [];
  if (position !== null) {
    // The rest of the position's score first: its members after it are those with a smaller id.
    for (const id of await redis.zrevrangebyscore(key, position.score, position.score)) if (id < position.id && members.length < count) members.push({ id, score: position.score });
  }
  if (members.length < count) {
    // RESP3 with native replies answers [member, score] pairs; RESP2 and the legacy mapping a flat list.
    const flat = (await redis.zrevrangebyscore(key, position === null ? '+inf' : `(${position.score}`, '-inf', 'WITHSCORES', 'LIMIT', 0, count - members.length)).flat();
    for (let i = 0; i + 1 < flat.length; i += 2) members.push({ id: String(flat[i]), score: Number(flat[i + 1]) });
  }
  return members;
}

/**
 * Every member of `key` after `position` (from the newest when null), newest first, in batches of at most `size`:
 * each batch read by membersAfter from the last member of the one before, so a listing that stops mid-way (a page
 * filled) reads no further. Empty batches are not handed out.
 */
export async function* batchesAfter(redis: RedisClient, key: string, position: IndexPosition | null, size: number): AsyncGenerator<IndexPosition[]> {
  let from = position;
  for (;;) {
    const batch = await membersAfter(redis, key, from, size);
    if (batch.length > 0) yield batch;
    from = batch.at(-1) ?? null;
    if (batch.length < size || from === null) return;
  }
}

/**
 * Whether a listing that filled its page at member `at` of `batch` (a batch of at most `size` from batchesAfter) has
 * more of the index after it: members left in the batch, or, when the page ended a full batch, one more member read.
 */
export async function goesOnAfter(redis: RedisClient, key: string, batch: readonly IndexPosition[], at: number, size: number): Promise<boolean> {
  if (at < batch.length - 1) return true;
  const last = batch[at];
  return batch.length === size && last !== undefined && (await membersAfter(redis, key, last, 1)).length > 0;
}
