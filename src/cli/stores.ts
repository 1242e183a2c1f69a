// Redis stores for one CLI command, opened and closed around it (openStores: no heartbeat, no sends). A command
// that cannot reach Redis before it wrote anything says so in one line and exits 2.
import { printProblem, shownKid } from './output.js';
import { pathMeaning } from './path-problems.js';
import { closeConnection, enterWithKey, isRedisTimeout, loadConfig, openStores, RedisReplyLost, shownUrl, type Config, type Stores } from '../interlock.js';
import { DeploymentKeyError } from '../redis/durability.js';
import type { Command } from 'ioredis';
import { checkClusterMode, createRedisClient, notRedisProtocol, type RedisClient } from '../redis/client.js';
import { isReadOnlyScript } from '../redis/scripts.js';
import { journalOf } from '../interlock.js';
import { existsSync } from 'node:fs';
import { createFileOnce } from '../files.js';
import { join } from 'node:path';
import { signingKeyFromPem, type SigningKey } from '../core/signing.js';
import { danglingLink, generateSigningKeyPem, keyFileExposure, keyFilePath, loadOrCreateSigningKey, readKeyFile, retiredKeysFileExposure, shownKeyPath, type KeyExposure } from '../keys/key-store.js';
import type { Journal } from '../redis/journal.js';
import type { Receipt } from '../core/receipt.js';
import { CliFailure, EXIT_BAD_INPUT } from './failure.js';

/**
 * `keyed`: false when the command only reads and this machine has no signing key (an operator's laptop reading the
 * service's Redis): its receipts are checked without the service's key, so they are not authenticated here.
 */
export type CliStores = { stores: Stores; journal: Journal; approvals: Stores['approvals']; config: Stores['config']; keyed: boolean };

/**
 * The signing key of the service a command found through its service.json (`serve` writes the key id it signs with,
 * and the key file it read), and the Redis and key prefix it serves: its key is the key of a command that writes into
 * that journal, whether the service runs or not (`running`).
 */
export type ServiceSigner = { file: string; pid: number | null; running: boolean; kid: string; keyFile: string | null; retiredKeysFile: string | null; redisUrl: string; keyPrefix: string };
let serviceSigner: ServiceSigner | null = null;

export function signerOfService(signer: ServiceSigner): void {
  serviceSigner = signer;
}

/**
 * The service found through service.json whose Redis and key prefix are the ones `config` reaches (taken from that
 * file, or given as the same), running or stopped; null when there is none.
 */
export function serviceReached(config: Pick<Config, 'redisUrl' | 'keyPrefix'>): ServiceSigner | null {
  return serviceSigner !== null && serviceSigner.redisUrl === config.redisUrl && serviceSigner.keyPrefix === config.keyPrefix ? serviceSigner : null;
}

/**
 * `config` with the retired public keys file of the service it reaches (serviceReached) when it names none of its
 * own: a command beside a service checks receipts with the keys the service holds, whether REDIS_URL was taken from
 * service.json or exported with the same value. A file given to the command (INTERLOCK_RETIRED_PUBLIC_KEYS_FILE) wins.
 */
export function withServiceRetiredKeys<C extends Pick<Config, 'redisUrl' | 'keyPrefix' | 'retiredPublicKeysFile'>>(config: C): C {
  const service = serviceReached(config);
  if (config.retiredPublicKeysFile !== null || service === null || service.retiredKeysFile === null) return config;
  return { ...config, retiredPublicKeysFile: service.retiredKeysFile };
}

/** The service's key from the file its service.json names, when this process can read it and it still holds that key. */
function serviceKeyFile(service: ServiceSigner): { key: SigningKey; keyFile: string } | { why: string } {
  if (service.keyFile === null) return { why: `${service.file} names no key file` };
  let key: SigningKey;
  try {
    key = signingKeyFromPem(readKeyFile(service.keyFile));
  } catch (error) {
    const meaning = pathMeaning(error);
    const why = meaning === null ? (error instanceof Error ? error.message : String(error)).replace(/\.$/, '') : `${meaning}, ${String((error as { code?: unknown }).code)}`;
    return { why: `its key file ${service.keyFile} cannot be used here (${why})` };
  }
  if (key.kid !== service.kid) return { why: `its key file ${service.keyFile} now holds key ${key.kid}, not ${service.kid}` };
  return { key, keyFile: service.keyFile };
}

