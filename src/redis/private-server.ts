// A private redis-server for `npm start` when REDIS_URL is unset (issue 11 §3): the journal must survive a crash
// of Redis itself, so it runs with an append-only file fsynced on every write and never evicts keys; its files
// live under the data directory, so the next start finds the same journal. Its memory is bounded (maxmemory), so a
// full Redis refuses writes with OOM, which the service waits out, instead of growing until the kernel kills it (and,
// replaying the same file at its next start, kills it again). It listens on loopback only, on a free port, and is
// stopped (with its final fsync) when the service stops, unless other processes still use it (a `serve --roles
// worker` that joined through service.json): it is then left running, and the next start takes it over. Every user
// of the machine reaches that port, so it requires a password, kept in a file of its own 0700 directory: a client
// holds it only by reading that directory (the service from its start, the CLI from service.json, also 0600).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, readdirSync, readFileSync, readlinkSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { Redis } from 'ioredis';
import { DEFAULT_REDIS_MAXMEMORY } from '../config.js';
import { InterlockError } from '../core/errors.js';
import { createFileOnce, makeDirectory } from '../files.js';
import { createLogger } from '../log.js';

export type PrivateRedis = {
  url: string;
  dir: string;
  pid: number;
  /** Calls `listener` once with a sentence for the operator if the server exits on its own (killed, crashed), not by stop(). */
  onExit(listener: (sentence: string) => void): void;
  /**
   * Stops it (SIGTERM: Redis fsyncs its append-only file and exits), unless other processes are connected to it (a
   * `serve --roles worker` that joined through service.json, with a send in progress): it is then left running for
   * them, with one warning line saying so, and the next start on the data directory takes it over.
   */
  stop(): Promise<void>;
};

/**
 * The command that starts it (after `redis-server`), for logs and for operators who want the same Redis by hand: its
 * password file first, a config file holding only `requirepass` (the command line is not the place for a password:
 * every user of the machine reads it with `ps`), then its settings (privateRedisArgs).
 */
export function privateRedisCommand(dir: string, port: number, maxmemory = DEFAULT_REDIS_MAXMEMORY): string[] {
  return [passwordFile(dir), ...privateRedisArgs(dir, port, maxmemory)];
}

/** Its settings, on the command line after its password file (privateRedisCommand). `maxmemory` in Redis's size syntax (INTERLOCK_REDIS_MAXMEMORY). */
export function privateRedisArgs(dir: string, port: number, maxmemory = DEFAULT_REDIS_MAXMEMORY): string[] {
  return ['--bind', '127.0.0.1', '--port', String(port), '--dir', dir, '--pidfile', join(dir, 'redis.pid'), '--appendonly', 'yes', '--appendfsync', 'always', '--maxmemory', maxmemory, '--maxmemory-policy', 'noeviction', '--no-appendfsync-on-rewrite', 'no', '--save', '', '--daemonize', 'no', '--protected-mode', 'yes'];
}

/**
 * The address (with the password) of the last server started in the directory, written by its start (0600) as soon as
 * it is spawned, so a start killed before writing service.json leaves its server findable (recordedAddress).
 */
function addressFile(dir: string): string {
  return join(dir, 'address');
}

/** The address a start recorded (addressFile), or null when there is none to read. */
function recordedAddress(dir: string): string | null {
  try {
    const text = readFileSync(addressFile(dir), 'utf8').trim();
    return /^redis:\/\/[^\s]+$/.test(text) ? text : null;
  } catch {
    return null;
  }
}

/** A path with its links resolved, or as given when it cannot be (it is gone): for comparing two names of one directory. */
function realPath(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path);
  }
}

const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** The private Redis's password file in its directory: a Redis config file holding `requirepass` and nothing else. */
export function passwordFile(dir: string): string {
  return join(dir, 'password.conf');
}

const REQUIREPASS = /^requirepass ([0-9a-f]{64})\n$/;

/**
 * The private Redis's password: the one in its password file, made (32 random bytes, in hex) at the first start and
 * kept, mode 0600, for the next ones. A file that does not hold one as this function writes it is replaced: the
 * password guards only a running server, and the server started next reads the new one. Called under the start lock.
 */
