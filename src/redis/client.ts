// The Redis connection: one server, or a Redis Cluster reached through any of its nodes. Every script's keys
// share one hash tag (keys.ts), so the gate runs the same on both.
import { connect } from 'node:net';
import { Cluster, Command, Redis } from 'ioredis';
import { InterlockError } from '../core/errors.js';

export type RedisClient = Redis | Cluster;

/**
 * How long a closing connection waits for its socket to close before destroying it. ioredis's 2 s default is armed
 * even for a socket Redis already dropped (an outage), whose close never comes again: every such connection held a
 * stopping process for 2 s after everything else had closed. A socket that is ended has sent what it had; Redis
 * closes its side within milliseconds when it is there.
 */
const DISCONNECT_TIMEOUT_MS = 250;

export function createRedisClient(options: { redisUrl: string; redisCluster: boolean; redisCommandTimeoutMs?: number }, behaviour: { failFast?: boolean } = {}): RedisClient {
  // A one-shot command (the CLI) gives up after two reconnects instead of waiting on a Redis that is not there, and
  // times every command, queued ones too: a Redis that accepts the connection but never answers its handshake holds
  // commands in the offline queue, and a CLI that gives up on them exits before they could be sent.
  const oneShot = behaviour.failFast === true;
  const timeoutMs = oneShot ? undefined : options.redisCommandTimeoutMs;
  const commandTimeout = oneShot && options.redisCommandTimeoutMs !== undefined ? { commandTimeout: options.redisCommandTimeoutMs } : {};
  // A command written whose reply a dropped connection lost is never sent again (ioredis resends it after the reconnect
  // by default): it may have run, and a script is not idempotent (a settle run twice answers NOT_OPEN, a dispatch step
  // run twice answers a retry). Its caller gets an error instead (failUnanswered), which the gate takes for an unknown
  // outcome. Commands not yet written when the connection dropped (the offline queue) are still sent once it is back.
  const connection = { disconnectTimeout: DISCONNECT_TIMEOUT_MS, autoResendUnfulfilledCommands: false, ...(oneShot ? { maxRetriesPerRequest: 2, retryStrategy: (times: number) => (times > 2 ? null : 200), ...commandTimeout } : { maxRetriesPerRequest: 3 }) };
  if (!options.redisCluster) return boundedWaits(batchWrites(failUnanswered(new Redis(options.redisUrl, connection))), timeoutMs);
  const url = new URL(options.redisUrl);
  // A cluster whose slot map was never loaded is given up after a few tries, as a one-shot command gives it up: no node
  // answers, or the node answers and is no cluster (`cluster support disabled`), and the service's start would wait on
  // it for ever. Once it was ready, the service waits out a cluster that goes away, as ioredis does by default.
  let reached = false;
  const firstRefresh = (times: number) => (times > FIRST_SLOT_MAP_TRIES ? null : 200);
  const clusterRetryStrategy = oneShot ? firstRefresh : (times: number) => (reached ? Math.min(100 + times * 2, 2000) : firstRefresh(times));
  const cluster = new Cluster([{ host: url.hostname, port: Number(url.port || 6379) }], { redisOptions: { ...connection, ...clusterNodeOptions(url) }, clusterRetryStrategy, ...CLUSTER_REDIRECTIONS });
  cluster.once('ready', () => {
    reached = true;
  });
  cluster.on('+node', (node: Redis) => boundedWaits(batchWrites(failUnanswered(node)), timeoutMs));
  return keepLostReplies(cluster);
}

/**
 * A command whose reply a dropped connection lost (RedisReplyLost, failUnanswered) on the try that used up its
 * redirections fails with that RedisReplyLost, as on any other try. ioredis counts a try against maxRedirections before
 * it looks at the try's error, and then rejects with a plain Error that names the error only in words ("Too many
 * Cluster redirections. Last error: RedisReplyLost: …", REDIRECTIONS_GIVEN_UP): an outage that every check of an
 * unknown outcome (`instanceof RedisReplyLost`, an InterlockError: the API's answer, the settle that looks for its own
 * commit, the CLI's) would miss, and so say that a command which may have run did not.
 */
