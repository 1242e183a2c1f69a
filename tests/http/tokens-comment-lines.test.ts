// Rule: in INTERLOCK_API_TOKENS and in a tokens file alike, a line whose first non-blank character is `#` is a comment
// as a whole, commas and all: commenting out a line of comma-separated entries revokes every one of them, and a
// comment's prose is never read as an entry. Only the other lines are split on commas; a `#` starting an item further
// along a line is refused (it is not guessed at). A refusal names the line (when the text has more than one) and the
// entry on it, never the token.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createTokenRegistry, loadTokenRegistry, parseTokenEntries, TokenConfigError } from '../../webhooks/api/tokens.js';

const ALICE = 'itk_alice_token_0123456789';
const BOB = 'itk_bob_token_01234567890';
const CAROL = 'itk_carol_token_0123456789';

const dir = mkdtempSync(join(tmpdir(), 'interlock-token-comments-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let files = 0;
function fileOf(text: string): string {
  files += 1;
  const file = join(dir, `tokens-${files}`);
  writeFileSync(file, text, { mode: 0o600 });
  return file;
}

function refusal(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(TokenConfigError);
    return (error as Error).message;
  }
  throw new Error('expected a refusal');
}

// The same text, as the variable's value and as a file's content: both reach parseTokenEntries through loadTokenRegistry.
const bothWays = (text: string) => [
  ['INTERLOCK_API_TOKENS', () => loadTokenRegistry(text)],
  ['a tokens file', () => loadTokenRegistry(fileOf(text))],
] as const;

describe('a comment line', () => {
  const revoked = [`alice:support:${ALICE}`, '# revoked: the contractors', `  #bob:support:${BOB}, carol:operator:${CAROL}`, ''].join('\n');

  it.each(bothWays(revoked))('revokes every entry on it, not only the first (%s)', (_, load) => {
    const registry = load();
    expect(registry.callers()).toEqual([{ name: 'alice', role: 'support' }]);
    expect(registry.authenticate(ALICE)).toEqual({ name: 'alice', role: 'support' });
    expect(registry.authenticate(BOB)).toBeNull();
    expect(registry.authenticate(CAROL)).toBeNull();
  });

  it.each(bothWays(['# Support tokens, one a line (or several, comma-separated)', `alice:support:${ALICE}, bob:approver:${BOB}`, ''].join('\r\n')))('is prose, commas and all (%s)', (_, load) => {
    expect(load().callers()).toEqual([
      { name: 'alice', role: 'support' },
      { name: 'bob', role: 'approver' },
    ]);
  });
});

describe('a refusal points at the line and the entry on it', () => {
  it.each(bothWays(['# Support tokens, one a line', `alice:support:${ALICE}`, '', `bob:support:${BOB}, carol:admin:${CAROL}`, ''].join('\n')))('a malformed entry (%s)', (_, load) => {
    const message = refusal(load);
    expect(message).toMatch(/, line 4, entry 2: the role must be one of/);
    expect(message).not.toContain(CAROL);
  });

  it('a shared token and a role given twice, found by the registry', () => {
    const shared = refusal(() => createTokenRegistry(parseTokenEntries(['# two desks, one token', `sam:support:${BOB}`, `amy:auditor:${ALICE}, ${CAROL}:support:${BOB}`].join('\n'), 'test')));
    expect(shared).toContain('one of them is line 3, entry 2');
    const twice = refusal(() => createTokenRegistry(parseTokenEntries([`${ALICE}:support:${BOB}`, '#', `sam:auditor:${CAROL}, ${ALICE}:support:itk_third_token_012345`].join('\n'), 'test')));
    expect(twice).toContain('Line 3, entry 2 gives a name the role support again');
  });

  it('a single line is said by its entry alone, as before', () => {
    expect(refusal(() => loadTokenRegistry(`alice:support:${ALICE},bob:admin:${BOB}`))).toContain('INTERLOCK_API_TOKENS, entry 2: the role must be one of');
  });
});

describe('a # further along a line', () => {
  it.each(bothWays(`alice:support:${ALICE}, #bob:support:${BOB}, carol:operator:${CAROL}\n`))('is refused, not guessed at (%s)', (_, load) => {
    const message = refusal(load);
    expect(message).toMatch(/entry 2 starts with #, which comments out a whole line only/);
    expect(message).not.toContain(BOB);
  });
});