/**
 * The key of the service a command reaches (serviceReached, running or stopped), for a command given no key file of
 * its own that reads the signing key rather than signing with it (`keys public`, `receipt verify`, `keys generate` and
 * `keys adopt`): null when it reaches no service. Else the key when this machine holds it, from its own key file
 * (`own`: INTERLOCK_SIGNING_KEY_FILE, or the data directory's) when that is the service's, or from the key file
 * service.json names; or why it cannot be had here. A data directory's key that is not the service's is a stale one (a
 * rotation's old key, or one made by a start without INTERLOCK_SIGNING_KEY_FILE): its public key verifies none of the
 * service's receipts.
 */
export function serviceSigningKey(config: Pick<Config, 'redisUrl' | 'keyPrefix' | 'dataDir' | 'signingKeyFile'>): { service: ServiceSigner; key: SigningKey; keyFile: string; own: boolean } | { service: ServiceSigner; why: string } | null {
  const service = serviceReached(config);
  if (service === null) return null;
  const path = keyFilePath(config);
  try {
    const key = signingKeyFromPem(readKeyFile(path));
    if (key.kid === service.kid) return { service, key, keyFile: path, own: true };
  } catch {
    // Not there, or not a key: the service's own key file is the one to read.
  }
  const theirs = serviceKeyFile(service);
  return 'key' in theirs ? { service, key: theirs.key, keyFile: theirs.keyFile, own: false } : { service, why: theirs.why };
}

/** The service that wrote `service.file` in words, with its pid and whether it is stopped. */
export function serviceNamed(service: ServiceSigner): string {
  const said = [service.pid === null ? null : `pid ${service.pid}`, service.running ? null : 'stopped'].filter((part) => part !== null);
  return `the service that wrote ${service.file}${said.length === 0 ? '' : ` (${said.join(', ')})`}`;
}

/**
 * The signing key of a command. One that writes entries needs the service's, and creates it in the data directory
 * when there is none and no service.json names the service's, as the service does. One that only reads (`readOnly`)
 * never creates a key file: on a machine without one it gets a key kept in memory, which signs nothing (the command
 * writes no entry), so no stray key is left behind and no receipt is judged against a key that never signed it.
 *
 * A service found through service.json, serving the Redis and key prefix the command reaches, decides: its key is the
 * command's. Its key file is used when this key is not that one (the service was given INTERLOCK_SIGNING_KEY_FILE, or
 * a rotation moved the data directory's key away); a command that writes and cannot read it is refused, and no key is
 * ever made beside it: entries signed with a key the service does not hold are "signed with an unknown key" on its
 * receipts, while the money they moved has moved. So while the service is stopped too: its Redis still takes the
 * entries, and it sends them when it starts again. A command that only reads goes by a running service's key alone.
 */