function keepLostReplies(cluster: Cluster): Cluster {
  const handle = cluster.handleError.bind(cluster);
  cluster.handleError = (error: Error, ttl: { value?: number }, handlers: { maxRedirections: (givenUp: Error) => void }) =>
    handle(error, ttl, error instanceof RedisReplyLost ? { ...handlers, maxRedirections: () => handlers.maxRedirections(error) } : handlers);
  return cluster;
}

/**
 * How long the gate's cluster client follows a slot that is moving before it gives the command up (an outage then:
 * redisTurnedAway). A reshard refuses a multi-key script TRYAGAIN for as long as the slot's keys are split between two
 * nodes, which lasts as long as moving that slot's keys; ioredis's default (16 tries 100 ms apart, 1.6 s) gave a
 * command up within an ordinary move. 24 tries 200 ms apart wait about 5 s, as long as a command's default timeout
 * (INTERLOCK_REDIS_COMMAND_TIMEOUT_MS). MOVED and ASK are followed at once, so they hardly count against it.
 */
const CLUSTER_REDIRECTIONS = { maxRedirections: 24, retryDelayOnTryAgain: 200 } as const;

/** Tries to load a cluster's first slot map (200 ms apart) before a client gives it up (createRedisClient). */
const FIRST_SLOT_MAP_TRIES = 2;

/**
 * What the server at REDIS_URL says of INTERLOCK_REDIS_CLUSTER: `problem`, why the two disagree (a standalone Redis
 * given with the flag: the cluster client never loads a slot map; a cluster node given without it: every key another
 * node serves would be refused MOVED); `noAnswer`, the server took no command (or no TLS handshake) within the command
 * timeout, said as the client of a command says it ("Command timed out"), with `accepted`, whether it took the TCP
 * connection first (a server that is there, answering nothing) or not (a host that is down, a firewall that drops it),
 * and `why`, what that means and what to do (noAnswerSentence); null when they agree, or when it could not be read
 * otherwise (Redis not reached, INFO and CLUSTER INFO both refused): the connection's own checks say what is
 * wrong then. Read from `INFO cluster` on a connection of its own that gives up at once, or, where INFO is refused (an
 * ACL `-info`, common on managed Redis), from `CLUSTER INFO`, which a standalone Redis refuses as "cluster support
 * disabled". `notDone` says what the refusal stopped: the service's start, or a one-shot command.
 */
export async function checkClusterMode(options: { redisUrl: string; redisCluster: boolean; redisCommandTimeoutMs?: number }, shownUrl: string, notDone: string): Promise<{ problem: string } | { noAnswer: string } | null> {
  const probe = new Redis(options.redisUrl, { lazyConnect: true, enableReadyCheck: false, maxRetriesPerRequest: 0, retryStrategy: () => null, enableOfflineQueue: false, connectTimeout: options.redisCommandTimeoutMs ?? 5_000, commandTimeout: options.redisCommandTimeoutMs ?? 5_000, disconnectTimeout: DISCONNECT_TIMEOUT_MS });
  // A handshake (HELLO, TLS) that timed out is said only on the error event: connect() is rejected "Connection is
  // closed".
  let timedOut = false;
  probe.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'ETIMEDOUT' || isRedisTimeout(error)) timedOut = true;
  });
  let said: { enabled: boolean; how: string } | null;
  try {
    await probe.connect();
    said = await clusterEnabled(probe);
  } catch (error) {
    // A server that accepts the connection and never answers (a stuck Redis, a proxy with no backend, rediss:// at a
    // plain Redis whose TLS handshake never ends) has had its whole timeout: a second connection would wait it again.
    return timedOut || isRedisTimeout(error) ? { noAnswer: 'Command timed out' } : null;
  } finally {
    probe.disconnect();
  }
  if (said === null) return null;
  if (options.redisCluster && !said.enabled) return { problem: `INTERLOCK_REDIS_CLUSTER is set, but the Redis at ${shownUrl} is not a node of a Redis Cluster (${said.how}), so ${notDone}. Unset INTERLOCK_REDIS_CLUSTER for a single Redis, or point REDIS_URL at a node of the cluster.` };
  if (!options.redisCluster && said.enabled) return { problem: `The Redis at ${shownUrl} is a node of a Redis Cluster (${said.how}), but INTERLOCK_REDIS_CLUSTER is not set, so ${notDone}: a client of one server would be refused every key another node serves. Set INTERLOCK_REDIS_CLUSTER=1.` };
  return null;
}

