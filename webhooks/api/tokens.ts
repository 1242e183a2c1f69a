// Bearer tokens and the roles they carry (issue 11 §2). Tokens come from configuration as `name:role:token` entries,
// comma-separated (INTERLOCK_API_TOKENS), or from a file of such entries, one a line (or several, comma-separated);
// a line starting with `#` is a comment. A presented token is compared
// with every configured one in constant time (SHA-256 digests through timingSafeEqual, no early exit), so neither
// the match nor its position leaks through timing. A token is never logged or echoed: callers are known by name.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createFileOnce, InterlockError, readRegularFile, tokensFileExposure, type KeyExposure } from '../../src/interlock.js';

export const ROLES = ['support', 'approver', 'auditor', 'operator'] as const;
export type Role = (typeof ROLES)[number];

/** Who is calling: the token's name and role, never the token. */
export type Caller = { name: string; role: Role };

export type TokenEntry = { name: string; role: Role; token: string };

export type TokenRegistry = {
  /** The caller a presented token belongs to, or null. Takes the same time whichever token (if any) matches. */
  authenticate(presented: string): Caller | null;
  /** The configured callers (names and roles, no tokens), e.g. for a start-up line. */
  callers(): Caller[];
};

/** Names appear in logs, receipts (as the proposing agent) and four-eyes checks. */
export const TOKEN_NAME = /^[A-Za-z0-9_.@-]{1,100}$/;
/** Long enough to be unguessable; no ':' or ',' (the list separators) and nothing a header would mangle. */
export const TOKEN_VALUE = /^[A-Za-z0-9_.~+/=-]{16,256}$/;

const isRole = (value: string): value is Role => (ROLES as readonly string[]).includes(value);
const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest();

export class TokenConfigError extends InterlockError {
  constructor(message: string) {
    super('invalid_config', message);
    this.name = 'TokenConfigError';
  }
}

/** How long a name must be, of the token alphabet alone, to be taken for a token written where the name goes. */
const TOKEN_LIKE_CHARS = 32;

/** Hex digits as many as `openssl rand -hex 12` gives, or more: a secret, never a name anyone is given. */
const HEX_SECRET = /^[0-9a-f]{24,}$/i;

/**
 * Whether an entry reads as written token-first (token:role:name), which passes every other check when the real name
 * is 16 or more characters of the token alphabet (support-automation), and would make the secret the caller's name
 * (logged on every request, written into receipts) and the name its guessable bearer token: its name is 24 or more
 * hex digits (`openssl rand -hex 12` and longer) and its token no longer, or its name is a secret's length (32 or more
 * characters of letters, digits, _ and -, as generated tokens are: 43 base64url characters) and longer than its
 * token. A hex name beside a longer token (a git sha or an object id naming a service) is a name; a token made of
 * words (a passphrase) is a token all the same.
 */
function writtenTokenFirst(name: string, token: string): boolean {
  return (HEX_SECRET.test(name) && token.length <= name.length) || (name.length >= TOKEN_LIKE_CHARS && /^[A-Za-z0-9_-]+$/.test(name) && name.length > token.length);
}

/**
 * Where each parsed entry stood in its text ("line 3, entry 2", or "entry 2" in a text of one line), so the registry's
 * refusals (a shared token, a role given twice) point at the line the operator has to edit; entries made in code
 * have none and are said by their index.
 */
const entryPositions = new WeakMap<TokenEntry, string>();

/**
 * Entries from `name:role:token` items, one line of them or several, the items of a line separated by commas. A line
 * whose first non-blank character is `#` is a comment as a whole, commas and all: commenting out a line of entries
 * revokes every one of them, and a comment's prose is never read as an entry. A `#` that starts an item further along
 * a line is refused rather than guessed at (the item alone, or the rest of the line?). INTERLOCK_API_TOKENS and a
 * tokens file are read alike; a refusal names the line (when the text has more than one) and the entry on it.
 */