function privatePassword(dir: string): string {
  const file = passwordFile(dir);
  for (let attempt = 0; attempt < 2; attempt += 1) {
    let text: string;
    try {
      createFileOnce(file, `requirepass ${randomBytes(32).toString('hex')}\n`);
      text = readFileSync(file, 'utf8');
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      throw new InterlockError('invalid_config', `The password file of the private Redis, ${file}, cannot be used (${typeof code === 'string' ? code : errorText(error)}): remove what is there (the next start makes a new one) and start again.`, { cause: error });
    }
    const held = REQUIREPASS.exec(text);
    if (held?.[1] !== undefined) {
      if ((statSync(file).mode & 0o077) !== 0) chmodSync(file, 0o600);
      return held[1];
    }
    rmSync(file, { force: true });
  }
  throw new InterlockError('invalid_config', `Could not make the password file of the private Redis, ${file}: remove it and start again.`);
}

/**
 * The pid a pid file (the start lock, redis.pid) names, while that process may still be its writer; null when it is
 * not. Never this process (it cannot be another start, nor a redis-server): a fresh pid namespace (a container started
 * again) gives it the pid an earlier one left in the file. A file that records its writer's start (the start lock's
 * third line, clock ticks since boot as /proc counts them) names a live writer only while that pid's start is the same:
 * after a reboot, or when the pid went to another process, it is stale. One that does not (Redis's own redis.pid)
 * names a live writer while that pid runs `expectCommand` (a redis-server), where /proc can tell. No wall clock is
 * compared: a clock stepped forward must not make a live server look stale (a second server on one append-only file
 * would corrupt it).
 */
function livePid(file: string, expectCommand: string | null): number | null {
  let lines: string[];
  try {
    lines = readFileSync(file, 'utf8').split('\n');
  } catch {
    return null;
  }
  const pid = Number(lines[0]?.trim());
  if (!Number.isSafeInteger(pid) || pid <= 0 || pid === process.pid || !processRuns(pid)) return null;
  const recorded = lines[2]?.trim() ?? '';
  if (recorded !== '') {
    const started = processStartTicks(pid);
    return started !== null && started !== recorded ? null : pid;
  }
  if (expectCommand !== null) {
    const command = processCommand(pid);
    return command !== null && !command.includes(expectCommand) ? null : pid;
  }
  return pid;
}

/** When a process started, in clock ticks since boot, as /proc/<pid>/stat says (Linux); null where it cannot be read. */
export function processStartTicks(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // `pid (comm) state …`: the fields after the last ")" begin with the third (state); starttime is the 22nd.
    const ticks = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
    return ticks !== undefined && /^\d+$/.test(ticks) ? ticks : null;
  } catch {
    return null;
  }
}

/** The command line a process runs, its arguments joined by spaces, where /proc shows it; null elsewhere. */
function processCommand(pid: number): string | null {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
  } catch {
    return null;
  }
}

/**
 * Whether a process with this pid runs (signal 0 checks, sends nothing). A zombie, a process that exited and that its
 * parent has not reaped yet (a killed `npm start` for a moment, or for good under a pid 1 that never reaps), answers
 * signal 0 but runs nothing: it counts as gone, where /proc shows it; elsewhere signal 0's answer stands.
 */
export function processRuns(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  return !exitedUnreaped(pid);
}

function exitedUnreaped(pid: number): boolean {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return false;
  }
  // `pid (comm) state …`: the command name may itself hold ") ", so the state follows the last ")".
  const state = stat.slice(stat.lastIndexOf(')') + 2).charAt(0);
  return state === 'Z' || state === 'X';
}

export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolvePort(port));
    });
  });
}

function missingBinary(): InterlockError {
  return new InterlockError(
    'invalid_config',
    'REDIS_URL is not set and there is no redis-server to start a private one. Install Redis 7 (Debian/Ubuntu: `sudo apt-get install redis-server`; macOS: `brew install redis`), or run `docker compose --env-file compose.sandbox.env up -d redis` and set REDIS_URL=redis://127.0.0.1:6379.',
  );
}

/** The start locks this process holds now (their contents), whatever directory they lock. */
const heldHere = new Set<string>();

/**
 * Takes the directory's start lock (`start.lock`, holding this process's pid), so two starts at the same moment
 * cannot both pass the pidfile check and run two servers on one append-only file. A lock whose process is gone (a
 * killed start) is moved aside, atomically, and taken again: of two starts that find it stale, one moves it and
 * both then race for a fresh lock, which only one gets. Returns its release; throws when a live process holds it.
 * A lock naming this process is held only while a start of this process holds it (heldHere); else an earlier process
 * with the same pid left it (livePid).
 */
