// Files the service creates once on first use (the signing key, the generated API tokens). Two processes starting
// at the same moment on a fresh data directory must end with one file that both read whole: the content is written
// to a private temporary file beside the target and hard-linked into place, which either creates the target with
// its full content or fails because another process got there first. A reader never sees a half-written file. Files
// written on a command's behalf (receipt exports, scenario results) go the same way, flushed, and may replace one.
// And files given by path (receipts, keys), read only when they are regular files of a bounded size.
import { randomBytes } from 'node:crypto';
import { closeSync, constants, copyFileSync, fchmodSync, fstatSync, fsyncSync, linkSync, mkdirSync, openSync, readSync, renameSync, statSync, unlinkSync, writeSync, type Stats } from 'node:fs';
import { basename, dirname, join, sep } from 'node:path';

/**
 * A file system error met on the temporary file, said of `path`: the temporary file is gone by the time anyone reads
 * the message (or was never made), and `path` is the one the caller gave and can fix. The original is its cause.
 */
function saidOf(path: string, error: unknown, verb: 'create' | 'write' = 'create', as?: string): unknown {
  const { code, errno, syscall } = (error ?? {}) as NodeJS.ErrnoException;
  if (typeof code !== 'string') return error;
  return Object.assign(new Error(`${code}: could not ${verb} ${path}`, { cause: error }), { code, errno, syscall: as ?? syscall, path });
}

/** Errors of a file system that has no hard links (some network and FAT file systems). */
const NO_HARD_LINKS: ReadonlySet<string> = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS']);

/** A write call as writeSync makes it (a test gives one that fails half way, as a full disk does). */
export type WriteCall = (fd: number, bytes: Uint8Array, offset: number) => number;

/**
 * Writes `content` to `path` whole or not at all: into a private temporary file beside it, flushed to disk, then put
 * in place: renamed over what is there (`replace`), or hard-linked where nothing is, failing with EEXIST (the error
 * as the link threw it) and leaving alone a file that is there. On a file system without hard links a new file is
 * an exclusive copy, which a crash may leave part-written. An error met on the temporary file is said of `path`; the
 * temporary file never stays. `mode`: the file's permissions from its first byte (else 0666 less the umask).
 */