function keyOf(config: Stores['config'], readOnly: boolean, actsOnNamedKey: boolean): { key: SigningKey; exposure: KeyExposure | null; keyed: boolean; unsaved?: string } {
  const path = keyFilePath(config);
  const reached = serviceReached(config);
  const service = reached !== null && (reached.running || !readOnly) ? reached : null;
  if (service !== null) {
    const own = existsSync(path) ? loadOrCreateSigningKey(config) : null;
    if (own !== null && own.key.kid === service.kid) return { key: own.key, exposure: own.exposure, keyed: true };
    const theirs = serviceKeyFile(service);
    if ('key' in theirs) {
      // Said only of a key named for this command, which is passed over; a data directory's key that is not the
      // service's is a stale one (a rotation's old key), passed over without a word. A command that acts on the
      // named key itself (`keys adopt`) uses it for that, and says what it did with it.
      if (config.signingKeyFile !== null && !actsOnNamedKey) printProblem(`INTERLOCK_SIGNING_KEY_FILE (${shownKeyPath(path)}) is not the key of the service that wrote ${service.file}, ${service.kid}: its key file ${theirs.keyFile} is used instead.`);
      return { key: theirs.key, exposure: keyFileExposure(theirs.keyFile), keyed: true };
    }
    if (!readOnly) {
      const mine = own === null ? `no key is at ${shownKeyPath(path)} (one made now would be a key the service does not hold)` : `this command's own key, ${own.key.kid} (${shownKeyPath(path)}), is not it`;
      const which = service.running ? '' : ', which is stopped (it sends what is recorded when it starts again)';
      throw new CliFailure(`This command signs the entries it records with the key of the service that wrote ${service.file}${service.pid === null ? '' : ` (pid ${service.pid})`}${which}, ${service.kid}, but ${theirs.why}, and ${mine}. Set INTERLOCK_SIGNING_KEY_FILE to the service's key file (the one it was started with) and run it again; nothing was recorded.`, EXIT_BAD_INPUT);
    }
  }
  if (readOnly && config.signingKeyFile === null && !existsSync(path) && danglingLink(path) === null) {
    return { key: signingKeyFromPem(generateSigningKeyPem().privatePem), exposure: null, keyed: false };
  }
  // No key yet, and no service to take one from: the key is made now and saved in the data directory only when the
  // command first writes (withStores). A command refused before then (an approval not found, on a Redis it fell back
  // to) leaves no key behind that `interlock keys public` would print as the one verifying this gate's receipts.
  if (!readOnly && config.signingKeyFile === null && !existsSync(path) && danglingLink(path) === null) {
    const { privatePem } = generateSigningKeyPem();
    return { key: signingKeyFromPem(privatePem), exposure: null, keyed: true, unsaved: privatePem };
  }
  const { key, exposure } = loadOrCreateSigningKey(config);
  return { key, exposure, keyed: true };
}

/**
 * The key ids that signed these receipts' entries and whose public key this machine does not hold (neither its signing
 * key's nor a retired one's), in the order met. Such entries cannot be authenticated here: checked against this
 * machine's keys they read as signed by an unknown key, as a forgery would, when all that is known is that this
 * machine's key (a stale data directory, or none) is not the service's.
 */
export function unknownSigners(cli: CliStores, receipts: readonly (Receipt | null)[]): string[] {
  const kids = new Set<string>();
  for (const receipt of receipts) {
    for (const entry of receipt?.entries ?? []) {
      if (entry.sig !== null && entry.kid !== undefined && !cli.stores.publicKeys.has(entry.kid)) kids.add(shownKid(entry.kid));
    }
  }
  return [...kids];
}

/**
 * Why the signatures of entries signed by `kids`, keys this machine does not hold, were not checked on this machine
 * (every signature by a key it holds verified: held-keys.ts), and what to do.
 */
export function unknownSignersNote(cli: CliStores, kids: readonly string[]): string {
  const own = cli.keyed ? `its signing key is ${cli.stores.signingKey.kid}` : 'it has no signing key';
  const retired = cli.config.retiredPublicKeysFile === null ? 'no retired public keys' : `not among the retired public keys of ${cli.config.retiredPublicKeysFile}`;
  return `signatures: entries of this chain are signed with key ${kids.join(', ')}, whose public key this machine does not hold (${own}; ${retired}), so those signatures were not checked here (every signature by a key it holds verified). Run this where the service runs, or add that key's public half (\`npx interlock keys public\` where the service runs) to INTERLOCK_RETIRED_PUBLIC_KEYS_FILE.`;
}

/** The file in the data directory through which commands find a running service (`npm start` writes it). */
export const SERVICE_FILE = 'service.json';

/**
 * Where REDIS_URL came from when the environment did not set it: the file a service (`npm start`) wrote, and the
 * command that starts that service again (naming its INTERLOCK_DATA_DIR when it is not the default).
 */
type ServiceSource = { file: string; pid: number | null; running: boolean; start: string };
let fromService: ServiceSource | null = null;

export function redisUrlFromService(source: ServiceSource): void {
  fromService = source;
}

/**
 * Where a command looked for what it did not find: the Redis and key prefix it read, and where that Redis came from.
 * A command run without the service's data directory (from another directory, or without the INTERLOCK_DATA_DIR= its
 * start-up lines carry) reads the default Redis instead, and this says so rather than blaming settings never given.
 */