function takeStartLock(dir: string): () => void {
  const file = join(dir, 'start.lock');
  for (let attempt = 0; attempt < 3; attempt += 1) {
    try {
      // The pid, then a token of this start (a release removes the lock only while it is still this start's), then
      // when this process started (livePid: a lock whose pid went to another process is stale).
      const mine = `${process.pid}\n${randomBytes(8).toString('hex')}\n${processStartTicks(process.pid) ?? ''}`;
      writeFileSync(file, mine, { flag: 'wx', mode: 0o600 });
      heldHere.add(mine);
      const release = () => {
        process.removeListener('exit', release);
        heldHere.delete(mine);
        let now: string;
        try {
          now = readFileSync(file, 'utf8');
        } catch {
          return;
        }
        if (now === mine) rmSync(file, { force: true });
      };
      // A process that exits without stopping (a second signal, a stop that overran) leaves no lock behind either.
      process.once('exit', release);
      return release;
    } catch (error) {
      if ((error as { code?: string }).code !== 'EEXIST') throw error;
    }
    let found = '';
    try {
      found = readFileSync(file, 'utf8');
    } catch {
      // Released meanwhile: taken at the next attempt.
    }
    const holder = heldHere.has(found) ? process.pid : livePid(file, null);
    if (holder !== null) {
      throw new InterlockError('invalid_config', `Another \`interlock serve\` (pid ${holder}) is starting or running the private Redis in ${dir}. Set REDIS_URL to share it (its address is in service.json beside that directory once it runs), or give this process its own INTERLOCK_DATA_DIR.`);
    }
    try {
      renameSync(file, `${file}.stale.${process.pid}`);
      rmSync(`${file}.stale.${process.pid}`, { force: true });
    } catch {
      // Another start moved it first: race for the fresh one.
    }
  }
  throw new InterlockError('invalid_config', `Could not take the start lock of the private Redis in ${dir}: other starts keep taking it. Start one \`interlock serve\` at a time on a data directory.`);
}

/**
 * Stops the redis-server a dead `serve` left running on `dir` (it was killed, so it never stopped its child): only
 * when the server at `url` (that serve's address) says it serves `dir` itself. SHUTDOWN fsyncs the append-only file
 * first, so nothing it acknowledged is lost. True once it is gone.
 */
async function stopOrphan(url: string, dir: string, pid: number): Promise<'stopped' | 'in_use' | 'not_it'> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, enableOfflineQueue: false, connectTimeout: 2_000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    const served = (await client.config('GET', 'dir')) as string[];
    // Redis reports the directory it changed into, links resolved: a data directory reached through a link is the same.
    if (served[1] === undefined || realPath(served[1]) !== realPath(dir)) return 'not_it';
    // The serve that started it is gone, but a process that joined it (`serve --roles worker` through service.json)
    // may still use it: a dead process's connections are closed by the kernel, so any other connection is a live one.
    const others = String(await client.call('CLIENT', 'LIST')).split('\n').filter((line) => line.trim() !== '').length - 1;
    if (others > 0) return 'in_use';
    await client.shutdown().catch(() => undefined);
  } catch {
    return 'not_it';
  } finally {
    client.disconnect();
  }
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (!processRuns(pid)) return 'stopped';
    await new Promise((wait) => setTimeout(wait, 50));
  }
  return 'not_it';
}

/**
 * How many connections to the private Redis at `url` (listening on `port`) belong to other processes: not the one
 * asking, nor one of this process's own (a connection it never closed; those it closed leave the list within moments,
 * so a count above 0 is asked again for up to a second). 0 when Redis does not answer: nobody can be using it.
 */
async function othersConnected(url: string, port: number): Promise<number> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, enableOfflineQueue: false, connectTimeout: 2_000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    const asking = String(await client.call('CLIENT', 'ID'));
    let others = 0;
    for (let attempt = 0; attempt < 20; attempt += 1) {
      const own = ownConnectionPorts(port);
      const lines = String(await client.call('CLIENT', 'LIST')).split('\n');
      others = lines.filter((line) => {
        const id = /(?:^| )id=(\d+)/.exec(line)?.[1];
        const from = /(?:^| )addr=\S+:(\d+)(?: |$)/.exec(line)?.[1];
        return id !== undefined && id !== asking && !(from !== undefined && own.has(Number(from)));
      }).length;
      if (others === 0) break;
      await new Promise((wait) => setTimeout(wait, 50));
    }
    return others;
  } catch {
    return 0;
  } finally {
    client.disconnect();
  }
}

/**
 * The local ports of this process's TCP connections to `port`, where /proc shows them (Linux; elsewhere none): its
 * sockets (/proc/self/fd) matched by inode against the connection table (/proc/self/net/tcp, tcp6).
 */
