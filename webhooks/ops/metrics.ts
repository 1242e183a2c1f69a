// The service's Prometheus metrics (issue 13 §1). One registry per process, fed through a small port the composition
// root wires in: the effects worker's answers, recovery's reports and the gate's events (takeovers, and what a submit
// waiting on another refund settled of it), the webhook route's outcomes, the facts worker and the reconciler. src/
// knows nothing of prom-client.
//
// Counters count what this process did; in a deployment of several processes each exposes its own and Prometheus
// sums them. Gauges of shared state (queue depths, open alerts, Redis durability) are read from Redis at scrape
// time, so every process answers the same; but a process that found Redis lost its data answers durability 0 until
// it is restarted (src/interlock.ts durabilityOf), as it refuses every write and send until then.
//
// Labels are bounded: kinds, outcomes, premise names, reason classes, queue names and job states. No effect,
// customer, payment or event id is ever a label.
import { isIP } from 'node:net';
import express, { type Express } from 'express';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { performance } from 'node:perf_hooks';
import { ALERT_KINDS, closesDispatch, durabilityOf, openDispatch, errorMessage, hostClockOffset, limitedErrorLog, reconcileLease, redactDeep, withinRedisTimeout, type AlertKind, type HostClockOffset, type Applied, type Entry, type GateEvents, type GateResult, type RecoveryReport, type Stores, type StripeEvent } from '../../src/interlock.js';
import type { WebhookOutcome } from '../stripe-route.js';
import type { OpsQueues } from './queues.js';
import { readiness, type ReadinessAnswer } from '../api/ops-routes.js';
import type { ReadinessCheck } from '../api/context.js';

const QUEUE_STATES = ['waiting', 'active', 'delayed', 'failed'] as const;

/**
 * Open alerts the open-alerts gauge counts afresh at every scrape: one round trip's worth of the open-alerts index's ids
 * (alerts.ts reads it 500 at a time). A count above it costs a round trip and 500 more ids (about 40 KB) for each 500
 * open, and the metrics listener takes no token, so it is reused by the scrapes of the next ALERTS_REUSE_MS: however
 * often anyone scrapes, the open alerts are counted at most once in that time.
 */
const ALERTS_COUNTED_EVERY_SCRAPE = 500;
/** How long a count of more than ALERTS_COUNTED_EVERY_SCRAPE open alerts answers the scrapes after it (ms). */
const ALERTS_REUSE_MS = 5_000;

/**
 * The approval's refusal sentences (lib.lua, resend-2.lua, src/core/approval.ts), as what follows "approval <id>": one
 * class each, in the order a reason naming several is classed by.
 */
const APPROVAL_REFUSALS: readonly (readonly [RegExp, string])[] = [
  [/^does not exist$/, 'missing'],
  [/^was revoked$/, 'revoked'],
  [/^(?:has expired$|expired at )/, 'expired'],
  [/^covers at most /, 'over_amount'],
  [/^covers \S+, not /, 'out_of_scope'],
  [/^has used all /, 'used_up'],
];

/**
 * Why an approval refused a send, as a bounded class of the gate's reason text (propose-5.lua, resend-2.lua; at
 * recovery, every problem joined with "; "). Each problem is read after its approval's id, never across it: the id is
 * the approver's choice (letters, digits, _ . : -, so never a space), and "ap_renewal_after_expired_card" over its
 * cap is over_amount, not expired.
 */
export function approvalRefusalClass(outcome: string, reason: string): string {
  if (outcome === 'REFUSED:over_cap') return 'over_cap';
  const phrases = reason.split('; ').map((problem) => /^(?:the approval|approval \S+) (.*)$/s.exec(problem)?.[1] ?? null);
  for (const [phrase, label] of APPROVAL_REFUSALS) {
    if (phrases.some((said) => said !== null && phrase.test(said))) return label;
  }
  return 'other';
}

/** An outcome as a label: `UNRESOLVED:<error>` carries an error name, which is not bounded. */
function outcomeLabel(outcome: string): string {
  return outcome.startsWith('UNRESOLVED:') ? 'UNRESOLVED' : outcome;
}

