// An in-memory target of any tier, with fault injection, for tests and the offline demo. It behaves like the
// real thing where the gate cares: tier 1 keys requests by the effect id as Stripe keys them by Idempotency-Key
// (a second request while the first runs is refused as "in use" with no outcome, and once the first has an
// answer, landed or refused, every later one gets that answer again); tiers 1 and 2 can be looked up, tier 3
// neither. It counts every landing, so a test can prove an effect landed at most once.
import type { Effect, EffectKind } from '../core/effects.js';
import type { Json, JsonObject } from '../core/json.js';
import { ProcessCrash, Rejected, type SendContext, type Target } from '../core/target.js';
import type { Tier } from '../core/decisions.js';

export type Fault =
  | { kind: 'crash-before-send' }
  | { kind: 'crash-after-send' }
  | { kind: 'error-before-send'; message?: string }
  | { kind: 'error-after-send'; message?: string }
  | { kind: 'reject'; code?: string; message?: string }
  /** The request is slow; with `landsAfterAbort` it still lands after the sender gave up, as bytes on the wire do. */
  | { kind: 'slow-send'; delayMs: number; landsAfterAbort?: boolean }
  | { kind: 'lookup-error' }
  | { kind: 'premise-error' }
  /** Every lookup (or premise read) fails from now on, until `heal()`. */
  | { kind: 'lookup-down' }
  | { kind: 'premise-down' }
  /** The next lookup finds the landed object but reports it with an odd id (a number, or none at all). */
  | { kind: 'odd-id'; id: number | null }
  /** The next send answers only after `delayMs` (inside its deadline): a definite refusal, or a landing. */
  | { kind: 'slow-answer'; delayMs: number; answer: 'landed' | 'rejected' }
  /** The next premise read takes `delayMs`: time for the world (an approval, a fact) to move during a re-check. */
  | { kind: 'slow-read'; delayMs: number };

export type Landing = { id: string; effectId: string; effect: Effect; at: number };
/** A request that left its sender (it passed the last check before the network), whether or not it landed. */
export type SendStart = { effectId: string; at: number };

export type MemoryTargetOptions = {
  tier: Tier;
  name?: string;
  dedupWindowMs?: number;
  sendTimeoutMs?: number;
  /** Local clock that dates landings; tests may move it. Keys do not expire with it: a test forgets them (forgetKeys). */
  now?: () => number;
  /** Target.movedBySends: premise names a test's world moves when a refund lands (the world never moves by itself). */
  movedBySends?: readonly string[];
};

export type MemoryTarget = Target & {
  /** Facts per subject that premises are compared with; change them to model the world moving. */
  world: Map<string, JsonObject>;
  landings: Landing[];
  sendStarts: SendStart[];
  /** When the gate asked the target to close the requests of the sends it aborted (Target.abortSends). */
  sendAborts: number[];
  landedCount(effectId: string): number;
  inject(fault: Fault): void;
  pendingFaults(): Fault[];
  /** Forget idempotency keys, as Stripe does after 24 h. */
  forgetKeys(): void;
  /** Ends the persistent faults (`lookup-down`, `premise-down`). */
  heal(): void;
};

function subjectOf(effect: Effect): string {
  return effect.kind === 'refund' ? `payment:${effect.paymentIntent}` : `customer:${effect.customer}`;
}

/** Waits `ms`, or fails once the send's time is up, as a request with a timeout does. */
function sleep(ms: number, context?: SendContext): Promise<void> {
  const left = context ? context.timeLeftMs() : Infinity;
  return new Promise((resolve, reject) => {
    if (ms <= left) setTimeout(resolve, ms);
    else setTimeout(() => reject(new Error('the request timed out')), Math.max(0, left));
  });
}