function ownConnectionPorts(port: number): Set<number> {
  const inodes = new Set<string>();
  try {
    for (const fd of readdirSync('/proc/self/fd')) {
      try {
        const inode = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/self/fd/${fd}`))?.[1];
        if (inode !== undefined) inodes.add(inode);
      } catch {
        // Closed since it was listed.
      }
    }
  } catch {
    return new Set();
  }
  const ports = new Set<number>();
  for (const table of ['/proc/self/net/tcp', '/proc/self/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    // `sl local_address rem_address st … inode`, addresses as hex `IP:PORT`, the inode tenth.
    for (const row of text.split('\n').slice(1)) {
      const columns = row.trim().split(/\s+/);
      const local = columns[1]?.split(':')[1];
      const remote = columns[2]?.split(':')[1];
      const inode = columns[9];
      if (local !== undefined && remote !== undefined && inode !== undefined && inodes.has(inode) && Number.parseInt(remote, 16) === port) ports.add(Number.parseInt(local, 16));
    }
  }
  return ports;
}

/** The line a stop that leaves the private Redis running for other processes logs: what runs, for whom, and what next. */
function logLeftRunning(logger: WarnLog, dir: string, pid: number, port: number, others: number): void {
  logger.warn(
    { redisPid: pid, redisPort: port, dir, otherConnections: others },
    `the private Redis (pid ${pid}, port ${port}) in ${dir} was left running: ${others} connection${others === 1 ? '' : 's'} of other processes use it (a \`serve --roles worker\` that joined through service.json, say), and stopping it would cut a send in progress. The next \`npm start\` on this data directory takes it over; to stop it by hand once they have stopped: \`kill ${pid}\` (Redis writes its append-only file, then exits).`,
  );
}

type StartOptions = {
  onLine?: (line: string) => void;
  orphanOf?: string | null;
  signal?: AbortSignal;
  maxmemory?: string;
  /** Where stop() says it left the server running for other processes (logLeftRunning); a logger of its own when not given. */
  logger?: WarnLog;
};

/** The part of a logger a stop uses (the service's pino logger is one). */
export type WarnLog = { warn(fields: Record<string, unknown>, message: string): void };

/**
 * Starts redis-server under `<dataDir>/redis`; throws `invalid_config` (exit 2) when the binary is missing.
 * `orphanOf`: the address of the private Redis a `serve` that is no longer running started on this data directory
 * (its service.json), so one left running by a killed serve is stopped and this start goes on.
 * `signal`: aborting it before the server answers kills the server (its append-only file is fsynced on every write,
 * so a kill loses nothing it acknowledged) and fails the start once the server has exited, so the caller may remove
 * its directory; aborting it later does nothing (stop() stops a started server).
 * `maxmemory`: the server's memory limit (config.redisMaxmemory; DEFAULT_REDIS_MAXMEMORY when not given).
 * A server left running on the directory that other processes still use (a stop left it for them, or a killed serve
 * left it) is taken over, not stopped: its PrivateRedis has that server's address and pid.
 */
export async function startPrivateRedis(dataDir: string, options: StartOptions & { binary?: string } = {}): Promise<PrivateRedis> {
  const binary = options.binary ?? 'redis-server';
  const probe = spawnSync(binary, ['--version'], { encoding: 'utf8' });
  if (probe.error !== undefined || probe.status !== 0) throw missingBinary();
  const dir = resolve(join(dataDir, 'redis'));
  makeDirectory(dir, 0o700);
  const release = takeStartLock(dir);
  try {
    return await startLocked(binary, dir, dataDir, options, release);
  } catch (error) {
    release();
    throw error;
  }
}

/** What a start aborted by its caller fails with. */
function startCancelled(dir: string): InterlockError {
  return new InterlockError('redis_unavailable', `The private redis-server in ${dir} was stopped while it started: the start was cancelled.`);
}

async function startLocked(binary: string, dir: string, dataDir: string, options: StartOptions, release: () => void): Promise<PrivateRedis> {
  // Two servers on one append-only file would corrupt it: a live pid in the pidfile means another process owns it.
  const owner = livePid(join(dir, 'redis.pid'), 'redis-server');
  // This start holds the directory's lock, which a serve holds for as long as its Redis runs: a live server here was
  // left by one that is gone. Its address is in that serve's service.json, or, for a start killed before it wrote
  // one, in the address file each start writes beside the server.
  let found: 'stopped' | 'in_use' | 'not_it' = 'not_it';
  for (const address of new Set([options.orphanOf, recordedAddress(dir)])) {
    if (owner === null || found !== 'not_it' || typeof address !== 'string') continue;
    found = await stopOrphan(address, dir, owner);
    // Still in use (a worker that joined through service.json sends on it): taken over as it runs, since stopping it
    // would cut that send, and a second server on the same append-only file would corrupt it.
    if (found === 'in_use') return await adopt(address, dir, owner, options, release);
  }
  const orphanGone = found === 'stopped';
  if (owner !== null && !orphanGone) {
    throw new InterlockError('invalid_config', `Another redis-server (pid ${owner}) already serves the private Redis in ${dir}, started by another \`interlock serve\` with this data directory. Set REDIS_URL to share it (its address, with its password, is in ${join(dataDir, 'service.json')} and in ${addressFile(dir)}), or give this process its own INTERLOCK_DATA_DIR.`);
  }
  // A function, not a check TypeScript would take as still holding after the awaits between two of them.
  const aborted = () => options.signal?.aborted === true;
  const password = privatePassword(dir);
  const port = await freePort();
  if (aborted()) throw startCancelled(dir);
  // In a process group of its own: Ctrl-C signals the terminal's whole group, and Redis would stop at once while the
  // service is still draining (a send in progress could then not record its end). The service stops it after the
  // drain, and a service that exits without stopping it (a second signal, a stop that overran) ends it on the way out.
  const child: ChildProcess = spawn(binary, privateRedisCommand(dir, port, options.maxmemory), { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  // Its address before anything else can fail: a start killed from here on leaves a server the next start must find.
  const url = `redis://default:${password}@127.0.0.1:${port}`;
  writeFileSync(addressFile(dir), `${url}\n`, { mode: 0o600 });
  const endWithProcess = () => {
    // SIGTERM: Redis fsyncs the append-only file and exits, after this process has gone.
    if (exited === null) child.kill('SIGTERM');
  };
  process.once('exit', endWithProcess);
  const tail: string[] = [];
  const keep = (chunk: Buffer) => {
    // Redis quotes a config line it refuses: the password never reaches a log or a message.
    for (const line of chunk.toString('utf8').replaceAll(password, '…').split('\n')) {
      if (line.trim() === '') continue;
      tail.push(line);
      if (tail.length > 20) tail.shift();
      options.onLine?.(line);
    }
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  let exited: number | null = null;
  let stopping = false;
  let died: string | null = null;
  const exitListeners: ((sentence: string) => void)[] = [];
  const exit = new Promise<void>((resolveExit) => {
    child.once('exit', (code, signal) => {
      exited = code ?? (signal === null ? 0 : 1);
      process.removeListener('exit', endWithProcess);
      if (!stopping) {
        // The service's connections retry this address for ever and only say the connection was refused: say why.
        died = `The private redis-server (pid ${child.pid ?? 0}) in ${dir} exited (${signal ?? `code ${code ?? 0}`}) while the service ran: nothing can be recorded or sent until Redis runs again. Stop the service (Ctrl-C) and run \`npm start\` again: the journal is on disk there and comes back with it.${tail.length === 0 ? '' : ` Its last lines: ${tail.slice(-3).join(' | ')}`}`;
        for (const listener of exitListeners.splice(0)) listener(died);
      }
      resolveExit();
    });
  });
  // Aborted while it starts: killed from the listener itself, so a caller that aborts on its way out (a signal handler
  // that then exits) leaves no server behind either, the server's own process group getting no terminal signal.
  const cancel = () => {
    if (exited === null) child.kill('SIGKILL');
  };
  options.signal?.addEventListener('abort', cancel, { once: true });
  const cancelled = async () => {
    cancel();
    await exit;
    return startCancelled(dir);
  };
  const deadline = Date.now() + 10_000;
  try {
    for (;;) {
      if (aborted()) throw await cancelled();
      if (exited !== null) throw new InterlockError('redis_unavailable', `The private redis-server exited at start (code ${exited}): ${tail.slice(-3).join(' | ')}`);
      const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, enableOfflineQueue: false });
      client.on('error', () => undefined);
      try {
        await client.connect();
        // Loading a large append-only file answers LOADING until it is done.
        if ((await client.ping()) === 'PONG') {
          await client.quit();
          break;
        }
      } catch {
        client.disconnect();
      }
      if (Date.now() > deadline) {
        // Gone before the start fails, so the caller may remove its directory.
        child.kill('SIGKILL');
        await exit;
        throw new InterlockError('redis_unavailable', `The private redis-server did not answer within 10 s: ${tail.slice(-3).join(' | ')}`);
      }
      await new Promise((wait) => setTimeout(wait, 50));
    }
    // Aborted while it answered the last ping: stopped all the same.
    if (aborted()) throw await cancelled();
  } finally {
    options.signal?.removeEventListener('abort', cancel);
  }
  return {
    url,
    dir,
    pid: child.pid ?? 0,
    onExit(listener) {
      if (died !== null) listener(died);
      else if (exited === null) exitListeners.push(listener);
    },
    async stop() {
      stopping = true;
      const others = exited === null ? await othersConnected(url, port) : 0;
      if (others > 0 && exited === null) {
        // Left for them: nothing of this process ends it any more, nor waits on it.
        process.removeListener('exit', endWithProcess);
        child.stdout?.destroy();
        child.stderr?.destroy();
        child.unref();
        logLeftRunning(options.logger ?? createLogger(), dir, child.pid ?? 0, port, others);
      } else if (exited === null) {
        // SIGTERM: Redis fsyncs the append-only file and exits.
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 8_000);
        await exit;
        clearTimeout(timer);
      }
      release();
    },
  };
}

/**
 * Takes over the private Redis at `url`, pid `pid`, left running on `dir` for the processes still connected to it (by
 * a stop, or by a serve that was killed): this start's PrivateRedis, with that server's address and pid, and the
 * memory limit this start was given. Its stop() stops it as a started one's does, or leaves it again for those still
 * connected. Called under the start lock, which it holds until then.
 */
async function adopt(url: string, dir: string, recordedPid: number, options: StartOptions, release: () => void): Promise<PrivateRedis> {
  const port = Number(new URL(url).port);
  // The server's own word for its pid (redis.pid is only where it wrote it): the one a stop signals.
  let pid = recordedPid;
  const maxmemory = options.maxmemory ?? DEFAULT_REDIS_MAXMEMORY;
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, enableOfflineQueue: false, connectTimeout: 2_000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.config('SET', 'maxmemory', maxmemory);
    const reported = Number(/^process_id:(\d+)/m.exec(String(await client.info('server')))?.[1]);
    if (Number.isSafeInteger(reported) && reported > 0) pid = reported;
  } catch (error) {
    throw new InterlockError('redis_unavailable', `The private Redis in ${dir} (pid ${pid}), left running for the processes still connected to it, could not be taken over (${errorText(error)}): stop them, then that Redis (\`kill ${pid}\`), and start again.`, { cause: error });
  } finally {
    client.disconnect();
  }
  let stopping = false;
  let died: string | null = null;
  const exitListeners: ((sentence: string) => void)[] = [];
  // Not a child of this process: it is that server while its pid runs with the start it had when taken over (a pid
  // that went to another process after the server died is never signalled).
  const startedAt = processStartTicks(pid);
  const runs = () => processRuns(pid) && (startedAt === null || processStartTicks(pid) === startedAt);
  // Its end is seen by looking, once a second.
  const watch = setInterval(() => {
    if (stopping || runs()) return;
    clearInterval(watch);
    died = `The private redis-server (pid ${pid}) in ${dir}, taken over at start, exited while the service ran: nothing can be recorded or sent until Redis runs again. Stop the service (Ctrl-C) and run \`npm start\` again: the journal is on disk there and comes back with it.`;
    for (const listener of exitListeners.splice(0)) listener(died);
  }, 1_000);
  watch.unref();
  return {
    url,
    dir,
    pid,
    onExit(listener) {
      if (died !== null) listener(died);
      else if (!stopping) exitListeners.push(listener);
    },
    async stop() {
      stopping = true;
      clearInterval(watch);
      const others = died === null && runs() ? await othersConnected(url, port) : 0;
      if (others > 0) {
        logLeftRunning(options.logger ?? createLogger(), dir, pid, port, others);
      } else if (died === null && runs()) {
        // SIGTERM: Redis fsyncs the append-only file and exits.
        const signal = (name: NodeJS.Signals) => {
          try {
            process.kill(pid, name);
          } catch {
            // Gone already.
          }
        };
        signal('SIGTERM');
        const killAt = Date.now() + 8_000;
        while (runs()) {
          if (Date.now() > killAt) signal('SIGKILL');
          await new Promise((wait) => setTimeout(wait, 50));
        }
      }
      release();
    },
  };
}
