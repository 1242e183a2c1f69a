// The public entry of the project: what queues/, webhooks/, scenarios/ and the CLI use, named exports only.
// Wiring comes in two steps: openStores(config) builds what every process needs to read and manage effects (the one
// Redis client, keys, journal, approvals, the signing key) and sends nothing; startSender(stores, target) adds what
// a process needs to send (durability check and monitor, heartbeat, send watchdog, the gate).
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { ConfigError, configProblems, liveKeyProblem, loadConfig, redisDatabaseOf, type Config } from './config.js';
import { createCreditTarget, createFactsReader, createRefundTarget, createStripeClient, type StripeClient } from './stripe/index.js';
import { targetByKind } from './targets/by-kind.js';
import { withCrashAt } from './targets/crash-injection.js';
import { signingKeyProblem, type PublicKeySet, type SigningKey } from './core/signing.js';
import type { Telemetry } from 'bullmq';
import type { Actor, Entry } from './core/entries.js';
import type { Outcome } from './core/outcomes.js';
import { recordedProposal, refusalOfLatest } from './core/recorded.js';
import type { Proposal } from './core/proposal.js';
import { currentOutcome } from './core/verify.js';
import { approvalProblems } from './core/approval.js';
import { factsOfEffect, type Effect } from './core/effects.js';
import { currencyCode } from './core/money-text.js';
import type { Target } from './core/target.js';
import { createGate, type Gate, type GateEvents } from './gate/gate.js';
import { createRecall, createRecorder, type Recall, type Recorder } from './gate/record.js';
import { createFactsApplier, type FactsApplier, type StripeReader } from './facts/apply.js';
import { createSendWatchdog, watchdogProblem, type SendWatchdog } from './gate/send-watchdog.js';
import { loadOrCreateSigningKey, retiredKeysFileExposure, verifyingKeys } from './keys/key-store.js';
import { createThreadSigner } from './keys/signer.js';
import { createLogger, limitedErrorLog, logIntervalOver, REPEATED_ERROR_LOG_MS } from './log.js';
import { hostClockWarning, watchHostClock } from './redis/clock.js';
import { createCases, type Cases } from './redis/cases.js';
import { alertIdOf, createAlerts, FACTS_RESOLVER, type Alert, type Alerts } from './redis/alerts.js';
import { createInbox, type Inbox, type InboxItem } from './redis/inbox.js';
import { ALLOWED_ACTIONS, exposureDisputesDecided, inboxItemId, itemActions, type InboxItemDraft } from './core/inbox.js';
import { currencyOfEffectOrCredit } from './core/effect-currency.js';
import type { Json, JsonObject } from './core/json.js';
import type { PremiseChange } from './core/entries.js';
import { InterlockError } from './core/errors.js';
import { compatibilityLookAlikes, latinLookAlikes, UPRIGHT_STROKE, uprightStrokes } from './core/text.js';
import { createRedisApprovals, type Approvals } from './redis/approvals.js';
import { closeConnection, createQueueConnection, createRedisClient, foreignReply, notRedisProtocol, otherDatabase, type RedisClient } from './redis/client.js';
import { createDeploymentKeys, createDurabilityMonitor, enterDeployment, holdDeploymentMarker, inspectDurability, otherDeploymentsOn, recordCreditCurrency, redisFullOr, requireDurability, warnUnboundedMemory, type Durability, type DurabilityMonitor } from './redis/durability.js';
import { createHeartbeat, WorkerSupersededError, type Heartbeat } from './redis/heartbeat.js';
import { createRedisJournal, type Journal, type ReconcileCursor, type ReconcileTurn, type WatchPosition } from './redis/journal.js';
export { entriesOfStored, LONGEST_RECONCILE_SINCE_MS, unhashedEntriesOfStored } from './redis/journal.js';
import { createKeys, queueNames, type Keys, type QueueNames } from './redis/keys.js';
import { membersAfter } from './redis/newest-first.js';

export { assertMetricsAddrFree, loadConfig, ConfigError, DEFAULT_DATA_DIR, dataDirOf, flagValue, STOP_MARGIN_MS, API_LIMIT_VARIABLES, unknownSettings, unknownSettingSentence, type Config, type UnknownSetting } from './config.js';
export { createLogger, exitOnCrash, limitedErrorLog, logIntervalOver, REPEATED_ERROR_LOG_MS } from './log.js';
export { HOST_CLOCK_WARN_MS, hostClockOffset, hostClockWarning, hostClockWords, type HostClockOffset } from './redis/clock.js';
export { createFileOnce, makeDirectory, readRegularFile, writeFileWhole, type WriteCall } from './files.js';
export { createCoalescer, type Coalescer } from './coalesce.js';
export { closeConnection, isRedisOutage, isRedisTimeout, RedisReplyLost, RedisTimeout, redisTurnedAway, withinRedisTimeout } from './redis/client.js';
export { InterlockError, ERROR_REGISTRY, errorCode, isRetryable, errorMessage, slowDownOf, type ErrorCode, type FieldProblem, type SlowDown } from './core/errors.js';
export { explainOutcome, explainRecorded, isRefusal, SUBMIT_OUTCOMES, RECOVERY_OUTCOMES, type Outcome } from './core/outcomes.js';
export { parseProposal, ProposalError, type Proposal } from './core/proposal.js';
export { parseEffect, describeEffect, kindOfSubject, EFFECT_KINDS, type Effect, type EffectKind } from './core/effects.js';
// The rules the support API's request schemas are built from, so a body and the proposal it becomes agree.
export { refundEffectSchema, creditEffectSchema, MAX_AMOUNT_CENTS } from './core/effects.js';
export { firstByteNotUtf8, identifier, freeText, personName, recordedIdentifier, requestIdentifier, showable, unseenCharacter } from './core/text.js';
export { APPROVAL_ID, newApprovalIdProblem, PROPOSAL_LIMITS, RESERVED_REQUEST_PREFIXES, reservedRequestProblem } from './core/proposal.js';
export { SUBJECT as APPROVAL_SCOPE, GRANT_LIMITS, approvalRoom, type SubjectCap } from './core/approval.js';
export { zodFieldProblems } from './core/errors.js';
export type { FinalMoney, Exposure } from './core/final-money.js';
export { moneyAfterSend } from './core/final-money.js';
export type { ApprovalSnapshot } from './core/entries.js';
export type { Adoption, DeploymentKeys, Durability } from './redis/durability.js';
export type { ReconcileCursor, ReconcileTurn, WatchPosition } from './redis/journal.js';
export { effectIdFor, isEffectId } from './core/effect-id.js';
export { verify, outcomeOf, outcomeReason, currentOutcome, entrySignatures, type Verification, type EntrySignature } from './core/verify.js';
export { verifyReceiptText, parseReceiptText, type ReceiptText } from './core/receipt-text.js';
export { publicKeySet, publicKeyFromPem, publicKeysFromPem, signingKeyFromPem, type PublicKeySet, type SigningKey } from './core/signing.js';
export { publicKeyPem, tokensFileExposure, type KeyExposure } from './keys/key-store.js';
export { Rejected, SendFenced, ProcessCrash, type Target, type SendContext, type ReadContext } from './core/target.js';
export { createMemoryTarget, type MemoryTarget, type Fault } from './targets/memory-target.js';
export { recoverUntilSettled, startRecoveryLoop } from './gate/recovery-loop.js';
export { PremiseReadError, type Gate, type GateEvents, type GateResult, type RecoveryReport } from './gate/gate.js';
export type { Approvals } from './redis/approvals.js';
export { ALERT_CURSOR, ALERT_KINDS, type Alert, type AlertKind, type AlertPage, type Alerts } from './redis/alerts.js';
export { alertsFor, type AlertDraft } from './core/alert-rules.js';
export { currencyCode, moneyText } from './core/money-text.js';
export { currencyOfEffect, currencyOfEffectOrCredit } from './core/effect-currency.js';
export { redactSecrets, redactDeep, shownSetting, shownUrl } from './core/redact.js';
export { membersNamedTwice, namesSomeMemberTwice } from './core/json-text.js';
export { MAX_JSON_DEPTH, nestsDeeperThan } from './core/json.js';
export type { ApprovalTerms } from './core/approval.js';
export type { Entry } from './core/entries.js';
export type { Receipt } from './core/receipt.js';
export type { QueueNames } from './redis/keys.js';
export type { OnlyEntry, Recall, Recalled, Recorded, Recorder } from './gate/record.js';
export { CONFLICT_EVIDENCE_MAX, TooManyProposals } from './gate/record.js';
export { FACT_EVENTS, REFUND_EVENTS, DISPUTE_EVENTS, type FactsApplier, type StripeReader, type StripeEvent, type RefundFact, type DisputeFact, type Applied } from './facts/apply.js';
export type { WebhookVerdict } from './core/post-send.js';
export { closesDispatch, isMoneyPremise, openDispatch } from './core/decisions.js';
export { readApiBase, stripeSettingOf } from './stripe/settings.js';
import { readStripeKey } from './stripe/settings.js';
export { createStripeClient, createRefundTarget, createCreditTarget, createFactsReader, createWebhookVerifier, isLocalApiBase, registerLocalWebhook, removeLeftWebhooks, signWebhookBody, type LeftWebhooks, type LocalWebhook, REFUND_FACTS, CREDIT_FACTS, LONGEST_RETRY_AFTER_MS, StripeMisconfigured, StripeUnavailable, type StripeClient } from './stripe/index.js';
export { CRASH_POINTS, isCrashPoint, type CrashPoint } from './targets/crash-injection.js';
export { BLANK_STORY, CASE_ID, CASE_STATES, FINAL_CASE_STATES, STORY_MAX_CHARS, caseScope, caseSubmissionOf, isFinalCase, mayReopenCase, parseCaseSubmission, type CaseDecision, type CaseError, type CaseInput, type CaseRecord, type CaseState, type CaseStatus, type CaseSubmission } from './core/cases.js';
export type { CaseCreated, CaseStatusWritten, Cases } from './redis/cases.js';
// The decider (src/decider): the Anthropic decider with ANTHROPIC_API_KEY, the offline rules decider without it,
// and the check of a decision against its approval that every caller makes before proposing anything.
export {
  checkDecision,
  createDecider,
  DEFAULT_MODEL,
  DeciderError,
  loadDeciderConfig,
  MODEL_DEVIATED,
  proposalDecision,
  proposalFields,
  requestIdOf,
  RULES_MODEL,
  type CaseApproval,
  type Decider,
  type DeciderConfig,
  type Decision,
  type DecisionCase,
  type DecisionCheck,
  type LeftBy,
} from './decider/decider.js';
export { INBOX_KINDS, OPERATOR_ACTIONS, ALLOWED_ACTIONS, BLANK_NOTE, FACTS_SHOWN, isVisibleNote, parseInboxItemId, reapprovalRequestId, caseFailureItem, caseFailureItemId, type CaseFailure, type InboxKind, type InboxItemDraft } from './core/inbox.js';
export { INBOX_CURSOR, CASE_WORKER, type Inbox, type InboxItem, type InboxClosure, type PendingReapproval, type InboxFilter, type InboxPage, type InboxStatus } from './redis/inbox.js';
export { createInboxActions, repairReapprovals, type InboxActions, type FactsNow, type FourEyesCheck, type ProposeNow, type ReapprovalRepair, type Reapproved } from './inbox/actions.js';
export type { Actor, OperatorAction, Resolution } from './core/entries.js';

