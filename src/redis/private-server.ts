// A private redis-server for `npm start` when REDIS_URL is unset (issue 11 §3): the journal must survive a crash
// of Redis itself, so it runs with an append-only file fsynced on every write and never evicts keys; its files
// live under the data directory, so the next start finds the same journal. Its memory is bounded (maxmemory), so a
// full Redis refuses writes with OOM, which the service waits out, instead of growing until the kernel kills it (and,
// replaying the same file at its next start, kills it again). It listens on loopback only, on a free port, and is
// stopped (with its final fsync) when the service stops. Every user of the machine reaches that port, so it requires
// a password, kept in a file of its own 0700 directory: a client holds it only by reading that directory (the
// service from its start, the CLI from service.json, also 0600).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, readFileSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { Redis } from 'ioredis';
import { DEFAULT_REDIS_MAXMEMORY } from '../config.js';
import { InterlockError } from '../core/errors.js';
import { createFileOnce, makeDirectory } from '../files.js';

export type PrivateRedis = {
  url: string;
  dir: string;
  pid: number;
  /** Calls `listener` once with a sentence for the operator if the server exits on its own (killed, crashed), not by stop(). */
  onExit(listener: (sentence: string) => void): void;
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

function livePid(file: string): number | null {
  let pid: number;
  try {
    pid = Number(readFileSync(file, 'utf8').split('\n')[0]?.trim());
  } catch {
    return null;
  }
  if (!Number.isSafeInteger(pid) || pid <= 0) return null;
  return processRuns(pid) ? pid : null;
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

/**
 * Takes the directory's start lock (`start.lock`, holding this process's pid), so two starts at the same moment
 * cannot both pass the pidfile check and run two servers on one append-only file. A lock whose process is gone (a
 * killed start) is moved aside, atomically, and taken again: of two starts that find it stale, one moves it and
 * both then race for a fresh lock, which only one gets. Returns its release; throws when a live process holds it.
 */
function takeStartLock(dir: string): () => void {
  const file = join(dir, 'start.lock');
  for (let attempt = 0; attempt < 3; attempt += 1) {
    try {
      // The pid, then a token of this start: a release removes the lock only while it is still this start's.
      const mine = `${process.pid}\n${randomBytes(8).toString('hex')}`;
      writeFileSync(file, mine, { flag: 'wx', mode: 0o600 });
      return () => {
        let now: string;
        try {
          now = readFileSync(file, 'utf8');
        } catch {
          return;
        }
        if (now === mine) rmSync(file, { force: true });
      };
    } catch (error) {
      if ((error as { code?: string }).code !== 'EEXIST') throw error;
    }
    const holder = livePid(file);
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

type StartOptions = { onLine?: (line: string) => void; orphanOf?: string | null; signal?: AbortSignal; maxmemory?: string };

/**
 * Starts redis-server under `<dataDir>/redis`; throws `invalid_config` (exit 2) when the binary is missing.
 * `orphanOf`: the address of the private Redis a `serve` that is no longer running started on this data directory
 * (its service.json), so one left running by a killed serve is stopped and this start goes on.
 * `signal`: aborting it before the server answers kills the server (its append-only file is fsynced on every write,
 * so a kill loses nothing it acknowledged) and fails the start once the server has exited, so the caller may remove
 * its directory; aborting it later does nothing (stop() stops a started server).
 * `maxmemory`: the server's memory limit (config.redisMaxmemory; DEFAULT_REDIS_MAXMEMORY when not given).
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
  const owner = livePid(join(dir, 'redis.pid'));
  // This start holds the directory's lock, which a serve holds for as long as its Redis runs: a live server here was
  // left by one that is gone. Its address is in that serve's service.json, or, for a start killed before it wrote
  // one, in the address file each start writes beside the server.
  let found: 'stopped' | 'in_use' | 'not_it' = 'not_it';
  for (const address of new Set([options.orphanOf, recordedAddress(dir)])) {
    if (owner === null || found !== 'not_it' || typeof address !== 'string') continue;
    found = await stopOrphan(address, dir, owner);
  }
  const orphanGone = found === 'stopped';
  if (owner !== null && found === 'in_use') {
    throw new InterlockError('invalid_config', `The private Redis in ${dir} (pid ${owner}) was left running by an \`interlock serve\` that is gone, and other processes are still connected to it (a \`serve --roles worker\` that joined it, say): it was not stopped. Stop them first, or set REDIS_URL to share it (its address, with its password, is in ${addressFile(dir)}), or give this process its own INTERLOCK_DATA_DIR.`);
  }
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
      if (exited === null) {
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
