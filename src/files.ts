// Files the service creates once on first use (the signing key, the generated API tokens). Two processes starting
// at the same moment on a fresh data directory must end with one file that both read whole: the content is written
// to a private temporary file beside the target and hard-linked into place, which either creates the target with
// its full content or fails because another process got there first. A reader never sees a half-written file.
import { randomBytes } from 'node:crypto';
import { linkSync, mkdirSync, unlinkSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

/** Creates `path` with `content` unless it exists; true when this call created it, false when it was already there. */
export function createFileOnce(path: string, content: string, mode = 0o600): boolean {
  const directory = dirname(path);
  mkdirSync(directory, { recursive: true, mode: 0o700 });
  const temporary = join(directory, `.${basename(path)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  writeFileSync(temporary, content, { mode, flag: 'wx' });
  try {
    linkSync(temporary, path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  } finally {
    unlinkSync(temporary);
  }
}
