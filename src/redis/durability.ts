// Refuses to send on a Redis that can lose an acknowledged DISPATCHED (I1) or the journal of a committed effect
// (I2). Four settings decide it, on every server that acknowledges writes:
// - `appendonly yes`: without the append-only file a restart forgets every entry;
// - `appendfsync always`: any other policy acknowledges entries that are not yet on disk;
// - `no-appendfsync-on-rewrite no`: `yes` stops fsyncing while an AOF rewrite or snapshot runs, so entries
//   acknowledged meanwhile can be lost however `appendfsync` is set;
// - `maxmemory-policy noeviction`: any other policy deletes keys under memory pressure; a deleted journal makes
//   a committed request look new, and it commits (and lands) a second time.
// A replica is refused too: it is not the server that keeps what it acknowledges (a full resync deletes it).
// The check runs at start (requireDurability) and again while running (createDurabilityMonitor), since CONFIG SET
// can change any of them under a live worker. The monitor also reads the deployment's marker key: settings can stay
// right while the data goes (a restart without the append-only file, FLUSHALL, a failover to an empty server).
// With INTERLOCK_REDIS_MIN_REPLICAS, what is acknowledged is kept only once replicas hold it too (replica-wait.ts): the
// replicas each master lists are read on demand (inspectReplicas), so readiness can say when too few acknowledge.
// A master with no memory limit (maxmemory 0) is not refused, but a process warns of it at start
// (warnUnboundedMemory): noeviction acts only at the limit, so such a Redis never answers OOM (an outage the service
// waits out) and grows until the kernel or its container kills it.
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { InterlockError } from '../core/errors.js';
import { isRedisOutage, redisTurnedAway, writableNodesNow, type RedisClient } from './client.js';
import { DEPLOYMENT_MARKER_MATCH, prefixOfDeploymentMarker } from './keys.js';
import { createScriptRunner } from './scripts.js';

/** How long a check waits for a cluster's slot map (writableNodesNow). */
const SLOT_MAP_TIMEOUT_MS = 5_000;

export const UNSAFE_DURABILITY_ENV = 'INTERLOCK_UNSAFE_DURABILITY';

export type Durability = {
  durable: boolean;
  appendonly: string;
  appendfsync: string;
  maxmemoryPolicy: string;
  noAppendfsyncOnRewrite: string;
  problems: string[];
  optedOut: boolean;
};

const REMEDY = 'Run every Redis master with `appendonly yes`, `appendfsync always`, `no-appendfsync-on-rewrite no` and `maxmemory-policy noeviction` (the compose file does)';

/**
 * Redis could lose what it acknowledges, so nothing was sent. On the registry (`redis_not_durable`, retryable):
 * retrying is right once Redis is durable again, and a queue must not fail the job for good meanwhile.
 */
type DurabilityPhase = { phase: 'start' } | { phase: 'intake' } | { phase: 'running'; checkedAt: number } | { phase: 'disconnected'; checkedAt: number } | { phase: 'reconnected'; checkedAt: number };

function durabilityMessage(durability: Durability & { dataLost?: boolean }, when: DurabilityPhase): string {
  const problems = durability.problems.join('; ');
  // A check that finds Redis durable again does not undo a loss: the marker's problem says what to do instead.
  if (when.phase === 'running' && durability.dataLost === true) return `${problems} (last checked ${new Date(when.checkedAt).toISOString()}); nothing was sent.`;
  switch (when.phase) {
    case 'start':
      return `Redis can lose an acknowledged journal entry (${problems}), so Interlock will not send. ${REMEDY}, or set ${UNSAFE_DURABILITY_ENV}=1 to accept the risk on a test machine.`;
    case 'intake':
      return `Redis can lose what it acknowledges (${problems}), so this process will not take webhooks or support requests, nor record facts: it would answer that an event or a refund is stored, or record a refund's failure, and could lose it, and Stripe does not send an event again once it was answered. ${REMEDY}, or set ${UNSAFE_DURABILITY_ENV}=1 to accept the risk on a test machine.`;
    case 'disconnected':
      return `The connection to Redis dropped and is not back (${problems}): the Redis it reaches next may be another one, or one that lost this deployment's data, so nothing was sent or recorded; Interlock sends again once it is back and a check of that Redis has answered. Retry.`;
    case 'reconnected':
      return `The connection to Redis dropped and came back (${problems}), and the check of the Redis it reaches now (its settings, and whether it still holds this deployment's data) has not answered yet, so nothing was sent; Interlock sends again once it has. Retry.`;
    case 'running':
      return `Redis is not durable now (${problems}; last checked ${new Date(when.checkedAt).toISOString()}), so nothing was sent; Interlock sends again once a check finds Redis durable. ${REMEDY}; then retry.`;
    default: {
      const never: never = when;
      return never;
    }
  }
}

export class DurabilityError extends InterlockError {
  readonly durability: Durability;
  readonly when: DurabilityPhase;
  constructor(durability: Durability, when: DurabilityPhase = { phase: 'start' }) {
    super('redis_not_durable', durabilityMessage(durability, when));
    this.durability = durability;
    this.when = when;
    this.name = 'DurabilityError';
  }
}

