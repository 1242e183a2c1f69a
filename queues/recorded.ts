// Queueing what is recorded already. Once a proposal or a case is in Redis, a failure to add its job (a queue closed
// under the call by a process stopping, Redis refusing or not answering) is never answered as "nothing was recorded":
// it says the thing is recorded and may or may not be queued, and that sending it again is safe. A job is a recorded
// proposal's only way to a worker (only a re-approval's note, repairReapprovals, brings one back on its own), so the
// caller must send it again.
import { errorMessage, InterlockError, RedisTimeout, withinRedisTimeout } from '../src/interlock.js';

/**
 * Runs `queued` within `ms`. `done` is what happened already ("Effect … was recorded"), `retry` what the caller does
 * ("Send the same request again"), `again` why that is safe.
 */
export async function queueRecorded(queued: () => Promise<void>, ms: number, said: { done: string; retry: string; again: string }): Promise<void> {
  try {
    await withinRedisTimeout(queued(), ms, `${said.done}, but Redis did not answer within ${ms} ms while it was being queued, so it may or may not be queued. ${said.retry} once Redis answers: ${said.again}`);
  } catch (error) {
    if (error instanceof RedisTimeout) throw markRecorded(error);
    throw markRecorded(new InterlockError('redis_unavailable', `${said.done}, but queuing it failed (${errorMessage(error)}), so it may or may not be queued. ${said.retry}: ${said.again}`, { cause: error }));
  }
}

const RECORDED = Symbol('recorded');

function markRecorded<E extends Error>(error: E): E {
  return Object.assign(error, { [RECORDED]: true });
}

/**
 * Whether `error` is queueRecorded's: what it was about is recorded already. A command that reports a Redis outage as
 * "nothing was changed" must not say so of it (the CLI's stores do, for a Redis that does not answer afterwards).
 */
export function wasRecorded(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { [RECORDED]?: unknown })[RECORDED] === true;
}