/** A premise name as a label (the target's fact names; anything else is cut to its leading word). */
function fieldLabel(field: string): string {
  return /^[A-Za-z_][A-Za-z0-9_]{0,59}/.exec(field)?.[0] ?? 'other';
}

const SETTLES = new Set(['COMMITTED', 'REFUSED', 'AMBIGUOUS']);

/**
 * Empties a gauge before its scrape-time read, so it is absent unless the read answers: prom-client's reset() leaves a
 * gauge without labels at 0, which would be a reading ("Redis is not durable", "the reconciler just finished").
 */
function unread<T extends string>(gauge: Gauge<T>): void {
  gauge.reset();
  gauge.remove();
}

/** Where a refusal for durability happened (interlock_redis_not_durable_total): the webhook route, a facts job. */
const NOT_DURABLE_WHERE = ['webhook', 'facts'] as const;
export type NotDurableWhere = (typeof NOT_DURABLE_WHERE)[number];

export type Metrics = ReturnType<typeof createMetrics>;

/**
 * `clock`: a monotonic clock in ms (performance.now by default), only for how long a count of open alerts is reused
 * (ALERTS_REUSE_MS). `hostClock`: this host's wall clock against Redis's (tests); the process's own measurement otherwise.
 */
export function createMetrics(deps: { stores: Stores; queues?: OpsQueues | null; defaultMetrics?: boolean; clock?: () => number; hostClock?: () => HostClockOffset | null }) {
  const { stores } = deps;
  const clock = deps.clock ?? (() => performance.now());
  const hostClock = deps.hostClock ?? hostClockOffset;
  const { logger } = stores;
  const registry = new Registry();
  if (deps.defaultMetrics !== false) collectDefaultMetrics({ register: registry });
  const registers = [registry];

  const effects = new Counter({ name: 'interlock_effects_total', help: 'Gate answers that settled an effect (or found it settled), by effect kind and outcome; each UNRESOLVED:<error> answer (a lookup that failed) counts as outcome UNRESOLVED.', labelNames: ['kind', 'outcome'] as const, registers });
  const latency = new Histogram({
    name: 'interlock_dispatch_to_settle_seconds',
    help: 'From the DISPATCHED entry to the entry that settled the effect, on the Redis clock.',
    labelNames: ['kind'] as const,
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    registers,
  });
  const recoveryPasses = new Counter({ name: 'interlock_recovery_passes_total', help: 'Recovery passes this process ran.', registers });
  const recoveryEffects = new Counter({ name: 'interlock_recovery_effects_total', help: 'Effects recovery looked at, by what became of them in the pass.', labelNames: ['result'] as const, registers });
  const takeovers = new Counter({ name: 'interlock_recovery_takeovers_total', help: 'Open dispatches whose claim recovery took, by why (owner-dead, expired, own).', labelNames: ['reason'] as const, registers });
  const settleWaits = new Counter({ name: 'interlock_settle_margin_waits_total', help: 'Times recovery had to wait for a send deadline plus the settle margin before trusting an empty lookup.', registers });
  const violations = new Counter({ name: 'interlock_premise_violations_total', help: 'Premises found changed when a send was refused for stale premises, by premise name.', labelNames: ['field'] as const, registers });
  const approvalRefusals = new Counter({ name: 'interlock_approval_refusals_total', help: 'Sends refused by their approval or a shared cap, by reason class.', labelNames: ['reason'] as const, registers });
  const webhookReceived = new Counter({ name: 'interlock_webhook_events_received_total', help: 'Requests to POST /webhooks/stripe.', registers });
  const webhookVerified = new Counter({ name: 'interlock_webhook_events_verified_total', help: 'Webhook requests whose Stripe-Signature verified, by what was done with the event (queued, duplicate, ignored, connect: a Connect event, not applied; unavailable).', labelNames: ['result'] as const, registers });
  const webhookRejected = new Counter({ name: 'interlock_webhook_events_rejected_total', help: 'Webhook requests refused before any event was taken, by reason.', labelNames: ['reason'] as const, registers });
  const webhookDuplicated = new Counter({ name: 'interlock_webhook_events_duplicated_total', help: 'Verified webhook events already queued before (a redelivery).', registers });
  const factsAppended = new Counter({ name: 'interlock_facts_appended_total', help: 'OBSERVED entries appended to receipts, by source (webhook, reread).', labelNames: ['source'] as const, registers });
  const reconcilerPasses = new Counter({ name: 'interlock_reconciler_passes_total', help: 'Reconciliation passes this process ran.', registers });
  const reconcilerUnread = new Counter({ name: 'interlock_reconciler_unread_total', help: 'Effects a reconciliation pass could not re-read (passed over, read again when the passes come round).', registers });
  const reconcilerStopped = new Counter({ name: 'interlock_reconciler_stopped_total', help: 'Reconciliation passes this process ran that stopped before their end: re-reads of the source kept failing, Stripe rate-limited one, or the lease was lost.', registers });
  const casesFailed = new Counter({ name: 'interlock_cases_failed_total', help: 'Support cases this process recorded failed (nothing proposed), by error code: the case must be submitted again or looked into.', labelNames: ['code'] as const, registers });
  const casesDeviated = new Counter({ name: 'interlock_cases_deviated_total', help: 'Support cases this process recorded MODEL_DEVIATED (nothing sent; a person confirms or dismisses the inbox item).', registers });
  const notDurable = new Counter({
    name: 'interlock_redis_not_durable_total',
    help: 'Refusals because Redis could lose what they rest on (redis_not_durable: Redis not durable now, its data lost, or fewer replicas than INTERLOCK_REDIS_MIN_REPLICAS acknowledged in time), by where: webhook (a delivery answered 503, which Stripe delivers again), facts (a facts job run put back to wait).',
    labelNames: ['where'] as const,
    registers,
  });
  // Present at 0 from the start, so a rule on its increase sees the first refusal.
  for (const where of NOT_DURABLE_WHERE) notDurable.inc({ where }, 0);
  // Whether this process runs a reconciler (reconcilerStarted): only such a process answers the lag.
  let reconcilerHere = false;

  const waitMs = stores.config.redisCommandTimeoutMs;
  /**
   * A read of Redis at scrape time, null when it fails or has no answer within INTERLOCK_REDIS_COMMAND_TIMEOUT_MS: its
   * gauge is then absent from this scrape and the rest still answer. The queues' connection waits out an outage
   * instead of failing (so does the service's own connection while it reconnects), and a scrape waiting with it would
   * lose every metric, the process's and the counters too, for exactly as long as Redis is down.
   *
   * A read still unanswered from an earlier scrape is waited on again rather than sent again: commands that wait for
   * a reconnect are kept until Redis is back, and every scrape of a long outage would add more.
   */
  function scrapeRead<T>(what: string, run: () => Promise<T>): () => Promise<T | null> {
    let unanswered: Promise<T> | null = null;
    // Scrapes come every few seconds, and the listener takes no token: a read failing through an outage is logged at
    // once, then one line per 10 s with the count, as every failure that repeats while Redis is away.
    const failed = limitedErrorLog(logger, `metrics: could not read ${what} at scrape time`);
    const send = () => {
      const sent = run();
      const answered = () => {
        if (unanswered === sent) unanswered = null;
      };
      sent.then(answered, answered);
      return sent;
    };
    return async () => {
      try {
        unanswered ??= send();
        return await withinRedisTimeout(unanswered, waitMs, `Redis did not answer within INTERLOCK_REDIS_COMMAND_TIMEOUT_MS (${waitMs} ms)`);
      } catch (error) {
        failed(error);
        return null;
      }
    };
  }
  const readClock = scrapeRead('the Redis clock', () => stores.journal.serverTime());
  const readAlerts = scrapeRead('the open alerts', () => stores.alerts.openCountByKind());
  // The last count of more than ALERTS_COUNTED_EVERY_SCRAPE open alerts, and when it answered (clock, ms).
  let counted: { open: Record<AlertKind, number>; at: number } | null = null;
  /** The open alerts by kind: counted now, or a count of many answered less than ALERTS_REUSE_MS ago; null when unread. */
  async function openAlerts(): Promise<Record<AlertKind, number> | null> {
    if (counted !== null && clock() - counted.at < ALERTS_REUSE_MS) return counted.open;
    const open = await readAlerts();
    const total = open === null ? 0 : ALERT_KINDS.reduce((sum, kind) => sum + open[kind], 0);
    counted = open !== null && total > ALERTS_COUNTED_EVERY_SCRAPE ? { open, at: clock() } : null;
    return open;
  }
  const readDurability = scrapeRead('Redis durability', () => durabilityOf(stores));

  const readLastPass = scrapeRead('when the last reconciliation pass ended', () => reconcileLease(stores).lastEnded());
  new Gauge({
    name: 'interlock_reconciler_lag_seconds',
    help: "Seconds since the deployment's last reconciliation pass ended, whichever facts process ran it (Redis clock); absent where no reconciler runs or none finished yet.",
    registers,
    async collect() {
      unread(this);
      // The facts processes take turns (one pass an interval between them): a process whose turns others took reads
      // the deployment's lag, not a lag of its own that would grow for ever.
      if (!reconcilerHere) return;
      const [finished, now] = await Promise.all([readLastPass(), readClock()]);
      // A pass that ended "after now" ended before Redis's clock stepped back: how long ago is not known (absent, not 0).
      if (finished !== null && now !== null && finished <= now) this.set((now - finished) / 1000);
    },
  });
  new Gauge({
    name: 'interlock_host_clock_offset_seconds',
    help: "This host's wall clock minus Redis's (seconds; positive: this host is ahead), measured at scrape time within half a Redis round trip; absent while Redis does not answer. Stripe's webhook signatures are checked against this host's clock within 300 s: past 60 s either way the process warns, and past 300 s every delivery is refused as stale_timestamp.",
    registers,
    async collect() {
      unread(this);
      // Reading Redis's time feeds the process's measurement (src/redis/clock.ts), which the offset is taken from.
      if ((await readClock()) === null) return;
      const offset = hostClock();
      if (offset !== null) this.set(Math.round(offset.offsetMs) / 1000);
    },
  });
  new Gauge({
    name: 'interlock_alerts_open',
    help: `Open alerts (money at stake after a send, or a proposal not judged), by kind; read from Redis at scrape time, or, with more than ${ALERTS_COUNTED_EVERY_SCRAPE} open, at most once every ${ALERTS_REUSE_MS / 1000} s (the scrapes in between answer the last count).`,
    labelNames: ['kind'] as const,
    registers,
    async collect() {
      this.reset();
      // Counted from the open-alerts index: however many alerts were ever raised and resolved, a count reads only the
      // ids of the open ones (a listing read every alert, resolved ones too, and stopped at 10,000); past one round
      // trip's worth of them, at most once every ALERTS_REUSE_MS whoever scrapes.
      const open = await openAlerts();
      if (open === null) return;
      for (const kind of ALERT_KINDS) this.set({ kind }, open[kind]);
    },
  });
  const queues = deps.queues ?? null;
  if (queues !== null) {
    const readCounts = queues.queues.map(({ name, queue }) => ({ name, read: scrapeRead(`the ${name} queue's counts`, () => queue.getJobCounts(...QUEUE_STATES)) }));
    new Gauge({
      name: 'interlock_queue_jobs',
      help: 'Jobs in each queue by state (waiting, active, delayed, failed); read from Redis at scrape time.',
      labelNames: ['queue', 'state'] as const,
      registers,
      async collect() {
        this.reset();
        await Promise.all(
          readCounts.map(async ({ name, read }) => {
            const counts = await read();
            if (counts !== null) for (const state of QUEUE_STATES) this.set({ queue: name, state }, counts[state] ?? 0);
          }),
        );
      },
    });
    const readPaused = queues.queues.map(({ name, queue }) => ({ name, read: scrapeRead(`whether the ${name} queue is paused`, () => queue.isPaused()) }));
    new Gauge({
      name: 'interlock_queue_paused',
      help: "Whether each queue is paused (BullMQ Queue.pause: the dashboard's Pause, or a script): 1 yes, 0 no; read from Redis at scrape time. A paused effects queue records proposals and judges or sends none until it is resumed.",
      labelNames: ['queue'] as const,
      registers,
      async collect() {
        this.reset();
        await Promise.all(
          readPaused.map(async ({ name, read }) => {
            const paused = await read();
            if (paused !== null) this.set({ queue: name }, paused ? 1 : 0);
          }),
        );
      },
    });
  }
  new Gauge({
    name: 'interlock_redis_durable',
    help: 'Whether Redis keeps what it acknowledged (AOF, appendfsync always, noeviction): 1 yes, 0 no; read at scrape time. 0 for good once this process found Redis lost its data (it sends and records nothing until restarted).',
    registers,
    async collect() {
      unread(this);
      const durability = await readDurability();
      if (durability !== null) this.set(durability.durable ? 1 : 0);
    },
  });
  new Gauge({
    name: 'interlock_redis_durability_opted_out',
    help: 'Whether this process was started with INTERLOCK_UNSAFE_DURABILITY (sends even when Redis is not durable): 1 yes, 0 no.',
    registers,
    collect() {
      this.set(stores.config.unsafeDurability ? 1 : 0);
    },
  });

  /** The effect's journal and its kind as a label (refund, credit, or unknown when its PROPOSED is not found). */
  async function effectOf(effectId: string): Promise<{ entries: Entry[]; kind: 'refund' | 'credit' | 'unknown' }> {
    const partition = await stores.journal.partitionOf(effectId);
    const entries: Entry[] = partition === null ? [] : await stores.journal.entries(partition, effectId);
    const proposed = entries.find((entry) => entry.kind === 'PROPOSED');
    const rawKind = proposed?.kind === 'PROPOSED' ? proposed.effect.kind : undefined;
    return { entries, kind: rawKind === 'refund' || rawKind === 'credit' ? rawKind : 'unknown' };
  }

  /** Counts one settlement from the effect's journal: kind, latency, premise changes, approval refusals. */
  async function countSettled(effectId: string, outcome: string, reason: string | undefined): Promise<void> {
    const { entries, kind } = await effectOf(effectId);
    effects.inc({ kind, outcome: outcomeLabel(outcome) });
    if (outcome === 'DUPLICATE_IGNORED') return;
    const settledAt = entries.findLastIndex((entry) => SETTLES.has(entry.kind));
    const settle = entries[settledAt];
    // Only the DISPATCHED this settle closed is timed. A settle with no send of its own (a re-decision refused by its
    // approval) has none: an earlier DISPATCHED was closed by an earlier settle, and the time since it is how long
    // the effect waited to be decided again, not how long Stripe took.
    const dispatch = settle !== undefined && closesDispatch(settle) ? openDispatch(entries.slice(0, settledAt)) : null;
    if (settle !== undefined && dispatch !== null) latency.observe({ kind }, Math.max(0, (settle.at - dispatch.at) / 1000));
    if (outcome.startsWith('REFUSED:stale_premise') && settle?.kind === 'REFUSED') {
      for (const field of new Set(settle.changes.map((change) => fieldLabel(change.field)))) violations.inc({ field });
    }
    if (outcome === 'REFUSED:lease' || outcome === 'REFUSED:lease_at_recovery' || outcome === 'REFUSED:over_cap') {
      approvalRefusals.inc({ reason: approvalRefusalClass(outcome, reason ?? (settle?.kind === 'REFUSED' ? settle.reason : '')) });
    }
  }

  /** Counts one UNRESOLVED:<error> answer as outcome UNRESOLVED: nothing settled, so nothing else is counted. */
  async function countUnresolved(effectId: string): Promise<void> {
    const { kind } = await effectOf(effectId);
    effects.inc({ kind, outcome: 'UNRESOLVED' });
  }

  const safely = (what: string) => (error: unknown) => logger.warn({ err: errorMessage(error) }, `metrics: could not count ${what}`);

  /** Counts what recovery settled (each as an effects job's answer is) and what it could not find out (UNRESOLVED). */
  async function countRecovered(report: Pick<RecoveryReport, 'settled' | 'unresolved'>): Promise<void> {
    await Promise.all([
      ...report.settled.map((item) => countSettled(item.effectId, item.outcome, undefined).catch(safely('a recovered effect'))),
      ...report.unresolved.map((item) => countUnresolved(item.effectId).catch(safely('an unresolved effect'))),
    ]);
  }

  /**
   * The gate's events: takeovers, and a refund a submit waiting on it recovered (`recovered`), counted as a recovery
   * pass's settlements are (not as a pass): nothing else hears of it. Each returns at once.
   */
  const gateEvents: GateEvents = {
    takeover(reason) {
      takeovers.inc({ reason });
    },
    recovered(report) {
      void countRecovered(report);
    },
  };

  return {
    registry,
    gateEvents,
    /**
     * An effects job's answer. IN_FLIGHT is not counted (the job asks again); UNRESOLVED:<error> is not a settlement
     * either, but it is the gate saying it could not find out (Stripe's lookup failing), so each such answer counts as
     * outcome UNRESOLVED, for a rule to alert on.
     */
    async effectAnswered(answer: GateResult): Promise<void> {
      if (answer.outcome === 'IN_FLIGHT') return;
      if (answer.outcome.startsWith('UNRESOLVED:')) {
        await countUnresolved(answer.effectId).catch(safely('an unresolved answer'));
        return;
      }
      await countSettled(answer.effectId, answer.outcome, answer.reason).catch(safely('an effect answer'));
    },
    async recoveryReported(report: RecoveryReport): Promise<void> {
      recoveryPasses.inc();
      recoveryEffects.inc({ result: 'settled' }, report.settled.length);
      recoveryEffects.inc({ result: 'waiting' }, report.waiting.length);
      recoveryEffects.inc({ result: 'skipped' }, report.skipped.length);
      recoveryEffects.inc({ result: 'unresolved' }, report.unresolved.length);
      settleWaits.inc(report.waiting.length);
      await countRecovered(report);
    },
    webhookOutcome(outcome: WebhookOutcome, detail: { reason?: string }): void {
      webhookReceived.inc();
      if (outcome === 'rejected') {
        webhookRejected.inc({ reason: detail.reason ?? 'unknown' });
        return;
      }
      webhookVerified.inc({ result: outcome });
      if (outcome === 'duplicate') webhookDuplicated.inc();
      if (outcome === 'unavailable' && detail.reason === 'redis_not_durable') notDurable.inc({ where: 'webhook' });
    },
    /** A refusal for durability this process made (redis_not_durable): where, as interlock_redis_not_durable_total's label. */
    redisNotDurable(where: NotDurableWhere): void {
      notDurable.inc({ where });
    },
    /** A case this process's decisions worker recorded failed, with its error code (a bounded registry code). */
    caseFailed(code: string): void {
      casesFailed.inc({ code: /^[a-z_]{1,60}$/.test(code) ? code : 'other' });
    },
    /** A case this process's decisions worker recorded MODEL_DEVIATED. */
    caseDeviated(): void {
      casesDeviated.inc();
    },
    factsApplied(_event: StripeEvent, applied: readonly Applied[]): void {
      factsAppended.inc({ source: 'webhook' }, applied.reduce((sum, item) => sum + item.appended, 0));
    },
    reconciled(report: { appended: number; unread: number; stopped: string | null }, _finishedAt?: number): void {
      reconcilerPasses.inc();
      reconcilerUnread.inc(report.unread);
      if (report.stopped !== null) reconcilerStopped.inc();
      factsAppended.inc({ source: 'reread' }, report.appended);
      reconcilerHere = true;
    },
    /** This process runs a reconciler: it answers interlock_reconciler_lag_seconds, whoever runs the passes. */
    reconcilerStarted(): void {
      reconcilerHere = true;
    },
    /** The Prometheus text of every metric, with the scrape-time reads done. */
    async render(): Promise<{ contentType: string; text: string }> {
      return { contentType: registry.contentType, text: await registry.metrics() };
    },
  };
}

