// The stored form of entries in Redis (src/core/stored-form.ts): common names and values are two-byte codes, and a
// chain read back is the chain that was written, whatever its strings hold; an entry of a version newer than this
// code knows is refused by name.
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { completeBatch, ENTRY_VERSION, fromStored, prepareBatch, sealAlone, type AnyDraft } from '../../src/core/entries.js';
import { buildReceipt } from '../../src/core/receipt.js';
import { publicKeySet, signingKeyFromPem } from '../../src/core/signing.js';
import { codeOf, decodeStored, SAME_AT, TOKENS } from '../../src/core/stored-form.js';
import { verify } from '../../src/core/verify.js';
import type { Json } from '../../src/core/json.js';
import { generateSigningKeyPem } from '../../src/keys/key-store.js';
import { chainEffectId, drafts, T0 } from './entry-chain.js';

const pem = generateSigningKeyPem();
const key = signingKeyFromPem(pem.privatePem);
const keys = publicKeySet([pem.publicPem]);

/** Seals batches the way the journal does and returns what Redis would hold, line by line, and the entries. */
function store(effectId: string, batches: readonly (readonly AnyDraft[])[]) {
  const lines: string[] = [];
  const entries = [];
  let prev: string | null = null;
  let at = T0;
  for (const batch of batches) {
    const prepared = prepareBatch(batch, { effectId, at, prev }, key.kid);
    const done = completeBatch(prepared, sealAlone(prepared.lastHash, key));
    lines.push(...done.stored);
    entries.push(...done.entries);
    prev = prepared.lastHash;
    at += 7;
  }
  return { lines, entries };
}

/** The chain as plain JSON lines, the form versions before the codes wrote. */
function plainLines(lines: readonly string[]): string[] {
  let previousAt: number | null = null;
  return lines.map((line) => {
    const text = decodeStored(line, previousAt);
    previousAt = (JSON.parse(text) as { at: number }).at;
    return text;
  });
}

const committedEffect = (name: string) => store(chainEffectId(name), [[drafts.proposed(), drafts.authorized(), drafts.dispatched()], [drafts.committed('re_stored')]]);