/** Whether the server at `redisUrl` takes a TCP connection within `timeoutMs` (nothing is sent on it). */
function takesConnection(redisUrl: string, timeoutMs: number): Promise<boolean> {
  const url = new URL(redisUrl);
  return new Promise((resolve) => {
    const socket = connect({ host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port || 6379) });
    const done = (taken: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(taken);
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/**
 * What a server at REDIS_URL that answered nothing within the command timeout (checkClusterMode's noAnswer) means, and
 * what to do, in whole sentences: `tls`, REDIS_URL is rediss:// (a plain Redis never answers a TLS handshake: a scheme
 * copied from a managed Redis); `accepted`, the server took the TCP connection.
 */
export function noAnswerSentence(how: { tls: boolean; accepted: boolean; timeoutMs: number }): string {
  const within = `within ${how.timeoutMs} ms (INTERLOCK_REDIS_COMMAND_TIMEOUT_MS)`;
  if (!how.accepted) return `The server did not take the connection ${within}: check that the host is up and that no firewall drops connections from here.`;
  if (how.tls) return `The server accepted the connection but answered neither TLS nor a command ${within}. If it is a plain Redis (without TLS), use redis:// in REDIS_URL.`;
  return `The server accepted the connection but answered no command ${within}: a Redis that hangs, or a proxy with nothing behind it. Check that REDIS_URL names a Redis that answers.`;
}

/**
 * Why the service's start stops on the server at REDIS_URL (checkClusterMode), or null: it and INTERLOCK_REDIS_CLUSTER
 * disagree, or it took the connection and then answered nothing within the command timeout (the connection the start
 * opens next would only wait it again: for rediss:// at a plain Redis, ioredis's retries of a handshake that never
 * ends, about 90 s, to say "connect ETIMEDOUT"). A server that did not take the connection is left to the start's own
 * checks, which wait on it as the service does.
 */
export async function clusterModeProblem(options: { redisUrl: string; redisCluster: boolean; redisCommandTimeoutMs?: number }, shownUrl: string): Promise<string | null> {
  const checked = await checkClusterMode(options, shownUrl, 'the service did not start');
  if (checked === null) return null;
  if ('problem' in checked) return checked.problem;
  // ioredis says a TLS handshake that never ends as "connect ETIMEDOUT", as it says a connection never taken: a bare
  // TCP connection tells the two apart (a one-shot command opens no second one: it fails on the first as it is).
  const timeoutMs = options.redisCommandTimeoutMs ?? 5_000;
  const accepted = await takesConnection(options.redisUrl, timeoutMs);
  return accepted ? `Cannot reach Redis at ${shownUrl} (${checked.noAnswer}), so the service did not start. ${noAnswerSentence({ tls: /^rediss:/i.test(options.redisUrl), accepted, timeoutMs })}` : null;
}

/**
 * Whether the server `probe` is connected to runs as a cluster node, and how it said so; null when it says neither
 * (INFO and CLUSTER INFO both refused or unreadable). Throws when the connection fails.
 */
async function clusterEnabled(probe: Redis): Promise<{ enabled: boolean; how: string } | null> {
  let refused: unknown;
  try {
    const enabled = /^cluster_enabled:(\d)/m.exec(String(await probe.info('cluster')))?.[1];
    if (enabled === '0' || enabled === '1') return { enabled: enabled === '1', how: `its INFO says cluster_enabled:${enabled}${enabled === '0' ? ': cluster support is disabled' : ''}` };
  } catch (error) {
    refused = error;
  }
  // INFO refused as a command (a reply error: the connection works), not lost with the connection.
  if (refused !== undefined && !isReplyError(refused)) throw refused;
  try {
    await probe.call('CLUSTER', 'INFO');
    return { enabled: true, how: 'it answers CLUSTER INFO' };
  } catch (error) {
    if (!isReplyError(error)) throw error;
    return /cluster support disabled/i.test(error.message) ? { enabled: false, how: `it answers CLUSTER INFO with "${error.message.slice(0, 120)}"` } : null;
  }
}

/** Whether `error` is Redis's answer refusing a command (the connection still works), not a lost connection. */
function isReplyError(error: unknown): error is Error {
  return error instanceof Error && error.name === 'ReplyError';
}

/**
 * What REDIS_URL says about every node of a cluster: its user and password, and TLS for rediss:// (ioredis reads a URL
 * only for one server; a cluster's nodes get options, and without `tls` they would be sent the password in clear).
 */
function clusterNodeOptions(url: URL): { password?: string; username?: string; tls?: Record<string, never> } {
  const auth = url.password === '' ? {} : { password: decodeURIComponent(url.password), ...(url.username === '' ? {} : { username: decodeURIComponent(url.username) }) };
  return url.protocol === 'rediss:' ? { ...auth, tls: {} } : auth;
}

/**
 * The error of a command that was written to Redis and whose connection closed before its reply came: Redis may have
 * run it or not, as for a command that timed out. Its message begins as the client's own for a closed connection.
 */
export class RedisReplyLost extends InterlockError {
  constructor(cause: unknown) {
    super('redis_unavailable', 'Connection is closed before Redis answered a command written to it: the command may or may not have run.', { cause });
    this.name = 'RedisReplyLost';
  }
}

/** The error ioredis fails a connection's commands with when it closes for good (utils CONNECTION_CLOSED_ERROR_MSG). */
const CONNECTION_CLOSED = 'Connection is closed.';

/**
 * Every command written on a connection that closes before its reply fails with RedisReplyLost, and nothing sends it
 * again. ioredis would: a connection that reconnects resends its unanswered commands (autoResendUnfulfilledCommands,
 * off in createRedisClient, where turned off they are dropped and their callers wait forever), and a cluster resends
 * a command failed with "Connection is closed." to the slot's node after a failover delay. Commands not yet written
 * (the offline queue) are left to ioredis: sending them later sends them once.
 */
export function failUnanswered(redis: Redis): Redis {
  const unanswered = (cause: unknown): void => {
    const queue = redis.commandQueue;
    if (queue.length === 0) return;
    redis.stream?.removeAllListeners('data');
    for (let item = queue.shift(); item !== undefined; item = queue.shift()) item.command.reject(new RedisReplyLost(cause));
  };
  // Closing for good (no reconnect, as every cluster node's connection): ioredis fails the commands waiting with one
  // error, which the cluster would take for a failover and retry.
  const flush = (redis as unknown as { flushQueue: (error: Error, options?: { commandQueue?: boolean }) => void }).flushQueue.bind(redis);
  (redis as unknown as { flushQueue: typeof flush }).flushQueue = (error, options) => {
    if (error.message === CONNECTION_CLOSED && options?.commandQueue !== false) unanswered(error);
    flush(error, options);
  };
  // Reconnecting: the commands written on the closed connection stay in its queue, which ioredis would resend (or, with
  // the resend off, drop unanswered) once the next connection is ready.
  redis.on('close', () => unanswered(new Error(CONNECTION_CLOSED)));
  // A copy (the journal's connections for WAIT) takes these options: without this, a command of its whose reply was lost
  // would never be answered.
  const duplicate = redis.duplicate.bind(redis);
  redis.duplicate = (override) => failUnanswered(duplicate(override));
  return redis;
}

/**
 * A command written to a connection that is up fails after `timeoutMs` without an answer: a Redis that hangs with its
 * connections open (stopped, swapping, a stalled host) holds neither a caller nor a send for as long as it hangs. A
 * command that waits for a reconnect is timed only from when it is written: it goes out once Redis is back, or fails
 * when ioredis stops retrying (maxRetriesPerRequest), as before. (ioredis's own commandTimeout also times a command
 * waiting in its offline queue, and then still sends it after the reconnect: a Redis restart would turn commands that
 * never left into commands that may run after their caller gave up.)
 *
 * The handshake of a new connection is timed too. A hung Redis whose connections were reset still has new ones
 * accepted (by the kernel), and then never answers their handshake; the commands waiting for that connection would
 * wait as long as Redis hangs. A handshake command that times out makes ioredis drop the connection and fail every
 * command waiting for it, which takes them out of its queue, so none of them is sent later; it then reconnects.
 */
export function boundedWaits(redis: Redis, timeoutMs: number | undefined): Redis {
  if (timeoutMs === undefined) return redis;
  const send = redis.sendCommand.bind(redis);
  redis.sendCommand = (command, stream) => {
    // Written now, as ioredis decides: a connection that is up and a socket still writable (one just lost is still
    // "ready" until its close is handled, and a command sent then waits for the reconnect).
    const writing = redis.stream?.writable === true && (redis.status === 'ready' || (redis.status === 'connect' && Command.checkFlag('HANDSHAKE_COMMANDS', command.name)));
    if (writing) command.setTimeout(timeoutMs);
    return send(command, stream);
  };
  return redis;
}

/**
 * Commands written in one turn of the event loop leave the process in one write: the connection's socket is corked
 * at the first write and uncorked on the next tick. A busy worker has many effects in flight, and a write syscall
 * per command was the largest cost of its Redis traffic; the commands, their order and their replies are the same.
 * (Unlike ioredis's auto-pipelining, no command waits for a batch to fill.)
 */
export function batchWrites(redis: Redis): Redis {
  const patch = (): void => {
    const stream = (redis as unknown as { stream?: { write: (...args: unknown[]) => boolean; cork(): void; uncork(): void; batched?: boolean } }).stream;
    if (!stream || stream.batched) return;
    stream.batched = true;
    const write = stream.write.bind(stream);
    let corked = false;
    stream.write = (...args: unknown[]) => {
      if (!corked) {
        corked = true;
        stream.cork();
        process.nextTick(() => {
          corked = false;
          stream.uncork();
        });
      }
      return write(...args);
    };
  };
  redis.on('connect', patch);
  patch();
  return redis;
}

/** What a server's first reply byte shows it speaks, when it is not Redis (its first reply is the server's own greeting or refusal). */
const FOREIGN_FIRST_BYTES: Readonly<Record<number, string>> = { 0x48: "an HTTP server's", 0x53: "an SSH server's" };

/**
 * The server at REDIS_URL, in words, when the client's error says its reply was no Redis reply (ioredis: `Unknown
 * RESP type 72 "H". Please report this.`, which asks for a bug report where the address is wrong); null otherwise.
 */
export function notRedisProtocol(message: string): string | null {
  const match = /Unknown RESP type (\d+)/.exec(message);
  if (match === null) return null;
  const byte = Number(match[1]);
  const looked = FOREIGN_FIRST_BYTES[byte];
  const shown = byte >= 0x21 && byte <= 0x7e ? `"${String.fromCharCode(byte)}"` : `byte ${byte}`;
  return `the server there does not speak the Redis protocol (its reply began with ${shown}${looked === undefined ? '' : `, as ${looked} does`})`;
}

/** The first byte of every reply Redis makes, RESP2 and RESP3 (`+PONG`, `-NOAUTH …`, a `%` map …). */
const RESP_FIRST_BYTES = new Set([...'+-:$*_,#!=(%~>|'].map((character) => character.charCodeAt(0)));

/**
 * Asks the server at a redis:// URL for a PING on a socket of its own and reads the first byte it answers: when that is
 * no Redis reply (an HTTP server's "H"), the text the client gives for such a reply (`Unknown RESP type 72`, which
 * notRedisProtocol reads); null when it answers as Redis does, answers nothing within `timeoutMs`, cannot be reached,
 * or the URL is rediss:// (a TLS handshake comes first). For a failed connection whose reason was a broken pipe or a
 * reset: a server that answers in another protocol closes the connection, and the client may see the closing first.
 */
export function foreignReply(redisUrl: string, timeoutMs = 1_000): Promise<string | null> {
  let url: URL;
  try {
    url = new URL(redisUrl);
  } catch {
    return Promise.resolve(null);
  }
  if (url.protocol !== 'redis:') return Promise.resolve(null);
  return new Promise((resolve) => {
    const socket = connect({ host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port || 6379) });
    const done = (answer: string | null): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(answer);
    };
    const timer = setTimeout(() => done(null), timeoutMs);
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (chunk: Buffer) => {
      const first = chunk[0];
      done(first === undefined || RESP_FIRST_BYTES.has(first) ? null : `Unknown RESP type ${first}`);
    });
    socket.once('error', () => done(null));
    socket.once('close', () => done(null));
  });
}