/** A Redis master and the replicas it lists now (src/redis/durability.ts MasterReplicas, read by the durability monitor). */
export type ListedReplicas = { master: string; replicas: readonly { address: string; state: string; lagSeconds: number | null }[] };

/**
 * Beyond INTERLOCK_REDIS_WAIT_MS, how long a replica may have been silent and still count: it acknowledges its master
 * every second, and the master counts the silence in whole seconds.
 */
const REPLICA_SILENCE_SLACK_S = 2;

/**
 * What /readyz adds with INTERLOCK_REDIS_MIN_REPLICAS=N (nothing with 0): every Redis master has N replicas online and
 * heard from lately, as each master lists them now (`replicas`). A replica stopped or cut off stays listed until the
 * master's repl-timeout drops it, but its silence grows from the moment it stops: one silent for longer than a WAIT of
 * INTERLOCK_REDIS_WAIT_MS lasts (and REPLICA_SILENCE_SLACK_S) is not counted.
 *
 * Too few, and the check fails: the process is unready, not `degraded`. Every process of the deployment shares that
 * Redis, as they share one that is down or not durable, and either of those makes them unready too; a shortfall is the
 * deployment's own measure of not durable (every refusal it causes answers redis_not_durable). No webhook is taken (each
 * is answered 503, which Stripe retries as it would a load balancer's), no fact is kept, nothing is sent, no revoke or
 * cap is answered: unlike Stripe being down (advisory), it blocks what the process is there for. It reads the masters,
 * not past refusals, so it is ready again once the replicas are back, whether or not anything came to be refused.
 */