export function whereLooked(config: Pick<Config, 'redisUrl' | 'keyPrefix' | 'dataDir'>): string {
  const read = `in the Redis at ${shownUrl(config.redisUrl)} under key prefix ${config.keyPrefix}`;
  if (fromService !== null) return `${read} (from ${fromService.file})`;
  if ((process.env.REDIS_URL ?? '') !== '') return `${read} (from REDIS_URL)`;
  const file = join(config.dataDir, SERVICE_FILE);
  const why = existsSync(file) ? `${file} names no Redis` : `no ${SERVICE_FILE} was found in ${config.dataDir}`;
  return `${read}: REDIS_URL is unset and ${why}, so this command fell back to the default Redis (run it with the service's INTERLOCK_DATA_DIR, or set REDIS_URL)`;
}

/**
 * Where a command looked, as a sentence to add to its "not found" or "none" answer, when it fell back to the default
 * Redis (REDIS_URL unset, no service.json naming the service's): "No approval ap_1" read there says nothing of the
 * service's Redis, and advice to grant it would put money on a Redis no service reads. Null when the Redis came from
 * REDIS_URL or service.json: the answer then stands as it is.
 */
export function fellBackNote(config: Pick<Config, 'redisUrl' | 'keyPrefix' | 'dataDir'>): string | null {
  if (fromService !== null || (process.env.REDIS_URL ?? '') !== '') return null;
  return `Looked ${whereLooked(config)}.`;
}

/** What to do about a Redis that does not answer, or refuses what REDIS_URL says (its password, its certificate). */
export const REDIS_URL_ADVICE = 'Start Redis or set REDIS_URL (its address, user and password; for rediss://, a certificate Node trusts, e.g. with NODE_EXTRA_CA_CERTS).';

/**
 * What to do about a Redis that does not answer when REDIS_URL was taken from a service's service.json (`npm start`'s
 * private Redis, on a port of its own with a password): start that service again, or check it if it still runs. Null
 * when REDIS_URL was not taken from one, and the caller's own advice (start Redis, set REDIS_URL) holds. `purpose`:
 * what starting it again is for.
 */
export function serviceRedisAdvice(purpose = 'to reach its journal'): string | null {
  if (fromService === null) return null;
  const service = `the service that wrote ${fromService.file}${fromService.pid === null ? '' : ` (pid ${fromService.pid})`}`;
  // A stopped `npm start` took its private Redis with it; its journal is on disk and comes back with it.
  return fromService.running
    ? `That is the Redis of ${service}, which still runs; check it, or set REDIS_URL.`
    : `That is the Redis of ${service}, which is not running: start it again (\`${fromService.start}\`) ${purpose}, or set REDIS_URL for another Redis.`;
}

function unreachableAdvice(): string {
  return serviceRedisAdvice() ?? REDIS_URL_ADVICE;
}

/** A command that could not reach Redis before it sent anything that may write: nothing was changed. */
function cannotReach(config: Pick<Config, 'redisUrl'>, error: unknown): CliFailure {
  const what = error instanceof Error ? error.message : String(error);
  const foreign = notRedisProtocol(what);
  if (foreign !== null) {
    return new CliFailure(`Cannot reach Redis at ${shownUrl(config.redisUrl)}: ${foreign}; nothing was changed. Check the host and port of REDIS_URL${fromService === null ? '' : ` (taken from ${fromService.file})`}: they should name the port Redis listens on (6379 unless it was set otherwise).`, EXIT_BAD_INPUT, { cause: error });
  }
  return new CliFailure(`Cannot reach Redis at ${shownUrl(config.redisUrl)} (${what}); nothing was changed. ${unreachableAdvice()}`, EXIT_BAD_INPUT, { cause: error });
}