/**
 * The error replies by which Redis turns a command away for a while, whatever the command: memory full under
 * noeviction (OOM), another script running past busy-reply-threshold (BUSY), a restart still loading its data
 * (LOADING), a replica or a master that lost its replicas (READONLY, NOREPLICAS, MASTERDOWN), a failed save that stops
 * writes (MISCONF), a cluster moving or down (TRYAGAIN, CLUSTERDOWN), a password changed on the server under a
 * connection that signed in with the old one (WRONGPASS, NOAUTH). Redis refuses such a command before it writes
 * anything (a script is refused OOM only at its first write), so the same call may succeed later.
 */
const TURNED_AWAY = /^(OOM|BUSY|LOADING|READONLY|NOREPLICAS|MASTERDOWN|MISCONF|TRYAGAIN|CLUSTERDOWN|WRONGPASS|NOAUTH)\b/;

/**
 * The redirections a cluster node answers a command it did not run with (the slot is another node's, or is moving to
 * it): a cluster client follows them, and they are a refusal only as the last error of a command it gave up
 * (lastRedirected). A client of one server never follows them: there they mean REDIS_URL reaches a cluster node.
 */
const REDIRECTED = /^(MOVED|ASK)\b/;

/**
 * The text ioredis's cluster client rejects a command with once it has followed `maxRedirections` redirections and
 * retries (TRYAGAIN, CLUSTERDOWN and a closed connection count too): a plain Error that names its last error only in
 * words, `"Too many Cluster redirections. Last error: " + error` (ioredis cluster/index.js handleError), keeping no
 * reference to it.
 */