export function replicaChecks(parts: { required: number; waitMs: number; replicas: () => Promise<readonly ListedReplicas[]> }): ReadinessCheck[] {
  const { required, waitMs } = parts;
  if (required <= 0) return [];
  const silentForS = Math.ceil(waitMs / 1000) + REPLICA_SILENCE_SLACK_S;
  const acknowledging = (link: ListedReplicas['replicas'][number]) => link.state === 'online' && link.lagSeconds !== null && link.lagSeconds <= silentForS;
  const described = (link: ListedReplicas['replicas'][number]) => {
    if (link.state !== 'online') return `${link.address} ${link.state}, not synchronised yet`;
    return acknowledging(link) ? `${link.address} acknowledging` : `${link.address} silent for ${link.lagSeconds ?? '?'} s`;
  };
  const wanted = `${required} replica${required === 1 ? '' : 's'}`;
  // One count at a time: probes asked while one is in flight share its answer, so a Redis that does not answer is not
  // sent a new INFO on the monitor's connection each probe (as writeCheck shares its write).
  let inFlight: ReturnType<ReadinessCheck['check']> | null = null;
  return [
    {
      name: 'redis_replicas',
      check() {
        inFlight ??= counted().finally(() => {
          inFlight = null;
        });
        return inFlight;
      },
    },
  ];

  /** Counts the replicas acknowledging each master, and says which masters have too few. */
  async function counted(): Promise<{ ok: boolean; detail?: string }> {
    let masters: readonly ListedReplicas[];
    try {
      masters = await parts.replicas();
    } catch (error) {
      return { ok: false, detail: `Redis's replicas could not be counted (${errorMessage(error)}), so whether INTERLOCK_REDIS_MIN_REPLICAS (${required}) is met is unknown` };
    }
    if (masters.length === 0) return { ok: false, detail: 'no Redis master could be reached to count its replicas' };
    const short = masters.flatMap((one) => {
      const count = one.replicas.filter(acknowledging).length;
      return count >= required ? [] : [`${one.master} has ${count} (${one.replicas.length === 0 ? 'no replica connected' : one.replicas.map(described).join('; ')})`];
    });
    if (short.length === 0) return { ok: true };
    return {
      ok: false,
      detail: `INTERLOCK_REDIS_MIN_REPLICAS requires ${wanted} acknowledging every Redis master, but ${short.join(', ')} (a replica acknowledges its master every second, and counts while silent for at most ${silentForS} s: INTERLOCK_REDIS_WAIT_MS, ${waitMs} ms, and ${REPLICA_SILENCE_SLACK_S} s more): until each has, webhooks are answered 503 redis_not_durable, facts jobs wait, sends are held back and revokes and caps refused. Bring the replicas back (restart a stopped one, reconnect one cut off, point one that follows another master here with REPLICAOF), or lower INTERLOCK_REDIS_MIN_REPLICAS`,
    };
  }
}

