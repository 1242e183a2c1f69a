// Worker liveness. A worker refreshes a short-lived key holding its boot nonce about once a second; a claim whose
// holder's key is gone, or holds another nonce (the holder restarted), belongs to a dead sender and may be taken
// over at once instead of waiting for it to lapse (DESIGN §7).
import type { RedisClient } from './client.js';
import type { Keys } from './keys.js';

export type Heartbeat = ReturnType<typeof createHeartbeat>;

export function createHeartbeat(deps: { redis: RedisClient; keys: Keys; workerId: string; nonce: string; intervalMs?: number; ttlMs?: number; onError?: (error: unknown) => void }) {
  const { redis, keys, workerId, nonce } = deps;
  const intervalMs = deps.intervalMs ?? 1_000;
  const ttlMs = deps.ttlMs ?? 4_000;
  let timer: NodeJS.Timeout | null = null;

  async function beat(): Promise<void> {
    await redis.set(keys.heartbeat(workerId), nonce, 'PX', ttlMs);
  }

  return {
    workerId,
    nonce,
    ttlMs,
    beat,
    async start(): Promise<void> {
      await beat();
      timer ??= setInterval(() => {
        beat().catch((error: unknown) => deps.onError?.(error));
      }, intervalMs);
      timer.unref();
    },
    async stop(options: { clear?: boolean } = {}): Promise<void> {
      if (timer) clearInterval(timer);
      timer = null;
      if (options.clear) await redis.del(keys.heartbeat(workerId));
    },
    /** True while `owner` is alive with the same boot nonce it held when it took the claim. */
    async isAlive(owner: string, ownerNonce: string): Promise<boolean> {
      return (await redis.get(keys.heartbeat(owner))) === ownerNonce;
    },
  };
}