/** The Stripe side of a process: one client, the target that moves each effect kind, and the facts worker's reader. */
export type StripeSide = { client: StripeClient; target: Target; reader: StripeReader };

/**
 * The mode of the configured Stripe key, as the client reads it (the sandbox's keys are test keys), or null when no
 * usable key is set: a webhook of the other mode concerns no money this service moves (createWebhookVerifier's mode).
 */
export function stripeKeyMode(config: Pick<Config, 'stripeSecretKey'>): 'test' | 'live' | null {
  if (config.stripeSecretKey === null) return null;
  const read = readStripeKey(config.stripeSecretKey, true);
  return 'problem' in read ? null : read.mode;
}

/**
 * The Stripe client and targets from config (STRIPE_SECRET_KEY, STRIPE_API_BASE; live keys only with
 * INTERLOCK_ALLOW_LIVE=1). With INTERLOCK_CRASH_AT the target SIGKILLs this process at that point of its next send;
 * that is honoured only with a test key (the sandbox takes test keys only).
 */
export function stripeSide(config: Config, options: { kill?: () => void } = {}): StripeSide {
  if (config.stripeSecretKey === null) throw new ConfigError('STRIPE_SECRET_KEY is not set: set a test key (sk_test_… or rk_test_…), or run `npm start`, which starts the sandbox and sets one for it.');
  const client = createStripeClient({ secretKey: config.stripeSecretKey, apiBase: config.stripeApiBase, allowLive: config.allowLive });
  const refunds = createRefundTarget(client, { sendTimeoutMs: config.sendTimeoutMs });
  const credits = createCreditTarget(client, { sendTimeoutMs: config.sendTimeoutMs, currency: config.creditCurrency });
  let target = targetByKind('stripe', [refunds, credits]);
  if (config.crashAt !== null) {
    if (client.mode !== 'test') throw new ConfigError('INTERLOCK_CRASH_AT is honoured only with a test key.');
    target = withCrashAt(target, config.crashAt, { batch: config.crashBatch, ...(options.kill === undefined ? {} : { kill: options.kill }) });
  }
  return { client, target, reader: createFactsReader(client) };
}

/** What the journal lets readers do: effects, chains and receipts, never its write scripts. */
export type JournalReader = Pick<Journal, 'partitionOf' | 'readState' | 'entries' | 'checkedEntries' | 'storedChain' | 'receipt' | 'receipts' | 'serverTime' | 'openDispatches' | 'openEffects' | 'onceHolder'>;

export type Stores = {
  config: Config;
  logger: Logger;
  keys: Keys;
  queues: QueueNames;
  /**
   * What every BullMQ queue and worker of this deployment is built with: the key prefix and, when INTERLOCK_OTEL is
   * on, the OpenTelemetry hook (spans for adds and processing, to whatever tracer provider the process registers).
   */
  bullmq: { prefix: string; telemetry?: Telemetry };
  journal: JournalReader;
  approvals: Approvals;
  alerts: Alerts;
  /** Support cases on their way to a decision (POST /v1/cases, `interlock case`). */
  cases: Cases;
  /** The escalation inbox: items people must act on, and their actions (redis/inbox.ts). */
  inbox: Inbox;
  signingKey: SigningKey;
  /**
   * The public keys receipts of this service verify with, by key id: the signing key's first, then the retired ones
   * (INTERLOCK_RETIRED_PUBLIC_KEYS_FILE), so a receipt signed before a rotation still verifies.
   */
  publicKeys: PublicKeySet;
  /** A new connection for BullMQ (it needs connections of its own, with no request retry limit). */
  queueConnection(): RedisClient;
  /** Whether Redis answers now (for readiness). */
  ping(): Promise<boolean>;
  /**
   * Writes this process's readiness probe (keys.readyzProbe, kept READYZ_PROBE_MS): resolves once Redis took it, and
   * rejects with Redis's own error when it did not (redisTurnedAway names the refusals: OOM, MISCONF, READONLY…).
   * Redis answers PING and reads while it turns every write away, so only a write tells.
   */
  probeWrite(): Promise<void>;
  /**
   * Null when Redis answers now; else why not, in the words of the failure itself (a refused connection, a password
   * Redis refused, a TLS certificate Node does not trust), so whoever reports it can say what happened.
   */
  unreachable(): Promise<string | null>;
  /** `withinMs`: the most the connection's QUIT may take before it is dropped (closeConnection); a command gives it. */
  close(how?: { withinMs?: number }): Promise<void>;
};

/** `assertOpen` throws once the stores' close() began (not_available, saying so). */
type StoreInternals = { redis: RedisClient; fullJournal: Journal; ownsRedis: boolean; assertOpen(): void };
const internals = new WeakMap<Stores, StoreInternals>();

/** How long a readiness probe's key is kept: past the next probe (compose: every 5 s), so one key per process lives on. */
const READYZ_PROBE_MS = 10_000;

const STORES_CLOSED = 'these stores were closed (close() was called); open new ones with openStores';

const AsyncFunction = (async () => undefined).constructor;
const AsyncGeneratorFunction = async function* () {}.constructor;

/**
 * `store` as the stores hand it out: each of its asynchronous methods first asks `assertOpen`, so a call made after
 * close() is refused with a registry code and words that say what to do, instead of the Redis client's "Connection
 * is closed.". Everything else reads and writes through to `store` itself, which the stores' own parts (the gate,
 * the inbox, the facts) go on using as it is: a method replaced on the one (a test's stand-in) is replaced on both.
 */
function refusingOnceClosed<T extends object>(store: T, assertOpen: () => void): T {
  // One guarded method per method, so reading it twice gives the same function.
  const guarded = new WeakMap<object, unknown>();
  const guard = (member: object): unknown => {
    if (member instanceof AsyncGeneratorFunction) {
      const generator = member as (...args: unknown[]) => AsyncGenerator<unknown>;
      return async function* (this: unknown, ...args: unknown[]) {
        assertOpen();
        return yield* generator.apply(this, args);
      };
    }
    const method = member as (...args: unknown[]) => Promise<unknown>;
    return async function (this: unknown, ...args: unknown[]) {
      assertOpen();
      return method.apply(this, args);
    };
  };
  return new Proxy(store, {
    get(target, name, receiver) {
      const member: unknown = Reflect.get(target, name, receiver);
      // Only async methods are guarded (a store's methods that reach Redis are declared async, so a refusal rejects
      // as a closed connection's error did; a synchronous one keeps throwing only what it threw before).
      if (!(member instanceof AsyncFunction || member instanceof AsyncGeneratorFunction)) return member;
      if (!guarded.has(member)) guarded.set(member, guard(member));
      return guarded.get(member);
    },
  });
}

/** BullMQ's OpenTelemetry hook, loaded only when INTERLOCK_OTEL is on: off, nothing of it is even imported. */
async function otelTelemetry(): Promise<Telemetry> {
  const { BullMQOtel } = await import('bullmq-otel');
  return new BullMQOtel({ tracerName: 'interlock', meterName: 'interlock' });
}

/**
 * This process's worker id when none is configured: `host:pid`. A restarted container (same hostname, pid 1 again)
 * comes back under it, so its new heartbeat nonce says "the same worker restarted" and its claims are taken over at once.
 */
export function defaultWorkerId(): string {
  return `${hostname().replace(/[^A-Za-z0-9_.-]/g, '-')}:${process.pid}`;
}

/** Default worker ids that senders of this process hold now (startSender with no worker id given). */
const defaultIdsHeld = new Set<string>();

/**
 * The worker id for a sender given none: defaultWorkerId() for the first, `host:pid:2`, `:3`… for one started while
 * another sender of this process holds it. Two gates of one process under one id would read each other's live
 * claims as a restarted worker's (another nonce) and take them over and send them again.
 */
function takeDefaultWorkerId(): string {
  const first = defaultWorkerId();
  let id = first;
  for (let n = 2; defaultIdsHeld.has(id); n += 1) id = `${first}:${n}`;
  defaultIdsHeld.add(id);
  return id;
}

function failureOf(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && !error.message.includes(code) ? `${error.message} (${code})` : error.message;
}

/** The configured (or generated) signing key; a key file others can read is used, with a warning naming it. */
function configuredSigningKey(config: Config, logger: Logger): SigningKey {
  const { key, path, exposure } = loadOrCreateSigningKey(config);
  if (exposure !== null) logger.warn({ keyFile: path, mode: exposure.mode }, exposure.message);
  return key;
}

/**
 * The key settings a start would fail on, checked before anything starts (a private redis-server, the embedded
 * sandbox): a configured signing key file that cannot be used, a retired public keys file that cannot be. A key the
 * service generates on first use is left to openStores, which writes it.
 */
