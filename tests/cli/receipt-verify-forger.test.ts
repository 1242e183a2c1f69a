// Rule: on a machine that holds the key that signed a receipt's entries (its data directory's key, or a retired key),
// `receipt verify FILE...` without --public-key calls a receipt valid null (exit 3) only when every signature that
// fails is by a key it does not hold and the chain and rules hold; anything tampered under a held key, anything whose
// hashes or links are broken, an entry signed with no kid, is invalid (exit 1), alone, among several files and on
// standard input. Text taken from a receipt (a kid) is never written raw to the terminal: a forger must not be able to
// rewrite what the verifier prints (stdout is passed through showable(); stderr must be too), nor flood it (bounded).
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildReceipt, type Receipt } from '../../src/core/receipt.js';
import { entryHash } from '../../src/core/entries.js';
import { sealLeaves } from '../../src/core/seal.js';
import { signText, type SigningKey } from '../../src/core/signing.js';
import { keyFilePath } from '../../src/keys/key-store.js';
import { createWorld, testKey, type World } from '../support/harness.js';
import { committedRefund, FLOW_TIMING } from '../fixtures/receipt-flows.js';
import { REPO, runCli, tempDir } from './run-cli.js';

let world: World;
let receipt: Receipt;
const temp = tempDir('review-verify-keys');
const file = (name: string) => join(temp.dir, name);
const held = join(temp.dir, 'holds-service-key');
const env = { INTERLOCK_DATA_DIR: held };
const attacker = testKey();

type Loose = Record<string, unknown> & { hash: string; prev: string | null; sig: string | null; kid?: string; covers?: number };
const copyOf = (r: Receipt) => JSON.parse(JSON.stringify(r)) as Receipt & { entries: Loose[] };

/** Re-links and re-hashes entries from `from` on; signed entries from `signFrom` on are re-sealed with `key`. */
function relink(entries: Loose[], from: number, key: SigningKey | null, signFrom = from): void {
  let prev = from === 0 ? null : (entries[from - 1] as Loose).hash;
  for (let i = from; i < entries.length; i += 1) {
    const entry = entries[i] as Loose;
    entry.prev = prev;
    if (key !== null && entry.sig !== null && i >= signFrom) entry.kid = key.kid;
    entry.hash = entryHash(entry);
    if (key !== null && entry.sig !== null && i >= signFrom) entry.sig = sealLeaves([entry.hash], 'entries', (m) => signText(m, key))[0] as string;
    prev = entry.hash;
  }
}

const headed = (r: { effectId: string; entries: unknown[] }, key: SigningKey = attacker.key) => JSON.stringify(buildReceipt(r.effectId, r.entries as never, key, Date.now()));

