// How a CLI command fails: one line on stderr, never a stack trace, and an exit code a script can branch on:
// 1 the command ran and the answer is no (an unknown approval, a conflict), 2 bad input, bad configuration, a path
// it cannot use or an unreachable Redis (nothing was done; fix the call or the environment and run it again; but for a
// revoke or a cap that too few replicas held in time, redis_not_durable: in force on the master, its line says so), 4 a
// proposal or case that is recorded but whose outcome is not known yet (Redis failed after it was written).
import { CommanderError, InvalidArgumentError } from 'commander';
import { errorCode, type ErrorCode } from '../core/errors.js';
import { redactSecrets } from '../core/redact.js';
import { pathMeaning } from './path-problems.js';
import { printProblem } from './output.js';
import type { EXIT_UNSETTLED } from './effect-command.js';

/** Registry codes that mean the call or the environment must change (exit 2), not that the answer is no (exit 1). */
const BAD_INPUT_CODES: ReadonlySet<ErrorCode> = new Set(['invalid_proposal', 'invalid_effect', 'invalid_approval', 'invalid_receipt', 'invalid_request', 'non_canonical_value', 'invalid_config', 'target_misconfigured', 'redis_unavailable', 'redis_not_durable']);

export const EXIT_FAILED = 1;
export const EXIT_BAD_INPUT = 2;

/** A failure whose message is already written for the operator, with the exit code it ends the command with. */
export class CliFailure extends Error {
  readonly code = 'cli_failure';
  constructor(message: string, readonly exitCode: typeof EXIT_FAILED | typeof EXIT_BAD_INPUT | typeof EXIT_UNSETTLED, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'CliFailure';
  }
}

/** `text` on one line: its line breaks, and the spaces around them, become one space. */
export function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim();
}

const PATH_ACTIONS: Readonly<Record<string, string>> = { mkdir: 'create the directory', open: 'open', write: 'write', link: 'create', rename: 'move a file to', unlink: 'remove', read: 'read', scandir: 'list' };

/**
 * Refusals that no other path on the same file system avoids, with the remedy that does: room on it, or a file system
 * that takes writes. EDQUOT's meaning is here, not in path-problems.ts's table, as only a write meets it.
 */
const FILE_SYSTEM_REFUSALS: Readonly<Record<string, { meaning?: string; remedy: string }>> = {
  ENOSPC: { remedy: 'Free space on that file system (or write to one that has room)' },
  EDQUOT: { meaning: "this user's disk quota there is used up", remedy: "Free space within this user's quota on that file system (or write to one where it has room)" },
  EROFS: { remedy: 'Give a path on a file system that takes writes (or remount that one read-write)' },
};

/**
 * A file system refusal in words with its code ("no space left on the device (ENOSPC)"), and its remedy when no other
 * path on that file system would do (a full disk, a read-only one), as a clause; null for any other error.
 */
export function fileSystemRefusal(error: unknown): { meaning: string; remedy: string | null } | null {
  const code = (error as { code?: unknown } | null)?.code;
  const known = typeof code === 'string' && Object.hasOwn(FILE_SYSTEM_REFUSALS, code) ? FILE_SYSTEM_REFUSALS[code] : undefined;
  const meaning = pathMeaning(error) ?? known?.meaning ?? null;
  return meaning === null ? null : { meaning: `${meaning} (${String(code)})`, remedy: known?.remedy ?? null };
}

/** A file system refusal, said with its path, meaning and what to do; null for any other error. */
function pathProblem(error: unknown): string | null {
  const { syscall, path } = (error ?? {}) as { syscall?: unknown; path?: unknown };
  const refusal = fileSystemRefusal(error);
  if (refusal === null || typeof path !== 'string') return null;
  const action = typeof syscall === 'string' ? (PATH_ACTIONS[syscall] ?? syscall) : 'use';
  return `Could not ${action} ${path}: ${refusal.meaning}. ${refusal.remedy ?? 'Give a path this user can write, or fix the one given'}.`;
}

/** Writes the one-line error and sets the exit code. Commander has already printed its own parse errors. */
export function reportFailure(error: unknown): void {
  if (error instanceof CommanderError && !(error instanceof InvalidArgumentError)) {
    // Help and --version end as CommanderErrors with exit code 0; anything else is a usage error.
    process.exitCode = error.exitCode === 0 ? 0 : EXIT_BAD_INPUT;
    return;
  }
  // A path the command could not use is the call's to fix: exit 2.
  const onPath = pathProblem(error);
  if (onPath !== null) {
    printProblem(onPath);
    process.exitCode = EXIT_BAD_INPUT;
    return;
  }
  // The message may quote recorded text or a file's: printed escaped, on its one line. Secrets are masked before the
  // lines are joined, so a URL's password cannot run into the next line's "@".
  printProblem(oneLine(redactSecrets(error instanceof Error ? error.message : String(error))));
  if (error instanceof CliFailure) process.exitCode = error.exitCode;
  else if (error instanceof InvalidArgumentError) process.exitCode = EXIT_BAD_INPUT;
  else process.exitCode = BAD_INPUT_CODES.has(errorCode(error)) ? EXIT_BAD_INPUT : EXIT_FAILED;
}

const DIGITS = /^[0-9]+$/;

/**
 * A commander argument parser for a whole number in [min, max]. Only plain digits are accepted: Number() would
 * read "1e21", "0x10", " 5" and "" as numbers, and none of those is what an operator means by a cap.
 */
export function wholeNumber(name: string, unit: string, range: { min: number; max?: number }): (value: string) => number {
  const max = range.max ?? Number.MAX_SAFE_INTEGER;
  return (value: string): number => {
    const parsed = DIGITS.test(value) ? Number(value) : Number.NaN;
    if (!Number.isSafeInteger(parsed) || parsed < range.min || parsed > max) {
      throw new InvalidArgumentError(`${name} must be a whole number of ${unit} from ${range.min} to ${max}, in digits only (no sign, fraction or exponent).`);
    }
    return parsed;
  };
}

/** A commander argument parser that checks a value with a schema from core/text, saying the first problem. */
export function checked<T>(schema: { safeParse(value: unknown): { success: true; data: T } | { success: false; error: { issues: { message: string }[] } } }, name: string): (value: string) => T {
  return (value: string): T => {
    const parsed = schema.safeParse(value);
    if (!parsed.success) throw new InvalidArgumentError(`${name} ${parsed.error.issues[0]?.message ?? 'is invalid'}.`);
    return parsed.data;
  };
}

const DURATION = /^([0-9]{1,7})(s|m|h|d)$/;
const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** A commander argument parser for a duration such as `30m`, `72h` or `7d`, in ms, from 1 s up to `maxMs`. */
export function duration(name: string, maxMs: number): (value: string) => number {
  return (value: string): number => {
    const match = DURATION.exec(value.trim());
    const ms = match === null ? Number.NaN : Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
    if (!Number.isSafeInteger(ms) || ms < 1_000 || ms > maxMs) {
      throw new InvalidArgumentError(`${name} must be a duration: a whole number followed by s, m, h or d (30m, 72h, 7d), at most ${Math.floor(maxMs / UNIT_MS.d)}d; "${value.slice(0, 40)}" is not one.`);
    }
    return ms;
  };
}