export function checkKeySettings(config: Config): void {
  if (config.signingKeyFile !== null) loadOrCreateSigningKey(config);
  if (config.retiredPublicKeysFile !== null) verifyingKeys(null, config.retiredPublicKeysFile);
}

/**
 * The one place a Redis client is built. Sends nothing: the CLI, the HTTP API and the facts worker stop here.
 * `retiredKeysWarned`: the caller said itself that others may write the retired public keys file (a command, in a
 * line on stderr, as it says so of its signing key file), so it is not logged here too.
 */
export async function openStores(config: Config = loadConfig(), options: { logger?: Logger; redis?: RedisClient; signingKey?: SigningKey; failFast?: boolean; retiredKeysWarned?: boolean } = {}): Promise<Stores> {
  // A configuration built by hand is held to loadConfig's shape before any field of it is used.
  const problems = configProblems(config);
  if (problems.length > 0) throw new ConfigError(`The configuration given is not a whole Config: ${problems.join('; ')}. Build it with loadConfig() (the environment and the defaults) and override what differs: { ...loadConfig(), keyPrefix: 'mine' }.`);
  const live = liveKeyProblem(config);
  if (live !== null) throw new ConfigError(live);
  const logger = options.logger ?? createLogger(config.logLevel);
  // What can fail comes first: a key file that cannot be used, or tracing that cannot load, fails the command
  // before a connection exists to hold the process open.
  // A key handed in is held to what a key file gives (signingKeyFromPem): anything else would sign receipts that the
  // service's own public keys call forged, while the money moves.
  const keyProblem = options.signingKey === undefined ? null : signingKeyProblem(options.signingKey);
  if (keyProblem !== null) throw new ConfigError(`The signing key given cannot sign receipts: ${keyProblem}. Build it with signingKeyFromPem(<the private key's PEM text>), or give none and the service uses INTERLOCK_SIGNING_KEY_FILE (or the key in its data directory).`);
  const signingKey = options.signingKey ?? configuredSigningKey(config, logger);
  const publicKeys = verifyingKeys(signingKey, config.retiredPublicKeysFile);
  const retiredExposure = config.retiredPublicKeysFile === null || options.retiredKeysWarned === true ? null : retiredKeysFileExposure(config.retiredPublicKeysFile);
  if (retiredExposure !== null) logger.warn({ retiredKeysFile: config.retiredPublicKeysFile, mode: retiredExposure.mode }, retiredExposure.message);
  const telemetry = config.otel ? await otelTelemetry() : undefined;
  const redis = options.redis ?? createRedisClient(config, { failFast: options.failFast ?? false });
  // A lost connection surfaces as the commands that fail; the client's own error event is noted at most every 10 s
  // (monotonic, as limitedErrorLog's: a wall clock stepped back would hide the notes for as long as the step).
  let lastNoted = -Infinity;
  // The last reason the connection failed: a command that then fails only says the client gave up retrying.
  let connectionError: string | null = null;
  redis.on('ready', () => {
    connectionError = null;
  });
  redis.on('error', (error: unknown) => {
    const reason = failureOf(error);
    // A server that answered in another protocol (an HTTP server on the port) is the reason, whatever follows it: the
    // broken pipe or reset that its closing the connection causes next says less.
    if (connectionError === null || notRedisProtocol(connectionError) === null || notRedisProtocol(reason) !== null) connectionError = reason;
    if (options.failFast) return;
    const at = performance.now();
    if (!logIntervalOver(at, lastNoted, REPEATED_ERROR_LOG_MS)) return;
    lastNoted = at;
    logger.warn({ err: error }, 'Redis connection error; retrying');
  });
  // This host's wall clock, compared with Redis's at every reply that carries Redis's time: warned of, at most once a
  // minute (monotonic), while it is off by more than HOST_CLOCK_WARN_MS (Stripe's webhook deliveries are checked
  // against it).
  const skewWarnedEveryMs = 60_000;
  let lastSkewWarned = -Infinity;
  const stopWatchingHostClock = watchHostClock((offset) => {
    const warning = hostClockWarning(offset);
    const at = performance.now();
    if (warning === null || !logIntervalOver(at, lastSkewWarned, skewWarnedEveryMs)) return;
    lastSkewWarned = at;
    logger.warn({ hostClockOffsetSeconds: Math.round(offset.offsetMs / 1000) }, warning);
  });
  const keys = createKeys(config.keyPrefix);
  const signer = config.signingThread ? createThreadSigner(signingKey) : null;
  const fullJournal = createRedisJournal({ redis, keys, signingKey, ...(signer ? { signer } : {}) });
  const approvals = createRedisApprovals({ redis, keys, minReplicas: config.redisMinReplicas, replicaWaitMs: config.redisWaitMs });
  const queues = queueNames(config.keyPrefix);
  const alerts = createAlerts({ redis, keys, now: () => fullJournal.serverTime() });
  let closed = false;
  const assertOpen = () => {
    // Retryable, as the Redis client's "Connection is closed." was (an outage): a job that meets it in a process
    // shutting down is put back for a process whose stores are open, not failed for good.
    if (closed) throw new InterlockError('not_available', STORES_CLOSED, { retryable: true });
  };
  let closing: Promise<void> | null = null;
  let probeKey: string | null = null;
  async function closeStores(how: { withinMs?: number }): Promise<void> {
    stopWatchingHostClock();
    // Upkeep only while Redis is up (see Sender.close): recovery drops the finished entries otherwise.
    if (redis.status === 'ready') await fullJournal.flushIndex().catch((error: unknown) => logger.warn({ err: error }, 'could not drop finished entries of the open index; recovery will'));
    await signer?.close();
    fullJournal.closeReplicaWaits();
    if (!options.redis) await closeConnection(redis, how);
  }
  const stores: Stores = {
    config,
    logger,
    keys,
    queues,
    bullmq: telemetry === undefined ? { prefix: queues.prefix } : { prefix: queues.prefix, telemetry },
    journal: refusingOnceClosed(fullJournal, assertOpen),
    approvals: refusingOnceClosed(approvals, assertOpen),
    alerts: refusingOnceClosed(alerts, assertOpen),
    cases: refusingOnceClosed(createCases({ redis, keys }), assertOpen),
    inbox: refusingOnceClosed(createInbox({ redis, keys, journal: fullJournal, alerts, creditCurrency: config.creditCurrency }), assertOpen),
    signingKey,
    publicKeys,
    queueConnection: () => createQueueConnection(config),
    async ping() {
      return (await stores.unreachable()) === null;
    },
    async probeWrite() {
      // Named at the first probe: a host name no key can spell fails the check, not the start.
      probeKey ??= keys.readyzProbe(defaultWorkerId());
      await redis.set(probeKey, '1', 'PX', READYZ_PROBE_MS);
    },
    async unreachable() {
      try {
        const answer = await redis.ping();
        if (answer !== 'PONG') return `PING answered ${String(answer)}`;
        return await otherDatabase(redis, redisDatabaseOf(config.redisUrl));
      } catch (error) {
        const reason = connectionError ?? failureOf(error);
        // A broken pipe or a reset may be all the client saw of a server that answered in another protocol: ask it once.
        const cut = /EPIPE|ECONNRESET|Connection is closed/.test(reason) && notRedisProtocol(reason) === null;
        return cut ? ((await foreignReply(config.redisUrl)) ?? reason) : reason;
      }
    },
    // Closing twice closes once; every call after the first close() began is refused (assertOpen).
    close(how = {}) {
      closed = true;
      closing ??= closeStores(how);
      return closing;
    },
  };
  internals.set(stores, { redis, fullJournal, ownsRedis: options.redis === undefined, assertOpen });
  // One reading of Redis's time as the stores open, so this host's clock is compared with it at once (a warning past
  // HOST_CLOCK_WARN_MS): a webhooks-only process reads Redis's time nowhere else before a /metrics scrape, and its
  // stale_timestamp refusals could not say the offset. Not awaited; a Redis that does not answer is said elsewhere.
  if (options.failFast !== true) fullJournal.serverTime().catch(() => undefined);
  return stores;
}

export type Sender = {
  gate: Gate;
  heartbeat: Heartbeat;
  /** The reading at start. */
  durability: Durability;
  /** Re-checks durability while running; `assertDurable()` throws while Redis is not durable (unless opted out). */
  durabilityMonitor: DurabilityMonitor;
  close(options?: { clearHeartbeat?: boolean }): Promise<void>;
};

/**
 * Joins the stores' deployment with their signing key (redis/durability.ts enterDeployment): a process that would sign
 * entries there with another deployment's key is refused before it recovers, records or signs anything.
 */
export async function enterWithKey(stores: Stores, mode: 'join' | 'check' = 'join'): Promise<void> {
  const retired = [...stores.publicKeys.keys()].filter((kid) => kid !== stores.signingKey.kid);
  const recorded = await enterDeployment(innerOf(stores).redis, { key: stores.keys.signingKids, newestKey: stores.keys.signingKidNewest, keyPrefix: stores.config.keyPrefix }, stores.signingKey.kid, retired, mode);
  if (mode === 'check') return;
  if (recorded === 'added') stores.logger.info({ kid: stores.signingKey.kid, retiredKids: retired }, 'signing key rotated: this deployment now also signs with this key');
  if (recorded === 'unrecorded') stores.logger.warn({ kid: stores.signingKey.kid, key: stores.keys.signingKids }, `Redis is full, so this process's signing key ${stores.signingKey.kid} was not recorded as the deployment's (the process starts all the same; a later start records it). Free space or raise maxmemory (README "Retention").`);
  // Once a process: serve enters before its roles start, then again in requireDurableIntake or startSender.
  if (settingsCompared.has(stores)) return;
  settingsCompared.add(stores);
  await warnOfSettingsApart(stores, recorded);
}

/** The stores whose settings were compared with their deployment's (enterWithKey). */
const settingsCompared = new WeakSet<Stores>();

