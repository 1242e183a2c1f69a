// Where `receipt export` writes (--out FILE, --dir DIR). A receipt file is written whole or not at all: into a
// temporary file beside it, flushed, then linked into place (a new file: it fails if anything is there) or renamed
// over the file it replaces, so a crash never leaves half a receipt and a refused write leaves the file there as it
// was. Nothing is replaced that the operator did not mean to replace: --out refuses a file already there (a slip of
// tab completion onto the signing key would leave the service unable to sign) unless --force; --dir replaces only
// an earlier export of the same effect's receipt, since exporting into one directory again as receipts grow with
// facts is its daily use.
import { lstatSync, statSync, type Stats } from 'node:fs';
import { basename, join } from 'node:path';
import { kindOf, writeFileWhole } from '../files.js';
import { errorMessage } from '../core/errors.js';
import { CliFailure, EXIT_BAD_INPUT, EXIT_FAILED, fileSystemRefusal } from './failure.js';
import { readReceiptText, whyUnreadable } from './verify-pool.js';

/** How a receipt file is put in place: `new` only where nothing is (refused otherwise), `replace` over what is there. */
export type Placing = 'new' | 'replace';

/** What is at `path` without following a last link (null: nothing, or a part of the path that is no directory, which the write says). */
function entryAt(path: string): Stats | null {
  try {
    return lstatSync(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    throw error;
  }
}

/** What a link at `path` leads to; null when it leads nowhere (a dangling link). */
function followed(path: string): Stats | null {
  try {
    return statSync(path);
  } catch {
    return null;
  }
}

/** Why nothing may be written at `path` even with --force (a directory, a device, a FIFO), in words after the path; null when a file may go there. */
function neverReplaced(target: Stats | null): string | null {
  if (target === null || target.isFile()) return null;
  return target.isDirectory() ? 'is a directory' : `is ${kindOf(target)}, not a regular file`;
}

/**
 * How `receipt export --out` may write `path`, checked before anything is read: refused (exit 2, nothing written)
 * when a file is there and `force` is not given, and always when a directory, a device or a FIFO is.
 */
export function placingOut(path: string, force: boolean): Placing {
  const there = entryAt(path);
  if (there === null) return 'new';
  const never = neverReplaced(followed(path));
  if (never !== null) throw new CliFailure(`--out ${path} ${never}; nothing was written. --out takes the path of a file to write (for one file per receipt, give --dir DIR).`, EXIT_BAD_INPUT);
  if (!force) throw new CliFailure(`${path} already exists; nothing was written. Give --out a new path, move that file aside, or pass --force to replace it.`, EXIT_BAD_INPUT);
  return 'replace';
}

/** Why the file at `path` is no earlier export of effect `effectId`'s receipt, or null when it is one. */
function notReceiptOf(path: string, effectId: string): string | null {
  let text: string;
  try {
    text = readReceiptText(path);
  } catch (error) {
    return `it cannot be read: ${whyUnreadable(error)}`;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return 'it is not JSON';
  }
  const held = typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as { effectId?: unknown }).effectId : undefined;
  if (held === effectId) return null;
  return typeof held === 'string' && /^[0-9a-f]{64}$/.test(held) ? `it is the receipt of effect ${held}` : 'it is not a receipt';
}

/**
 * How `receipt export --dir` may write each effect's DIR/EFFECT_ID.json, checked before anything is read or written:
 * over an earlier export of the same effect's receipt, or anything with `force` (but never a directory, a device or a
 * FIFO); refused (exit 2, nothing written) over any other file.
 */