/** While the roles of the process start, its readiness is this. */
const STARTING: ReadinessAnswer = { status: 503, body: { status: 'unready', checks: [{ name: 'starting', ok: false, detail: 'the service is starting its roles' }] } };

/**
 * Whether the metrics listener answers a request whose Host header is `host`: an IP address (v4, or v6 in brackets),
 * `localhost`, or one of `names` (INTERLOCK_METRICS_HOSTS), whatever the port, letter case or a final dot. Any other
 * name is a page's own name rebound to this listener's address (DNS rebinding), which would let that page read it from
 * the operator's browser. No Host at all (HTTP/1.0) is admitted: a browser always sends one.
 */
export function metricsHostAdmitted(host: string | undefined, names: readonly string[]): boolean {
  if (host === undefined) return true;
  const bracketed = /^\[([^\]]*)\](?::\d*)?$/.exec(host);
  if (bracketed !== null) return isIP(bracketed[1] ?? '') === 6;
  const name = host.replace(/:\d*$/, '').replace(/\.$/, '').toLowerCase();
  if (isIP(name) === 4 || name === 'localhost') return true;
  return names.some((admitted) => admitted.replace(/\.$/, '').toLowerCase() === name);
}

const MISDIRECTED = 'This listener answers only requests addressed to an IP address, localhost, or a name listed in INTERLOCK_METRICS_HOSTS (comma-separated): add the name this scraper uses there.\n';