/**
 * Warns of what a process set apart from the rest of its deployment would do wrong without a word, none of which
 * refuses its start: a key the deployment signed with that it cannot verify (every receipt that key signed reads as
 * invalid here), credits given in another currency (each one is refused as stale by whichever side did not decide it),
 * and, as the first process on its key prefix, the other deployments' prefixes on the same Redis (a mistyped
 * INTERLOCK_KEY_PREFIX starts an empty deployment that none of its services share).
 */
async function warnOfSettingsApart(stores: Stores, recorded: Awaited<ReturnType<typeof enterDeployment>>): Promise<void> {
  const { config, keys, logger } = stores;
  const { redis } = innerOf(stores);
  const deployment = await deploymentKeysOf(stores).read();
  for (const kid of deployment.kids.filter((one) => !stores.publicKeys.has(one))) {
    const advice =
      kid === deployment.newest
        ? `It is the key the deployment rotated to last: give this process that key (INTERLOCK_SIGNING_KEY_FILE) and the retired keys file the others have (INTERLOCK_RETIRED_PUBLIC_KEYS_FILE), as step 3 of README "Rotating the signing key" says, and restart it.`
        : `Set INTERLOCK_RETIRED_PUBLIC_KEYS_FILE to the file holding its public half (the retired keys file the deployment's other processes have; README "Rotating the signing key", step 3) and restart this process. If the deployment stopped trusting that key on purpose, it is dropped from the record with \`npx interlock keys adopt\` (step 6).`;
    logger.warn(
      { kid, verifiesWith: [...stores.publicKeys.keys()], key: keys.signingKids },
      `The deployment on this Redis with key prefix ${config.keyPrefix} signed entries with ${kid}, a key it recorded but this process was not given: every receipt that key signed reads as invalid here ("signed with an unknown key": receipt_valid false in the API, "Receipt does NOT verify" on the page, effect show), and GET /v1/keys does not list it. ${advice}`,
    );
  }
  const currency = await recordCreditCurrency(redis, keys.creditCurrency, config.creditCurrency);
  if (currency !== null) {
    const currencyBefore = currency.before;
    const recordedNow = currency.recorded
      ? `This process recorded ${config.creditCurrency} as the deployment's currency.`
      : `Redis is full (it refused the write, OOM), so ${config.creditCurrency} was not recorded as the deployment's currency: it still reads ${currencyBefore}, and each process started on ${config.creditCurrency} is warned again until one records it. Free space or raise maxmemory (README "Retention").`;
    logger.warn(
      { creditCurrency: config.creditCurrency, deploymentCreditCurrency: currencyBefore, recorded: currency.recorded, key: keys.creditCurrency },
      `This process gives credits in ${config.creditCurrency} (INTERLOCK_CREDIT_CURRENCY), but the deployment on this Redis with key prefix ${config.keyPrefix} gave them in ${currencyBefore} (the setting of its process started last before this one): a credit decided in one currency is refused by a worker set to the other (REFUSED:stale_premise), so set INTERLOCK_CREDIT_CURRENCY to the same value on every process (api, worker, and the shells that run \`interlock credit\`). If ${config.creditCurrency} is a mistake, set ${currencyBefore} on this process and restart it; if the change to ${config.creditCurrency} is meant, restart every process with it: credits decided in ${currencyBefore} and not sent yet will be refused as stale and must be decided again in ${config.creditCurrency}. ${recordedNow}`,
    );
  }
  // Only a serve process that begins a deployment: serve enters before it holds the deployment marker, so none there
  // yet means nothing ever started on this prefix (a marker beside a first key: a deployment older than the key
  // record). A command (`recover`) or an embedding's startSender holds the marker first, and is not warned.
  if (recorded !== 'first' || (await redis.exists(keys.deployment)) === 1) return;
  const others = await otherDeploymentsOn(redis, config.keyPrefix);
  if (others === null || others.prefixes.length === 0) return;
  const named = others.prefixes.slice(0, 10);
  const more = others.prefixes.length > named.length ? ` and ${others.prefixes.length - named.length} more` : '';
  logger.warn(
    { keyPrefix: config.keyPrefix, otherPrefixes: named, everyKeyLooked: others.complete, key: keys.deployment },
    `This process starts a new, empty deployment on key prefix ${config.keyPrefix} (INTERLOCK_KEY_PREFIX): nothing was recorded under it before, while this Redis holds the deployments of key prefix ${named.join(', ')}${more}. If this process belongs to one of those, its INTERLOCK_KEY_PREFIX is mistyped and it works alone: proposals made through that deployment's API are never sent by it, and nothing it records is seen there. Stop it, give it its deployment's INTERLOCK_KEY_PREFIX and start it again; if a new deployment beside them is meant, nothing needs doing.`,
  );
}

/** The stores' deployment's record of its signing keys (redis/durability.ts createDeploymentKeys), for `interlock keys adopt`. */
export function deploymentKeysOf(stores: Stores): ReturnType<typeof createDeploymentKeys> {
  return createDeploymentKeys(innerOf(stores).redis, { key: stores.keys.signingKids, newestKey: stores.keys.signingKidNewest });
}

/**
 * The durability check of a process that takes events or requests and answers that they are stored (the webhook
 * route's 200, the support API's 202) without sending anything itself: a worker in the same process checks at its
 * start (startSender) and goes on checking; without one, this refuses a Redis that can lose what it acknowledged, as
 * the worker would, and returns the monitor that goes on checking every INTERLOCK_DURABILITY_CHECK_MS, started (the
 * caller stops it), so the route and the API can refuse what they would answer as stored once Redis stops keeping it.
 */
export async function requireDurableIntake(stores: Stores): Promise<DurabilityMonitor> {
  const { redis } = innerOf(stores);
  const durability = await requireDurability(redis, stores.config.unsafeDurability, 'intake');
  if (durability.optedOut) stores.logger.warn({ durability }, `Redis is not durable (${durability.problems.join('; ')}); taking webhooks and requests anyway because INTERLOCK_UNSAFE_DURABILITY is set`);
  else stores.logger.info({ appendonly: durability.appendonly, appendfsync: durability.appendfsync, maxmemoryPolicy: durability.maxmemoryPolicy }, 'Redis durability checked');
  const marker = await holdDeploymentMarker(redis, stores.keys.deployment);
  await enterWithKey(stores);
  const started = createDurabilityMonitor({ redis, optOut: stores.config.unsafeDurability, intervalMs: stores.config.durabilityCheckMs, logger: stores.logger, initial: durability, marker });
  // The producers' bindings check the marker too (journal.ts holdMarker): a loss one finds is this monitor's at once.
  const releaseMarker = innerOf(stores).fullJournal.holdMarker(marker.held, (found) => started.recordLoss(found));
  const monitor: DurabilityMonitor = {
    ...started,
    async stop() {
      releaseMarker();
      await started.stop();
    },
  };
  watchedBy(stores, monitor);
  monitor.start();
  return monitor;
}

/**
 * Warns when a server of the stores' Redis has no memory limit (maxmemory 0), so noeviction never answers OOM and
 * Redis grows until it is killed; for a long-running service (serve), not for each one-off command.
 */
export async function warnIfUnboundedMemory(stores: Stores): Promise<void> {
  await warnUnboundedMemory(innerOf(stores).redis, stores.logger);
}

/**
 * What a closed sender answers a call that would send (DESIGN §7: its close clears the heartbeat, so every other
 * worker takes its claims for a dead sender's). Retryable, as worker_superseded is: an effect job that meets it is put
 * back for a running sender. A dispatch the call had made stays open, its claim given back unsent (holdBack), and a
 * running sender's recovery sends it.
 */
function senderClosed(): InterlockError {
  return new InterlockError('not_available', 'this sender was closed; submit through a running sender', { retryable: true });
}