/** A setting's value, or null with why CONFIG GET did not give it (Redis's own error, or null when it has no such setting). */
async function configValue(redis: Redis, name: string): Promise<{ value: string | null; error: string | null }> {
  try {
    const reply = (await redis.config('GET', name)) as unknown;
    if (Array.isArray(reply)) return { value: reply.length >= 2 ? String(reply[1]) : null, error: null };
    if (reply && typeof reply === 'object') return { value: String((reply as Record<string, unknown>)[name] ?? '') || null, error: null };
    return { value: null, error: null };
  } catch (error) {
    // Redis not answering is not a refusal of CONFIG: the check itself failed, and says so (the monitor: unknown).
    if (isRedisOutage(error)) throw error;
    // Managed Redis services often disable CONFIG; INFO still says whether AOF is on and which policy evicts.
    return { value: null, error: (error instanceof Error ? error.message : String(error)).trim() };
  }
}

function infoField(info: string, field: string): string | null {
  return new RegExp(`^${field}:(.*)$`, 'm').exec(info)?.[1]?.trim() ?? null;
}

async function inspectNode(redis: Redis, optOut: boolean): Promise<Durability> {
  const [persistence, memory, replication] = [String(await redis.info('persistence')), String(await redis.info('memory')), String(await redis.info('replication'))];
  const aofEnabled = infoField(persistence, 'aof_enabled') === '1';
  const [appendonlyRead, appendfsyncRead, rewriteRead, policyRead] = [
    await configValue(redis, 'appendonly'),
    await configValue(redis, 'appendfsync'),
    await configValue(redis, 'no-appendfsync-on-rewrite'),
    await configValue(redis, 'maxmemory-policy'),
  ];
  const appendonly = appendonlyRead.value ?? (aofEnabled ? 'yes' : 'no');
  const appendfsync = appendfsyncRead.value ?? 'unknown';
  const noAppendfsyncOnRewrite = rewriteRead.value ?? 'unknown';
  const maxmemoryPolicy = policyRead.value ?? infoField(memory, 'maxmemory_policy') ?? 'unknown';
  // Settings only CONFIG GET shows: when it fails they are not unsafe but unknown, and the operator must hear why.
  const unreadable = ([['appendfsync', appendfsyncRead], ['no-appendfsync-on-rewrite', rewriteRead]] as const).filter(([, read]) => read.error !== null);
  const problems: string[] = [];
  // A replica acknowledges writes (when `replica-read-only no`) that its next full resync from the master deletes.
  if (infoField(replication, 'role') === 'slave') {
    problems.push(`this server is a replica of ${infoField(replication, 'master_host') ?? '?'}:${infoField(replication, 'master_port') ?? '?'}: what is written on a replica is lost when it resyncs from its master (a read-only one refuses it). Point REDIS_URL at the master`);
  }
  if (appendonly !== 'yes' || !aofEnabled) problems.push('append-only file is off');
  if (unreadable.length > 0) {
    problems.push(`could not read ${unreadable.map(([name]) => name).join(', ')}: CONFIG GET failed (${unreadable[0]?.[1].error ?? ''}), so whether Redis fsyncs every entry is unknown. Let Interlock's Redis user run CONFIG GET (ACL: +config|get; a provider that renamed or disabled CONFIG may offer it)`);
  }
  if (appendfsync !== 'always' && appendfsyncRead.error === null) problems.push(`appendfsync is ${appendfsync}, not always`);
  if (noAppendfsyncOnRewrite !== 'no' && rewriteRead.error === null) problems.push(`no-appendfsync-on-rewrite is ${noAppendfsyncOnRewrite}, not no, so entries acknowledged during an AOF rewrite or snapshot may never reach the disk`);
  if (maxmemoryPolicy !== 'noeviction') problems.push(`maxmemory-policy is ${maxmemoryPolicy}, not noeviction, so Redis may evict a journal and a committed request would commit again`);
  return { durable: problems.length === 0, appendonly, appendfsync, maxmemoryPolicy, noAppendfsyncOnRewrite, problems, optedOut: optOut && problems.length > 0 };
}

/**
 * Logs a warning when a master of the service's Redis has no memory limit (`maxmemory 0` in INFO memory, which a
 * Redis that disabled CONFIG still answers); see the top of this file. For a process's start, beside its durability
 * check; a failure to read it is logged at debug and changes nothing.
 */
export async function warnUnboundedMemory(client: RedisClient, logger: Logger): Promise<void> {
  let unbounded: string[];
  try {
    const { nodes } = await writableNodesNow(client, SLOT_MAP_TIMEOUT_MS);
    const limits = await Promise.all(nodes.map(async (node) => infoField(String(await node.info('memory')), 'maxmemory')));
    unbounded = nodes.filter((_, index) => limits[index] === '0').map(nodeName);
  } catch (error) {
    logger.debug({ err: error }, "could not read Redis's memory limit");
    return;
  }
  if (unbounded.length === 0) return;
  logger.warn({ redis: unbounded }, `Redis has no memory limit (maxmemory 0 on ${unbounded.join(', ')}): under maxmemory-policy noeviction it never refuses a write with OOM, an outage the service would wait out, but grows until the kernel or its container kills it (and, replaying the same append-only file, may be killed again at restart). Set maxmemory below the memory Redis may use (README "Retention" says how to size it).`);
}