/** Commands that change nothing in Redis: whatever the command's connection does after these, nothing was written. */
const READ_COMMANDS: ReadonlySet<string> = new Set([
  'get', 'mget', 'strlen', 'getrange', 'exists', 'type', 'ttl', 'pttl', 'hget', 'hmget', 'hgetall', 'hexists', 'hlen', 'hkeys', 'hvals', 'hscan',
  'lrange', 'llen', 'lindex', 'smembers', 'sismember', 'scard', 'sscan', 'zrange', 'zrevrange', 'zrangebyscore', 'zrevrangebyscore', 'zscore',
  'zmscore', 'zcard', 'zcount', 'zrank', 'zrevrank', 'zscan', 'scan', 'keys', 'xrange', 'xrevrange', 'xlen', 'xinfo', 'ping', 'echo', 'time',
  'info', 'config', 'client', 'select', 'hello', 'auth', 'quit', 'dbsize', 'memory', 'wait', 'script', 'command', 'role', 'cluster', 'readonly',
  'asking', 'object',
]);

/**
 * Notes whether the client has sent a command that may write (anything but READ_COMMANDS and the read-only scripts):
 * a command that loses Redis after one may have changed something, and must not say "nothing was changed".
 */
function watchWrites(redis: RedisClient, beforeFirstWrite: () => void = () => undefined): { wrote(): boolean } {
  let wrote = false;
  const send = redis.sendCommand.bind(redis) as (command: Command, ...rest: unknown[]) => unknown;
  (redis as { sendCommand: (command: Command, ...rest: unknown[]) => unknown }).sendCommand = (command, ...rest) => {
    if (!wrote) {
      const name = command.name.toLowerCase();
      const script = name === 'evalsha' || name === 'eval' ? String(command.args[0] ?? '') : null;
      wrote = script === null ? !READ_COMMANDS.has(name) : !isReadOnlyScript(script);
      if (wrote) beforeFirstWrite();
    }
    return send(command, ...rest);
  };
  return { wrote: () => wrote };
}

/**
 * Whether others may write the retired public keys file `file`; null when there is none, or when it cannot be looked
 * at (openStores then refuses it, saying why).
 */
function retiredFileExposure(file: string | null): KeyExposure | null {
  if (file === null) return null;
  try {
    return retiredKeysFileExposure(file);
  } catch {
    return null;
  }
}

/**
 * `readOnly`: the command writes nothing. `signs: false`: it writes to Redis but records no journal entry (approvals,
 * caps), so it needs no signing key: it is never refused over the service's key, and makes none (keyOf's
 * `readOnly`). `actsOnNamedKey`: the command reads the key INTERLOCK_SIGNING_KEY_FILE names for what it does (`keys
 * adopt`), so the stores taking a running service's key instead is no news to print.
 */
