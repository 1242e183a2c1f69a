// Every Redis key the gate uses, from this one module.
//
// An effect's keys, its approval's keys and its subject's totals share one hash tag, the effect's partition (the
// payment or customer the money moves on), so each atomic script stays inside one Redis Cluster slot. The small
// global indexes share a tag of their own, `{~index}`, which no partition can spell ("~" is not allowed in one).
//
// Every key is `<prefix>:<tag>:<family>[:<id>]` with a fixed family word before any caller-chosen id, so no id can
// address a key of another family or another id (issue 6, item 5): `approval:ap_x:reserved` is just the
// approval named "ap_x:reserved", and no other key can ever be spelled like it.
import { isEffectId } from '../core/effect-id.js';
import { CASE_ID } from '../core/cases.js';
import { APPROVAL_ID } from '../core/proposal.js';

export type Keys = ReturnType<typeof createKeys>;

// Room for the longest subject the schemas take: `customer:` and `cus_` before a 200-character id (213).
const SAFE_PART = /^[A-Za-z0-9_:.-]{1,220}$/;
const WORKER_ID = /^[A-Za-z0-9_:.@-]{1,200}$/;
// Stripe's are `evt_` and letters, digits or _ (src/stripe/webhooks.ts); this only keeps a key readable.
const EVENT_ID = /^[A-Za-z0-9_.-]{1,255}$/;

export function assertPartition(partition: string): string {
  if (!SAFE_PART.test(partition)) {
    throw new Error(`Partition "${partition}" may only use letters, digits and _ : . - (1-220 characters), since it becomes a Redis hash tag.`);
  }
  return partition;
}

function assertEffectId(effectId: string): string {
  if (!isEffectId(effectId)) throw new Error(`"${effectId.slice(0, 80)}" is not an effect id (64 lowercase hex characters).`);
  return effectId;
}

function assertApprovalId(approvalId: string): string {
  if (!APPROVAL_ID.test(approvalId)) throw new Error(`"${approvalId.slice(0, 80)}" is not an approval id (1-200 letters, digits or _ . : -).`);
  return approvalId;
}

/** What follows the key prefix in a deployment's marker (createKeys `deployment`). */
const DEPLOYMENT_MARKER_TAIL = ':{~index}:deployment';

/** The SCAN pattern of every deployment's marker on a Redis, whatever its key prefix (`{` and `~` match themselves). */
export const DEPLOYMENT_MARKER_MATCH = `*${DEPLOYMENT_MARKER_TAIL}`;

/** The key prefix of the deployment whose marker is `key`, or null when `key` is no deployment marker. */
export function prefixOfDeploymentMarker(key: string): string | null {
  return key.endsWith(DEPLOYMENT_MARKER_TAIL) && key.length > DEPLOYMENT_MARKER_TAIL.length ? key.slice(0, -DEPLOYMENT_MARKER_TAIL.length) : null;
}