export function placingInDir(dir: string, effectIds: readonly string[], force: boolean): Map<string, Placing> {
  const placing = new Map<string, Placing>();
  for (const effectId of effectIds) {
    const path = receiptPathIn(dir, effectId);
    if (placing.has(path)) continue;
    const there = entryAt(path);
    if (there === null) {
      placing.set(path, 'new');
      continue;
    }
    const never = neverReplaced(followed(path));
    if (never !== null) throw new CliFailure(`${path} ${never}, where the receipt of effect ${effectId} goes; nothing was written. Move it aside or give another --dir.`, EXIT_BAD_INPUT);
    const why = force ? null : notReceiptOf(path, effectId);
    if (why !== null) throw new CliFailure(`${path} is already there and is not an earlier export of effect ${effectId}'s receipt (${why}); nothing was written. Move it aside, give another --dir, or pass --force to replace it.`, EXIT_BAD_INPUT);
    placing.set(path, 'replace');
  }
  return placing;
}

/** The file `--dir` writes effect `effectId`'s receipt to. */
export function receiptPathIn(dir: string, effectId: string): string {
  return join(dir, `${effectId}.json`);
}

/**
 * Writes `text` to `path` whole or not at all (writeFileWhole). `new` refuses (exit 2) a file that appeared at `path`
 * since it was checked, and leaves that file as it is.
 */
export function writeReceiptFile(path: string, text: string, placing: Placing): void {
  try {
    writeFileWhole(path, text, { replace: placing === 'replace' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    throw new CliFailure(`${path} appeared while the receipt was being exported, and was left as it is; give a new path, move it aside, or pass --force to replace it.`, EXIT_BAD_INPUT, { cause: error });
  }
}

/** A receipt file `--dir` writes: where, how it is put in place (placingInDir), and its text. */
export type ReceiptFile = { path: string; placing: Placing; text: string };

/** Most file names a message about several receipt files lists; `ls` shows the rest. */
const NAMES_SHOWN = 3;

function names(paths: readonly string[]): string {
  const shown = paths.slice(0, NAMES_SHOWN).map((path) => basename(path)).join(', ');
  return paths.length > NAMES_SHOWN ? `${shown} and ${paths.length - NAMES_SHOWN} more` : shown;
}

/**
 * Writes `--dir`'s receipt files in order, each whole or not at all (writeReceiptFile); a path given twice (an effect
 * id given twice) is written twice, its second write replacing its first. A write that fails before any file was
 * written fails as it is (exit 2: nothing was written). One that fails after some were (a disk that fills half way)
 * says what stands, exit 1 as for a receipt not found: the files written, each whole and verifiable on its own (their
 * heads were sealed together with the rest, and each carries its own proof), the one that failed and why, and what to
 * do; running the same export again replaces the files written with fresh ones.
 */
export function writeReceiptFiles(dir: string, files: readonly ReceiptFile[]): void {
  const written = new Set<string>();
  for (const [index, file] of files.entries()) {
    try {
      writeReceiptFile(file.path, file.text, written.has(file.path) ? 'replace' : file.placing);
    } catch (error) {
      if (written.size === 0) throw error;
      const refusal = fileSystemRefusal(error);
      const why = refusal?.meaning ?? (error instanceof CliFailure ? error.message.replace(/\.$/, '') : errorMessage(error));
      const untried = [...new Set(files.slice(index + 1).map(({ path }) => path))].filter((path) => path !== file.path && !written.has(path));
      const total = new Set(files.map(({ path }) => path)).size;
      const failed = written.has(file.path) ? `${basename(file.path)} could not be written again (the one written before stands)` : `${basename(file.path)} could not be written`;
      const remedy = refusal?.remedy ?? null;
      const stands = `${written.size} of ${total} receipts written to ${dir} (${names([...written])}), each whole`;
      const notWritten = `${failed}: ${why}${untried.length === 0 ? '' : `, and ${untried.length} more not tried (${names(untried)})`}`;
      throw new CliFailure(`${stands}; ${notWritten}. ${remedy === null ? 'Once that is fixed, run' : `${remedy}, then run`} the same export again: it replaces the files written with fresh ones.`, EXIT_FAILED, { cause: error });
    }
    written.add(file.path);
  }
}