function unknownDurability(optOut: boolean, problem: string): Durability {
  return { durable: false, appendonly: 'unknown', appendfsync: 'unknown', maxmemoryPolicy: 'unknown', noAppendfsyncOnRewrite: 'unknown', problems: [problem], optedOut: optOut };
}

/** The persistence of every server that acknowledges writes (each master of a cluster); the weakest decides. */
export async function inspectDurability(client: RedisClient, optOut: boolean): Promise<Durability> {
  const { nodes, unserved } = await writableNodesNow(client, SLOT_MAP_TIMEOUT_MS);
  if (nodes.length === 0) return unknownDurability(optOut, 'no Redis server could be reached');
  const results = await Promise.all(nodes.map((node) => inspectNode(node, optOut)));
  if (results.length === 1 && results[0] && unserved === 0) return results[0];
  const problems = results.flatMap((result, index) => result.problems.map((problem) => `${nodeName(nodes[index])}: ${problem}`));
  // A slot no master that was read serves (being failed over, or on a master the client could not reach) is written
  // where nobody checked that it is kept.
  if (unserved > 0) problems.push(`${unserved} of the cluster's 16384 slots are served by no master whose settings could be read (a failover under way, or a master not reachable), so whether their writes are kept is unknown`);
  const weakest = results.find((result) => !result.durable) ?? results[0];
  return {
    durable: problems.length === 0,
    appendonly: weakest?.appendonly ?? 'unknown',
    appendfsync: weakest?.appendfsync ?? 'unknown',
    maxmemoryPolicy: weakest?.maxmemoryPolicy ?? 'unknown',
    noAppendfsyncOnRewrite: weakest?.noAppendfsyncOnRewrite ?? 'unknown',
    problems,
    optedOut: optOut && problems.length > 0,
  };
}

/**
 * One replica of a master as the master lists it (INFO replication, `slaveN:ip=…,port=…,state=…,offset=…,lag=…`): its
 * address, its link's state (`online` once it has synchronised and takes the write stream) and how many seconds ago it
 * last acknowledged (`lag`; a replica acknowledges its master every second), null when the master gives none.
 */
export type ReplicaLink = { address: string; state: string; lagSeconds: number | null };

/** A master (host:port) and the replicas it lists now. */
export type MasterReplicas = { master: string; replicas: ReplicaLink[] };

function replicaLinks(replication: string): ReplicaLink[] {
  return [...replication.matchAll(/^slave\d+:(.*)$/gm)].map((line) => {
    const fields = new Map((line[1] ?? '').trim().split(',').map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)] as const));
    const lag = Number(fields.get('lag') ?? Number.NaN);
    return { address: `${fields.get('ip') ?? '?'}:${fields.get('port') ?? '?'}`, state: fields.get('state') ?? 'unknown', lagSeconds: Number.isFinite(lag) ? lag : null };
  });
}

/**
 * The replicas of every server that acknowledges writes (each master of a cluster), as each lists them now: what the
 * WAIT of INTERLOCK_REDIS_MIN_REPLICAS can count on. A replica stopped or cut off stays listed `online` until the
 * master's repl-timeout drops it, but its lag grows from the moment it stops acknowledging.
 */
export async function inspectReplicas(client: RedisClient): Promise<MasterReplicas[]> {
  const { nodes } = await writableNodesNow(client, SLOT_MAP_TIMEOUT_MS);
  return Promise.all(nodes.map(async (node) => ({ master: nodeName(node), replicas: replicaLinks(String(await node.info('replication'))) })));
}

function nodeName(node: Redis | undefined): string {
  return node ? `${node.options.host ?? '?'}:${node.options.port ?? '?'}` : 'unknown node';
}

/** Throws unless Redis is durable or the operator opted out; either way the caller logs the result. */
export async function requireDurability(redis: RedisClient, optOut: boolean, phase: 'start' | 'intake' = 'start'): Promise<Durability> {
  const durability = await inspectDurability(redis, optOut);
  if (!durability.durable && !optOut) throw new DurabilityError(durability, { phase });
  return durability;
}

/**
 * The deployment's marker (keys.ts `deployment`) as this process found it when it started: the first process of a
 * deployment writes a random id, every later one reads it. Redis holds it as long as it holds the journal; a marker
 * that is gone or changed at a later check means Redis lost its data while this process ran, and a request sent before
 * the loss would read as new and be sent again.
 */
export type DeploymentMarker = { key: string; held: string };

