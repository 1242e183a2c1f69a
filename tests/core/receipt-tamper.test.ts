// Receipts from real gate flows on Redis verify offline, survive a JSON round trip, and become invalid, with a
// readable problem, under every kind of tampering DESIGN §5 and issue 2 list, including a chain rebuilt without
// the signing key.
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prepareBatch, sealEntry, type AnyDraft, type Draft, type Entry, type EntryKind } from '../../src/core/entries.js';
import { buildReceipt, buildReceipts, type Receipt } from '../../src/core/receipt.js';
import { parseSeal } from '../../src/core/seal.js';
import { keyIdOf, publicKeyFromPem, publicKeysFromPem, publicKeySet, signText, type SigningKey } from '../../src/core/signing.js';
import { duplicateMembers, parseReceiptText, verifyReceiptText } from '../../src/core/receipt-text.js';
import { verify } from '../../src/core/verify.js';
import { createWorld, refundsSubmittedTogether, testKey, type World } from '../support/harness.js';
import { committedRefund, failedRefund, FLOW_TIMING, refusedAtRecovery, type FlowResult } from '../fixtures/receipt-flows.js';

type Editable = { format: string; effectId: string; entries: Record<string, unknown>[]; head: Record<string, unknown> };

let world: World;
let committed: FlowResult;
let other: FlowResult;
let observed: FlowResult;
let refused: FlowResult;

beforeAll(async () => {
  world = await createWorld({ config: FLOW_TIMING });
  committed = await committedRefund(world, 'tamper_committed');
  other = await committedRefund(world, 'tamper_other');
  observed = await failedRefund(world, 'tamper_observed');
  refused = await refusedAtRecovery(world, 'tamper_refused');
});

afterAll(async () => {
  await world?.close();
});

function keys() {
  return { publicKeys: world.key.publicKeys };
}

/** A JSON copy of a receipt, edited the way someone holding the file could edit it. */
function tampered(receipt: Receipt, edit: (copy: Editable) => void): unknown {
  const copy = JSON.parse(JSON.stringify(receipt)) as Editable;
  edit(copy);
  return copy;
}

function entryAt(copy: Editable, index: number): Record<string, unknown> {
  const entry = copy.entries[index];
  if (!entry) throw new Error(`no entry ${index}`);
  return entry;
}

/** The kind-specific fields of an entry, ready to be sealed again. */
function draftOf(entry: Entry): AnyDraft {
  const { v: _v, effectId: _effectId, at: _at, prev: _prev, kid: _kid, covers: _covers, hash: _hash, sig: _sig, ...draft } = entry;
  return draft as AnyDraft;
}

/** Re-hashes and re-links every entry and signs head and entries with `key`: what a forger without our key can do. */
function rebuilt(receipt: Receipt, key: SigningKey, edit: (draft: AnyDraft) => AnyDraft = (draft) => draft): Receipt {
  const entries: Entry[] = [];
  let prev: string | null = null;
  for (const entry of receipt.entries) {
    const sealed = sealEntry(edit(draftOf(entry)) as Draft<EntryKind>, { effectId: entry.effectId, at: entry.at, prev }, key) as Entry;
    entries.push(sealed);
    prev = sealed.hash;
  }
  return buildReceipt(receipt.effectId, entries, key, receipt.head.signedAt);
}

function expectInvalid(input: unknown, problem: string | RegExp) {
  const result = verify(input, keys());
  expect(result.valid).toBe(false);
  expect(result.problems).toContainEqual(typeof problem === 'string' ? expect.stringContaining(problem) : expect.stringMatching(problem));
  return result;
}