const REDIRECTIONS_GIVEN_UP = /^Too many Cluster redirections\. Last error: (\w+): ([^]*)$/;

/**
 * The last error of a command a cluster client gave up redirecting (REDIRECTIONS_GIVEN_UP), rebuilt from its name and
 * message (its code and class are lost), or null for any other error. The last error is whatever the last try met: a
 * refusal, a lost connection, a timeout, or the command's own error.
 */
function lastRedirected(error: unknown): Error | null {
  if (!(error instanceof Error) || error.name !== 'Error') return null;
  const [, name, message] = REDIRECTIONS_GIVEN_UP.exec(error.message) ?? [];
  if (name === undefined || message === undefined) return null;
  const last = new Error(message);
  last.name = name;
  return last;
}

/**
 * The word Redis turned a command away with (TURNED_AWAY), or null for any other error. A command a cluster client gave
 * up redirecting is classed by its last error, where MOVED and ASK are refusals too: the node that answered them did
 * not run the command.
 */
export function redisTurnedAway(error: unknown): string | null {
  const last = lastRedirected(error);
  if (last !== null) return last.name === 'ReplyError' ? (TURNED_AWAY.exec(last.message)?.[1] ?? REDIRECTED.exec(last.message)?.[1] ?? null) : null;
  if (!(error instanceof Error) || error.name !== 'ReplyError') return null;
  return TURNED_AWAY.exec(error.message)?.[1] ?? null;
}