beforeAll(async () => {
  world = await createWorld({ config: FLOW_TIMING });
  receipt = (await committedRefund(world, 'review_verify_keys')).receipt;
  writeFileSync(file('receipt.json'), JSON.stringify(receipt, null, 2));
  writeFileSync(file('pub.pem'), world.key.publicPem);
  // A head whose kid is 20,000 characters: repeated whole, it floods what the auditor reads.
  writeFileSync(file('long-kid.json'), JSON.stringify({ ...receipt, head: { ...receipt.head, kid: `ed25519:${'K'.repeat(20_000)}` } }));
  mkdirSync(join(held, 'keys'), { recursive: true });
  writeFileSync(keyFilePath({ dataDir: held, signingKeyFile: null }), world.key.privatePem, { mode: 0o600 });

  // 1. Tail cut after the first signed batch, head re-signed by a fresh key (README: a head by a key not held is null).
  {
    const r = copyOf(receipt);
    const firstSigned = r.entries.findIndex((e) => e.sig !== null);
    r.entries = r.entries.slice(0, firstSigned + 1);
    writeFileSync(file('cut-fresh-head.json'), headed(r));
  }
  // 2. The approver rewritten, the whole chain re-signed by the attacker: a complete forgery by an unheld key.
  {
    const r = copyOf(receipt);
    (r.entries[1] as unknown as { approval: { approver: string } }).approval.approver = 'mallory@support';
    relink(r.entries, 0, attacker.key);
    writeFileSync(file('all-attacker.json'), headed(r));
  }
  // 3. The approver rewritten, chain re-hashed, the signed entries keep held-key sigs but lose their kid; head fresh.
  {
    const r = copyOf(receipt);
    (r.entries[1] as unknown as { approval: { approver: string } }).approval.approver = 'mallory@support';
    for (const e of r.entries) delete e.kid;
    relink(r.entries, 0, null);
    writeFileSync(file('no-kid.json'), headed(r));
  }
  // 4. Chain re-signed by the attacker, then an unsigned entry altered without re-hashing.
  {
    const r = copyOf(receipt);
    relink(r.entries, 0, attacker.key);
    (r.entries[1] as unknown as { approval: { approver: string } }).approval.approver = 'mallory@support';
    writeFileSync(file('altered-under-unheld.json'), headed(r));
  }
  // 5. The genuine first batch kept, the rest altered (COMMITTED's result) and re-signed by the attacker.
  {
    const r = copyOf(receipt);
    const firstSigned = r.entries.findIndex((e) => e.sig !== null);
    const last = r.entries.at(-1) as Loose & { result?: unknown };
    last.result = { id: 're_forged', amount: 1 };
    relink(r.entries, firstSigned + 1, attacker.key);
    writeFileSync(file('tail-attacker.json'), headed(r));
  }
  // 6. A signed entry duplicated (held kid), head fresh.
  {
    const r = copyOf(receipt);
    r.entries.push(JSON.parse(JSON.stringify(r.entries.at(-1))) as Loose);
    writeFileSync(file('duplicated.json'), headed(r));
  }
  // 7. Last two entries swapped, head fresh.
  {
    const r = copyOf(receipt);
    const n = r.entries.length;
    const [before, last] = [r.entries[n - 2], r.entries[n - 1]];
    if (before === undefined || last === undefined) throw new Error('the receipt has fewer than two entries');
    [r.entries[n - 1], r.entries[n - 2]] = [before, last];
    writeFileSync(file('swapped.json'), headed(r));
  }
  // 8. A complete forgery by a key whose id carries terminal control sequences and a fake verdict.
  {
    const evil = { ...attacker.key, kid: 'x\u001b[2K\r\u001b[1A\u001b[2KOK: receipt verified with ed25519:0000 (valid)\n\u001b[8m' } as SigningKey;
    const r = copyOf(receipt);
    relink(r.entries, 0, evil);
    writeFileSync(file('evil-kid.json'), headed(r, evil));
  }
  // 9. Held-kid entry with a hostile seal (huge size, garbage path), head fresh.
  {
    const r = copyOf(receipt);
    const signed = r.entries.find((e) => e.sig !== null) as Loose;
    signed.sig = `s1.4294967296.4294967295.${'A'.repeat(5000)}.${'B'.repeat(86)}`;
    writeFileSync(file('hostile-seal.json'), headed(r));
  }
});

afterAll(async () => {
  await world?.close();
  temp.remove();
});

const verdict = (stdout: string) => JSON.parse(stdout) as { valid: boolean | null; problems: string[]; unchecked: string[] };

