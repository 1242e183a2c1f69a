// An in-memory target of any tier, with fault injection, for tests and the offline demo. It behaves like the
// real thing where the gate cares: tier 1 dedupes on the effect id within its window, tiers 1 and 2 can be
// looked up, tier 3 neither. It counts every landing, so a test can prove an effect landed at most once.
import { canonicalJson, type Json, type JsonObject } from '../core/json.js';
import { ProcessCrash, Rejected, type PremiseReport, type Target } from '../core/target.js';
import type { Tier } from '../core/decisions.js';
import type { PremiseChange } from '../core/entries.js';

export type Fault =
  | { kind: 'crash-before-send' }
  | { kind: 'crash-after-send' }
  | { kind: 'error-before-send'; message?: string }
  | { kind: 'error-after-send'; message?: string }
  | { kind: 'reject'; code?: string; message?: string }
  /** The request is slow; with `landsAfterAbort` it still lands after the sender gave up, as bytes on the wire do. */
  | { kind: 'slow-send'; delayMs: number; landsAfterAbort?: boolean }
  | { kind: 'lookup-error' }
  | { kind: 'premise-error' };

export type Landing = { id: string; effectId: string; effect: JsonObject; at: number };

export type MemoryTargetOptions = {
  tier: Tier;
  name?: string;
  dedupWindowMs?: number;
  sendTimeoutMs?: number;
  /** Local clock for landings and key expiry; tests may move it. */
  now?: () => number;
};

export type MemoryTarget = Target & {
  /** Facts per subject that premises are compared with; change them to model the world moving. */
  world: Map<string, JsonObject>;
  landings: Landing[];
  landedCount(effectId: string): number;
  inject(fault: Fault): void;
  pendingFaults(): Fault[];
  /** Forget idempotency keys, as Stripe does after 24 h. */
  forgetKeys(): void;
};

function subjectOf(effect: JsonObject): string {
  if (typeof effect.subject === 'string') return effect.subject;
  if (typeof effect.paymentIntent === 'string') return `payment:${effect.paymentIntent}`;
  if (typeof effect.customer === 'string') return `customer:${effect.customer}`;
  throw new Rejected('the effect names no subject: give paymentIntent, customer or subject', { code: 'invalid_effect', status: 400 });
}

function amountOf(effect: JsonObject): number {
  const amount = effect.amount;
  if (typeof amount !== 'number' || !Number.isSafeInteger(amount) || amount <= 0) {
    throw new Rejected('the effect amount must be a positive whole number of cents', { code: 'invalid_effect', status: 400 });
  }
  return amount;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    }, { once: true });
  });
}

export function createMemoryTarget(options: MemoryTargetOptions): MemoryTarget {
  const now = options.now ?? (() => Date.now());
  const world = new Map<string, JsonObject>();
  const landings: Landing[] = [];
  const keyed = new Map<string, Landing>();
  const faults: Fault[] = [];
  let sequence = 0;

  function takeFault(kinds: readonly Fault['kind'][]): Fault | undefined {
    const index = faults.findIndex((fault) => kinds.includes(fault.kind));
    if (index < 0) return undefined;
    return faults.splice(index, 1)[0];
  }

  function land(effectId: string, effect: JsonObject): Landing {
    if (options.tier === 1) {
      const known = keyed.get(effectId);
      if (known) return known;
    }
    sequence += 1;
    const landing: Landing = { id: `obj_${sequence.toString().padStart(6, '0')}`, effectId, effect, at: now() };
    landings.push(landing);
    keyed.set(effectId, landing);
    return landing;
  }

  function asObject(landing: Landing): JsonObject {
    const object = landing.effect.kind === 'refund' ? 'refund' : 'effect';
    return { id: landing.id, object, status: 'succeeded', amount: landing.effect.amount ?? null, effectId: landing.effectId };
  }

  return {
    name: options.name ?? `memory-tier-${options.tier}`,
    tier: options.tier,
    queryable: options.tier !== 3,
    dedupWindowMs: options.dedupWindowMs ?? 24 * 60 * 60 * 1000,
    sendTimeoutMs: options.sendTimeoutMs ?? 2_000,
    world,
    landings,
    subjectOf,
    amountOf,

    async apply(effectId, effect, { signal }) {
      const fault = takeFault(['crash-before-send', 'crash-after-send', 'error-before-send', 'error-after-send', 'reject', 'slow-send']);
      switch (fault?.kind) {
        case 'crash-before-send':
          throw new ProcessCrash('before the send');
        case 'error-before-send':
          throw new Error(fault.message ?? 'connection reset before the request was written');
        case 'reject':
          throw new Rejected(fault.message ?? 'the target refused the request', { code: fault.code ?? 'rejected', status: 400 });
        case 'slow-send':
          if (fault.landsAfterAbort) {
            // One request lands once, whether or not its sender is still waiting for the answer.
            let landing: Landing | undefined;
            setTimeout(() => (landing ??= land(effectId, effect)), fault.delayMs).unref();
            await sleep(fault.delayMs, signal);
            return asObject((landing ??= land(effectId, effect)));
          }
          await sleep(fault.delayMs, signal);
          break;
        default:
          break;
      }
      if (signal.aborted) throw new Error('the send was aborted before it started');
      const landing = land(effectId, effect);
      if (fault?.kind === 'crash-after-send') throw new ProcessCrash('after the send, before its answer was recorded');
      if (fault?.kind === 'error-after-send') throw new Error(fault.message ?? 'the connection dropped before the answer arrived');
      return asObject(landing);
    },

    async query(effectId) {
      if (options.tier === 3) throw new Error('a tier-3 target cannot be queried');
      if (takeFault(['lookup-error'])) throw new Error('the lookup failed');
      const landing = landings.find((item) => item.effectId === effectId);
      return landing ? asObject(landing) : null;
    },

    async readPremises(_effectId, effect, premises): Promise<PremiseReport> {
      if (takeFault(['premise-error'])) throw new Error('the premise read failed');
      const facts = world.get(subjectOf(effect)) ?? {};
      const violations: string[] = [];
      const changes: PremiseChange[] = [];
      for (const [field, was] of Object.entries(premises)) {
        const current: Json = facts[field] ?? null;
        if (canonicalJson(current) !== canonicalJson(was)) {
          violations.push(`${field}: was ${canonicalJson(was)}, now ${canonicalJson(current)}`);
          changes.push({ field, was, now: current });
        }
      }
      return { violations, changes };
    },

    landedCount(effectId) {
      return landings.filter((landing) => landing.effectId === effectId).length;
    },
    inject(fault) {
      faults.push(fault);
    },
    pendingFaults() {
      return [...faults];
    },
    forgetKeys() {
      keyed.clear();
    },
  };
}
