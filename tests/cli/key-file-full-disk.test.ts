// Rule: a file created once on the operator's behalf (`keys generate --out`, the data directory's signing key, the
// API tokens, the private Redis's password) is written whole or not at all: a write that fails (a full disk) throws
// its error and leaves no temporary file beside the target, and the content is flushed to disk before it is linked
// into place, so a power loss never leaves a new signing key empty.
// The full disk is simulated as the file system gives it: the temporary file is made, then the write fails ENOSPC.
import fs, { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createFileOnce } from '../../src/files.js';

const root = mkdtempSync(join(tmpdir(), 'interlock-key-full-disk-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const real = { openSync: fs.openSync, closeSync: fs.closeSync, writeSync: fs.writeSync, writeFileSync: fs.writeFileSync, fsyncSync: fs.fsyncSync, linkSync: fs.linkSync };
afterEach(() => {
  Object.assign(fs, real);
  syncBuiltinESMExports();
});

const isTemporary = (path: unknown): path is string => typeof path === 'string' && basename(path).startsWith('.') && path.endsWith('.tmp');
const enospc = () => Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', syscall: 'write', errno: -28 });

/** Calls on temporary files, in order; with `full`, every write to one fails as on a full disk (once the file is made). */
function watchTemporaryFiles(full: boolean): string[] {
  const calls: string[] = [];
  const temporaryFds = new Set<number>();
  Object.assign(fs, {
    openSync: (path: fs.PathLike, ...rest: unknown[]) => {
      const fd = (real.openSync as (...args: unknown[]) => number)(path, ...rest);
      if (isTemporary(path)) temporaryFds.add(fd);
      return fd;
    },
    closeSync: (fd: number) => {
      temporaryFds.delete(fd);
      real.closeSync(fd);
    },
    writeSync: (fd: number, ...rest: unknown[]) => {
      if (full && temporaryFds.has(fd)) throw enospc();
      return (real.writeSync as (...args: unknown[]) => number)(fd, ...rest);
    },
    writeFileSync: (path: fs.PathOrFileDescriptor, data: string, options?: fs.WriteFileOptions) => {
      if (full && isTemporary(path)) {
        real.writeFileSync(path, '', options);
        throw enospc();
      }
      if (isTemporary(path)) calls.push('write and close, no fsync');
      real.writeFileSync(path, data, options);
    },
    fsyncSync: (fd: number) => {
      if (temporaryFds.has(fd)) calls.push('fsync');
      real.fsyncSync(fd);
    },
    linkSync: (from: fs.PathLike, to: fs.PathLike) => {
      if (isTemporary(from)) calls.push('link');
      real.linkSync(from, to);
    },
  });
  syncBuiltinESMExports();
  return calls;
}

describe('createFileOnce', () => {
  it('on a full disk throws the write error, said of the target, and leaves no temporary file beside it', () => {
    const dir = join(root, 'full');
    watchTemporaryFiles(true);
    expect(() => createFileOnce(join(dir, 'signing-key.pem'), '-----BEGIN PRIVATE KEY-----\n…\n-----END PRIVATE KEY-----\n')).toThrow(/ENOSPC.*signing-key\.pem/);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('flushes the content to disk before it links the file into place', () => {
    const dir = join(root, 'flushed');
    const calls = watchTemporaryFiles(false);
    expect(createFileOnce(join(dir, 'signing-key.pem'), 'key')).toBe(true);
    expect(calls).toEqual(['fsync', 'link']);
    expect(readdirSync(dir)).toEqual(['signing-key.pem']);
  });
});
