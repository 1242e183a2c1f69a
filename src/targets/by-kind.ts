// One target for several effect kinds (Stripe refunds and Stripe credits): each call goes to the target that moves
// the effect's kind, so one gate, one heartbeat and one queue carry every kind a worker sends. The targets must
// agree on what the gate's timing rests on: tier, lookups, the key window and the send timeout.
import type { EffectKind } from '../core/effects.js';
import type { Target } from '../core/target.js';

export function targetByKind(name: string, targets: readonly Target[]): Target {
  const first = targets[0];
  if (!first) throw new Error('targetByKind needs at least one target');
  for (const target of targets) {
    if (target.tier !== first.tier || target.queryable !== first.queryable || target.dedupWindowMs !== first.dedupWindowMs || target.sendTimeoutMs !== first.sendTimeoutMs) {
      throw new Error(`Targets ${first.name} and ${target.name} differ in tier, lookups, key window or send timeout; one gate cannot carry both.`);
    }
  }
  const byKind = new Map<EffectKind, Target>();
  for (const target of targets) for (const kind of target.kinds) byKind.set(kind, target);
  const of = (kind: EffectKind): Target => {
    const target = byKind.get(kind);
    if (!target) throw new Error(`No target moves ${kind} effects`);
    return target;
  };
  const facts = targets.every((target) => target.facts !== null) ? [...new Set(targets.flatMap((target) => target.facts ?? []))] : null;
  return {
    name,
    tier: first.tier,
    queryable: first.queryable,
    dedupWindowMs: first.dedupWindowMs,
    sendTimeoutMs: first.sendTimeoutMs,
    kinds: [...byKind.keys()],
    facts,
    movedBySends: [...new Set(targets.flatMap((target) => target.movedBySends ?? []))],
    // A refusal proves nothing landed only when every target's does (Target.refusalProvesNothingLanded).
    ...(targets.every((target) => target.refusalProvesNothingLanded === true) ? { refusalProvesNothingLanded: true } : {}),
    // The gate aborts a send only on a target that closes its requests (Target.abortSends): so every target here must.
    ...(targets.every((target) => target.abortSends !== undefined) ? { abortSends: () => targets.forEach((target) => target.abortSends?.()) } : {}),
    apply: (effectId, effect, context) => of(effect.kind).apply(effectId, effect, context),
    query: (effectId, effect, context) => of(effect.kind).query(effectId, effect, context),
    readFacts: (effectId, effect, names, context) => of(effect.kind).readFacts(effectId, effect, names, context),
  };
}