describe('the stored form of entries', () => {
  it('pins the code table: codes are positions, so a chain already in Redis reads back only while the table keeps every token in place', () => {
    // Appending tokens is safe (update this hash then); changing or reordering one makes every stored chain read as tampered.
    const digest = createHash('sha256').update(TOKENS.join('\n')).digest('hex');
    expect(TOKENS).toHaveLength(107);
    expect(digest).toBe('8736a4d3c44b758ca51eaa72a4a9749caaf9fa6a163fa3336a2241839caf10bb');
  });

  it('reads back the chain that was written, with the same hashes and signatures', () => {
    const { lines, entries } = committedEffect('stored-roundtrip');
    expect(fromStored(chainEffectId('stored-roundtrip'), lines)).toEqual(entries);
  });

  it('keeps a committed refund small: its four entries, as the gate writes them, take at most 768 bytes in Redis, against 1,300 as plain JSON', () => {
    // What the gate writes at dispatch and at the send (journal.ts, submit.ts): DISPATCHED names the subject and
    // leaves the snapshot to AUTHORIZED; the send's result is the refund.
    const premises = { chargebacks: [], refunded_by_others: 0 };
    const dispatched: AnyDraft = { kind: 'DISPATCHED', subject: 'payment:pi_chain', approval: 'ap_chain', premises, checks: { approvalLive: true, approval: null, approvalProblems: [], violations: [], changes: [] }, owner: 'host-1:4242', epoch: 1, sendDeadline: T0 + 30_000 };
    const { lines } = store(chainEffectId('stored-size'), [
      [{ ...drafts.proposed(), premises, request: null, requestId: 'case-8812' }, drafts.authorized(), dispatched],
      [{ ...drafts.committed('re_3PqLx2Ab1cD4eF5g'), found: 're_3PqLx2Ab1cD4eF5g' }],
    ]);
    const bytes = Buffer.byteLength(lines.join('\n'));
    const plain = Buffer.byteLength(plainLines(lines).join('\n'));
    expect(plain).toBeGreaterThan(1_300);
    expect(bytes).toBeLessThanOrEqual(768);
  });

  it('holds no line break, so the chain stays one entry per line', () => {
    const { lines } = committedEffect('stored-lines');
    for (const line of lines) expect(line).not.toContain('\n');
  });

  it('reads a chain written before the codes (plain JSON lines) as it was', () => {
    const { lines, entries } = committedEffect('stored-plain');
    expect(fromStored(chainEffectId('stored-plain'), plainLines(lines))).toEqual(entries);
  });

  it('refuses an entry a newer interlock wrote (its version past ENTRY_VERSION), naming it, rather than judging it by older rules', () => {
    const effectId = chainEffectId('stored-newer');
    const { lines } = committedEffect('stored-newer');
    const plain = plainLines(lines);
    const newer = plain.map((line, index) => (index === 3 ? JSON.stringify({ ...(JSON.parse(line) as object), v: ENTRY_VERSION + 1 }) : line));
    expect(() => fromStored(effectId, newer)).toThrow(`effect ${effectId}'s journal holds an entry of version ${ENTRY_VERSION + 1}, newer than this interlock knows (1 to ${ENTRY_VERSION}): a newer version of interlock wrote it. Run the same version in every process of the deployment.`);
    expect(fromStored(effectId, plain)).toHaveLength(4);
  });

  it('round-trips any strings and keys, including ones that spell tokens, control characters and the code byte itself', () => {
    const tokenish = fc.constantFrom(...TOKENS, '\u0001', '\u0001!', '\u0002!', '\u0008~', '"sig":null', '\\"', '\n', '\u2028', 'é', '"kind":"REFUSED"');
    const text = fc.oneof(fc.string(), fc.array(tokenish, { maxLength: 5 }).map((parts) => parts.join('')), fc.string({ unit: 'binary' }));
    const jsonValue = fc.letrec((tie) => ({
      value: fc.oneof({ depthSize: 'small' }, text, fc.integer(), fc.boolean(), fc.constant(null), fc.array(tie('value'), { maxLength: 3 }), fc.dictionary(fc.oneof(text, fc.constantFrom('approval', 'sig', 'kind', 'amount')).filter((key) => key !== '__proto__'), tie('value'), { maxKeys: 3 })),
    })).value;
    fc.assert(
      fc.property(text, text, jsonValue, (agent, reason, request) => {
        // Strings with a lone surrogate have no canonical form, nor has a "__proto__" key (the generator makes none):
        // the journal refuses both before sealing.
        fc.pre(![agent, reason, JSON.stringify(request)].some((value) => /\p{Surrogate}/u.test(value)));
        const effectId = chainEffectId('stored-property');
        const { lines, entries } = store(effectId, [
          [{ ...drafts.proposed(), agent, request: request as Json }, drafts.authorized(), drafts.dispatched()],
          [{ kind: 'REFUSED', code: 'approval_revoked', reason, checks: null, rechecked: null, changes: [], resolves: true }],
        ]);
        expect(fromStored(effectId, lines)).toEqual(entries);
      }),
      { numRuns: 300 },
    );
  });

  it('writes the time of a batch once: its later entries say "the time of the entry before", which only a chain read in order can give back', () => {
    const effectId = chainEffectId('stored-at');
    const { lines, entries } = committedEffect('stored-at');
    const marked = lines.map((line) => line.includes(codeOf(SAME_AT)));
    // PROPOSED carries the batch's time; AUTHORIZED and DISPATCHED refer to it; COMMITTED, a batch of its own, has its own.
    expect(marked).toEqual([false, true, true, false]);
    expect(fromStored(effectId, lines).map((entry) => entry.at)).toEqual(entries.map((entry) => entry.at));
    // A chain cut before such an entry has no time to give it: the line no longer reads as JSON.
    expect(() => fromStored(effectId, lines.slice(1))).toThrow();
  });

  it('makes an edit of a code in Redis a tampered chain: the entry reads back different and its signature no longer matches', () => {
    const effectId = chainEffectId('stored-edit');
    const { lines } = committedEffect('stored-edit');
    // COMMITTED's `"via":"send"` code becomes the code of `"sig":null`.
    const edited = [...lines];
    edited[3] = (edited[3] ?? '').replace(codeOf('"via":"send"'), codeOf('"sig":null'));
    expect(edited[3]).not.toBe(lines[3]);
    const good = verify(JSON.parse(JSON.stringify(buildReceipt(effectId, fromStored(effectId, lines), key, T0 + 100))), { publicKeys: keys });
    expect(good.valid).toBe(true);
    const bad = verify(JSON.parse(JSON.stringify(buildReceipt(effectId, fromStored(effectId, edited), key, T0 + 100))), { publicKeys: keys });
    expect(bad.valid).toBe(false);
  });
});