describe('valid receipts from real gate flows', () => {
  it('a committed refund round-trips through JSON and still verifies, signed', () => {
    const result = verify(JSON.parse(JSON.stringify(committed.receipt)), keys());
    expect(result.problems).toEqual([]);
    expect(result).toMatchObject({
      valid: true, chainIntact: true, signed: true, effectId: committed.effectId, outcome: 'COMMITTED', happened: true, happenedOnce: true,
      authorizedWhenFired: true, assumptionsHeld: true, refused: null, approvedBy: 'dana@support', answer: 'returned', answerMatchesFinalMoney: true, exposure: null, entries: 4,
    });
    expect(result.evidence).toMatch(/^obj_/);
    expect(committed.receipt.entries.map((entry) => entry.kind)).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED']);
  });

  it('a refusal at recovery verifies and says nothing happened and why', () => {
    expect(refused.outcome).toBe('REFUSED:stale_premise_at_recovery');
    const result = verify(JSON.parse(JSON.stringify(refused.receipt)), keys());
    expect(result.problems).toEqual([]);
    expect(result).toMatchObject({ valid: true, signed: true, outcome: 'REFUSED:stale_premise_at_recovery', happened: false, refused: { code: 'REFUSED:stale_premise_at_recovery' }, evidence: null });
    expect(result.finalMoney.status).toBe('not_returned');
    expect(result.recheckedAtRecovery?.violations).toEqual([expect.stringContaining('chargebacks')]);
  });

  it('a committed refund that later failed verifies and answers with the final money, not the send', () => {
    const result = verify(JSON.parse(JSON.stringify(observed.receipt)), keys());
    expect(result.problems).toEqual([]);
    expect(result).toMatchObject({ valid: true, signed: true, outcome: 'COMMITTED', happened: true, answer: 'returned', answerMatchesFinalMoney: false, exposure: null });
    expect(result.finalMoney).toMatchObject({ status: 'not_returned', failureReason: 'charge_for_pending_refund_disputed', disputes: [expect.objectContaining({ status: 'needs_response' })] });
  });

  it('without public keys the chain is still checked but the signatures are not: signed is null and valid is never true', () => {
    const result = verify(JSON.parse(JSON.stringify(committed.receipt)));
    expect(result).toMatchObject({ valid: null, chainIntact: true, signed: null, checked: { chain: true, rules: true, signatures: false }, problems: [] });
    expect(result.unchecked).toEqual([expect.stringContaining('no public key was given')]);
  });

  it('verifies with several public keys, so a rotated key does not break old receipts', () => {
    const result = verify(committed.receipt, { publicKeys: publicKeySet([testKey().publicPem, world.key.publicPem]) });
    expect(result).toMatchObject({ valid: true, signed: true });
  });

  it('verifies with one PEM text holding several public keys (a rotation bundle), whichever block holds the signer\'s', () => {
    const [older, newer] = [testKey().publicPem, testKey().publicPem];
    for (const bundle of [`${older}${world.key.publicPem}`, `${older}${newer}${world.key.publicPem}`, `${world.key.publicPem}${older}`]) {
      const publicKeys = publicKeySet([bundle]);
      expect(publicKeys.size).toBe(bundle.split('-----BEGIN').length - 1);
      expect(verify(committed.receipt, { publicKeys })).toMatchObject({ valid: true, signed: true, problems: [] });
    }
  });

  it('reads a PEM text of several blocks whole or not at all: publicKeyFromPem refuses it, and a bundle with a block that is no Ed25519 key names the block', () => {
    const bundle = `${testKey().publicPem}${world.key.publicPem}`;
    expect(() => publicKeyFromPem(bundle)).toThrow(/holds 2 PEM blocks, not one public key/);
    expect(publicKeysFromPem(bundle).map(keyIdOf)).toEqual([...publicKeySet([bundle]).keys()]);
    expect(() => publicKeySet([`${world.key.publicPem}-----BEGIN PUBLIC KEY-----\nnot a key\n-----END PUBLIC KEY-----\n`])).toThrow(/^PEM block 2 of 2: /);
    const rsa = generateKeyPairSync('rsa', { modulusLength: 1_024 }).publicKey.export({ type: 'spki', format: 'pem' });
    expect(() => publicKeySet([`${world.key.publicPem}${rsa}`])).toThrow('PEM block 2 of 2: The public key is rsa, not Ed25519.');
  });

  it('refuses a bundle whose block is cut or whose END line is mangled, naming it, instead of keeping only the keys before it', () => {
    const other = testKey().publicPem;
    const cut = `${world.key.publicPem}${other.slice(0, 60)}\n`;
    const mangledEnd = `${world.key.publicPem}${other.replace('-----END PUBLIC KEY-----', '-----END PUBLIC KEY----')}`;
    for (const bundle of [cut, mangledEnd]) {
      expect(() => publicKeySet([bundle])).toThrow('PEM block 2 of 2 has no END line matching its BEGIN line');
    }
  });

  it('is not signed for a verifier who holds only other keys', () => {
    const result = verify(committed.receipt, { publicKeys: testKey().publicKeys });
    expect(result).toMatchObject({ valid: false, chainIntact: true, signed: false });
    expect(result.problems).toContainEqual(expect.stringContaining(`signed with an unknown key ${world.key.key.kid}`));
  });
});