export async function withStores(run: (stores: CliStores) => Promise<void>, options: { readOnly?: boolean; signs?: boolean; actsOnNamedKey?: boolean } = {}): Promise<void> {
  // A command's answer is its output: the service's info lines (a proposal recorded, a chain read) are noise on its
  // stderr, so a command logs warnings and worse unless INTERLOCK_LOG_LEVEL asks for more (empty is unset, as
  // loadConfig reads it).
  const configured = withServiceRetiredKeys(loadConfig());
  const config = (process.env.INTERLOCK_LOG_LEVEL ?? '') === '' ? { ...configured, logLevel: 'warn' as const } : configured;
  // A key file others can read is said in a line of its own: a command's warnings are read by a person. So is a
  // retired public keys file others can write, whatever the log level (openStores is told not to log it too).
  const { key, exposure, keyed, unsaved } = keyOf(config, options.readOnly === true || options.signs === false, options.actsOnNamedKey === true);
  // A key made for this command is saved before anything it signed can reach Redis: at its first write, or when the
  // command ends well (whatever it wrote through another connection). Another process that saved a key there first
  // holds the data directory's key, and this command, which signs with another, records nothing.
  let saveKey = (): void => undefined;
  if (unsaved !== undefined) {
    saveKey = () => {
      saveKey = () => undefined;
      const path = keyFilePath(config);
      if (!createFileOnce(path, unsaved)) throw new CliFailure(`Another process made the signing key ${shownKeyPath(path)} while this command ran; nothing was recorded. Run it again: it signs with that key.`, EXIT_BAD_INPUT);
    };
  }
  if (exposure !== null) printProblem(exposure.message);
  const retiredExposure = retiredFileExposure(config.retiredPublicKeysFile);
  if (retiredExposure !== null) printProblem(retiredExposure.message);
  // Before the command's client connects, as `serve` checks at its start: a cluster client on a standalone Redis fails
  // with its own "Failed to refresh slots cache", and a one-server client on a cluster node is refused key by key. A
  // Redis that took the check's whole timeout without answering is given up here, as the command's client would say
  // it: that client would only wait the same timeout again.
  const clusterMode = await checkClusterMode(config, `${shownUrl(config.redisUrl)}${fromService === null ? '' : ` (from ${fromService.file})`}`, 'this command did not run');
  if (clusterMode !== null && 'problem' in clusterMode) throw new CliFailure(clusterMode.problem, EXIT_BAD_INPUT);
  if (clusterMode !== null) throw cannotReach(config, new Error(clusterMode.noAnswer));
  const redis = createRedisClient(config, { failFast: true });
  // Heard before openStores adds its own listener (it may first await tracing's setup): a refused connection's error
  // event with no listener would print the client's stack trace.
  redis.on('error', () => undefined);
  const writes = watchWrites(redis, () => saveKey());
  // A command ends whatever Redis does: a QUIT Redis does not answer within the command timeout is given up on.
  const closing = { withinMs: config.redisCommandTimeoutMs };
  let stores: Stores;
  try {
    stores = await openStores(config, { failFast: true, signingKey: key, redis, retiredKeysWarned: true });
  } catch (error) {
    await closeConnection(redis, closing).catch(() => undefined);
    throw error;
  }
  const closeAll = async () => {
    await stores.close(closing).catch(() => undefined);
    await closeConnection(redis, closing).catch(() => undefined);
  };
  const unreachable = (error: unknown) => {
    const what = error instanceof Error ? error.message : String(error);
    // Lost after a command that may write went out: what it asked may have been done in part (an entry on a receipt
    // before the item it closes), so it is never answered "nothing was changed".
    if (writes.wrote()) {
      return new CliFailure(`Lost Redis at ${shownUrl(config.redisUrl)} (${what}) after this command had begun writing, so what it asked may or may not have been done. Once Redis answers, check (for instance with \`interlock inbox show\`, \`interlock approvals describe\` or \`interlock effect show\`) before running it again.`, EXIT_BAD_INPUT, { cause: error });
    }
    return cannotReach(config, error);
  };
  const why = await stores.unreachable();
  if (why !== null) {
    await closeAll();
    throw unreachable(new Error(why));
  }
  // A command that records entries signs them: never with a key the deployment does not sign with (another
  // deployment's, a checkout's own), whose entries the service's auditors could not check. It only checks: the
  // deployment's processes record its keys.
  if (options.readOnly !== true && options.signs !== false) {
    try {
      await enterWithKey(stores, 'check');
    } catch (error) {
      await closeAll();
      if (error instanceof DeploymentKeyError) throw new CliFailure(`${error.message} Nothing was recorded.`, EXIT_BAD_INPUT);
      throw error;
    }
  }
  try {
    await run({ stores, journal: journalOf(stores), approvals: stores.approvals, config, keyed });
    saveKey();
  } catch (error) {
    // A failure the command put in words itself says what it did and did not write (a proposal it recorded before
    // Redis went away is not "nothing was changed"): it is passed on as it is.
    if (error instanceof CliFailure) throw error;
    // A command Redis took but did not answer may still run when Redis wakes: the command cannot say it did nothing.
    if (isRedisTimeout(error)) {
      throw new CliFailure(`Redis at ${shownUrl(config.redisUrl)} stopped answering within INTERLOCK_REDIS_COMMAND_TIMEOUT_MS=${config.redisCommandTimeoutMs} ms, so what this command asked may or may not have been done. Once Redis answers, check (for instance with \`interlock approvals describe\` or \`interlock effect\`) before running it again.`, EXIT_BAD_INPUT, { cause: error });
    }
    // A command whose connection closed before Redis answered it is never sent again: said as a lost Redis is, whether
    // Redis answers again by now or not (it may or may not have been done once the command had begun writing).
    if (error instanceof RedisReplyLost) throw unreachable(error);
    // A command that failed because the connection went away says so, whatever error the client raised.
    if (!(await stores.ping())) throw unreachable(error);
    throw error;
  } finally {
    await closeAll();
  }
}