export function parseTokenEntries(text: string, source: string): TokenEntry[] {
  const lines = text.split('\n');
  const manyLines = text.replace(/\s+$/, '').includes('\n');
  const entries: TokenEntry[] = [];
  for (const [lineIndex, line] of lines.entries()) {
    if (line.trim().startsWith('#')) continue;
    const items = line.split(',').map((item) => item.trim());
    for (const [itemIndex, item] of items.entries()) {
      if (item === '') continue;
      // Said by position only: the item holds a token, which must not reach a log or a terminal, and an entry written
      // in another order (token:role:name) holds it where the name should be.
      const position = manyLines ? `line ${lineIndex + 1}, entry ${itemIndex + 1}` : `entry ${itemIndex + 1}`;
      const where = `${source}, ${position}`;
      if (item.startsWith('#')) throw new TokenConfigError(`${where} starts with #, which comments out a whole line only (a line whose first character is #): put the entries to comment out on a line of their own.`);
      const parts = item.split(':');
      if (parts.length !== 3) throw new TokenConfigError(`${where} is not name:role:token (it has ${parts.length} part(s) separated by ':').`);
      const [name = '', role = '', token = ''] = parts;
      if (!TOKEN_NAME.test(name)) throw new TokenConfigError(`${where}: the name must be 1-100 letters, digits or _ . @ -.`);
      if (!isRole(role)) throw new TokenConfigError(`${where}: the role must be one of ${ROLES.join(', ')}.`);
      if (!TOKEN_VALUE.test(token)) throw new TokenConfigError(`${where}: the token must be 16-256 letters, digits or _ . ~ + / = -.`);
      if (writtenTokenFirst(name, token)) throw new TokenConfigError(`${where}: the name looks like a token (24 or more hex digits, or ${TOKEN_LIKE_CHARS} or more letters, digits, _ or -, and longer than the token); an entry is name:role:token, in that order.`);
      const entry: TokenEntry = { name, role, token };
      entryPositions.set(entry, position);
      entries.push(entry);
    }
  }
  return entries;
}

/** `equal` compares two digests of the same length in constant time; tests count its calls. */
export function createTokenRegistry(entries: readonly TokenEntry[], options: { equal?: (a: Buffer, b: Buffer) => boolean } = {}): TokenRegistry {
  const equal = options.equal ?? timingSafeEqual;
  const seenTokens = new Set<string>();
  const seenCallers = new Set<string>();
  for (const [index, entry] of entries.entries()) {
    const caller = `${entry.name}:${entry.role}`;
    // Named only when the name cannot be a token (an entry written token:role:name holds it there); else by position.
    const named = !TOKEN_VALUE.test(entry.name);
    const position = entryPositions.get(entry) ?? `entry ${index + 1}`;
    if (seenTokens.has(entry.token)) throw new TokenConfigError(`Two entries share one token (one of them is ${named ? caller : position}); give every name and role its own.`);
    seenTokens.add(entry.token);
    if (seenCallers.has(caller)) throw new TokenConfigError(named ? `${caller} is configured twice; a name holds each role at most once.` : `${position.charAt(0).toUpperCase()}${position.slice(1)} gives a name the role ${entry.role} again; a name holds each role at most once.`);
    seenCallers.add(caller);
  }
  const known = entries.map((entry) => ({ caller: { name: entry.name, role: entry.role } as Caller, digest: digest(entry.token) }));
  return {
    authenticate(presented) {
      const candidate = digest(presented);
      let found: Caller | null = null;
      for (const item of known) {
        // Every configured token is compared, whatever matched before.
        if (equal(candidate, item.digest) && found === null) found = item.caller;
      }
      return found;
    },
    callers: () => known.map((item) => ({ ...item.caller })),
  };
}

/** The file INTERLOCK_API_TOKENS names (a value starting with /, ./ or ../), or null when it holds the entries itself. */
export function tokensFileOf(spec: string): string | null {
  return /^(?:\/|\.\.?\/)/.test(spec) ? spec : null;
}

/** The most a tokens file may hold (bytes): thousands of entries. */
export const MAX_TOKENS_FILE_BYTES = 1024 * 1024;

/**
 * A tokens file's text, read as the key files are: a regular file of at most MAX_TOKENS_FILE_BYTES, opened without
 * waiting, so a FIFO or a device named there is refused at start instead of holding it for ever.
 */