/** Whether every one of `calls` ended (resolved or rejected) within `ms`; false when the time ran out first. */
async function endedWithin(calls: Iterable<Promise<unknown>>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([Promise.allSettled(calls).then(() => true), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Everything a process needs to send through the gate: it refuses a Redis that can lose what it acknowledged. */
/**
 * `facts`: re-reads the facts of an effect settled after a payment fact came for its subject while it was in flight
 * (src/gate/settle.ts); without it, such a fact reaches the receipt at the reconciler's next pass.
 */
export async function startSender(stores: Stores, target: Target, options: { workerId?: string; events?: GateEvents; facts?: FactsApplier } = {}): Promise<Sender> {
  const inner = internals.get(stores);
  if (!inner) throw new Error('startSender needs stores made by openStores');
  const { config, logger, keys } = stores;
  const { redis, fullJournal: journal } = inner;
  const pidOne = config.sendWatchdog ? watchdogProblem(process.pid) : null;
  if (pidOne !== null) throw new InterlockError('invalid_config', pidOne);
  const durability = await requireDurability(redis, config.unsafeDurability);
  if (durability.optedOut) logger.warn({ durability }, `Redis is not durable (${durability.problems.join('; ')}); sending anyway because INTERLOCK_UNSAFE_DURABILITY is set`);
  else logger.info({ appendonly: durability.appendonly, appendfsync: durability.appendfsync, maxmemoryPolicy: durability.maxmemoryPolicy }, 'Redis durability checked');
  const marker = await holdDeploymentMarker(redis, keys.deployment);
  const durabilityMonitor = createDurabilityMonitor({ redis, optOut: config.unsafeDurability, intervalMs: config.durabilityCheckMs, logger, initial: durability, marker });
  watchedBy(stores, durabilityMonitor);
  // An id given (INTERLOCK_WORKER_ID, options.workerId) is the operator's, shared or not; a default one is this sender's.
  const givenId = options.workerId ?? config.workerId;
  const workerId = givenId ?? takeDefaultWorkerId();
  const releaseWorkerId = () => {
    if (givenId === null) defaultIdsHeld.delete(workerId);
  };
  // Half the settle margin: a stalled sender dies well before another worker may trust an empty lookup. And no send
  // outlives this worker's heartbeat: another worker reads a lapsed key as a dead sender's and takes its effects over.
  const stallWatch = config.sendWatchdog ? createSendWatchdog({ graceMs: Math.floor(config.settleMarginMs / 2), heartbeatTtlMs: config.heartbeatTtlMs }) : undefined;
  const heartbeat = createHeartbeat({
    redis,
    keys,
    workerId,
    nonce: randomBytes(8).toString('hex'),
    intervalMs: config.heartbeatMs,
    ttlMs: config.heartbeatTtlMs,
    ...(stallWatch ? { onAliveUntil: (at: number) => stallWatch.heartbeatUntil(at) } : {}),
    // While Redis is away every beat fails: the first is logged, then one line per 10 s with a count.
    onError: limitedErrorLog(logger, 'heartbeat failed'),
    onSuperseded: (by) => logger.error({ by }, 'another process beats under this worker id; this one dispatches and sends nothing while it does (effect jobs it takes are put back to wait). Give every worker its own INTERLOCK_WORKER_ID.'),
    onReclaimed: (by) => logger.warn({ by }, 'the other process under this worker id has gone; this one took the id back and sends again'),
  });
  // This process's sends on the wire. The gate arms the watchdog around every send (sendOnce), from right before the
  // request leaves until the target answers or the deadline passes (the settle margin covers what comes after), so
  // the same arm counts them: close keeps the heartbeat while any is, since another worker takes a dead sender's
  // effect over at once and, on a target that cannot dedupe, trusts an empty lookup a settle margin after that.
  const sending = new Set<Promise<void>>();
  const watchdog: SendWatchdog = {
    arm(deadlineAt) {
      const disarm = stallWatch?.arm(deadlineAt);
      let answered: () => void = () => undefined;
      const send = new Promise<void>((resolve) => {
        answered = resolve;
      });
      sending.add(send);
      return () => {
        disarm?.();
        sending.delete(send);
        answered();
      };
    },
    heartbeatUntil(at) {
      stallWatch?.heartbeatUntil(at);
    },
    // A send still on the wire at close (close waits for none while Redis is away) stays watched until it ends: no
    // beat refreshes the key any more, and the send must not outlive it.
    close: async () => {
      if (sending.size === 0) return stallWatch?.close();
      void Promise.all(sending).then(() => stallWatch?.close());
    },
  };
  // Re-reads after a settle run beside the answers (GateDeps.rereadFacts); close waits for those under way.
  const rereads = new Set<Promise<void>>();
  const facts = options.facts;
  const rereadFacts = (effectId: string) => {
    if (facts === undefined) return;
    const running: Promise<void> = facts
      .reread(effectId)
      .then(
        () => undefined,
        (error: unknown) => logger.warn({ effectId, err: error }, 'could not re-read the facts of an effect settled after a payment fact came for its subject; the reconciler reads them on its next pass'),
      )
      .finally(() => rereads.delete(running));
    rereads.add(running);
  };
  // Set first thing by close(): from then on nothing is dispatched or sent (the guard), and no gate call starts.
  let closed = false;
  // The gate calls under way that can send (submit, submitLatest, recover): close waits for them before it clears
  // the heartbeat, since one that had begun before it may be a step away from its send.
  const calls = new Set<Promise<unknown>>();
  const counted = <A extends unknown[], R>(call: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      if (closed) throw senderClosed();
      const running = call(...args);
      calls.add(running);
      try {
        return await running;
      } finally {
        calls.delete(running);
      }
    };
  // The monitor reads the marker every interval; the binding scripts read it in the very step that binds (and, on one
  // server, dispatches) an effect, so a Redis that lost its data binds and sends nothing even before the next check,
  // and the loss a script finds is the monitor's at once (journal.ts holdMarker).
  const releaseMarker = journal.holdMarker(marker.held, (found) => durabilityMonitor.recordLoss(found));
  // The gate refuses a target it cannot rely on (createGate): built before the first beat, so a refused start leaves no
  // heartbeat announcing a worker that does not exist, nor a watchdog thread, nor its default worker id taken.
  let created: Gate;
  try {
    created = createGate({
      journal,
      approvals: stores.approvals,
      heartbeat,
      target,
      logger,
      timing: { claimTtlMs: config.claimTtlMs, settleMarginMs: config.settleMarginMs, dedupMarginMs: config.dedupMarginMs, minReplicas: config.redisMinReplicas, replicaWaitMs: config.redisWaitMs },
      // Nothing is dispatched or sent while Redis is not durable, nor once another process beats under this worker id:
      // every other worker reads this one's claims as a dead sender's, so a send here would race their takeover.
      guard: {
        assertMaySend() {
          if (closed) throw senderClosed();
          if (heartbeat.supersededBy() !== null) throw new WorkerSupersededError(heartbeat.workerId);
          durabilityMonitor.assertDurable();
        },
      },
      watchdog,
      ...(options.events ? { events: options.events } : {}),
      ...(facts ? { rereadFacts } : {}),
      inbox: stores.inbox,
      unanswered: { alerts: stores.alerts, afterMs: config.unansweredAlertMs, creditCurrency: config.creditCurrency },
    });
    // Joined with its key once nothing else refuses the start: a start refused above records nothing of its key.
    await enterWithKey(stores);
    // A first beat that fails sets no timer (heartbeat.start), so nothing beats after this throws.
    await heartbeat.start();
  } catch (error) {
    releaseMarker();
    await watchdog.close();
    releaseWorkerId();
    // A worker must beat before it takes a job: on a full Redis it cannot start, and says so (not Redis's bare OOM).
    throw await redisFullOr(redis, error, `write this worker's heartbeat ${keys.heartbeat(workerId)}`);
  }
  // Started last, so a failed start leaves no timer behind.
  durabilityMonitor.start();
  const gate: Gate = {
    ...created,
    submit: counted(created.submit),
    submitLatest: counted(created.submitLatest),
    recover: counted(created.recover),
    async receipt(effectId: string) {
      inner.assertOpen();
      return created.receipt(effectId);
    },
  };
  // How long close waits for the calls under way. Once closed is set each is refused at its next step toward a send
  // (holdBack asks the guard), so a call that had passed the guard is at most one Redis command (the resend's
  // script, the replicas' WAIT) from its send, and a send ends by its deadline: after both bounds, what is left of a
  // call sends nothing (a recovery pass's lookups, say), and the heartbeat need not cover it.
  const callsBoundMs = config.sendTimeoutMs + config.redisCommandTimeoutMs;
  async function closeSender(closeOptions: { clearHeartbeat?: boolean }): Promise<void> {
    // What closing writes is upkeep, done only while Redis is up: a write waiting out an outage would hold the
    // shutdown for as long as it lasts. The open index's finished entries are then dropped by recovery, and the
    // heartbeat lapses on its own (until then this worker's claims look alive, as a crashed worker's would).
    await Promise.all(rereads);
    const up = redis.status === 'ready';
    // With Redis away the heartbeat cannot be cleared (it lapses, as a crashed sender's does): nothing to wait for.
    if (up && !(await endedWithin(calls, callsBoundMs))) {
      logger.warn({ calls: calls.size, waitedMs: callsBoundMs }, 'gate calls begun before close are still running; they send nothing more, and the heartbeat is cleared without them');
    }
    if (up) await Promise.all(sending);
    if (up) await journal.flushIndex().catch(() => undefined);
    await durabilityMonitor.stop();
    releaseMarker();
    const clear = closeOptions.clearHeartbeat ?? true;
    if (clear && !up) logger.warn('Redis is away: the heartbeat is left to lapse on its own');
    await heartbeat.stop({ clear: clear && up }).catch((error: unknown) => logger.warn({ err: error }, 'could not clear the heartbeat; it lapses on its own'));
    await watchdog.close();
    // A default id is free for the next sender of this process once none of this one's sends is on the wire (with
    // Redis away they were not waited for): that sender reads what this one left as a restarted worker's.
    if (sending.size === 0) releaseWorkerId();
  }
  let closing: Promise<void> | null = null;
  return {
    gate,
    heartbeat,
    durability,
    durabilityMonitor,
    // Closing twice closes once. `closed` is set before anything is awaited, so no send starts after close() is called.
    close(closeOptions = {}) {
      closed = true;
      closing ??= closeSender(closeOptions);
      return closing;
    },
  };
}

/** Records proposals before they are queued (record.ts): binds the payload, sends nothing, needs no target. */
export function createProposalRecorder(stores: Stores): Recorder {
  return createRecorder({ journal: journalOf(stores), logger: stores.logger });
}

/**
 * The job that carries the outbox token of a proposal recorded with `outbox` (createProposalRecorder) judged the
 * effect, found it judged, or failed for good (its not_judged alert raised): the outbox entry goes (with the journal's
 * next index upkeep, within 50 ms), and recovery no longer looks at it. Until then recovery queues the proposal again
 * should its job go (journal.ts OUTBOX_TOKEN).
 */
export function proposalJudged(stores: Stores, effectId: string, outboxToken: string): void {
  journalOf(stores).unindex(effectId, outboxToken);
}

/** Answers a proposal whose facts could not be read from the journal, where that needs no facts (record.ts). */
export function createProposalRecall(stores: Stores): Recall {
  return createRecall({ journal: journalOf(stores), logger: stores.logger });
}

/** Turns Stripe events and re-reads into OBSERVED entries and alerts (src/facts/apply.ts). */
export function createFacts(stores: Stores, reader: StripeReader | null, options: { rereadBeforeAppend?: boolean } = {}): FactsApplier {
  const alerts: Alerts = {
    ...stores.alerts,
    raise: (alert) => raiseAlert(stores, alert),
    // An exposure the facts resolve (the refund failed, the dispute was won) closes its inbox item too, as a person's
    // resolution does: a signed dismissal naming the facts. Not closed, the item stays for a person, and the log says so.
    async settle(effectId, standing) {
      const resolved = await stores.alerts.settle(effectId, standing);
      for (const alert of resolved) {
        if (alert.kind !== 'exposure') continue;
        try {
          await closeExposureItem(stores, alert, FACTS_ACTOR, `Closed with alert ${alert.id}, which the facts resolved: later facts from Stripe (the entries before this one) undid the exposure.`);
        } catch (error) {
          stores.logger.error({ err: error, alert: alert.id, effectId }, `the facts resolved an exposure alert but could not close its inbox item; dismiss it by hand: interlock inbox dismiss ${inboxItemId('exposure', effectId)} --note <why> --by <name>`);
        }
      }
      return resolved;
    },
  };
  return createFactsApplier({ journal: journalOf(stores), alerts, reader, logger: stores.logger, ...options });
}

/** Who closes an exposure inbox item when the facts resolve its alert, on the item and the receipt's signed entry. */
const FACTS_ACTOR: Actor = { name: 'facts', role: 'worker' };

/**
 * Raises (or refreshes) an alert. Every exposure alert also opens an inbox item (issue 13 §4): money is out twice,
 * and a person must answer the dispute. The two are one matter: closing either closes the other (resolveAlert, and
 * the inbox's act for the item).
 */
export async function raiseAlert(stores: Stores, alert: Parameters<Alerts['raise']>[0]): Promise<{ alert: Alert; created: boolean }> {
  const raised = await stores.alerts.raise(alert);
  if (alert.kind === 'exposure') await openExposureItem(stores, raised.alert);
  return raised;
}

/**
 * A person resolves an alert, named `<name> (<role>)` on it. Exactly one of people resolving it at once is recorded
 * (`resolved` true). The one who resolves an exposure alert also closes its inbox item, with a signed dismissal
 * naming them on the effect's receipt; an item someone closed already stays as they left it. Null: no such alert.
 */
export async function resolveAlert(stores: Stores, alertId: string, by: Actor): Promise<{ alert: Alert; resolved: boolean } | null> {
  const done = await stores.alerts.resolve(alertId, `${by.name} (${by.role})`);
  if (done === null || !done.resolved || done.alert.kind !== 'exposure') return done;
  await closeExposureItem(stores, done.alert, by, `Closed with alert ${alertId}, which ${by.name} resolved.`);
  return done;
}

/**
 * Dismisses the inbox item a resolved exposure alert opened, with a signed entry naming `by` on the effect's receipt.
 * True when this call closed it.
 */
async function closeExposureItem(stores: Stores, alert: Alert, by: Actor, note: string): Promise<boolean> {
  try {
    await stores.inbox.act(inboxItemId('exposure', alert.effectId), { action: 'dismiss', by, note });
    return true;
  } catch (error) {
    // Closed by someone already (its act resolved this alert too), or never opened: nothing is left to close.
    if (!(error instanceof InterlockError && (error.code === 'inbox_item_closed' || error.code === 'unknown_inbox_item'))) throw error;
    return false;
  }
}

/**
 * What an exposure repair pass closed: items whose alert was resolved, and alerts whose item was closed; `failed`, the
 * items and alerts it could not close this time (each logged; the next pass tries them again).
 */
export type ExposureRepair = { closedItems: string[]; resolvedAlerts: string[]; failed: string[] };

/** Open exposure items read per page by the repair. */
const REPAIR_PAGE = 200;

/**
 * Who an alert's `resolvedBy` names, as an actor for the item's dismissal: resolveAlert writes `<name> (<role>)`, the
 * facts write FACTS_RESOLVER.
 */
function resolverOf(resolvedBy: string | null): Actor {
  if (resolvedBy === null || resolvedBy === FACTS_RESOLVER) return FACTS_ACTOR;
  const named = /^(.+) \(([^()]+)\)$/.exec(resolvedBy);
  return named?.[1] !== undefined && named[2] !== undefined ? { name: named[1], role: named[2] } : { name: resolvedBy, role: 'unknown' };
}

/**
 * Closes the other half of each exposure left half-closed: an exposure alert and its inbox item are one matter, but
 * they close in two steps (the item's RESOLVED entry lives with the effect, the alert in the index slot), so a process
 * that died between the two left an open item for a resolved alert, or an open alert whose item was closed. This
 * dismisses each open exposure item whose alert is resolved (a signed dismissal naming who resolved the alert) and
 * resolves each open exposure alert whose item is closed (naming who closed the item).
 *
 * It reads only what is open (the inbox's open items of kind exposure, the open-alerts index), never everything. It
 * is idempotent, and several processes may run it at once: an item takes one action at most (act-3.lua), and of
 * several resolutions of one alert one is recorded (set-alert-3.lua); each half is reported by the one call that
 * closed it. The facts reconciler runs it with every pass (queues/facts.ts).
 */
export async function repairExposures(stores: Stores): Promise<ExposureRepair> {
  const repair: ExposureRepair = { closedItems: [], resolvedAlerts: [], failed: [] };
  // One pair that cannot be closed now (its effect's chain unreadable, say) must not keep every other from repair.
  const each = async (id: string, work: () => Promise<void>) => {
    try {
      await work();
    } catch (error) {
      repair.failed.push(id);
      stores.logger.error({ err: error, id }, 'the exposure repair could not close the other half of this exposure; the next pass tries again');
    }
  };
  let cursor: string | undefined;
  do {
    const page = await stores.inbox.list({ status: 'open', kind: 'exposure' }, REPAIR_PAGE, cursor);
    for (const item of page.data) {
      await each(item.id, async () => {
        const alert = await stores.alerts.get(alertIdOf(item.effectId, 'exposure'));
        if (alert === null || alert.resolvedAt === null) return;
        const note = `Closed with alert ${alert.id}, which ${alert.resolvedBy ?? FACTS_RESOLVER} resolved; the process that resolved it stopped before it closed this item, so the exposure repair closed it.`;
        if (await closeExposureItem(stores, alert, resolverOf(alert.resolvedBy), note)) repair.closedItems.push(item.id);
      });
    }
    cursor = page.next ?? undefined;
  } while (cursor !== undefined);
  for await (const alert of stores.alerts.openOf('exposure')) {
    await each(alert.id, async () => {
      // get() closes an item whose chain holds an action the index has not caught up with.
      const item = await stores.inbox.get(inboxItemId('exposure', alert.effectId));
      const closure = item?.closure ?? null;
      if (item === null || closure === null) return;
      // A raise opened the alert again after the item was closed (a dispute it named was decided since and changed what
      // to do): the item takes no second action, so the alert alone carries it.
      if (alert.reopenedAt !== undefined && alert.reopenedAt > closure.at) return;
      // The person closed the item on the disputes it showed: an alert that names one they did not see (a second
      // chargeback, which opens the alert again) is new money at stake, not the other half of what they closed.
      const handled = exposureDisputesDecided(item);
      if (alert.disputes.some((dispute) => !handled.includes(dispute))) return;
      // An item the facts closed was closed after they resolved its alert (settle, or this repair naming them): an open
      // alert beside it is one the facts opened again since (raise re-opens what they resolved), money at stake again.
      // The item takes no second action, so the alert alone carries it: resolving it would hide the new exposure.
      if (closure.by.name === FACTS_ACTOR.name && closure.by.role === FACTS_ACTOR.role) return;
      // Asked again of the alert as it stands at the write: a chargeback raised since this read is not resolved with it.
      const done = await stores.alerts.resolve(alert.id, `${closure.by.name} (${closure.by.role})`, (now) => now.disputes.every((dispute) => handled.includes(dispute)));
      if (done?.resolved) repair.resolvedAlerts.push(alert.id);
    });
  }
  return repair;
}

/**
 * Opens the exposure's inbox item, or refreshes the open one to say what the alert says now (a second chargeback: more
 * money at stake), keeping the disputes it opened with, which are what a person's dismissal of it decides on
 * (exposureDisputesDecided). A closed item keeps what the person acted on.
 */
async function openExposureItem(stores: Stores, alert: Alert): Promise<void> {
  const { item, created } = await stores.inbox.open({
    id: inboxItemId('exposure', alert.effectId),
    kind: 'exposure',
    effectId: alert.effectId,
    subject: alert.subject,
    outcome: await settledOutcome(stores, alert.effectId),
    happened: alert.sentence,
    centsAtStake: alert.centsAtStake,
    currency: alert.currency ?? null,
    changes: [],
    actions: [...ALLOWED_ACTIONS.exposure],
    detail: { alert: alert.id, refund: alert.refund, disputes: alert.disputes, advice: alert.action },
  });
  if (created || item.closure !== null) return;
  // From the alert as it stands, not as this raise wrote it: two raises that overlap (a redelivered webhook for the
  // first chargeback beside the second's) may reach here in the other order, and the older must not undo the newer.
  const current = (await stores.alerts.get(alert.id)) ?? alert;
  const shown = Array.isArray(item.detail?.['disputes']) ? item.detail['disputes'] : [];
  const stale = item.centsAtStake !== current.centsAtStake || item.happened !== current.sentence || current.disputes.some((dispute) => !shown.includes(dispute));
  if (!stale) return;
  await stores.inbox.refresh(item.id, (known) => ({
    ...known,
    happened: current.sentence,
    centsAtStake: current.centsAtStake,
    currency: current.currency ?? null,
    detail: { ...known.detail, disputes: current.disputes, advice: current.action, disputesAtOpen: exposureDisputesDecided(known) },
  }));
}

/**
 * Opens an inbox item for a model that decided outside its approval (MODEL_DEVIATED): the case's effect must be
 * recorded (its proposal, refused or not), since a person's action is an entry on that effect's receipt. `happened`
 * says what the model decided and what the approval allowed; `detail` carries the case's own facts. Opening the same
 * effect's item again changes nothing.
 */
export async function openInboxItem(stores: Stores, deviation: { effectId: string; happened: string; centsAtStake: number; changes?: PremiseChange[]; detail?: JsonObject }): Promise<{ item: InboxItem; created: boolean }> {
  const partition = await stores.journal.partitionOf(deviation.effectId);
  const entries = partition === null ? [] : await stores.journal.entries(partition, deviation.effectId);
  if (partition === null || entries.length === 0) {
    throw new InterlockError('unknown_effect', `No effect ${deviation.effectId.slice(0, 80)} is recorded: record the deviating proposal first, then open its inbox item.`);
  }
  const detail = (deviation.detail ?? null) as { [key: string]: Json } | null;
  const changes = deviation.changes ?? [];
  const draft: InboxItemDraft = {
    id: inboxItemId('model_deviated', deviation.effectId),
    kind: 'model_deviated',
    effectId: deviation.effectId,
    subject: partition,
    outcome: await settledOutcome(stores, deviation.effectId),
    happened: deviation.happened,
    centsAtStake: deviation.centsAtStake,
    currency: currencyOfEffectOrCredit(entries, stores.config.creditCurrency),
    changes,
    // As itemActions rules for every item: a deviation of another kind than its case's is not re-approved (deviatedKind).
    actions: itemActions({ kind: 'model_deviated', subject: partition, changes, detail }),
    detail,
  };
  return stores.inbox.open(draft);
}

/**
 * The effect's latest recorded proposal, as the gate takes it (what an effects job submits), or null when none is
 * recorded. A re-decision recorded after a refusal is the latest.
 */
export async function latestProposal(stores: Stores, effectId: string): Promise<Proposal | null> {
  return recordedProposalOf(stores, effectId, 'latest');
}

/**
 * The effect's first recorded proposal, or null when none is recorded: the one that bound the payload (I5), which a
 * case decided again after a crash adopts instead of proposing anew.
 */
export async function firstRecordedProposal(stores: Stores, effectId: string): Promise<Proposal | null> {
  return recordedProposalOf(stores, effectId, 'first');
}

async function chainOf(stores: Stores, effectId: string): Promise<Entry[]> {
  const partition = await stores.journal.partitionOf(effectId);
  return partition === null ? [] : stores.journal.entries(partition, effectId);
}

async function recordedProposalOf(stores: Stores, effectId: string, which: 'first' | 'latest'): Promise<Proposal | null> {
  return recordedProposal(await chainOf(stores, effectId), which);
}

/** The outcome answering the effect's latest proposal (core/verify.ts currentOutcome), or null while unsettled or unknown. */
export async function settledOutcome(stores: Stores, effectId: string): Promise<Outcome | null> {
  return currentOutcome(await chainOf(stores, effectId)) as Outcome | null;
}

/**
 * The refusal that answered the effect's latest proposal (a REFUSED entry after it, other than the evidence of a
 * conflicting payload), or null when that proposal has not been refused. A job that carries the proposal and
 * comes back after someone else judged it (a stalled job whose effect recovery refused meanwhile) is done: judging
 * it again would put a second refusal on the receipt and open a second inbox item.
 */
export async function refusalOfLatestProposal(stores: Stores, effectId: string): Promise<Outcome | null> {
  return refusalOfLatest(await chainOf(stores, effectId));
}

/** Effects committed since `since` (Redis ms), from `after` on (journal.ts `watched`): what the reconciler re-reads. */
export async function watchedEffects(stores: Stores, since: number, limit?: number, after?: WatchPosition | null): Promise<{ effectIds: string[]; next: WatchPosition | null }> {
  const { effectIds, next } = await journalOf(stores).watched(since, limit, after ?? null);
  return { effectIds, next };
}

/**
 * watchedEffects with each effect's own place in the sequence (`positions`, index for index): a pass that stops partway
 * goes on from the place of the last effect it finished.
 */
export async function watchedWithPositions(stores: Stores, since: number, limit?: number, after?: WatchPosition | null): Promise<{ effectIds: string[]; positions: WatchPosition[]; next: WatchPosition | null }> {
  return journalOf(stores).watched(since, limit, after ?? null);
}

/**
 * The scheduled reconciler's lease and cursor, shared by every facts process of the deployment (journal.ts): one pass
 * at a time, each going on where the last stopped, whichever process ran it.
 */
export function reconcileLease(stores: Stores): {
  /** `catchUp`, for a process's pass at start: opens the catch-up window, or widens one still open, and starts its passes over (journal.ts takeReconcileLease). */
  take(token: string, leaseMs: number, gapMs: number | null, catchUp?: { horizonMs: number; furthestMs: number } | null): Promise<ReconcileTurn>;
  renew(token: string, leaseMs: number): Promise<boolean>;
  /** `readThrough`: the pass read through to the last effect, which closes the catch-up window. */
  end(token: string, cursor: ReconcileCursor, startedAt: number, holdMs: number, readThrough?: boolean): Promise<boolean>;
  release(token: string): Promise<boolean>;
  /** When the deployment's last pass ended (Redis ms), whichever process ran it; null before the first. */
  lastEnded(): Promise<number | null>;
} {
  const journal = journalOf(stores);
  return {
    lastEnded: () => journal.lastReconcileEnd(),
    take: (token, leaseMs, gapMs, catchUp) => journal.takeReconcileLease(token, leaseMs, gapMs, catchUp ?? null),
    renew: (token, leaseMs) => journal.renewReconcileLease(token, leaseMs),
    end: (token, cursor, startedAt, holdMs, readThrough) => journal.endReconcilePass(token, cursor, startedAt, holdMs, readThrough ?? false),
    release: (token) => journal.releaseReconcileLease(token),
  };
}

/** Puts effects on the reconciler's watch list from now (Redis time): its passes re-read them for a whole horizon. */
export async function watchAgain(stores: Stores, effectIds: readonly string[]): Promise<void> {
  const journal = journalOf(stores);
  await journal.watchFrom(effectIds, await journal.serverTime());
}

/** The full journal of stores, for the project's own adapters that append facts (webhooks/, the reconciler). */
export function journalOf(stores: Stores): Journal {
  const inner = internals.get(stores);
  if (!inner) throw new Error('journalOf needs stores made by openStores');
  return inner.fullJournal;
}

/** The durability monitors made on a process's stores (its intake's, its sender's), whose data-loss verdict durabilityOf reports. */
const durabilityMonitors = new WeakMap<Stores, DurabilityMonitor[]>();

function watchedBy(stores: Stores, monitor: DurabilityMonitor): void {
  durabilityMonitors.set(stores, [...(durabilityMonitors.get(stores) ?? []), monitor]);
}

/**
 * Redis persistence now, judged as a sender judges it (durable, or opted out), for readiness checks and the durability
 * gauge. Once a monitor of these stores found that Redis lost its data, not durable for good, opted out or not, with
 * the loss's sentence first: the process refuses every write and send until it is restarted, whatever the settings
 * read now (the last check's problems follow it).
 */
export async function durabilityOf(stores: Stores): Promise<Durability> {
  for (const monitor of durabilityMonitors.get(stores) ?? []) {
    const lost = monitor.dataLoss();
    if (lost === null) continue;
    const last = monitor.current();
    return { durable: false, appendonly: last.appendonly, appendfsync: last.appendfsync, maxmemoryPolicy: last.maxmemoryPolicy, noAppendfsyncOnRewrite: last.noAppendfsyncOnRewrite, problems: [lost, ...last.problems.filter((problem) => problem !== lost)], optedOut: false };
  }
  // Sends and intake are refused until a reconnect's re-check answers (DurabilityMonitor.awaitingRecheck): so is
  // readiness, rather than the settings read now calling Redis durable meanwhile.
  for (const monitor of durabilityMonitors.get(stores) ?? []) {
    const awaited = monitor.awaitingRecheck();
    if (awaited === null) continue;
    const last = monitor.current();
    return { durable: false, appendonly: last.appendonly, appendfsync: last.appendfsync, maxmemoryPolicy: last.maxmemoryPolicy, noAppendfsyncOnRewrite: last.noAppendfsyncOnRewrite, problems: [awaited], optedOut: false };
  }
  return inspectDurability(innerOf(stores).redis, stores.config.unsafeDurability);
}

/** Where a newest-first listing of effects stands: the bind time and id of the last effect handed out. */
export type EffectsPosition = { boundAt: number; effectId: string };

/**
 * Up to `count` effects, newest bound first, from the effects-by-time index written with each binding (bind_effect),
 * starting after `after` (null: from the newest). Effects bound in the same millisecond come in descending id order,
 * so a position is exact: a listing never repeats or skips an effect present for its whole length.
 */
export async function effectsNewestFirst(stores: Stores, after: EffectsPosition | null, count: number): Promise<{ effectId: string; partition: string; boundAt: number }[]> {
  const { redis } = innerOf(stores);
  const found = (await membersAfter(redis, stores.keys.effectsByTime, after === null ? null : { score: after.boundAt, id: after.effectId }, count)).map((member) => ({ effectId: member.id, boundAt: member.score }));
  if (found.length === 0) return [];
  const partitions = await redis.hmget(stores.keys.effectPartitions, ...found.map((item) => item.effectId));
  return found.flatMap((item, index) => {
    const partition = partitions[index];
    return partition === null || partition === undefined ? [] : [{ effectId: item.effectId, partition, boundAt: item.boundAt }];
  });
}

/**
 * Options the support API keeps beside an approval's terms: written with the terms, by the grant that creates the
 * approval (approvals.grant's `options`), and never changed, like the terms. An approval granted before they moved
 * into its own hash has them in keys.approvalOptions, which is still read so its four-eyes rule holds.
 */
export function approvalOptionsOf(stores: Stores) {
  const { redis } = innerOf(stores);
  return {
    async get(approvalId: string): Promise<string | null> {
      const partition = await stores.approvals.partitionOf(approvalId);
      const options = partition === null ? null : await redis.hget(stores.keys.approval(partition, approvalId), 'options');
      return options ?? redis.hget(stores.keys.approvalOptions, approvalId);
    },
  };
}

export type ApprovalOptions = { four_eyes: boolean; granted_by: string | null };

/** The options as approvalOptionsOf stored them; anything else is read as the strictest options. */
export function parseApprovalOptions(text: string): ApprovalOptions {
  try {
    const value = JSON.parse(text) as Partial<ApprovalOptions>;
    return { four_eyes: value.four_eyes === true, granted_by: typeof value.granted_by === 'string' ? value.granted_by : null };
  } catch {
    return { four_eyes: true, granted_by: null };
  }
}

/** What a name holds besides its letters, digits and accents (spaces, dashes, quotes, dots, symbols): not compared. */
const NOT_OF_A_NAME = /[^\p{L}\p{N}\p{M}]/gu;
/**
 * What folded letters (lower case, look-alikes read as Latin) are drawn as one upright stroke in one of their cases,
 * read decomposed, so an accent stays on the stroke: Ían, ían, Ĺan and ĺan are all one name (composed again after, so
 * a name with no stroke keeps the key personKey gives it).
 */
const STROKE_LETTERS = /[il]/gu;

/** NOT_OF_A_NAME but the upright stroke (UPRIGHT_STROKE, |), which personStrokeKey compares. */
const NOT_OF_A_NAME_OR_A_STROKE = /[^\p{L}\p{N}\p{M}|]/gu;

/** A name with compatibility forms folded, invisible format characters dropped and runs of white space made one. */
function plainName(name: string): string {
  return compatibilityLookAlikes(name).normalize('NFKC').replace(/\p{Cf}/gu, '').replace(/\s+/gu, ' ').trim();
}

/** `text` with case folded (through upper case first, as Unicode's full case folding does), then its look-alikes read. */
function foldedLetters(text: string): string {
  return latinLookAlikes(text.toUpperCase().toLowerCase().normalize('NFKC'));
}

/**
 * A name as the four-eyes rule compares it by its letters, case aside (one of two keys: samePerson): compatibility
 * forms folded (fullwidth letters read as their plain ones), invisible format characters (zero-width spaces and
 * joiners) dropped, runs of white space made one, case ignored, and letters drawn as Latin ones read as those
 * (latinLookAlikes: Greek, Cyrillic, Armenian, Cherokee, Lisu, Coptic and Latin's own IPA letters and small capitals).
 * "ａｌｅｘ", "a\u200blex", "Alex ", "ALEX", "аlex" (a Cyrillic а) and "ɑlex" (a Latin alpha) are all alex here, as they are
 * to a person reading the receipt. A name that arrives mixing two scripts is refused before it gets here (personName),
 * so a look-alike the table lacks can only stand in a name written wholly in its own script. Case is folded through
 * upper case first, as Unicode's full case folding does: lower case alone keeps "Strauß" and "STRAUSS", or "νικος" and
 * "ΝΙΚΟΣ", apart (ß upper-cases to SS, the final ς to Σ). The look-alikes are read after case is folded, so two
 * spellings of one name in two cases stay one name. Only letters, digits and accents count (NOT_OF_A_NAME): "Jean–Luc"
 * with an en dash (taken by an earlier version, refused now), "Jean-Luc", "Jean Luc" and "JeanLuc" are one person, so
 * an approver whose recorded name holds a mark that can no longer be typed is still held to four eyes by any spelling
 * of it. I and l stay two letters here: "Iida" is iida, "Lida" lida; personStrokeKey is the key that reads them alike.
 */
export function personKey(name: string): string {
  return foldedLetters(plainName(name)).replace(DOT_ON_AN_I, 'i').replace(NOT_OF_A_NAME, '');
}

/**
 * A dot above (U+0307) on an i, as the dotted capital İ folds to (i and the dot: Unicode keeps it, for Lithuanian) or
 * as typed on a small i: drawn, it is the i's own dot, so "İlker", "ilker" and "i\u0307lker" are one name.
 */
const DOT_ON_AN_I = /i\u0307/gu;
/** The same dot on an upright stroke (personStrokeKey), which an i or İ becomes there. */
const DOT_ON_A_STROKE = /\|\u0307/gu;

/**
 * A name as the four-eyes rule compares it by its upright strokes (the other key: samePerson): read as personKey reads
 * it, but every letter that is drawn as one upright stroke in either of its cases is one stroke, |: the I and the i,
 * the L and the l, the digit 1, and the letters drawn as them (uprightStrokes: the Cyrillic palochka ӏ and і, the Greek
 * Ι and ι, the Lisu ꓲ, the dotless ı, the small capital ɪ...). "AIex" with a capital i, "ALEX", "Alex", "a1ex" and the
 * all-Cyrillic "аӏех" are all a|ex; "Ian", "Lan", "lan" and "ian" all |an. A key that kept the case of the strokes
 * (Ian and lan one, Lan another) would not be one relation: ALEX is alex by its letters and alex is aIex by its
 * strokes, yet ALEX and aIex would be two people, so an approver recorded in capitals could propose as aIex. This one
 * refuses a few honest pairs instead (Elia and Ella, Iida and Lida may not approve and propose for each other under
 * four eyes): someone else proposes.
 */
export function personStrokeKey(name: string): string {
  return foldedLetters(uprightStrokes(plainName(name))).normalize('NFD').replace(STROKE_LETTERS, UPRIGHT_STROKE).replace(DOT_ON_A_STROKE, UPRIGHT_STROKE).normalize('NFC').replace(NOT_OF_A_NAME_OR_A_STROKE, '');
}

/**
 * Whether four eyes takes two names for one person: when they agree by either key, their letters with case aside
 * (personKey: Alex and ALEX, ace and the all-Cyrillic асе) or their upright strokes (personStrokeKey: AIex and ALEX,
 * Lan and Ian). The stroke key is the coarser; personKey is kept beside it for a letter whose look-alike table and
 * stroke table disagree across its two cases. Names are recorded and shown as sent; only the comparison reads them so.
 */
export function samePerson(one: string, other: string): boolean {
  return personKey(one) === personKey(other) || personStrokeKey(one) === personStrokeKey(other);
}

/**
 * Why a proposal under a request id not recorded yet could only be refused for its approval, as the dispatch step
 * judges it (REFUSED:lease): revoked, expired, every use spent (those of effects in flight counted), a cap below the
 * amount, or another payment or customer than the effect's; null when none of these holds, or when the request id is recorded already (it is answered as it stands,
 * whatever its approval is now). Recorded, such a proposal is refused all the same, and its journal, state and job
 * are kept for ever (README "Retention"): a caller retrying under fresh request ids would fill Redis with refusals, so
 * the support API and `interlock refund|credit` refuse it before recording. `premises`: the facts read for it, whose
 * `currency` the problems state amounts in (a credit's is the configured one when its facts name none). What an
 * approval holds in cents for effects in flight and a subject's shared cap are left to the gate. An approval not found
 * here is left to the caller's own check of it (checkFourEyes: unknown_approval). The journal is asked only when the approval has a problem, so a new request under a usable one pays no round trip.
 */
export async function unusableApproval(stores: Stores, effect: Effect, effectId: string, approvalId: string, premises: Record<string, unknown>): Promise<string[] | null> {
  const { now, snapshot } = await stores.approvals.describe(approvalId);
  const subject = factsOfEffect(effect).subject;
  if (snapshot === null) return null;
  const currency = currencyCode(premises['currency']) ?? (effect.kind === 'credit' ? currencyCode(stores.config.creditCurrency) : null);
  const problems = approvalProblems(snapshot, { now, subject, amount: effect.amount, phase: 'dispatch', currency });
  if (problems.length === 0 || (await stores.journal.partitionOf(effectId)) !== null) return null;
  return problems;
}

/**
 * The four-eyes rule, for every way money is proposed under an approval (POST /v1/refunds, a case, a re-approval from
 * the API, the page or the CLI): when the approval asks for four eyes, none of `names` (the proposer, the token that
 * asks) may be its approver or the one who granted it, however the name is spelled (samePerson). Throws four_eyes
 * naming the recorded approver (or granting token) and the proposer's name as sent; nothing is recorded. An approval
 * that does not exist yet is refused (unknown_approval): its rule is written when it is granted, so a proposal made
 * before that could never be held to it.
 */
export async function checkFourEyes(stores: Stores, approvalId: string, names: readonly string[]): Promise<void> {
  const [text, { snapshot }] = await Promise.all([approvalOptionsOf(stores).get(approvalId), stores.approvals.describe(approvalId)]);
  if (snapshot === null) {
    throw new InterlockError('unknown_approval', `No approval ${approvalId}: grant it first (POST /v1/approvals or \`interlock approvals grant\`), then propose under it; a proposal made before its approval exists could not be held to the approval's rules (four eyes). Nothing was recorded.`);
  }
  const options = text === null ? null : parseApprovalOptions(text);
  if (!options?.four_eyes) return;
  const approvers = [
    { name: snapshot.approver, how: 'was approved by' },
    { name: options.granted_by, how: 'was granted by the token' },
  ].filter((approver): approver is { name: string; how: string } => typeof approver.name === 'string');
  for (const proposer of names) {
    const approver = approvers.find((candidate) => samePerson(candidate.name, proposer));
    if (approver === undefined) continue;
    const compared = approver.name === proposer ? '' : `, whose name compares as the proposer ${proposer}'s`;
    throw new InterlockError('four_eyes', `Approval ${approvalId} asks for four eyes and ${approver.how} ${approver.name}${compared}, so ${proposer} cannot propose under it. Nothing was recorded; someone else must do this.`);
  }
}

function innerOf(stores: Stores): StoreInternals {
  const inner = internals.get(stores);
  if (!inner) throw new Error('this needs stores made by openStores');
  return inner;
}

export type Interlock = Sender & { journal: Journal; approvals: Approvals; stores: Stores };

/** openStores and startSender in one call, for tests, benchmarks and the demo. */
export async function createInterlock(deps: { config: Config; target: Target; signingKey: SigningKey; logger: Logger; redis?: RedisClient }): Promise<Interlock> {
  const stores = await openStores(deps.config, { logger: deps.logger, signingKey: deps.signingKey, ...(deps.redis ? { redis: deps.redis } : {}) });
  let sender: Sender;
  try {
    sender = await startSender(stores, deps.target);
  } catch (error) {
    await stores.close();
    throw error;
  }
  return {
    ...sender,
    // Guarded as the stores' own parts are: after close() a call is refused (not_available), never sent on a
    // connection the caller may still hold open (a Redis client it passed in).
    journal: refusingOnceClosed(journalOf(stores), innerOf(stores).assertOpen),
    approvals: stores.approvals,
    stores,
    async close(options) {
      await sender.close(options);
      await stores.close();
    },
  };
}

export { startPrivateRedis, freePort, type PrivateRedis } from './redis/private-server.js';