export function writeFileWhole(path: string, content: string, options: { replace: boolean; write?: WriteCall; mode?: number }): void {
  const write = options.write ?? writeSync;
  const temporary = join(dirname(path), `.${basename(path)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  try {
    const fd = openSync(temporary, 'wx', options.mode ?? 0o666);
    try {
      // Exactly `mode`, whatever the umask: the file may hold secrets (service.json's tokens) and is never wider.
      if (options.mode !== undefined) fchmodSync(fd, options.mode);
      const bytes = Buffer.from(content, 'utf8');
      for (let at = 0; at < bytes.length; ) at += write(fd, bytes, at);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch (error) {
    try {
      unlinkSync(temporary);
    } catch {
      // Never made, or made and not removable: the error that matters is the write's.
    }
    throw saidOf(path, error, 'write', 'write');
  }
  try {
    if (options.replace) {
      renameSync(temporary, path);
      return;
    }
    try {
      linkSync(temporary, path);
    } catch (error) {
      if (!NO_HARD_LINKS.has(String((error as NodeJS.ErrnoException).code))) throw error;
      copyFileSync(temporary, path, constants.COPYFILE_EXCL);
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw error;
    throw saidOf(path, error, 'write');
  } finally {
    try {
      unlinkSync(temporary);
    } catch {
      // Renamed into place, or already gone.
    }
  }
}

/**
 * Makes a directory and the ones above it, as `mkdirSync(path, { recursive: true })` does, one level at a time: Node's
 * recursive mkdir never returns for a path whose parent exists but refuses children with ENOENT (/proc/x on Linux),
 * which hung `serve` instead of refusing the setting. The first level that cannot be made throws its error, and a
 * file where a directory should be is EEXIST, as with Node's.
 */
export function makeDirectory(path: string, mode = 0o777): void {
  // Each level as given, never normalised: `link/..` is the link's parent for the kernel, not the folder holding the
  // link, as path.resolve or join would read it.
  const parts = path.split(sep).filter((part) => part.length > 0 && part !== '.');
  let at = path.startsWith(sep) ? sep : '';
  for (const [index, part] of parts.entries()) {
    at = at === '' ? part : at.endsWith(sep) ? `${at}${part}` : `${at}${sep}${part}`;
    try {
      mkdirSync(at, { mode });
    } catch (error) {
      // A file above the last level fails the next level with ENOTDIR, as Node's does.
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || (index === parts.length - 1 && !statSync(at).isDirectory())) throw error;
    }
  }
}

/**
 * Why users other than this one could change what a directory or file holds, or null when none can: it belongs to
 * another user (root aside: root may write anything anyway), every user may write it, or the users of a group this
 * process is not in may (a group of its own, as a Kubernetes volume's fsGroup, is this process's). Only the path's
 * own mode and owner are read, not those of the directories above it. Null where the platform has no user ids.
 */
export function writableByOthers(stats: Stats): string | null {
  const uid = process.getuid?.();
  if (uid === undefined) return null;
  const mode = (stats.mode & 0o7777).toString(8).padStart(4, '0');
  if (stats.uid !== uid && stats.uid !== 0) return `it belongs to another user (uid ${stats.uid})`;
  if ((stats.mode & 0o002) !== 0) return `every user of this machine may write it (mode ${mode})`;
  const groups = new Set([process.getegid?.(), ...(process.getgroups?.() ?? [])]);
  if ((stats.mode & 0o020) !== 0 && !groups.has(stats.gid)) return `the users of group ${stats.gid}, which this process is not in, may write it (mode ${mode})`;
  return null;
}

/**
 * Creates `path` with `content` unless it exists; true when this call created it, false when it was already there.
 * Written whole (writeFileWhole): flushed to disk before it is linked into place, so a power loss never leaves a new
 * signing key empty, and the temporary file never stays, the write failing (a full disk) or not.
 */
export function createFileOnce(path: string, content: string, mode = 0o600): boolean {
  makeDirectory(dirname(path), 0o700);
  try {
    writeFileWhole(path, content, { replace: false, mode });
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
}

/** What a path that is not a regular file is, in words. */
export function kindOf(stats: Stats): string {
  if (stats.isFIFO()) return 'a FIFO (named pipe)';
  if (stats.isCharacterDevice()) return 'a character device';
  if (stats.isBlockDevice()) return 'a block device';
  if (stats.isSocket()) return 'a socket';
  return 'not a file';
}

/** A file past its cap (`maxBytes`); `what` names what such a file is, e.g. "a receipt file". */
export function fileTooLarge(bytes: number, maxBytes: number, what: string): Error {
  return new Error(`it is ${(bytes / 1024 / 1024).toFixed(1)} MiB, more than the ${maxBytes / 1024 / 1024} MiB ${what} may be`);
}

/**
 * Opens `path` for reading without waiting (a FIFO would otherwise block the open, then the read, for ever) and checks
 * on the open descriptor, so what is read is what was checked, that it is a regular file of at most `maxBytes`. The
 * caller reads it and closes `fd`. A directory throws EISDIR (as readFileSync does); anything else that is not a
 * regular file, or a file past the cap, throws saying what it is, in words that follow "cannot read PATH: ".
 */
export function openRegularFile(path: string, maxBytes: number, what: string): { fd: number; size: number } {
  const fd = openSync(path, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
  try {
    const stats = fstatSync(fd);
    if (stats.isDirectory()) throw Object.assign(new Error(`EISDIR: ${path}`), { code: 'EISDIR' });
    if (!stats.isFile()) throw new Error(`it is ${kindOf(stats)}, not a regular file`);
    if (stats.size > maxBytes) throw fileTooLarge(stats.size, maxBytes, what);
    return { fd, size: stats.size };
  } catch (error) {
    closeSync(fd);
    throw error;
  }
}

/** The text of `path` when it is a regular file of at most `maxBytes` (openRegularFile's checks), else it throws why. */
export function readRegularFile(path: string, maxBytes: number, what: string): string {
  const { fd, size } = openRegularFile(path, maxBytes, what);
  try {
    return readAtMost(fd, size, maxBytes, what);
  } finally {
    closeSync(fd);
  }
}

/**
 * The text of the open file `fd` (openRegularFile checked its size, `size`), read to its end but never past
 * `maxBytes`: a file that grew since its check, or one whose size says nothing of its content (a /proc file reports 0),
 * throws fileTooLarge once it is found longer, without being read whole.
 */
export function readAtMost(fd: number, size: number, maxBytes: number, what: string): string {
  return bytesAtMost(fd, size, maxBytes, what).toString('utf8');
}

/** readAtMost's bytes, undecoded: for a reader that must refuse bytes that are not UTF-8 rather than read them as U+FFFD. */
export function bytesAtMost(fd: number, size: number, maxBytes: number, what: string): Buffer {
  const chunks: Buffer[] = [];
  let total = 0;
  let chunk = Buffer.allocUnsafe(Math.min(Math.max(size + 1, 64 * 1024), maxBytes + 1));
  for (;;) {
    const read = readSync(fd, chunk, 0, Math.min(chunk.length, maxBytes + 1 - total), total);
    if (read === 0) break;
    chunks.push(chunk.subarray(0, read));
    total += read;
    if (total > maxBytes) throw fileTooLarge(total, maxBytes, what);
    if (read === chunk.length) chunk = Buffer.allocUnsafe(Math.min(chunk.length * 2, maxBytes + 1 - total));
    else chunk = chunk.subarray(read);
  }
  return Buffer.concat(chunks, total);
}