/**
 * The deployment marker a running monitor holds, for a store that writes beside the journal on the same connection
 * (approvals.ts): its scripts compare `held` with the marker in the step that writes, as the journal's binding scripts
 * do, and `lost` records a loss one of them (or a read) found and returns the refusal to throw
 * (DurabilityMonitor.recordLoss). `dataLost`: a loss was recorded already (it stands whatever Redis holds now).
 */
export type HeldMarker = { key: string; held: string; lost(found: string | null): DurabilityError; dataLost(): boolean };

/** Per connection, the markers of the durability monitors running on it, the first started first. */
const heldMarkers = new WeakMap<RedisClient, HeldMarker[]>();

/**
 * The marker the first durability monitor running on `redis` holds (they all hold the one the process found at start),
 * or null while none runs there: a one-off command, which checks nothing (as the journal's scripts check nothing
 * before journal.holdMarker).
 */
export function heldMarkerOn(redis: RedisClient): HeldMarker | null {
  return heldMarkers.get(redis)?.[0] ?? null;
}

/**
 * Reads the marker, and writes one only when Redis has none (SET NX GET, one atomic step, so two first processes agree
 * on one id); returns the one Redis holds. Read first so that a restart needs no write: a Redis at its memory limit
 * refuses every write (OOM), and a process restarted then must still start, serve reads and answer /readyz 503 (README
 * "Retention"). A first start refused OOM throws a RedisFullError.
 */
export async function holdDeploymentMarker(redis: RedisClient, key: string): Promise<DeploymentMarker> {
  const found = await redis.get(key);
  if (found !== null) return { key, held: found };
  const mine = randomBytes(16).toString('hex');
  try {
    const before = (await redis.call('SET', key, mine, 'NX', 'GET')) as string | null;
    return { key, held: before ?? mine };
  } catch (error) {
    throw await redisFullOr(redis, error, `write the deployment marker ${key} (a first start of the deployment on this Redis writes it)`);
  }
}

/**
 * Joins the deployment on this Redis and key prefix with this process's signing key (enter-deployment-2.lua): the
 * first process records its kid; a later one must sign with a kid the deployment signs with, or hold the kid it rotated
 * to last (its newest) as retired (a rotation, which adds the new kid and makes it the newest; a deployment recorded
 * before the newest was kept needs every kid it recorded held as retired). Throws a DeploymentKeyError otherwise,
 * before the process recovers, records or signs anything there. `kid`: the key this process signs with; `retired`: the
 * kids it holds as retired. A Redis at its memory limit refuses only the recording (a refusal writes nothing):
 * `unrecorded`, and the process starts, as a restart on a full Redis must (README "Retention"). `check`: only whether
 * this key may sign there (a one-off command that records entries), recording nothing.
 */
export async function enterDeployment(redis: RedisClient, where: { key: string; newestKey: string; keyPrefix: string }, kid: string, retired: readonly string[], mode: 'join' | 'check' = 'join'): Promise<'first' | 'added' | 'known' | 'unrecorded'> {
  let reply: { status: 'OK'; recorded: 'first' | 'added' | 'known' | 'unrecorded' } | { status: 'FOREIGN'; kids: string[]; count: number; newest: string | false };
  try {
    reply = await createScriptRunner(redis)('enter-deployment-2', [where.key, where.newestKey], [mode, kid, ...retired]);
  } catch (error) {
    if (redisTurnedAway(error) === 'OOM') return 'unrecorded';
    throw error;
  }
  if (reply.status === 'OK') return reply.recorded;
  throw new DeploymentKeyError(where, kid, retired, reply.kids, reply.newest === false ? null : reply.newest);
}

/**
 * Records `currency` (INTERLOCK_CREDIT_CURRENCY) as the one the deployment gives credits in (keys.ts creditCurrency),
 * and returns the one recorded before when it was another: the processes of one deployment set differently decide
 * credits in one currency and send them in another, which refuses every one as stale. The last process started records
 * its own, so a deliberate change is warned of by the first process restarted with it, not by every start after. Read
 * first, so a restart with the same currency writes nothing (a Redis at its memory limit refuses every write, and such
 * a restart must still start). A full Redis refusing the write (OOM) leaves the currency read recorded, and that one is
 * still returned when it is another (`recorded` false), so the process set apart is warned all the same.
 */
export async function recordCreditCurrency(redis: RedisClient, key: string, currency: string): Promise<{ before: string; recorded: boolean } | null> {
  const found = await redis.get(key);
  if (found === currency) return null;
  try {
    const before = (await redis.call('SET', key, currency, 'GET')) as string | null;
    return before === null || before === currency ? null : { before, recorded: true };
  } catch (error) {
    if (redisTurnedAway(error) !== 'OOM') throw error;
    return found === null ? null : { before: found, recorded: false };
  }
}

/** How many keys a start looks through at most for other deployments' markers (otherDeploymentsOn), on each master. */
export const MARKER_SCAN_KEYS = 5_000;

/**
 * The key prefixes of the other deployments on this Redis: those whose marker (keys.ts deployment) a SCAN of at most
 * `scanKeys` keys per master finds, sorted, `ownPrefix` left out. Once at a start, so bounded: on a Redis holding more
 * keys some are missed (`complete` false). Advice only, never a refusal, so a Redis that refuses SCAN (an ACL) or a
 * cluster whose slot map cannot be read answers null.
 */