describe('tampering makes a receipt invalid with a readable problem', () => {
  it('an edited entry (the refund amount) no longer matches its hash', () => {
    const result = expectInvalid(tampered(committed.receipt, (copy) => {
      (entryAt(copy, 0).effect as { amount: number }).amount = 200_000;
    }), 'entry 1 (PROPOSED) was altered: its content no longer matches its hash');
    expect(result.chainIntact).toBe(false);
  });

  it('an edited result in the COMMITTED entry is caught too', () => {
    expectInvalid(tampered(committed.receipt, (copy) => {
      (entryAt(copy, 3).result as { status: string }).status = 'failed';
    }), 'entry 4 (COMMITTED) was altered');
  });

  it('an edited entry whose hash was recomputed fails its signature and breaks the next link', () => {
    const original = committed.receipt.entries[2] as Entry;
    const forged = sealEntry({ ...draftOf(original), premises: { chargebacks: [], refunded_by_others: 4_900 } } as Draft<EntryKind>, { effectId: original.effectId, at: original.at, prev: original.prev }, testKey().key);
    const result = expectInvalid(tampered(committed.receipt, (copy) => {
      copy.entries[2] = { ...forged, kid: original.kid } as unknown as Record<string, unknown>;
    }), 'entry 3 (DISPATCHED) was altered');
    expect(result.problems).toContainEqual(expect.stringContaining('entry 4 (COMMITTED) does not follow the entry before it'));
  });

  it('a dropped entry breaks the chain and the signed count', () => {
    const result = expectInvalid(tampered(committed.receipt, (copy) => {
      copy.entries.splice(1, 1);
    }), 'entry 2 (DISPATCHED) does not follow the entry before it: an entry was dropped, inserted or reordered');
    expect(result.problems).toContainEqual('the signed head counts 4 entries but the receipt has 3: entries were removed');
    expect(result.problems.join('\n')).not.toMatch(/tail was cut/);
  });

  it('a duplicated entry is named as a duplicate', () => {
    expectInvalid(tampered(committed.receipt, (copy) => {
      copy.entries.splice(3, 0, structuredClone(entryAt(copy, 2)));
    }), 'entry 4 (DISPATCHED) is a duplicate of an earlier entry');
  });

  it('reordered entries no longer follow each other', () => {
    expectInvalid(tampered(committed.receipt, (copy) => {
      const [authorized, dispatched] = [entryAt(copy, 1), entryAt(copy, 2)];
      copy.entries[1] = dispatched;
      copy.entries[2] = authorized;
    }), 'entry 2 (DISPATCHED) does not follow the entry before it');
  });

  it('an entry spliced in from another effect is named as spliced', () => {
    expectInvalid(tampered(committed.receipt, (copy) => {
      copy.entries[3] = JSON.parse(JSON.stringify(other.receipt.entries[3])) as Record<string, unknown>;
    }), /^entry 4 \(COMMITTED\) belongs to effect [0-9a-f]{12}…, not this receipt's effect: it was spliced in from another effect$/);
  });

  it('a whole receipt relabelled as another effect fails at every entry and at the head', () => {
    const result = expectInvalid(tampered(committed.receipt, (copy) => {
      copy.effectId = other.effectId;
    }), 'entry 1 (PROPOSED) belongs to effect');
    expect(result.problems).toContainEqual('the signed head names another effect');
  });

  it('a tail cut after the COMMITTED was signed is caught by the signed head alone', () => {
    expect(observed.receipt.entries.map((entry) => entry.kind)).toEqual(['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED', 'OBSERVED', 'OBSERVED']);
    // Dropping the facts that say the refund failed would turn the answer back into "returned".
    const result = verify(tampered(observed.receipt, (copy) => {
      copy.entries.splice(4);
    }), keys());
    expect(result.valid).toBe(false);
    expect(result.problems).toEqual(['the signed head counts 6 entries but the receipt has 4: its tail was cut']);
  });

  it('a tail replaced by other entries of the right count is caught by the signed last hash', () => {
    const result = verify(tampered(observed.receipt, (copy) => {
      copy.entries.splice(5, 1, structuredClone(entryAt(copy, 4)));
    }), keys());
    expect(result.problems).toContainEqual('the signed head names another last entry: the tail was replaced');
  });

  it('an entry sealed with a key the verifier does not know is named, with its key id', () => {
    const stranger = testKey().key;
    const last = committed.receipt.entries[3] as Entry;
    const forged = sealEntry(draftOf(last) as Draft<EntryKind>, { effectId: last.effectId, at: last.at, prev: last.prev }, stranger);
    const result = expectInvalid(tampered(committed.receipt, (copy) => {
      copy.entries[3] = forged as unknown as Record<string, unknown>;
    }), `entry 4 (COMMITTED) is signed with an unknown key ${stranger.kid}`);
    expect(result.signed).toBe(false);
  });

  it('a chain rebuilt without the key (re-hashed, re-linked, signed with another key claiming our key id) fails every signature', () => {
    const forger = testKey().key;
    const forgery = rebuilt(committed.receipt, { ...forger, kid: world.key.key.kid }, (draft) =>
      draft.kind === 'PROPOSED' ? { ...draft, effect: { ...draft.effect, amount: 4_900 } } : draft);
    const result = verify(JSON.parse(JSON.stringify(forgery)), keys());
    expect(result).toMatchObject({ valid: false, chainIntact: true, signed: false });
    expect(result.problems).toEqual([
      ...['PROPOSED', 'AUTHORIZED', 'DISPATCHED', 'COMMITTED'].map((kind, index) => `entry ${index + 1} (${kind}) has a signature that does not verify: the chain was rebuilt or the entry forged without the signing key`),
      'the receipt head signature does not verify',
      // The forged amount is not the refund's that landed, which the commit records.
      "entry 4 (COMMITTED) records refund obj_000001 at 2000 (minor units, currency unknown), not the effect's amount of 4900 (minor units, currency unknown): the money that moved at Stripe is not what was approved and reported sent",
    ]);
    // Only signatures tell it was rebuilt: without public keys the chain is internally consistent.
    expect(verify(forgery)).toMatchObject({ chainIntact: true, signed: null });
  });

  it('a chain re-signed with a fresh key under its own key id is signed by an unknown key throughout', () => {
    const fresh = testKey().key;
    const result = verify(JSON.parse(JSON.stringify(rebuilt(committed.receipt, fresh))), keys());
    expect(result).toMatchObject({ valid: false, chainIntact: true, signed: false });
    expect(result.problems).toHaveLength(5);
    expect(result.problems).toContainEqual(`the receipt head is signed with an unknown key ${fresh.kid}`);
    expect(result.problems.filter((problem) => problem.includes(`is signed with an unknown key ${fresh.kid}`))).toHaveLength(5);
  });

  it('a field added to an entry breaks its hash, even though the reader would ignore the field', () => {
    expectInvalid(tampered(committed.receipt, (copy) => {
      entryAt(copy, 1).note = 'approved by the CFO';
    }), 'entry 2 (AUTHORIZED) was altered');
  });

  it('a field added deep inside an entry breaks its hash', () => {
    expectInvalid(tampered(committed.receipt, (copy) => {
      (entryAt(copy, 2).premises as Record<string, unknown>).approvedBy = 'the CFO';
    }), 'entry 3 (DISPATCHED) was altered');
  });

  it('a "__proto__" field smuggled into an entry makes the receipt invalid instead of vanishing from the hash', () => {
    const text = JSON.stringify(committed.receipt).replace('"effect":{', '"effect":{"__proto__":{"amount":1},');
    const result = verify(JSON.parse(text), keys());
    expect(result.valid).toBe(false);
    expect(result.problems.join('\n')).toMatch(/__proto__/);
  });

  it('a value JSON turns into Infinity (1e400) makes the receipt invalid, and verify does not throw', () => {
    // At entry level the schema ignores the field, so only the hash check ever reads the value.
    const text = JSON.stringify(committed.receipt).replace('"kind":"DISPATCHED"', '"kind":"DISPATCHED","fee":1e400');
    expect(text).toContain('1e400');
    const result = verify(JSON.parse(text), keys());
    expect(result.valid).toBe(false);
    expect(result.problems.length).toBeGreaterThan(0);
  });

  it('batch signatures: an unsigned entry appended by someone without the key is covered by no signature, even under a re-signed head', () => {
    const last = committed.receipt.entries.at(-1) as Entry;
    const draft = draftOf(last);
    const appended = prepareBatch([{ kind: 'OBSERVED', source: 'webhook', eventId: 'evt_forged', eventType: 'refund.updated', objectType: 'refund', objectId: (draft as Draft<'COMMITTED'>).found ?? 'obj', status: 'succeeded', failureReason: null, amount: 2_000, charge: null, disputeStatus: null, disputeReason: null, created: null } as AnyDraft], { effectId: last.effectId, at: last.at + 1, prev: last.hash }, world.key.key.kid).entries[0] as Entry;
    const forged = buildReceipt(committed.receipt.effectId, [...committed.receipt.entries, appended], world.key.key, committed.receipt.head.signedAt);
    const result = expectInvalid(JSON.parse(JSON.stringify(forged)), 'the last 1 entry is covered by no signature');
    expect(verify(JSON.parse(JSON.stringify(forged))).valid).toBe(false);
    expect(result.signed).toBe(true);
  });

  it('batch signatures: a signed entry claiming to cover more or fewer unsigned entries than precede it is refused', () => {
    // The DISPATCHED signs for the PROPOSED and AUTHORIZED before it; claiming otherwise changes its hash.
    const claimed = expectInvalid(tampered(committed.receipt, (copy) => {
      entryAt(copy, 2).covers = 1;
    }), 'entry 3 (DISPATCHED) was altered');
    expect(claimed.problems).toContainEqual(expect.stringContaining('is signed for the 1 entries before it, but 2 unsigned entries precede it'));
    // An unsigned entry that claims to sign for others is no signature at all.
    expectInvalid(tampered(committed.receipt, (copy) => {
      entryAt(copy, 0).covers = 3;
    }), 'entry 1 (PROPOSED) is unsigned but claims to cover 3 entries');
  });

  it('a receipt relabelled with another format is invalid: no signature covers the label, so it must be the one its entries have', () => {
    for (const format of ['interlock.receipt/v1', 'interlock.receipt/v2']) {
      const result = expectInvalid(tampered(committed.receipt, (copy) => {
        copy.format = format;
      }), `the receipt is labelled ${format}, but its entries are those of interlock.receipt/v3`);
      expect(result.problems).toHaveLength(1);
    }
  });

  it('a head edited to match a cut tail fails the head signature', () => {
    const result = expectInvalid(tampered(observed.receipt, (copy) => {
      copy.entries.splice(4);
      copy.head.count = 4;
      copy.head.lastHash = entryAt(copy, 3).hash;
    }), 'the receipt head signature does not verify');
    expect(result.chainIntact).toBe(true);
  });
});

describe('entries sealed together (v3): many effects, one signature per tree, each receipt verified on its own', () => {
  let sealed: Receipt[] = [];

  beforeAll(async () => {
    // Twelve refunds submitted at once by one worker: their batches are sealed in the same turns, in shared trees.
    const node = await world.node();
    const submitted = await refundsSubmittedTogether(world, node, 12, 'together');
    expect(submitted.map((answer) => answer.outcome)).toEqual(Array(12).fill('COMMITTED'));
    sealed = (await node.journal.receipts(submitted.map((answer) => answer.effectId))).map((receipt) => {
      if (!receipt) throw new Error('a committed effect has no receipt');
      return receipt;
    });
  });

  function sealsOf(receipt: Receipt) {
    return receipt.entries.flatMap((entry, index) => (entry.sig === null ? [] : [{ index, seal: parseSeal(entry.sig) }]));
  }

  it('the batches of effects submitted together share trees, and every receipt verifies on its own, as v3', () => {
    expect(sealed.flatMap((receipt) => sealsOf(receipt).map(({ seal }) => seal?.size ?? 0)).some((size) => size > 1)).toBe(true);
    for (const receipt of sealed) {
      expect(receipt.format).toBe('interlock.receipt/v3');
      expect(receipt.entries.every((entry) => entry.v === 3)).toBe(true);
      const result = verify(JSON.parse(JSON.stringify(receipt)), keys());
      expect(result.problems).toEqual([]);
      expect(result).toMatchObject({ valid: true, signed: true, outcome: 'COMMITTED' });
    }
  });

  it('receipts exported together share a head signature, and each head verifies only for its own receipt', () => {
    const heads = sealed.map((receipt) => parseSeal(receipt.head.sig));
    expect(new Set(heads.map((head) => head?.signature)).size).toBe(1);
    expect(heads[0]?.size).toBe(sealed.length);
    const [first, second] = sealed as [Receipt, Receipt];
    expectInvalid(tampered(first, (copy) => {
      copy.head.sig = second.head.sig;
    }), 'the receipt head signature does not verify');
  });

  it('a seal moved from another entry of the same tree does not verify', () => {
    // Two receipts whose DISPATCHED entries were sealed in one tree: swap their seals.
    const byTree = new Map<string, { receipt: Receipt; index: number }[]>();
    for (const receipt of sealed) for (const { index, seal } of sealsOf(receipt)) if (seal && seal.size > 1) byTree.set(seal.signature, [...(byTree.get(seal.signature) ?? []), { receipt, index }]);
    const pair = [...byTree.values()].find((members) => members.length >= 2);
    if (!pair) throw new Error('no tree with two members');
    const [a, b] = pair as [{ receipt: Receipt; index: number }, { receipt: Receipt; index: number }];
    const result = expectInvalid(tampered(a.receipt, (copy) => {
      entryAt(copy, a.index).sig = (b.receipt.entries[b.index] as Entry).sig;
    }), `entry ${a.index + 1} (${(a.receipt.entries[a.index] as Entry).kind}) has a signature that does not verify`);
    expect(result.chainIntact).toBe(true);
  });

  it('a v2 signature over the entry hash put on a v3 entry is refused: a v3 entry is only read as a seal', () => {
    const [receipt] = sealed as [Receipt];
    const last = receipt.entries.length - 1;
    const forgedWithOurKey = buildReceipt(receipt.effectId, receipt.entries.map((entry, index) => (index === last ? { ...entry, sig: signText(entry.hash, world.key.key) } : entry)), world.key.key, receipt.head.signedAt);
    expectInvalid(JSON.parse(JSON.stringify(forgedWithOurKey)), `entry ${last + 1} (COMMITTED) has a signature that does not verify`);
  });

  it('receipts exported one by one and together say the same', () => {
    const alone = sealed.map((receipt) => verify(JSON.parse(JSON.stringify(buildReceipt(receipt.effectId, receipt.entries, world.key.key, receipt.head.signedAt))), keys()));
    const together = buildReceipts(sealed, world.key.key, 0).map((receipt) => verify(JSON.parse(JSON.stringify(receipt)), keys()));
    expect(together.map((result) => [result.valid, result.outcome])).toEqual(alone.map((result) => [result.valid, result.outcome]));
  });
});

describe('a v1 or v2 signature is read only in its one spelling (the checked-in v1 and v2 receipts)', () => {
  const fixtures = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'receipts');
  const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  // Each decodes, with Node's lenient base64url decoder, to the very bytes that were signed.
  const respellings: [string, (sig: string) => string][] = [
    ['words after it', (sig) => `${sig}= APPROVED BY CFO, amount 999999`],
    ['padding', (sig) => `${sig}==`],
    ['trailing whitespace', (sig) => `${sig} \n`],
    ['a prefix', (sig) => `!${sig}`],
    ['+ and / for - and _', (sig) => sig.replace(/-/g, '+').replace(/_/g, '/')],
    ['stray bits in its last character', (sig) => `${sig.slice(0, -1)}${ALPHABET[ALPHABET.indexOf(sig.at(-1) ?? 'A') ^ 1] ?? ''}`],
  ];

  const respelled = (sig: unknown, respell: (sig: string) => string) => {
    const text = respell(sig as string);
    if (text === sig) throw new Error('the respelling changed nothing');
    return text;
  };

  describe.each(['v1', 'v2'])('%s', (version) => {
    const text = readFileSync(join(fixtures, version, 'committed.json'), 'utf8');
    const publicKeys = publicKeySet([readFileSync(join(fixtures, version, 'public-key.pem'), 'utf8')]);
    const spelled = (edit: (copy: Editable) => void) => {
      const copy = JSON.parse(text) as Editable;
      edit(copy);
      return verify(copy, { publicKeys });
    };

    it('verifies as checked in', () => {
      expect(spelled(() => undefined)).toMatchObject({ valid: true, signed: true, problems: [] });
    });

    it('is invalid relabelled as any other format', () => {
      for (const format of ['interlock.receipt/v1', 'interlock.receipt/v2', 'interlock.receipt/v3'].filter((other) => other !== `interlock.receipt/${version}`)) {
        const result = spelled((copy) => {
          copy.format = format;
        });
        expect(result).toMatchObject({ valid: false, chainIntact: false });
        expect(result.problems).toEqual([`the receipt is labelled ${format}, but its entries are those of interlock.receipt/${version}: the label, which no signature covers, was changed`]);
      }
    });

    it.each(respellings)('an entry signature with %s does not verify, and says it is not spelled as a signature', (_how, respell) => {
      const result = spelled((copy) => {
        const last = entryAt(copy, copy.entries.length - 1);
        last.sig = respelled(last.sig, respell);
      });
      expect(result).toMatchObject({ valid: false, signed: false });
      expect(result.problems).toEqual([`entry 4 (COMMITTED) has a signature that does not verify: it is not an Ed25519 signature in its one spelling (86 base64url characters, nothing before or after it): text was added to it or it was re-spelled`]);
    });

    it.each(respellings)('a v1 head signature with %s does not verify either', (_how, respell) => {
      const result = spelled((copy) => {
        copy.head.sig = respelled(copy.head.sig, respell);
      });
      expect(result).toMatchObject({ valid: false, signed: false });
      expect(result.problems).toEqual([expect.stringMatching(/^the receipt head signature does not verify: it is not an Ed25519 signature in its one spelling/)]);
    });
  });
});