/**
 * The app of INTERLOCK_METRICS_ADDR: GET /metrics, /healthz and /readyz, without a token (the address it binds is its
 * protection: keep it on loopback or a private network). For processes with no api role, such as a worker, whose
 * orchestrator has no other address to probe. `checks` is what /readyz runs: null while the roles start (503
 * `unready`, `starting`), then the process's checks (Redis and its durability, its replicas with
 * INTERLOCK_REDIS_MIN_REPLICAS, a worker's heartbeat and queues).
 * `hosts` are the names, besides IP addresses and localhost, a request may address it by (metricsHostAdmitted); any
 * other is answered 421 Misdirected Request.
 */
export function metricsApp(metrics: Pick<Metrics, 'render'>, logger: Stores['logger'], options: { checks(): readonly ReadinessCheck[] | null; hosts?: readonly string[] } = { checks: () => null }): Express {
  const app = express();
  app.disable('x-powered-by');
  const hosts = options.hosts ?? [];
  // Never sniffed as another type than the text it says it is.
  app.use((_req, res, next) => {
    res.setHeader('X-Content-Type-Options', 'nosniff');
    next();
  });
  app.use((req, res, next) => {
    if (metricsHostAdmitted(req.headers.host, hosts)) {
      next();
      return;
    }
    res.status(421).type('text/plain').setHeader('Cache-Control', 'no-store');
    res.send(MISDIRECTED);
  });
  app.get('/metrics', (_req, res) => {
    metrics.render().then(
      ({ contentType, text }) => {
        res.status(200).type(contentType).setHeader('Cache-Control', 'no-store');
        res.send(text);
      },
      (error: unknown) => {
        logger.error({ err: error }, 'metrics scrape failed');
        res.status(500).type('text/plain').send(`The metrics could not be rendered: ${errorMessage(error)}\n`);
      },
    );
  });
  app.get('/healthz', (_req, res) => {
    res.setHeader('Cache-Control', 'no-store');
    res.json({ status: 'ok' });
  });
  app.get('/readyz', (_req, res) => {
    const checks = options.checks();
    (checks === null ? Promise.resolve(STARTING) : readiness(checks)).then(
      (answer) => {
        res.setHeader('Cache-Control', 'no-store');
        if (answer.status !== 200) res.setHeader('Retry-After', '5');
        res.status(answer.status).json(redactDeep(answer.body));
      },
      (error: unknown) => {
        logger.error({ err: error }, 'readiness check failed');
        res.status(503).json(redactDeep({ status: 'unready', checks: [{ name: 'readyz', ok: false, detail: errorMessage(error) }] }));
      },
    );
  });
  app.use((_req, res) => {
    res.status(404).type('text/plain').send('This listener serves GET /metrics, /healthz and /readyz only.\n');
  });
  return app;
}