export async function otherDeploymentsOn(redis: RedisClient, ownPrefix: string, scanKeys = MARKER_SCAN_KEYS): Promise<{ prefixes: string[]; complete: boolean } | null> {
  const found = new Set<string>();
  let complete = true;
  try {
    const { nodes } = await writableNodesNow(redis, SLOT_MAP_TIMEOUT_MS);
    for (const node of nodes) {
      let cursor = '0';
      let looked = 0;
      do {
        const [next, keys] = await node.scan(cursor, 'MATCH', DEPLOYMENT_MARKER_MATCH, 'COUNT', 1000);
        cursor = next;
        looked += 1000;
        for (const key of keys) {
          const prefix = prefixOfDeploymentMarker(key);
          if (prefix !== null && prefix !== ownPrefix) found.add(prefix);
        }
      } while (cursor !== '0' && looked < scanKeys);
      if (cursor !== '0') complete = false;
    }
  } catch {
    return null;
  }
  return { prefixes: [...found].sort(), complete };
}

/**
 * The deployment's record of its signing keys (enter-deployment-2.lua's KEYS): `kids`, sorted; `newest`, the kid it
 * rotated to last, or null when not known (none recorded, or an earlier release rotated since); `record`, KEYS[2] as
 * stored (null: absent), which an adoption must find unchanged.
 */
export type DeploymentKeys = { kids: string[]; newest: string | null; record: string | null };

/** What an adoption did: `adopted`, `unchanged` (the key was the deployment's only one already), or `changed`: the record is no longer the one read, and nothing was written. */
export type Adoption = 'adopted' | 'unchanged' | 'changed';

/**
 * The deployment's signing-key record on this Redis and key prefix, for `interlock keys adopt`: `read()` it, then
 * `adopt(kid, seen)` makes `kid` the deployment's only key and its newest, in one step that writes only while the
 * record is still `seen` (enter-deployment-2.lua 'adopt'). A process signing with a key dropped so is refused at its
 * next start (enterDeployment), unless it holds `kid` as retired.
 */
export function createDeploymentKeys(redis: RedisClient, where: { key: string; newestKey: string }): { read(): Promise<DeploymentKeys>; adopt(kid: string, seen: DeploymentKeys): Promise<Adoption> } {
  return {
    async read() {
      const [kids, record] = await Promise.all([redis.smembers(where.key), redis.get(where.newestKey)]);
      const recorded = record === null ? null : /^(.+)\|(\d+)$/.exec(record);
      const newest = recorded?.[1] !== undefined && Number(recorded[2]) === kids.length ? recorded[1] : null;
      return { kids: kids.sort(), newest, record };
    },
    async adopt(kid, seen) {
      const reply = await createScriptRunner(redis)<{ status: 'OK'; recorded: 'adopted' | 'unchanged' } | { status: 'CHANGED' }>('enter-deployment-2', [where.key, where.newestKey], ['adopt', kid, seen.record ?? '', ...seen.kids]);
      return reply.status === 'OK' ? reply.recorded : 'changed';
    },
  };
}

/**
 * A process whose signing key is not its deployment's: another deployment's, on this one's Redis and key prefix, or a
 * key the deployment never rotated to (a rotation holds the deployment's newest key as retired).
 */
export class DeploymentKeyError extends InterlockError {
  constructor(where: { key: string; newestKey: string; keyPrefix: string }, kid: string, retired: readonly string[], kids: readonly string[], newest: string | null) {
    const held = retired.length === 0 ? 'and holds no retired key' : `and holds ${retired.join(', ')} as retired`;
    const rotation =
      newest === null
        ? `a new key is taken only holding every one of them as retired (the key it rotated to last is not known: it was recorded before that was kept, or rotated by an earlier release since)`
        : `it rotated to ${newest} last, so a new key is taken only holding ${newest} as retired`;
    super(
      'invalid_config',
      `This process signs with key ${kid} ${held}, but the deployment on this Redis with key prefix ${where.keyPrefix} signs its receipts with ${kids.join(', ')}, and ${rotation}: this key is another deployment's (two deployments on one Redis left at the same INTERLOCK_KEY_PREFIX, say), or one this deployment never rotated to (a key made because INTERLOCK_SIGNING_KEY_FILE was not given), and would sign entries its auditors cannot check. Give this process its own INTERLOCK_KEY_PREFIX, or the deployment's signing key (INTERLOCK_SIGNING_KEY_FILE); to rotate, list the public half of the key the deployment signs with now in INTERLOCK_RETIRED_PUBLIC_KEYS_FILE (README "Rotating the signing key"); to rotate away from a key that leaked, without trusting it any more, or from one lost for good, make this key the deployment's only one on purpose with \`npx interlock keys adopt --yes\` (run with this process's settings: its REDIS_URL and INTERLOCK_KEY_PREFIX, and its key as INTERLOCK_SIGNING_KEY_FILE or in its INTERLOCK_DATA_DIR; without --yes it only shows what it would change) and start again.`,
    );
    this.name = 'DeploymentKeyError';
  }
}