describe('a receipt read from its text (core/receipt-text.ts), as receipt verify reads a file', () => {
  const text = () => JSON.stringify(committed.receipt, null, 2);
  const twice = (edited: string) => {
    const read = verifyReceiptText(edited, keys());
    if (!read.json) throw new Error(read.error);
    return read.verification;
  };

  it('verifies a text with every member named once exactly as verify() verifies its value', () => {
    expect(verifyReceiptText(text(), keys())).toEqual({ json: true, verification: verify(JSON.parse(text()), keys()) });
    expect(verifyReceiptText(text(), keys())).toMatchObject({ json: true, verification: { valid: true } });
  });

  it('a member named twice is invalid, naming where, though JSON.parse keeps the signed value: the PROPOSED amount, a head field, a top-level field', () => {
    const amount = committed.receipt.entries[0]?.kind === 'PROPOSED' ? committed.receipt.entries[0].effect.amount : null;
    const signedAmount = `"amount": ${String(amount)}`;
    expect(text()).toContain(signedAmount);
    const cases: [string, string][] = [
      [text().replace(signedAmount, `"amount": 999999, ${signedAmount}`), 'receipt names member "amount" twice at entries.0.effect'],
      [text().replace(signedAmount, `"\\u0061mount": 999999, ${signedAmount}`), 'receipt names member "amount" twice at entries.0.effect'],
      [text().replace('"head": {', '"head": { "count": 99,'), 'receipt names member "count" twice at head'],
      [text().replace(/^\{/, `{ "effectId": "${'0'.repeat(64)}",`), 'receipt names member "effectId" twice at (root)'],
    ];
    for (const [edited, problem] of cases) {
      // What verify() alone makes of the parsed value: the last of the two, the signed one, so it would pass.
      expect(verify(JSON.parse(edited), keys())).toMatchObject({ valid: true });
      const result = twice(edited);
      expect(result.valid).toBe(false);
      expect(result.problems).toEqual([`${problem}: a JSON reader keeps one of the two values, so the file can show one nobody signed`]);
    }
  });

  it('finds names given twice at any depth and only in one object, reading escapes and strings as JSON does', () => {
    expect(duplicateMembers('{"a":{"b":[1,{"c":1,"d":"x\\"y}],\\\\","c":2}]},"e":1}')).toEqual([expect.stringContaining('"c" twice at a.b.1')]);
    expect(duplicateMembers('[{"x":1},{"x":1}]')).toEqual([]);
    expect(duplicateMembers('{"x":{"x":{"x":1}},"y":"x","z":["x","x"]}')).toEqual([]);
    expect(duplicateMembers('{"a\\\\":1,"a\\\\":2,"__proto__":1,"__proto__":2}')).toHaveLength(2);
  });

  it('reading a text finds a name given twice wherever the full scan does: spacing, escapes, colons inside strings, a repeated name whose first value held more names', () => {
    const texts = [
      String.raw`{"a":1,"a":1}`,
      '{"a" :1, "b"\t:\n2,\r\n"a"  :  3}',
      '{"a" :1,"a":2,"b":3}',
      '{"a"\n:1,"a"\t:2,"b":{"c"\r\n:3}}',
      String.raw`{"a":"x\":1,\"a\":2","b":1}`,
      String.raw`{"a":"x\\","a":"y"}`,
      String.raw`{"k":"\u0022:","k2":[":",{"k":"\\"}]}`,
      String.raw`{"v":{"p":1,"q":{"r":1}},"v":2}`,
      String.raw`{"v":{"p":1,"p":1},"v":{}}`,
      String.raw`{"\u0061":1,"a":2}`,
      String.raw`[{"x":1},{"x":1},[[{"y":{"y":{}}}]]]`,
      String.raw`{"x":{"x":{"x":1}},"y":"x","z":["x","x"]}`,
      String.raw`{"__proto__":{"a":1},"__proto__":{}}`,
      String.raw`{"__proto__":1}`,
      String.raw`"just a string"`,
      String.raw`[1,"a",{"":0,"":0}]`,
    ];
    for (const source of texts) {
      const read = parseReceiptText(source);
      expect(read.json).toBe(true);
      expect(read.json && read.problems, source).toEqual(duplicateMembers(source));
    }
    expect(texts.filter((source) => duplicateMembers(source).length > 0)).toHaveLength(10);
  });

  it('a text that is not JSON is no receipt at all', () => {
    expect(verifyReceiptText('{"format": ', keys())).toMatchObject({ json: false, error: expect.stringContaining('JSON') });
  });
});