/**
 * Whether an error is Redis not answering (refused or dropped connection, ioredis giving up on a command while it
 * reconnects) or turning every command away for a while (redisTurnedAway), rather than a refusal of what was asked:
 * the same call may succeed once Redis is back.
 */
export function isRedisOutage(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const last = lastRedirected(error);
  if (last !== null) return redisTurnedAway(error) !== null || isRedisOutage(last);
  const code = (error as { code?: unknown }).code;
  return error instanceof RedisReplyLost || error.name === 'MaxRetriesPerRequestError' || code === 'ECONNREFUSED' || code === 'ECONNRESET' || CLIENT_GAVE_UP.test(error.message) || isRedisTimeout(error) || redisTurnedAway(error) !== null;
}

/**
 * The whole message of a command the Redis clients failed without an answer: ioredis's closed connection (BullMQ's
 * says it without the full stop) and its offline queue turned off. Matched whole: an error from elsewhere (a
 * Stripe call, a decider) that only mentions a closed connection is not Redis being away.
 */
const CLIENT_GAVE_UP = /^(?:Connection is closed\.?|Stream isn't writeable and enableOfflineQueue options is false)$/;

/**
 * Whether an error is a command Redis did not answer in time (its connection open, nothing coming back). Unlike a
 * refused connection, the command may still have run, or run once Redis wakes up: what it would have written may
 * or may not be there.
 */
export function isRedisTimeout(error: unknown): boolean {
  return error instanceof RedisTimeout || (error instanceof Error && (lastRedirected(error) ?? error).message === 'Command timed out');
}

/** A wait on Redis that was given up (withinRedisTimeout). */
export class RedisTimeout extends InterlockError {
  constructor(message: string) {
    super('redis_unavailable', message);
    this.name = 'RedisTimeout';
  }
}

/**
 * `work` (commands on a queue connection, which waits out outages by design), or a RedisTimeout with `message` once
 * `ms` have passed without an answer. The commands go on: what they write may land later.
 */
export function withinRedisTimeout<T>(work: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new RedisTimeout(message)), ms);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

