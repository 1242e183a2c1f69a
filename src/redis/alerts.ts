// Alerts for people (issue 10 §4): money at stake that no gate could prevent, because it happened after the send: a
// refund that succeeded on a charge later charged back (the merchant is out both), a refund that failed after the
// gate answered landed, a refund that landed after its effect was refused or left ambiguous, a credit that landed while
// billing compensated the same incident with a credit note (the customer paid twice). Each alert names the
// effect, the money at stake and what a person should do. One alert per (effect, kind): raising it again updates it;
// the facts worker resolves one that later facts undid.
//
// One alert is about money that has not moved yet: `not_judged`, a recorded proposal whose effects job failed for good
// before the gate judged it (a premise read Stripe refused with 401/403, or Stripe or Redis away for longer than the
// job retries). Nothing was sent and nothing will be until someone sends the same request again; the effects worker
// raises it and resolves it once the effect is judged.
import type { RedisClient } from './client.js';
import type { Keys } from './keys.js';

export const ALERT_KINDS = ['exposure', 'failed_after_landed', 'late_landing', 'not_judged', 'compensated_twice'] as const;
export type AlertKind = (typeof ALERT_KINDS)[number];

export type Alert = {
  id: string;
  kind: AlertKind;
  effectId: string;
  subject: string;
  /** Cents the merchant may lose. */
  centsAtStake: number;
  refund: string | null;
  disputes: string[];
  sentence: string;
  action: string;
  raisedAt: number;
  updatedAt: number;
  resolvedAt: number | null;
  resolvedBy: string | null;
};

export type Alerts = ReturnType<typeof createAlerts>;

/** Index entries read per round trip while looking for open alerts. */
const LIST_BATCH = 500;

export function createAlerts(deps: { redis: RedisClient; keys: Keys; now: () => Promise<number> }) {
  const { redis, keys } = deps;
  const idOf = (effectId: string, kind: AlertKind) => `${kind}:${effectId}`;

  async function read(id: string): Promise<Alert | null> {
    const text = await redis.hget(keys.alerts, id);
    return text === null ? null : (JSON.parse(text) as Alert);
  }

  return {
    /** Raises (or refreshes) the alert of `kind` for an effect; returns it and whether it is new. */
    async raise(alert: Omit<Alert, 'id' | 'raisedAt' | 'updatedAt' | 'resolvedAt' | 'resolvedBy'>): Promise<{ alert: Alert; created: boolean }> {
      const id = idOf(alert.effectId, alert.kind);
      const now = await deps.now();
      const known = await read(id);
      const next: Alert = { ...alert, id, raisedAt: known?.raisedAt ?? now, updatedAt: now, resolvedAt: known?.resolvedAt ?? null, resolvedBy: known?.resolvedBy ?? null };
      await redis.hset(keys.alerts, id, JSON.stringify(next));
      await redis.zadd(keys.alertsByTime, next.raisedAt, id);
      return { alert: next, created: known === null };
    },
    async get(id: string): Promise<Alert | null> {
      return read(id);
    },
    /**
     * Newest first; open ones only unless `all`. Open ones are looked for through the whole index, a batch at a time:
     * an alert still open is money at stake, and it must show however many newer ones were resolved since.
     */
    async list(options: { all?: boolean; limit?: number } = {}): Promise<Alert[]> {
      const limit = options.limit ?? 100;
      const found: Alert[] = [];
      for (let offset = 0; found.length < limit; offset += LIST_BATCH) {
        const ids = await redis.zrevrange(keys.alertsByTime, offset, offset + (options.all ? limit : LIST_BATCH) - 1);
        if (ids.length === 0) break;
        const texts = await redis.hmget(keys.alerts, ...ids);
        const alerts = texts.filter((text): text is string => text !== null).map((text) => JSON.parse(text) as Alert);
        found.push(...(options.all ? alerts : alerts.filter((alert) => alert.resolvedAt === null)));
        if (options.all || ids.length < LIST_BATCH) break;
      }
      return found.slice(0, limit);
    },
    async resolve(id: string, by: string): Promise<Alert | null> {
      const known = await read(id);
      if (!known) return null;
      const resolved: Alert = { ...known, resolvedAt: await deps.now(), resolvedBy: by };
      await redis.hset(keys.alerts, id, JSON.stringify(resolved));
      return resolved;
    },
    /**
     * Resolves the effect's open alerts whose kind is no longer called for: later facts undid what raised them (a
     * chargeback's exposure gone once the refund it met failed). Returns those resolved.
     */
    async settle(effectId: string, standing: readonly AlertKind[], by: string): Promise<Alert[]> {
      const resolved: Alert[] = [];
      for (const kind of ALERT_KINDS) {
        if (standing.includes(kind)) continue;
        const known = await read(idOf(effectId, kind));
        if (known === null || known.resolvedAt !== null) continue;
        const next: Alert = { ...known, resolvedAt: await deps.now(), resolvedBy: by };
        await redis.hset(keys.alerts, next.id, JSON.stringify(next));
        resolved.push(next);
      }
      return resolved;
    },
    async openCount(): Promise<number> {
      return (await this.list({ limit: 10_000 })).length;
    },
  };
}