/**
 * A start that needed a write Redis refused because it is at its memory limit (OOM under noeviction). On the registry
 * as `redis_unavailable` (a CLI exits 2): the environment must change, since at start nothing waits the outage out.
 */
export class RedisFullError extends InterlockError {
  constructor(message: string, cause: unknown) {
    super('redis_unavailable', message, { cause });
    this.name = 'RedisFullError';
  }
}

/**
 * `error` as a RedisFullError when Redis refused it OOM, saying how full Redis is (INFO memory, which a full Redis
 * still answers) and what to do; `error` unchanged otherwise. `what`: the write refused, as "to <what>" reads.
 */
export async function redisFullOr(redis: RedisClient, error: unknown, what: string): Promise<unknown> {
  if (redisTurnedAway(error) !== 'OOM') return error;
  let usage = '';
  try {
    const memory = String(await redis.info('memory'));
    const used = infoField(memory, 'used_memory_human');
    const limit = infoField(memory, 'maxmemory_human');
    if (used !== null && limit !== null) usage = ` (used ${used} of maxmemory ${limit})`;
  } catch {
    // How full is a detail: the sentence stands without it.
  }
  return new RedisFullError(`Redis is full${usage}: it refused to ${what} with OOM, so this process did not start. Raise Redis's maxmemory (INTERLOCK_REDIS_MAXMEMORY for the private Redis serve starts; CONFIG SET maxmemory and its config file for your own Redis), or free space as the README's "Retention" says, then start it again.`, error);
}

/** Why the marker no longer proves the data is the one this process started on, or null while it does. */
async function markerProblem(redis: RedisClient, marker: DeploymentMarker): Promise<string | null> {
  const now = await redis.get(marker.key);
  return now === marker.held ? null : markerLoss(marker, now);
}

/** The loss of the data, in the refusals' words, when marker `marker` reads `now` (null: gone) instead of its own id. */
function markerLoss(marker: DeploymentMarker, now: string | null): string {
  const what = now === null ? 'is gone' : 'holds another id (another process wrote it after finding none)';
  return `Redis lost its data while this process ran: the deployment marker ${marker.key} ${what}, as after a restart without the append-only file, a FLUSHALL or a failover to a server without the data. A request sent before the loss would read as new and be sent again, so this process sends nothing until it is restarted: find out what Redis lost and check at Stripe what was sent before it, then restart every Interlock process of the deployment`;
}

/** A durability reading and when it was taken (ms since the epoch, this host's clock). `checkError` is set when the check itself failed. */
export type CheckedDurability = Durability & { checkedAt: number; checkError: string | null; dataLost?: boolean };

export type DurabilityMonitor = {
  /** Re-checks every `intervalMs` until stopped; checks at once when no initial reading was given. Idempotent. */
  start(): void;
  /** Stops re-checking and waits for a check in progress, so the caller may close the connection after it. */
  stop(): Promise<void>;
  /** Runs one check now, records it (logging a change) and returns it. */
  check(): Promise<CheckedDurability>;
  /** The last reading. */
  current(): CheckedDurability;
  /**
   * Throws a DurabilityError unless the last reading was durable or the operator opted out, and while the connection is
   * down or came back unchecked (its durability is unknown then: see awaitingRecheck). Call before every send.
   */
  assertDurable(): void;
  /**
   * Why Redis no longer holds the data this process started on (the deployment marker gone or changed), in the words
   * the refusals use, or null while it does. Once found it stays until the process restarts, whatever later checks
   * read: the process's own verdict, for its readiness and metrics.
   */
  dataLoss(): string | null;
  /**
   * Records a loss found elsewhere: a binding script read the marker gone (`found` null) or holding `found`
   * (journal.ts holdMarker). From now on every reading says so and assertDurable throws, as after a check that found
   * it (logged once, by whichever found it first). Returns the DurabilityError assertDurable throws now.
   */
  recordLoss(found: string | null): DurabilityError;
  /**
   * While running, the connection to Redis dropped and came back and no check has answered since: assertDurable
   * refuses meanwhile, and readiness says so too (durabilityOf). Null otherwise, or once a loss was recorded (which
   * says more). The sentence names what is awaited.
   */
  awaitingRecheck(): string | null;
  /**
   * Resolves once the connection is up and no reconnect's re-check is awaited (awaitingRecheck() null), checking again
   * every 200 ms, or after `withinMs` whatever the checks found (the guard then still refuses): for work that runs
   * when a connection (another one, such as a queue's) comes back and would otherwise meet the refusal the re-check is
   * about to lift.
   */
  rechecked(withinMs: number): Promise<void>;
  /** Each master's replicas as it lists them now (inspectReplicas), read through the monitor's connection: for readiness. */
  replicas(): Promise<MasterReplicas[]>;
};

type Status = 'durable' | 'not_durable' | 'unknown';