/**
 * A connection for BullMQ: its workers block on Redis, and it needs `maxRetriesPerRequest: null` so a command
 * waits out a reconnect instead of failing. Queues get connections of their own, never the gate's.
 */
export function createQueueConnection(options: { redisUrl: string; redisCluster: boolean }): RedisClient {
  const url = new URL(options.redisUrl);
  const connection: RedisClient = options.redisCluster
    ? new Cluster([{ host: url.hostname, port: Number(url.port || 6379) }], { redisOptions: { maxRetriesPerRequest: null, disconnectTimeout: DISCONNECT_TIMEOUT_MS, ...clusterNodeOptions(url) } })
    : new Redis(options.redisUrl, { maxRetriesPerRequest: null, enableReadyCheck: true, disconnectTimeout: DISCONNECT_TIMEOUT_MS });
  // Whoever uses the connection (BullMQ) hears and reports its errors; between users, or once closed while Redis
  // is away, the refused reconnects are no news and must not reach the console as unhandled error events.
  connection.on('error', () => undefined);
  return connection;
}

/**
 * Ends a connection whatever state Redis is in. One that is up is quit, so the replies to what was sent on it come
 * first. One that is not is dropped: ioredis ends neither a QUIT nor a disconnect of a connection that waits to
 * reconnect (the QUIT waits for a Redis that may not come back, and the disconnect never emits 'end'), so waiting
 * for either would hold a shutdown for as long as Redis is away.
 *
 * A command that must end whatever Redis does (a CLI command) gives `withinMs`: a QUIT that fails, or is not answered
 * within that many ms, is followed by a drop, since a Redis that stopped answering (a stopped process, a stalled host)
 * still looks up, a queue connection has no command timeout, and the QUIT's open socket would hold the process for as
 * long as Redis hangs. `drop`: the caller's own commands failed, so no reply is worth waiting for and the connection
 * is dropped at once. Without either, a QUIT is waited for as long as it takes (a stopping service bounds its whole
 * stop instead, and names the part it was closing when that bound runs out).
 */