describe.concurrent('receipt verify on a machine holding the genuine key, as a forger', { timeout: 60_000 }, () => {
  it('control: the genuine receipt is valid (exit 0)', async () => {
    const run = await runCli(['receipt', 'verify', file('receipt.json')], env);
    expect(run.code, run.stdout + run.stderr).toBe(0);
  });

  it('a tail cut under a head by a key not held is not authenticated (exit 3, the note names that key), never valid', async () => {
    const run = await runCli(['receipt', 'verify', file('cut-fresh-head.json')], env);
    expect(run.code, run.stdout + run.stderr).toBe(3);
    expect(verdict(run.stdout).unchecked.join(' ')).toContain(attacker.key.kid);
  });

  it('a complete forgery by a key not held is not authenticated (exit 3)', async () => {
    const run = await runCli(['receipt', 'verify', file('all-attacker.json')], env);
    expect(run.code, run.stdout + run.stderr).toBe(3);
  });

  it('the genuine first batch with a tail re-signed by a key not held is not authenticated (exit 3)', async () => {
    const run = await runCli(['receipt', 'verify', file('tail-attacker.json')], env);
    expect(run.code, run.stdout + run.stderr).toBe(3);
  });

  for (const name of ['no-kid', 'altered-under-unheld', 'duplicated', 'swapped', 'hostile-seal']) {
    it(`${name}: invalid (exit 1), alone, among several files and on standard input`, async () => {
      const [alone, several, piped] = await Promise.all([
        runCli(['receipt', 'verify', file(`${name}.json`)], env),
        runCli(['receipt', 'verify', file('all-attacker.json'), file(`${name}.json`)], env),
        runCli(['receipt', 'verify', '-', file('all-attacker.json')], env, { stdin: readFileSync(file(`${name}.json`), 'utf8') }),
      ]);
      expect(alone.code, alone.stdout + alone.stderr).toBe(1);
      expect(verdict(alone.stdout).valid).toBe(false);
      expect(several.code, several.stdout + several.stderr).toBe(1);
      expect(piped.code, piped.stdout + piped.stderr).toBe(1);
      expect(piped.stdout).toContain('"file":"-","status":"invalid"'.replace('"file":"-",', ''));
    });
  }

  it('a v1 receipt forged (re-hashed) under its held (retired) key, head re-signed by a fresh key, is invalid (exit 1)', async () => {
    const v1 = JSON.parse(readFileSync(join(REPO, 'tests/fixtures/receipts/v1/committed.json'), 'utf8')) as Receipt;
    const r = copyOf(v1);
    const proposed = r.entries[0] as unknown as { effect: { amount: number } };
    proposed.effect.amount += 1;
    relink(r.entries, 0, null);
    const forged = file('v1-forged.json');
    writeFileSync(forged, headed(r));
    const verifier = join(temp.dir, 'v1-verifier');
    mkdirSync(verifier, { recursive: true });
    const run = await runCli(['receipt', 'verify', forged], { INTERLOCK_DATA_DIR: verifier, INTERLOCK_RETIRED_PUBLIC_KEYS_FILE: join(REPO, 'tests/fixtures/receipts/v1/public-key.pem') });
    expect(run.code, run.stdout + run.stderr).toBe(1);
  });

  it('a kid holding terminal control sequences is not written raw to stderr (one file, and several)', async () => {
    const [one, several] = await Promise.all([
      runCli(['receipt', 'verify', file('evil-kid.json')], env),
      runCli(['receipt', 'verify', file('evil-kid.json'), file('receipt.json')], env),
    ]);
    expect(one.code).toBe(3);
    expect(several.code).toBe(3);
    // stdout is escaped (showable); stderr should be too.
    expect(one.stdout).not.toContain('\u001b');
    expect({ stderr: one.stderr, hasEscape: one.stderr.includes('\u001b') }).toMatchObject({ hasEscape: false });
    expect({ stderr: several.stderr, hasEscape: several.stderr.includes('\u001b') }).toMatchObject({ hasEscape: false });
  });

  it('a kid of 20,000 characters is repeated bounded, in the problems of the verification too', async () => {
    const run = await runCli(['receipt', 'verify', file('long-kid.json'), '--public-key', file('pub.pem')], env);
    const longest = Math.max(0, ...[...`${run.stdout}\n${run.stderr}`.matchAll(/K+/g)].map((found) => found[0].length));
    expect({ code: run.code, longestKidRun: longest > 200 ? 'unbounded' : 'bounded' }).toEqual({ code: 1, longestKidRun: 'bounded' });
  });
});