export function createMemoryTarget(options: MemoryTargetOptions): MemoryTarget {
  const now = options.now ?? (() => Date.now());
  const world = new Map<string, JsonObject>();
  const landings: Landing[] = [];
  const sendStarts: SendStart[] = [];
  const sendAborts: number[] = [];
  const keyed = new Map<string, Landing>();
  const faults: Fault[] = [];
  let sequence = 0;

  function takeFault(kinds: readonly Fault['kind'][]): Fault | undefined {
    const index = faults.findIndex((fault) => kinds.includes(fault.kind));
    if (index < 0) return undefined;
    return faults.splice(index, 1)[0];
  }

  let lookupDown = false;
  let premiseDown = false;
  /** Tier 1: keys whose first request is still running, and keys whose first request was refused. */
  const inFlight = new Set<string>();
  const refusedKeys = new Map<string, Rejected>();

  function land(effectId: string, effect: Effect): Landing {
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
    return { id: landing.id, object, status: 'succeeded', amount: landing.effect.amount };
  }

  /** One request reaching the target; `holdKey` keeps a tier-1 key in use past the sender's answer (see slow-send). */
  async function perform(effectId: string, effect: Effect, context: SendContext, fault: Fault | undefined, holdKey?: () => () => void): Promise<JsonObject> {
    switch (fault?.kind) {
      case 'reject':
        throw new Rejected(fault.message ?? 'the target refused the request', { code: fault.code ?? 'rejected', status: 400 });
      case 'slow-send':
        if (fault.landsAfterAbort) {
          // One request lands once, whether or not its sender is still waiting for the answer; its key stays in
          // use until it has.
          let landing: Landing | undefined;
          const release = holdKey?.();
          setTimeout(() => {
            landing ??= land(effectId, effect);
            release?.();
          }, fault.delayMs).unref();
          await sleep(fault.delayMs, context);
          return asObject((landing ??= land(effectId, effect)));
        }
        await sleep(fault.delayMs, context);
        break;
      case 'slow-answer': {
        // A slow request that gets a definite answer inside its deadline: by then its sender may be fenced out.
        await sleep(fault.delayMs, context);
        if (fault.answer === 'rejected') throw new Rejected('the target refused the request (late)', { code: 'rejected', status: 400 });
        return asObject(land(effectId, effect));
      }
      default:
        break;
    }
    if (context.timeLeftMs() <= 0) throw new Error('the send deadline passed before it started');
    const landing = land(effectId, effect);
    if (fault?.kind === 'crash-after-send') throw new ProcessCrash('after the send, before its answer was recorded');
    if (fault?.kind === 'error-after-send') throw new Error(fault.message ?? 'the connection dropped before the answer arrived');
    return asObject(landing);
  }

  return {
    name: options.name ?? `memory-tier-${options.tier}`,
    tier: options.tier,
    queryable: options.tier !== 3,
    dedupWindowMs: options.dedupWindowMs ?? 24 * 60 * 60 * 1000,
    sendTimeoutMs: options.sendTimeoutMs ?? 2_000,
    kinds: ['refund', 'credit'] as readonly EffectKind[],
    facts: null,
    movedBySends: options.movedBySends ?? [],
    world,
    landings,
    sendStarts,
    sendAborts,

    // Its requests have no connection to close (a slow send that lands after the abort models bytes already on the
    // wire): it records the call, for tests.
    abortSends() {
      sendAborts.push(now());
    },

    async apply(effectId, effect, context) {
      const fault = takeFault(['crash-before-send', 'crash-after-send', 'error-before-send', 'error-after-send', 'reject', 'slow-send', 'slow-answer']);
      if (fault?.kind === 'crash-before-send') throw new ProcessCrash('before the send');
      if (fault?.kind === 'error-before-send') throw new Error(fault.message ?? 'connection reset before the request was written');
      await context.beforeWrite();
      sendStarts.push({ effectId, at: now() });
      if (options.tier !== 1) return perform(effectId, effect, context, fault);
      const refused = refusedKeys.get(effectId);
      if (refused) throw refused;
      const known = keyed.get(effectId);
      if (known) return asObject(known);
      if (inFlight.has(effectId)) throw new Error('idempotency_key_in_use: another request with this key is still being processed (409)');
      inFlight.add(effectId);
      let released = true;
      try {
        return await perform(effectId, effect, context, fault, () => {
          released = false;
          return () => inFlight.delete(effectId);
        });
      } catch (error) {
        if (error instanceof Rejected) refusedKeys.set(effectId, error);
        throw error;
      } finally {
        if (released) inFlight.delete(effectId);
      }
    },

    async query(effectId) {
      if (options.tier === 3) throw new Error('a tier-3 target cannot be queried');
      if (lookupDown) throw new Error('the target is down: every lookup fails');
      if (takeFault(['lookup-error'])) throw new Error('the lookup failed');
      const landing = landings.find((item) => item.effectId === effectId);
      if (!landing) return null;
      const odd = takeFault(['odd-id']);
      if (odd?.kind === 'odd-id') {
        const { id: _id, ...rest } = asObject(landing);
        return odd.id === null ? rest : { ...rest, id: odd.id };
      }
      return asObject(landing);
    },

    async readFacts(_effectId, effect, names) {
      if (premiseDown) throw new Error('the target is down: every premise read fails');
      if (takeFault(['premise-error'])) throw new Error('the premise read failed');
      const slow = takeFault(['slow-read']);
      if (slow?.kind === 'slow-read') await new Promise((resolve) => setTimeout(resolve, slow.delayMs));
      const facts = world.get(subjectOf(effect)) ?? {};
      const current: JsonObject = {};
      // Own properties only: a premise named "constructor" is a fact like any other, not Object's (issue 6, item 16).
      for (const name of names) current[name] = Object.hasOwn(facts, name) ? (facts[name] as Json) : null;
      return current;
    },

    landedCount(effectId) {
      return landings.filter((landing) => landing.effectId === effectId).length;
    },
    inject(fault) {
      if (fault.kind === 'lookup-down') lookupDown = true;
      else if (fault.kind === 'premise-down') premiseDown = true;
      else faults.push(fault);
    },
    heal() {
      lookupDown = false;
      premiseDown = false;
    },
    pendingFaults() {
      return [...faults];
    },
    forgetKeys() {
      keyed.clear();
      refusedKeys.clear();
    },
  };
}