export async function closeConnection(connection: RedisClient, how: { withinMs?: number; drop?: boolean } = {}): Promise<void> {
  if (connection.status === 'end') return;
  if (connection.status === 'ready' && how.drop !== true) {
    if (how.withinMs === undefined) {
      await connection.quit().catch(() => undefined);
      return;
    }
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), how.withinMs);
    });
    const quit = connection.quit().then(
      () => true,
      () => false,
    );
    if (!(await Promise.race([quit, late]).finally(() => clearTimeout(timer)))) connection.disconnect();
    return;
  }
  connection.disconnect();
}

/** Slots of a Redis Cluster: every one must be served by a master whose settings were read. */
const CLUSTER_SLOTS = 16_384;

/**
 * Every server that acknowledges writes, as the cluster says now, and how many of its slots no master serves. A cluster
 * client holds connections to the masters it has met, not to the cluster's: a new one knows its seed only until its
 * slots are loaded, and one whose master failed over keeps the survivors until a command is MOVED. So the slot map is
 * loaded again first (CLUSTER SLOTS, which makes the pool the cluster's masters), within `timeoutMs`.
 */
export async function writableNodesNow(client: RedisClient, timeoutMs: number): Promise<{ nodes: Redis[]; unserved: number }> {
  if (!(client instanceof Cluster)) return { nodes: [client], unserved: 0 };
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the cluster's slot map could not be read within ${timeoutMs} ms`)), timeoutMs);
  });
  // Taken off again however the wait ends: a check every few seconds through a long outage would otherwise leave one
  // listener each until the cluster is back.
  let ready: (() => void) | undefined;
  try {
    if (client.status !== 'ready') await Promise.race([new Promise<void>((resolve) => client.once('ready', (ready = resolve))), late]);
    await Promise.race([new Promise<void>((resolve, reject) => client.refreshSlotsCache((error) => (error ? reject(error) : resolve()))), late]);
  } finally {
    clearTimeout(timer);
    if (ready !== undefined) client.off('ready', ready);
  }
  const nodes = client.nodes('master');
  const read = new Set(nodes.map((node) => `${node.options.host ?? ''}:${node.options.port ?? ''}`));
  let unserved = 0;
  for (let slot = 0; slot < CLUSTER_SLOTS; slot += 1) {
    const master = client.slots[slot]?.[0];
    if (master === undefined || !read.has(master)) unserved += 1;
  }
  return { nodes, unserved };
}

/** Redis server time in ms: the clock every claim, deadline and entry is measured on. */
export async function serverTime(client: RedisClient): Promise<number> {
  const [seconds, micros] = await client.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

/**
 * Why the connection is not on the database REDIS_URL names, or null. The Redis client, refused its SELECT (a number
 * past the server's `databases`), only logs it and goes on in database 0: another deployment's data.
 */
export async function otherDatabase(redis: RedisClient, wanted: number): Promise<string | null> {
  if (wanted === 0 || redis instanceof Cluster) return null;
  const on = /\bdb=(\d+)/.exec(String(await redis.client('INFO')))?.[1];
  if (on === undefined || Number(on) === wanted) return null;
  return `REDIS_URL names database ${wanted}, which Redis refused to select (it has fewer: its \`databases\` setting), and the connection is on database ${on}`;
}
