// What a file system refusal means, in words, for every message that names the path it was about: one table, so a
// missing file reads the same whichever command met it. Node's own text is the errno's name.
const PATH_PROBLEMS: Readonly<Record<string, string>> = {
  ENOENT: 'no such file or directory',
  EACCES: 'permission denied',
  EPERM: 'not permitted',
  ENOTDIR: 'a part of the path is a file, not a directory',
  EEXIST: 'a file is already there',
  EISDIR: 'it is a directory',
  EROFS: 'the file system is read-only',
  ENOSPC: 'no space left on the device',
  ENAMETOOLONG: 'the name is too long',
};

/** The meaning of an error's errno code, or null when it is not a file system refusal this table knows. */
export function pathMeaning(error: unknown): string | null {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && Object.hasOwn(PATH_PROBLEMS, code) ? (PATH_PROBLEMS[code] ?? null) : null;
}