function statusOf(reading: CheckedDurability): { status: Status; key: string } {
  if (reading.checkError !== null) return { status: 'unknown', key: 'unknown' };
  if (reading.durable) return { status: 'durable', key: 'durable' };
  return { status: 'not_durable', key: `not_durable:${[...reading.problems].sort().join('|')}` };
}

/**
 * Re-reads the persistence settings while the worker runs: an operator's `CONFIG SET appendonly no`, or a
 * failover to a differently configured server, must stop dispatching within about one interval. A check that
 * fails or does not answer within `checkTimeoutMs` (default: the interval, at least 1 s) reads as "unknown",
 * which is not durable: the gate cannot promise I1 on a Redis it cannot see.
 */
export function createDurabilityMonitor(deps: {
  redis: RedisClient;
  optOut: boolean;
  intervalMs: number;
  logger: Logger;
  /** The reading the worker started on (requireDurability's), so the first re-check waits one interval. */
  initial?: Durability;
  /** The deployment's marker as this process found it at start (holdDeploymentMarker); read again at every check. */
  marker?: DeploymentMarker;
  checkTimeoutMs?: number;
  now?: () => number;
}): DurabilityMonitor {
  const { redis, optOut, intervalMs, logger } = deps;
  const now = deps.now ?? (() => Date.now());
  const checkTimeoutMs = deps.checkTimeoutMs ?? Math.max(intervalMs, 1_000);
  let reading: CheckedDurability = deps.initial
    ? { ...deps.initial, checkedAt: now(), checkError: null }
    : { ...unknownDurability(optOut, 'Redis durability has not been checked yet'), checkedAt: now(), checkError: 'not checked yet' };
  let timer: NodeJS.Timeout | null = null;
  let running = false;
  let stops = 0;
  let inFlight: Promise<CheckedDurability> | null = null;
  // Once the marker was found gone, every later reading says so: data restored from an older copy brings the marker
  // back but not what was written after that copy.
  let lost: string | null = null;
  // Without an initial reading the first check reports what it found, not a change.
  let first = deps.initial === undefined;
  // The connection to Redis dropped and came back (its 'close', then 'ready'): the Redis it reaches may be another or
  // an empty one, so nothing is sent until a check has read it since (`rechecked`: how many reconnects were checked so).
  // A check that answers after the reconnect read the marker after it: a reply read before the drop is recorded in the
  // same turn of the event loop, before the connection's 'close' can be heard, and a command left unanswered by the
  // drop fails or is sent again on the new connection.
  let dropped = false;
  let reconnects = 0;
  let rechecked = 0;

  async function read(): Promise<CheckedDurability> {
    let timeout: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timeout = setTimeout(() => reject(new Error(`no answer within ${checkTimeoutMs} ms`)), checkTimeoutMs);
      timeout.unref();
    });
    try {
      const durability = await Promise.race([inspectDurability(redis, optOut), timedOut]);
      if (deps.marker && lost === null) lost = await Promise.race([markerProblem(redis, deps.marker), timedOut]);
      if (lost === null) return { ...durability, checkedAt: now(), checkError: null };
      return { ...durability, durable: false, problems: [lost, ...durability.problems], optedOut: false, checkedAt: now(), checkError: null, dataLost: true };
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      const unknown: CheckedDurability = { ...unknownDurability(optOut, `the durability check failed (${message}), so Redis's persistence is unknown`), checkedAt: now(), checkError: message };
      // A check that fails says nothing of the data: a loss found before stands, opted out or not.
      return lost === null ? unknown : { ...unknown, problems: [lost, ...unknown.problems], optedOut: false, dataLost: true };
    } finally {
      clearTimeout(timeout);
    }
  }

  function record(next: CheckedDurability): void {
    if (next.checkError === null) rechecked = reconnects;
    const before = statusOf(reading);
    const after = statusOf(next);
    const firstReading = first;
    first = false;
    reading = next;
    if (before.key === after.key && !firstReading) return;
    const fields = { durability: next, was: before.status };
    const problems = next.problems.join('; ');
    // The loss's own words say what stops and what to do (not "until a check finds it durable": it is for good).
    if (next.dataLost === true) {
      logger.error(fields, problems);
      return;
    }
    switch (after.status) {
      case 'durable':
        logger.info(fields, `${firstReading ? 'Redis is durable' : 'Redis is durable again'} (appendonly ${next.appendonly}, appendfsync ${next.appendfsync}, maxmemory-policy ${next.maxmemoryPolicy}); dispatching ${firstReading ? 'may proceed' : 'resumes'}`);
        return;
      case 'not_durable':
        if (optOut) logger.warn(fields, `Redis is not durable (${problems}); sending anyway because ${UNSAFE_DURABILITY_ENV} is set`);
        else logger.error(fields, `${firstReading ? 'Redis is not durable' : 'Redis is no longer durable'} (${problems}); dispatching stops until a check finds it durable again. ${REMEDY}.`);
        return;
      case 'unknown':
        if (optOut) logger.warn(fields, `Could not check Redis durability (${next.checkError ?? 'unknown error'}); sending anyway because ${UNSAFE_DURABILITY_ENV} is set`);
        else logger.error(fields, `Could not check Redis durability (${next.checkError ?? 'unknown error'}); treating Redis as not durable, so dispatching stops until a check succeeds. Check that Redis is reachable.`);
        return;
      default: {
        const never: never = after.status;
        return never;
      }
    }
  }

  // Redis's events, listened to while running: a reconnect re-checks at once, rather than a check interval later.
  const onClose = (): void => {
    dropped = true;
  };
  const onReady = (): void => {
    if (!dropped) return;
    dropped = false;
    reconnects += 1;
    // A check under way may have begun before the drop (and fail): this one starts after it, so it reads the Redis
    // reached now.
    void (inFlight ?? Promise.resolve()).then(() => check());
  };

  function check(): Promise<CheckedDurability> {
    const generation = stops;
    inFlight ??= read().then((next) => {
      inFlight = null;
      // A reading begun before stop() is dropped: the connection is closing, and its failure is no news.
      if (generation === stops) record(next);
      return reading;
    });
    return inFlight;
  }

  // One timer at a time, even when a stop and a start overlap a check in progress.
  function schedule(): void {
    if (!running || timer !== null) return;
    timer = setTimeout(() => {
      timer = null;
      void check().then(schedule);
    }, intervalMs);
    timer.unref();
  }

  function recordLoss(found: string | null): DurabilityError {
    if (lost === null) {
      lost = markerLoss(deps.marker ?? { key: 'the deployment marker', held: '' }, found);
      // Kept as the next check will read it (the loss, then the settings as last read), so that check logs nothing new.
      const kept = reading.checkError === null ? reading.problems : [];
      record({ ...reading, durable: false, problems: [lost, ...kept], optedOut: false, checkedAt: now(), checkError: null, dataLost: true });
    }
    return new DurabilityError(reading, { phase: 'running', checkedAt: reading.checkedAt });
  }

  // The marker this monitor holds, offered to the stores on its connection while it runs (heldMarkerOn).
  const holding: HeldMarker | null = deps.marker ? { key: deps.marker.key, held: deps.marker.held, lost: recordLoss, dataLost: () => lost !== null } : null;

  return {
    start() {
      if (running) return;
      running = true;
      redis.on('close', onClose);
      redis.on('ready', onReady);
      if (holding) heldMarkers.set(redis, [...(heldMarkers.get(redis) ?? []), holding]);
      if (deps.initial) schedule();
      else void check().then(schedule);
    },
    async stop() {
      running = false;
      stops += 1;
      redis.off('close', onClose);
      redis.off('ready', onReady);
      if (holding) heldMarkers.set(redis, (heldMarkers.get(redis) ?? []).filter((one) => one !== holding));
      rechecked = reconnects;
      if (timer) clearTimeout(timer);
      timer = null;
      // A reading under way is not waited for: it is dropped (check() records only readings begun since the last
      // stop), and on a Redis that does not answer it would hold whoever is stopping for the whole check timeout.
    },
    check,
    current: () => reading,
    assertDurable() {
      // The opt-out accepts settings that may lose data, not a loss that happened: nothing is sent after one either way,
      // nor after a reconnect, whose Redis may have lost it, until a check since has answered.
      // Down, the state is unknown too: a command queued now (ioredis's offline queue) is written on the reconnect,
      // before its re-check can start, to whichever Redis that reaches.
      if (running && dropped && reading.dataLost !== true) {
        throw new DurabilityError({ ...reading, durable: false, problems: [`the deployment marker ${deps.marker?.key ?? '(none held)'} cannot be read until it is back`], optedOut: false }, { phase: 'disconnected', checkedAt: reading.checkedAt });
      }
      if (running && rechecked < reconnects && reading.dataLost !== true) {
        throw new DurabilityError({ ...reading, durable: false, problems: [`the deployment marker ${deps.marker?.key ?? '(none held)'} has not been read since`], optedOut: false }, { phase: 'reconnected', checkedAt: reading.checkedAt });
      }
      if (reading.durable || (optOut && reading.dataLost !== true)) return;
      throw new DurabilityError(reading, { phase: 'running', checkedAt: reading.checkedAt });
    },
    dataLoss: () => lost,
    replicas: () => inspectReplicas(redis),
    awaitingRecheck: () =>
      running && rechecked < reconnects && reading.dataLost !== true
        ? `the connection to Redis dropped and came back, and the check of the Redis it reaches now (its settings, and whether it still holds the deployment marker ${deps.marker?.key ?? '(none held)'}) has not answered yet`
        : null,
    async rechecked(withinMs) {
      const giveUp = Date.now() + withinMs;
      // Dropped and not back yet counts too: another connection (a queue's) may come back before this one does.
      while (running && (dropped || rechecked < reconnects) && reading.dataLost !== true && Date.now() < giveUp) {
        if (!dropped) await check();
        if (!dropped && rechecked >= reconnects) return;
        await new Promise((resolve) => setTimeout(resolve, 200).unref());
      }
    },
    recordLoss,
  };
}