export function createKeys(prefix = 'interlock') {
  const tagged = (partition: string) => `${prefix}:{${assertPartition(partition)}}`;
  const index = `${prefix}:{~index}`;
  return {
    prefix,
    /** HASH effect id -> partition. Written once, before the first entry or with it: the binding of a request to its subject. */
    effectPartitions: `${index}:effects`,
    /**
     * STRING, kept a minute: written before each WAIT (replica-wait.ts) on the index's master (a single server's one),
     * so the WAIT covers every write that master took before it. Its value is never read.
     */
    replicaMark: `${index}:replica-mark`,
    /** ZSET effect id -> Redis time it was bound: every effect, newest first for listings. Written with the binding. */
    effectsByTime: `${index}:effects-by-time`,
    /** ZSET "<effect id>:<submit token>" -> Redis time bound: every submit that may dispatch, and every open effect. */
    openIndex: `${index}:open`,
    /**
     * ZSET effect id -> when it committed (or was put back on it): the committed effects the reconciler would not find
     * through effects-by-time (committed long after the binding that indexed them, journal.ts RECENT_COMMIT_MS), and
     * those of facts jobs that failed for good. The end of each scheduled pass drops the entries older than any pass or
     * `interlock reconcile --since` can ask for (journal.ts LONGEST_RECONCILE_SINCE_MS, or a longer horizon).
     */
    watch: `${index}:watch`,
    /**
     * HASH: where the scheduled reconciliation passes stand, shared by every facts process (queues/facts.ts
     * startReconciler): `position` (JSON of journal.ts WatchPosition; absent: the next pass starts at the oldest),
     * `failedInARow` (failed re-reads the last pass ended on), `startedAt` and `endedAt` (Redis ms the last finished pass began and ended),
     * `notBefore` (Redis ms before which no scheduled pass starts: Stripe's Retry-After), `catchUpFrom` (Redis ms
     * the passes read from while the catch-up's window is open; absent: they read the horizon) and `positionWindow`
     * (the `catchUpFrom` the position was read under, '' for none, a space, then the position as `position` holds it:
     * written with every position by this version's scripts, never by a version before, so while a window is open the
     * passes go on only from a position one of its passes wrote, and start it over at its oldest effect otherwise).
     * Written only by the holder of reconcileLease: at the end of its pass (end-reconcile-pass-2.lua, which closes the
     * window once a pass read through to the last effect), and by a catch-up as it takes the lease
     * (take-reconcile-lease-2.lua, which opens the window back to the horizon as of the last pass, or to the start of
     * a window open when further back, or to the position when that lies before both, and starts the passes over at
     * its oldest effect).
     */
    reconcileCursor: `${index}:reconcile-cursor`,
    /**
     * STRING: a random token of the process running a scheduled reconciliation pass now, with a TTL it renews while
     * the pass runs (take-reconcile-lease-2.lua): one pass at a time across the deployment, and a holder that died
     * lets the next one in once it lapses.
     */
    reconcileLease: `${index}:reconcile-lease`,
    /** HASH approval id -> partition. */
    approvalPartitions: `${index}:approvals`,
    /**
     * STRING: a random id the first process of this deployment wrote (SET NX). Each process reads it at start and its
     * durability monitor reads it again at every check: gone or changed means Redis lost its data under the running
     * process (redis/durability.ts holdDeploymentMarker).
     */
    deployment: `${prefix}${DEPLOYMENT_MARKER_TAIL}`,
    /**
     * SET of kids: the keys this deployment signs with, the first process's and each one rotated to
     * (enter-deployment-2.lua). A process signing with none of them, not holding the newest as retired, is refused at
     * start.
     */
    signingKids: `${index}:signing-kids`,
    /**
     * STRING '<kid>|<count>': the kid this deployment rotated to last, or its first, and how many kids it had then
     * (enter-deployment-2.lua; a count that no longer matches: an earlier release rotated since).
     */
    signingKidNewest: `${index}:signing-kid-newest`,
    /**
     * STRING: the currency this deployment gives credits in (INTERLOCK_CREDIT_CURRENCY), as the last process started
     * with it had it: its first process writes it, and one started with another writes its own and warns, naming both
     * (redis/durability.ts recordCreditCurrency). Never refuses a start: a change of currency is allowed.
     */
    creditCurrency: `${index}:credit-currency`,
    /** HASH alert id -> alert JSON (redis/alerts.ts). */
    alerts: `${index}:alerts`,
    /** ZSET alert id -> when it was raised. */
    alertsByTime: `${index}:alerts-by-time`,
    /**
     * ZSET alert id -> when it was raised: the alerts nobody has resolved, kept by set-alert-3.lua with every write of
     * an alert. Alerts last written before this index existed are added by a one-time backfill (index-open-alerts-3.lua)
     * that the alerts store runs before it first reads the index.
     */
    alertsOpen: `${index}:alerts-open`,
    /** STRING, set by the backfill's last step: the open-alerts index holds every open alert. */
    alertsOpenComplete: `${index}:alerts-open-complete`,
    /** HASH inbox item id -> the item as it opened (JSON, written once; redis/inbox.ts). */
    inbox: `${index}:inbox`,
    /** ZSET item id -> when it opened: the items nobody has acted on yet. */
    inboxOpen: `${index}:inbox-open`,
    /** HASH item id -> who closed it, how and when (JSON, written once, after the RESOLVED entry). */
    inboxClosed: `${index}:inbox-closed`,
    /** ZSET item id -> when it closed. */
    inboxClosedByTime: `${index}:inbox-closed-by-time`,
    /**
     * SET: the open case_failed item ids of one case (named by the case's effect id, core/inbox.ts caseEffectIdOf),
     * kept by the scripts that open and close those items (open-case-failure-5, close-case-failures-4), so a case's
     * items are found without reading the whole open index. On the index's tag, with the items it names.
     */
    inboxCaseFailures: (caseEffectId: string) => `${index}:inbox-case-failures:${assertEffectId(caseEffectId)}`,
    /**
     * HASH `<item id> <approver> <approval id>` -> a re-approval on its way (JSON: who, the note, the premises read for
     * it, when), written before the item is closed and deleted once the new request's proposal is recorded. One left
     * behind by a process that died in between is proposed by the recovery pass (inbox/actions.ts repairReapprovals).
     */
    reapprovalsPending: `${index}:reapprovals-pending`,
    /**
     * ZSET case id -> Redis time a submission began storing and queuing it: the cases' outbox. Added before the case is
     * stored, removed once its decisions job is added (or it needs none); one left behind by a process that stopped or
     * lost Redis in between is queued by the recovery pass (queues/decisions.ts requeueUnqueued).
     */
    casesUnqueued: `${index}:cases-unqueued`,
    /**
     * HASH approval id -> JSON of the options the support API kept beside an approval's terms (four eyes, the token
     * that granted it), for approvals granted before the options moved into the approval's own hash (its `options`
     * field, written by the grant that creates it). No longer written; read for those approvals.
     */
    approvalOptions: `${index}:approval-options`,
    /**
     * STRING with a TTL (queues/facts.ts EVENT_MARKER_MS, 7 days): the facts job of this Stripe event was queued. Set
     * (NX) only once the job is stored, so a delivery that finds it is a duplicate even after the job itself was
     * removed (completed facts jobs are kept up to a count, which a busy account passes within Stripe's 3 days of
     * redeliveries).
     */
    eventQueued: (eventId: string) => {
      if (!EVENT_ID.test(eventId)) throw new Error(`"${eventId.slice(0, 80)}" is not a Stripe event id (1-255 letters, digits or _ . -).`);
      return `${index}:event-queued:${eventId}`;
    },
    /**
     * STRING, kept a few seconds: what a readiness check writes to learn whether Redis takes a write now (it answers
     * PING and reads while it refuses every write: OOM, MISCONF, READONLY). One per process (its default worker id,
     * `host:pid`), written again by each probe; its value is never read. On the index's tag: in a cluster, the master
     * every binding writes to.
     */
    readyzProbe: (processId: string) => {
      if (!WORKER_ID.test(processId)) throw new Error(`Process id "${processId.slice(0, 80)}" may only use letters, digits and _ : . @ -.`);
      return `${index}:readyz-probe:${processId}`;
    },
    heartbeat: (workerId: string) => {
      if (!WORKER_ID.test(workerId)) throw new Error(`Worker id "${workerId.slice(0, 80)}" may only use letters, digits and _ : . @ -.`);
      return `${prefix}:heartbeat:${workerId}`;
    },
    /** HASH: the effect's chain head, payload binding, claim and flags. */
    state: (partition: string, effectId: string) => `${tagged(partition)}:state:${assertEffectId(effectId)}`,
    /** STRING: the effect's entries in their stored form (entries.ts), one per line. */
    entries: (partition: string, effectId: string) => `${tagged(partition)}:entries:${assertEffectId(effectId)}`,
    /** HASH: the approval's terms, revoked flag and running totals (reserved cents, uses). */
    approval: (partition: string, approvalId: string) => `${tagged(partition)}:approval:${assertApprovalId(approvalId)}`,
    /** SET: effects dispatched under the approval and not yet settled; a revoke answers them. */
    approvalOpen: (partition: string, approvalId: string) => `${tagged(partition)}:approval-open:${assertApprovalId(approvalId)}`,
    /**
     * STRING: one support case as JSON (src/core/cases.ts CaseRecord): what was submitted, written once (SET NX),
     * and where its decision stands, updated by the decisions worker. The case id follows the fixed family word.
     */
    case: (caseId: string) => {
      if (!CASE_ID.test(caseId)) throw new Error(`"${caseId.slice(0, 80)}" is not a case id (1-200 letters, digits or _ . : # -).`);
      return `${prefix}:case:${caseId}`;
    },
    /**
     * HASH: cents the gate has moved or has in flight on the subject, and its optional cap; `e:<effect id>` for each
     * effect committed on it; `factAt`, the Redis time of the last payment fact (a dispute event, or a refund fact for an
     * effect still in flight, a customer's deletion) that came for it (note-fact-1.lua, note-deletion-2.lua), which
     * makes every later COMMITTED or AMBIGUOUS on it re-read its facts (settle-5.lua); what is sent only once on it, with
     * the effect holding it (`incident:<id>`, and `refunds` for a refund decided on the payment's other refunds) and
     * `refunds:freed`, when such a refund last let go of it (lib.lua propose_effect).
     */
    subject: (partition: string) => `${tagged(partition)}:subject`,
    /**
     * STRING: the first `customer.deleted` applied for a customer subject (JSON of src/facts/apply.ts KeptDeletion),
     * written once (note-deletion-2.lua, with the subject's `factAt` mark) and kept for good: Stripe deletes a customer
     * once and never undeletes it, and a credit on it may commit (or its landing be learned) long after the event, when
     * Stripe can no longer show the balance the event carried. Every re-read of a credit on the subject folds it in
     * (src/facts/apply.ts foldDeletion).
     */
    customerDeletion: (partition: string) => `${tagged(partition)}:customer-deletion`,
    /**
     * HASH: the parts of the kept deletion's balance given out to the customer's credits (share-deletion-1.lua), beside
     * it: field <balance transaction id>, the part its `customer_deleted` fact carries (cents of credit, given once and
     * for good, so every process and every retry records the same fact), and `:given`, their sum, never more than the
     * balance held. Kept for good, as the deletion is.
     */
    customerDeletionParts: (partition: string) => `${tagged(partition)}:customer-deletion-parts`,
    /** STRING, kept a minute: replicaMark on the master serving the partition's tag (a cluster's own master of its effects). */
    replicaMarkOf: (partition: string) => `${tagged(partition)}:replica-mark`,
  };
}

/**
 * Every BullMQ queue, from this one module too. BullMQ keeps a queue's keys under `<prefix>:<name>`; its prefix
 * is hash-tagged, so each queue lives in one Redis Cluster slot as BullMQ requires.
 */
export function queueNames(prefix = 'interlock') {
  return {
    /** BullMQ's key prefix for every queue of this deployment. */
    prefix: `{${prefix}-queues}`,
    /** Gated effects to send: job id = effect id, so a second enqueue of one effect is a no-op. */
    effects: 'effects',
    /** Recovery passes, each a delayed job at the instant the last pass said more can be done. */
    recovery: 'recovery',
    /** Verified Stripe events to append as post-send facts: job id = Stripe event id. */
    facts: 'facts',
    /** Support cases for the decider: job id derived from the case id, so a re-submitted case is queued once. */
    decisions: 'decisions',
  } as const;
}

export type QueueNames = ReturnType<typeof queueNames>;