const readTokensFile = (path: string) => readRegularFile(path, MAX_TOKENS_FILE_BYTES, 'a tokens file');

/**
 * The registry from INTERLOCK_API_TOKENS (config.apiTokens): a value starting with `/`, `./` or `../` names a file
 * of entries; anything else is the entries themselves.
 */
export function loadTokenRegistry(spec: string, options: { readFile?: (path: string) => string; generated?: boolean } = {}): TokenRegistry {
  const isPath = tokensFileOf(spec) !== null;
  // Set but holding no entry (blank, only commas or comments, an empty file): an API nobody could call, refused at
  // start rather than answering every request 401.
  const atLeastOne = (entries: TokenEntry[], where: string) => {
    if (entries.length === 0) throw new TokenConfigError(`${where} holds no name:role:token entry, so nobody could call the API. Give at least one, or unset INTERLOCK_API_TOKENS to have tokens generated into the data directory.`);
    return entries;
  };
  if (!isPath) return createTokenRegistry(atLeastOne(parseTokenEntries(spec, 'INTERLOCK_API_TOKENS'), 'INTERLOCK_API_TOKENS'));
  let text: string;
  try {
    text = (options.readFile ?? readTokensFile)(spec);
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    // The data directory's generated file (INTERLOCK_API_TOKENS unset): replacing it by a regular file is the fix.
    if (options.generated === true) throw new TokenConfigError(`The generated API tokens file ${spec} cannot be read (${why}). Remove it (a new one is generated at the next start) or make it a regular file of name:role:token lines, at most ${MAX_TOKENS_FILE_BYTES / 1024 / 1024} MiB; or set INTERLOCK_API_TOKENS.`);
    throw new TokenConfigError(`INTERLOCK_API_TOKENS names the file ${spec}, which cannot be read (${why}). Name a regular file of name:role:token lines, at most ${MAX_TOKENS_FILE_BYTES / 1024 / 1024} MiB, or give the entries themselves.`);
  }
  return createTokenRegistry(atLeastOne(parseTokenEntries(text, spec), `INTERLOCK_API_TOKENS's file ${spec}`));
}

/** Where `loadOrCreateLocalTokens` keeps the tokens it generated, inside the data directory. */
export const LOCAL_TOKENS_FILE = 'api-tokens';

/**
 * The tokens of a service started without INTERLOCK_API_TOKENS: read from `<dataDir>/api-tokens`, or generated
 * once (one `local-<role>` token per role, 32 random bytes each) into that file with mode 0600. Returns the
 * registry, the file and whether it was just created, so the start-up line can say where the tokens are, and who
 * besides its owner may read or write a file read again (a data directory restored or copied loses its 0600): the
 * caller warns, as it does for a tokens file given in INTERLOCK_API_TOKENS.
 */
export function loadOrCreateLocalTokens(dataDir: string): { registry: TokenRegistry; file: string; created: boolean; exposure: KeyExposure | null } {
  const file = join(dataDir, LOCAL_TOKENS_FILE);
  let created = false;
  if (!existsSync(file)) {
    const lines = ROLES.map((role) => `local-${role}:${role}:${randomBytes(32).toString('base64url')}`);
    try {
      // False when another process created it first: then its tokens are read below.
      created = createFileOnce(file, `# Generated by interlock on first start; one name:role:token a line. Keep this file private.\n${lines.join('\n')}\n`);
    } catch (error) {
      throw new TokenConfigError(`Could not write the generated API tokens to ${file} (${error instanceof Error ? error.message : String(error)}); set INTERLOCK_API_TOKENS or INTERLOCK_DATA_DIR.`);
    }
  }
  const registry = loadTokenRegistry(file.startsWith('/') ? file : `./${file}`, { generated: true });
  return { registry, file, created, exposure: created ? null : tokensFileExposure(file, 'generated: INTERLOCK_API_TOKENS is unset') };
}

/** The token of one generated local caller (`local-<role>`), for the start-up line and the scenarios. */
export function localToken(file: string, role: Role): string | null {
  const line = readTokensFile(file).split('\n').find((entry) => entry.startsWith(`local-${role}:${role}:`));
  return line === undefined ? null : line.slice(`local-${role}:${role}:`.length).trim();
}
