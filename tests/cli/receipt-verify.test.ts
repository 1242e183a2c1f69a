// `interlock receipt verify FILE --public-key FILE` prints the verification as JSON and exits 0 for a valid
// receipt, 1 for an invalid one and 2 when it cannot read its input (issue 2, §5). Each run starts a process
// (about 1.5 s of CPU for tsx and zod), so the verification rules themselves are tested in tests/core.
import { generateKeyPairSync } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildReceipt, type Receipt } from '../../src/core/receipt.js';
import { entryHash } from '../../src/core/entries.js';
import { shownUrl } from '../../src/core/redact.js';
import { parseSeal } from '../../src/core/seal.js';
import { keyFilePath } from '../../src/keys/key-store.js';
import { createWorld, testKey, type World } from '../support/harness.js';
import { committedRefund, FLOW_TIMING } from '../fixtures/receipt-flows.js';
import { runCli, tempDir } from './run-cli.js';

let world: World;
let receipt: Receipt;
let exported: string[] = [];
const temp = tempDir('verify');
const file = (name: string) => join(temp.dir, name);
const env = { INTERLOCK_DATA_DIR: join(temp.dir, 'data') };

beforeAll(async () => {
  world = await createWorld({ config: FLOW_TIMING });
  receipt = (await committedRefund(world, 'cli_verify')).receipt;
  exported = [receipt.effectId, (await committedRefund(world, 'cli_export_1')).effectId, (await committedRefund(world, 'cli_export_2')).effectId];
  writeFileSync(file('receipt.json'), JSON.stringify(receipt, null, 2));
  writeFileSync(file('public-key.pem'), world.key.publicPem);
  const tampered = JSON.parse(JSON.stringify(receipt)) as { entries: { effect?: { amount: number } }[] };
  const proposed = tampered.entries[0];
  if (!proposed?.effect) throw new Error('the receipt has no PROPOSED entry first');
  proposed.effect.amount = 200_000;
  writeFileSync(file('tampered.json'), JSON.stringify(tampered));
  writeFileSync(file('not-json.json'), '{"format": "interlock.receipt/v1", ');
  // Saved by an editor that writes a byte order mark first; and several receipts one per line, as export prints them.
  writeFileSync(file('bom.json'), `\uFEFF${JSON.stringify(receipt, null, 2)}`);
  writeFileSync(file('lines.json'), `${JSON.stringify(receipt)}\n${JSON.stringify(receipt)}\n`);
  // The approver rewritten and the chain re-linked and re-hashed (no key needed), the entries keeping their kid and sig;
  // then the head re-signed with a fresh key nobody holds. And the genuine entries under a head a fresh key signed.
  const fresh = testKey();
  const forged = rechained(receipt);
  writeFileSync(file('forged-fresh-head.json'), JSON.stringify(buildReceipt(forged.effectId, forged.entries, fresh.key, Date.now())));
  writeFileSync(file('fresh-head.json'), JSON.stringify(buildReceipt(receipt.effectId, receipt.entries, fresh.key, Date.now())));
  writeFileSync(file('bad-key.pem'), '-----BEGIN PUBLIC KEY-----\nnot a key\n-----END PUBLIC KEY-----\n');
  execFileSync('mkfifo', [file('fifo.json')]);
  // Sparse: the size is what is checked, so nothing is written.
  writeFileSync(file('huge.json'), '');
  truncateSync(file('huge.json'), 33 * 1024 * 1024);
});

afterAll(async () => {
  await world?.close();
  temp.remove();
});

/** `source` with its approver rewritten, its chain re-linked and re-hashed (no key needed), every kid and sig kept. */
function rechained(source: Receipt): Receipt {
  const copy = JSON.parse(JSON.stringify(source)) as Receipt;
  const authorized = copy.entries[1];
  if (authorized?.kind !== 'AUTHORIZED') throw new Error('the receipt has no AUTHORIZED entry second');
  (authorized as unknown as { approval: { approver: string } }).approval.approver = 'mallory@support';
  let prev = copy.entries[0]?.prev ?? null;
  for (const entry of copy.entries) {
    entry.prev = prev;
    entry.hash = entryHash(entry as unknown as Record<string, unknown>);
    prev = entry.hash;
  }
  return copy;
}

function verification(stdout: string): { valid: boolean; signed: boolean | null; outcome: string | null; problems: string[]; publicKeys: string } {
  return JSON.parse(stdout) as { valid: boolean; signed: boolean | null; outcome: string | null; problems: string[]; publicKeys: string };
}

describe.concurrent('receipt verify', { timeout: 60_000 }, () => {
  it('exits 0 and prints the verification JSON for a valid receipt checked against its public key', async () => {
    const run = await runCli(['receipt', 'verify', file('receipt.json'), '--public-key', file('public-key.pem')], env);
    expect(run.stderr).toBe('');
    expect(run.code, run.stderr).toBe(0);
    expect(verification(run.stdout)).toMatchObject({ valid: true, signed: true, outcome: 'COMMITTED', problems: [], publicKeys: file('public-key.pem') });
  });

  it('verifies a receipt saved with a UTF-8 byte order mark as the same receipt; a file of several receipts one per line exits 2 saying how to verify them', async () => {
    const [bom, lines] = await Promise.all([
      runCli(['receipt', 'verify', file('bom.json'), '--public-key', file('public-key.pem')], env),
      runCli(['receipt', 'verify', file('lines.json'), '--public-key', file('public-key.pem')], env),
    ]);
    expect(bom.code, bom.stderr).toBe(0);
    expect(verification(bom.stdout)).toMatchObject({ valid: true, signed: true, outcome: 'COMMITTED', problems: [] });
    expect(lines.code).toBe(2);
    expect(lines.stderr).toBe(`${file('lines.json')} is not JSON: it holds 2 JSON values, one per line, as \`interlock receipt export\` prints several receipts; a file holds one receipt: export them with --dir DIR (one file each) and verify DIR/*.json\n`);
  });

  it('verifies with a private key given as --public-key through its public half, and says on stderr that a verifier should hold only the public key', async () => {
    writeFileSync(file('given-private.pem'), world.key.privatePem, { mode: 0o600 });
    const run = await runCli(['receipt', 'verify', file('receipt.json'), '--public-key', file('given-private.pem')], env);
    expect(run.code, run.stderr).toBe(0);
    expect(verification(run.stdout)).toMatchObject({ valid: true, signed: true });
    expect(run.stderr).toBe(`${file('given-private.pem')} holds a private key: only its public half is used. Whoever holds that file can sign receipts, so a verifier should have only the public key: \`npx interlock keys public --key ${file('given-private.pem')}\` prints it.\n`);
  });

  it('takes --public-key before the files too, and repeated: the option holds one key, never the files after it', async () => {
    const run = await runCli(['receipt', 'verify', '--public-key', file('public-key.pem'), '--public-key', file('public-key.pem'), file('receipt.json'), file('tampered.json')], env);
    expect(run.stderr).toContain('2 receipts: 1 valid, 1 invalid');
    expect(run.code, run.stderr).toBe(1);
  });

  it('exits 1 with readable problems for a tampered receipt', async () => {
    const run = await runCli(['receipt', 'verify', file('tampered.json'), '--public-key', file('public-key.pem')], env);
    expect(run.code, run.stderr).toBe(1);
    const result = verification(run.stdout);
    expect(result.valid).toBe(false);
    expect(result.problems).toContain('entry 1 (PROPOSED) was altered: its content no longer matches its hash');
  });

  it('uses every key in a --public-key file that holds several (a rotation bundle), not only the first', async () => {
    const other = generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'pem' });
    writeFileSync(file('bundle.pem'), `${other}${world.key.publicPem}`);
    const run = await runCli(['receipt', 'verify', file('receipt.json'), '--public-key', file('bundle.pem')], env);
    expect(run.stderr).toBe('');
    expect(run.code, run.stderr).toBe(0);
    expect(verification(run.stdout)).toMatchObject({ valid: true, signed: true, problems: [] });
  });

  it('exits 1 for a receipt file with a member named twice, alone or among several: the file could show an amount nobody signed', async () => {
    const text = JSON.stringify(receipt, null, 2);
    const signed = text.match(/"amount": [0-9]+/)?.[0] ?? '';
    expect(signed).not.toBe('');
    writeFileSync(file('twice.json'), text.replace(signed, `"amount": 999999, ${signed}`));
    const problem = 'receipt names member "amount" twice at entries.0.effect: a JSON reader keeps one of the two values, so the file can show one nobody signed';
    const alone = await runCli(['receipt', 'verify', file('twice.json'), '--public-key', file('public-key.pem')], env);
    expect(alone.code, alone.stderr).toBe(1);
    expect(verification(alone.stdout)).toMatchObject({ valid: false, problems: [problem] });
    const several = await runCli(['receipt', 'verify', '--threads', '2', '--public-key', file('public-key.pem'), file('receipt.json'), file('twice.json')], env);
    expect(several.code, several.stderr).toBe(1);
    expect(several.stderr).toContain('2 receipts: 1 valid, 1 invalid');
    expect(several.stdout.split('\n').filter(Boolean).map((line) => JSON.parse(line) as { file: string; problems: string[] })).toContainEqual(expect.objectContaining({ file: file('twice.json'), problems: [problem] }));
  });

  it('checks the chain but never calls a receipt valid without a public key: exit 3, valid null, and says what it did not check', async () => {
    const run = await runCli(['receipt', 'verify', file('receipt.json')], env);
    expect(run.code, run.stderr).toBe(3);
    expect(verification(run.stdout)).toMatchObject({ valid: null, signed: null, publicKeys: 'none', checked: { chain: true, signatures: false } });
    expect(run.stderr).toContain('signatures were not checked');
  });

  // Rule: a genuine receipt is never called a forgery because the machine verifying it holds a key of its own. Keys
  // found on this machine (its data directory's, its retired ones), not given with --public-key, authenticate only
  // what they signed: a receipt signed by another key is not authenticated here (exit 3, valid null, naming the key and
  // --public-key), as `effect show` says of it; one they signed is checked with them, so tampering is still found.
  it("on a machine whose data directory holds a key of its own, reads a receipt signed by another key as not authenticated (exit 3, valid null, naming the key), not as signed by an unknown key", async () => {
    const dataDir = join(temp.dir, 'laptop');
    mkdirSync(join(dataDir, 'keys'), { recursive: true });
    writeFileSync(keyFilePath({ dataDir, signingKeyFile: null }), testKey().privatePem, { mode: 0o600 });
    const run = await runCli(['receipt', 'verify', file('receipt.json')], { INTERLOCK_DATA_DIR: dataDir });
    expect(run.code, run.stderr).toBe(3);
    const shown = JSON.parse(run.stdout) as { valid: boolean | null; problems: string[]; unchecked: string[] };
    expect(shown).toMatchObject({ valid: null, problems: [] });
    expect(shown.unchecked.join(' ')).toContain(`signed with key ${world.key.key.kid}`);
    expect(shown.unchecked.join(' ')).toContain('--public-key');
    expect(run.stderr).toContain(world.key.key.kid);
    // Several at once read the same: not authenticated, each; a tampered chain is still invalid without any key.
    const several = await runCli(['receipt', 'verify', file('receipt.json'), file('bom.json'), file('tampered.json')], { INTERLOCK_DATA_DIR: dataDir });
    expect(several.code, several.stderr).toBe(1);
    const statuses = new Map(several.stdout.trim().split('\n').map((line) => JSON.parse(line) as { file: string; status: string }).map((line) => [line.file, line.status]));
    expect(statuses).toEqual(new Map([[file('receipt.json'), 'unauthenticated'], [file('bom.json'), 'unauthenticated'], [file('tampered.json'), 'invalid']]));
    expect(several.stderr).toContain(world.key.key.kid);
  });

  it("on a machine whose data directory holds the key that signed the receipt, still checks it with that key: valid exits 0, tampered exits 1", async () => {
    const dataDir = join(temp.dir, 'signer');
    mkdirSync(join(dataDir, 'keys'), { recursive: true });
    writeFileSync(keyFilePath({ dataDir, signingKeyFile: null }), world.key.privatePem, { mode: 0o600 });
    const [genuine, tampered] = await Promise.all([runCli(['receipt', 'verify', file('receipt.json')], { INTERLOCK_DATA_DIR: dataDir }), runCli(['receipt', 'verify', file('tampered.json')], { INTERLOCK_DATA_DIR: dataDir })]);
    expect(genuine.code, genuine.stderr).toBe(0);
    expect(verification(genuine.stdout).valid).toBe(true);
    expect(tampered.code, tampered.stderr).toBe(1);
    expect(verification(tampered.stdout).valid).toBe(false);
  });

  // Rule: keys found on this machine check every part of a receipt they signed, whatever other keys it names: a part
  // signed (by its kid) with a key this machine holds whose signature fails makes the receipt invalid (exit 1); only
  // when every failing part is signed with a key it does not hold is the receipt not authenticated (exit 3, naming
  // those keys). A forged entry under the held key, its chain re-hashed and its head re-signed with a fresh key, is a
  // forgery, alone, among several files and on standard input; standard input among several files is judged as a file.
  it('on a machine holding the key that signed the entries, a forged entry stays a forgery (exit 1) when the head is re-signed with a fresh key; the genuine entries under that head are not authenticated (exit 3)', async () => {
    const dataDir = join(temp.dir, 'entries-signer');
    mkdirSync(join(dataDir, 'keys'), { recursive: true });
    writeFileSync(keyFilePath({ dataDir, signingKeyFile: null }), world.key.privatePem, { mode: 0o600 });
    const held = { INTERLOCK_DATA_DIR: dataDir };
    const [forged, several, piped, genuine] = await Promise.all([
      runCli(['receipt', 'verify', file('forged-fresh-head.json')], held),
      runCli(['receipt', 'verify', file('receipt.json'), file('forged-fresh-head.json')], held),
      runCli(['receipt', 'verify', '-', file('receipt.json')], held, { stdin: readFileSync(file('forged-fresh-head.json'), 'utf8') }),
      runCli(['receipt', 'verify', file('fresh-head.json')], held),
    ]);
    expect(forged.code, forged.stdout + forged.stderr).toBe(1);
    expect(verification(forged.stdout).valid).toBe(false);
    expect(verification(forged.stdout).problems.join(' ')).toContain('does not verify');
    const statuses = (run: typeof several) => run.stdout.trim().split('\n').map((line) => JSON.parse(line) as { file: string; status: string }).map((line) => `${line.file}:${line.status}`);
    expect({ code: several.code, statuses: statuses(several) }, several.stderr).toEqual({ code: 1, statuses: expect.arrayContaining([`${file('receipt.json')}:valid`, `${file('forged-fresh-head.json')}:invalid`]) as unknown });
    expect({ code: piped.code, statuses: statuses(piped) }, piped.stderr).toEqual({ code: 1, statuses: expect.arrayContaining(['-:invalid', `${file('receipt.json')}:valid`]) as unknown });
    expect(genuine.code, genuine.stdout + genuine.stderr).toBe(3);
    const shown = JSON.parse(genuine.stdout) as { valid: boolean | null; problems: string[]; unchecked: string[] };
    expect(shown).toMatchObject({ valid: null, problems: [] });
    expect(shown.unchecked.join(' ')).not.toContain(world.key.key.kid);
  });

  it('reads a genuine receipt by a key this machine does not hold the same from standard input as from a file, among several: not authenticated (exit 3)', async () => {
    const dataDir = join(temp.dir, 'laptop-stdin');
    mkdirSync(join(dataDir, 'keys'), { recursive: true });
    writeFileSync(keyFilePath({ dataDir, signingKeyFile: null }), testKey().privatePem, { mode: 0o600 });
    const run = await runCli(['receipt', 'verify', '-', file('receipt.json')], { INTERLOCK_DATA_DIR: dataDir }, { stdin: readFileSync(file('receipt.json'), 'utf8') });
    const statuses = run.stdout.trim().split('\n').map((line) => JSON.parse(line) as { file: string; status: string }).map((line) => `${line.file}:${line.status}`);
    expect({ code: run.code, statuses }, run.stderr).toEqual({ code: 3, statuses: expect.arrayContaining(['-:unauthenticated', `${file('receipt.json')}:unauthenticated`]) as unknown });
    expect(run.stderr).toContain(world.key.key.kid);
  });

  it('exits 2, not 1, when the local signing key it would check against cannot be read: the receipt is not at fault', async () => {
    const run = await runCli(['receipt', 'verify', file('receipt.json')], { INTERLOCK_SIGNING_KEY_FILE: file('bad-key.pem') });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain(`Cannot use ${file('bad-key.pem')} to check signatures`);
  });

  it('exits 2, not 3, when INTERLOCK_SIGNING_KEY_FILE names a file that is not there: a key was configured, so "none given or configured" would be untrue', async () => {
    const run = await runCli(['receipt', 'verify', file('receipt.json')], { INTERLOCK_SIGNING_KEY_FILE: file('no-such-key.pem') });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain(`INTERLOCK_SIGNING_KEY_FILE points at ${file('no-such-key.pem')}, which does not exist`);
  });

  it.each([
    ['a missing receipt file', ['missing.json', 'public-key.pem'], /^Cannot read .*missing\.json: no such file or directory\./],
    ['a directory given as a receipt', ['', 'public-key.pem'], /^Cannot read .*: it is a directory; give the receipt files in it \(for example .*\/\*\.json\)/],
    ['a receipt file that is not JSON', ['not-json.json', 'public-key.pem'], /not-json\.json is not JSON/],
    ['a public key file that holds no key', ['receipt.json', 'bad-key.pem'], /^Public key .*\/bad-key\.pem is unusable/],
    ['a directory given as the public key', ['receipt.json', ''], /^Cannot read public key .*: it is a directory\.$/m],
    ['a FIFO given as a receipt (no writer: reading it would wait for ever)', ['fifo.json', 'public-key.pem'], /^Cannot read .*fifo\.json: it is a FIFO \(named pipe\), not a regular file\./],
    ['a receipt file over the 32 MiB cap', ['huge.json', 'public-key.pem'], /^Cannot read .*huge\.json: it is 33\.0 MiB, more than the 32 MiB a receipt file may be\./],
  ])('exits 2 and says why for %s', async (_what, [receiptFile, keyFile], message) => {
    const run = await runCli(['receipt', 'verify', file(receiptFile ?? ''), '--public-key', file(keyFile ?? '')], env, { timeoutMs: 40_000 });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(message);
  });

  it('names the unusable one of several --public-key files', async () => {
    const run = await runCli(['receipt', 'verify', file('receipt.json'), '--public-key', file('public-key.pem'), '--public-key', file('bad-key.pem')], env);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toMatch(new RegExp(`^Public key ${file('bad-key.pem').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is unusable`));
  });

  it('verifies several files on several threads, one JSON line each, and exits with the worst verdict', async () => {
    for (let index = 0; index < 6; index += 1) writeFileSync(file(`copy-${index}.json`), JSON.stringify(receipt));
    const copies = Array.from({ length: 6 }, (_, index) => file(`copy-${index}.json`));
    const lines = (stdout: string) => stdout.trim().split('\n').map((line) => JSON.parse(line) as { file: string; status: string });
    const all = await runCli(['receipt', 'verify', ...copies, '--public-key', file('public-key.pem'), '--threads', '3'], env);
    expect(all.code, all.stderr).toBe(0);
    expect(lines(all.stdout).map((line) => line.status)).toEqual(Array(6).fill('valid'));
    expect(new Set(lines(all.stdout).map((line) => line.file))).toEqual(new Set(copies));
    expect(all.stderr).toContain('6 receipts: 6 valid, 0 invalid');

    const mixed = await runCli(['receipt', 'verify', ...copies.slice(0, 2), file('tampered.json'), '--public-key', file('public-key.pem')], env);
    expect(mixed.code, mixed.stderr).toBe(1);
    expect(lines(mixed.stdout).find((line) => line.file === file('tampered.json'))).toMatchObject({ status: 'invalid' });

    const missing = await runCli(['receipt', 'verify', copies[0] ?? '', file('nowhere.json'), '--public-key', file('public-key.pem')], env);
    expect(missing.code, missing.stderr).toBe(2);
    expect(lines(missing.stdout).find((line) => line.file === file('nowhere.json'))).toMatchObject({ status: 'unreadable' });
  });

  it('reads - as standard input among several files too, as the help says, and refuses - given twice', async () => {
    const given = [file('tampered.json'), '-', file('receipt.json')];
    const run = await runCli(['receipt', 'verify', ...given, '--public-key', file('public-key.pem'), '--threads', '2'], env, { stdin: JSON.stringify(receipt) });
    expect(run.code, run.stderr).toBe(1);
    const lines = new Map(run.stdout.trim().split('\n').map((line) => JSON.parse(line) as { file: string; status: string }).map((line) => [line.file, line.status]));
    expect(lines).toEqual(new Map([[file('tampered.json'), 'invalid'], ['-', 'valid'], [file('receipt.json'), 'valid']]));
    expect(run.stderr).toContain('3 receipts: 2 valid, 1 invalid');
    const twice = await runCli(['receipt', 'verify', '-', file('receipt.json'), '-', '--public-key', file('public-key.pem')], env, { stdin: JSON.stringify(receipt) });
    expect(twice.code, twice.stderr).toBe(2);
    expect(twice.stdout).toBe('');
    expect(twice.stderr.trim()).toBe('Standard input (-) can be given once: it is read once.');
  });

  it('reports a FIFO, a device or an oversized file among several as unreadable without reading it, and verifies the rest', async () => {
    const given = [file('receipt.json'), file('fifo.json'), '/dev/zero', file('huge.json'), file('tampered.json')];
    const run = await runCli(['receipt', 'verify', ...given, '--public-key', file('public-key.pem'), '--threads', '2'], env, { timeoutMs: 40_000 });
    // The tampered receipt's 1 is not masked by the unreadable files' 2.
    expect(run.code, run.stderr).toBe(1);
    const lines = new Map(run.stdout.trim().split('\n').map((line) => JSON.parse(line) as { file: string; status: string; error?: string }).map((line) => [line.file, line]));
    expect([...lines.keys()].sort()).toEqual([...given].sort());
    expect(lines.get(file('fifo.json'))).toMatchObject({ status: 'unreadable', error: `cannot read ${file('fifo.json')}: it is a FIFO (named pipe), not a regular file` });
    expect(lines.get('/dev/zero')).toMatchObject({ status: 'unreadable', error: 'cannot read /dev/zero: it is a character device, not a regular file' });
    expect(lines.get(file('huge.json'))).toMatchObject({ status: 'unreadable', error: `cannot read ${file('huge.json')}: it is 33.0 MiB, more than the 32 MiB a receipt file may be` });
    expect(run.stderr).toContain('5 receipts: 1 valid, 1 invalid, 0 not authenticated, 3 unreadable');
  });
});

describe.concurrent('receipt export', { timeout: 60_000 }, () => {
  // The exporter signs the heads with the service's key, the one that sealed the entries. The key file is written
  // once: rewriting it per test would truncate it while another test's process may be reading it.
  beforeAll(() => writeFileSync(file('signing-key.pem'), world.key.privatePem, { mode: 0o600 }));
  const redisEnv = () => ({ ...env, REDIS_URL: world.config.redisUrl, INTERLOCK_KEY_PREFIX: world.config.keyPrefix, INTERLOCK_SIGNING_KEY_FILE: file('signing-key.pem') });

  it('exports several receipts into a directory, their heads under one signature, and each verifies on its own', async () => {
    const dir = file('exported');
    const run = await runCli(['receipt', 'export', ...exported, '--dir', dir], redisEnv());
    expect(run.stderr.trim()).toBe(`3 receipts written to ${dir}`);
    expect(run.code, run.stderr).toBe(0);
    const bundles = exported.map((effectId) => JSON.parse(readFileSync(join(dir, `${effectId}.json`), 'utf8')) as Receipt);
    expect(bundles.map((bundle) => bundle.effectId)).toEqual(exported);
    expect(new Set(bundles.map((bundle) => parseSeal(bundle.head.sig)?.signature)).size).toBe(1);
    const verified = await runCli(['receipt', 'verify', ...exported.map((effectId) => join(dir, `${effectId}.json`)), '--public-key', file('public-key.pem')], env);
    expect(verified.code, verified.stderr).toBe(0);
    expect(verified.stderr).toContain('3 receipts: 3 valid, 0 invalid');
  });

  it('prints one receipt as JSON, several as one JSON line each', async () => {
    const one = await runCli(['receipt', 'export', exported[1] ?? ''], redisEnv());
    expect(one.code, one.stderr).toBe(0);
    expect((JSON.parse(one.stdout) as Receipt).effectId).toBe(exported[1]);
    const several = await runCli(['receipt', 'export', ...exported.slice(0, 2)], redisEnv());
    expect(several.code, several.stderr).toBe(0);
    expect(several.stdout.trim().split('\n').map((line) => (JSON.parse(line) as Receipt).effectId)).toEqual(exported.slice(0, 2));
  });

  it('writes what it finds and exits 1 naming each effect it has no journal for', async () => {
    const unknown = 'c'.repeat(64);
    const run = await runCli(['receipt', 'export', exported[0] ?? '', unknown], redisEnv());
    expect(run.code, run.stderr).toBe(1);
    expect(run.stdout.trim().split('\n')).toHaveLength(1);
    expect(run.stderr.trim()).toBe(`No journal for effect ${unknown} in the Redis at ${shownUrl(world.config.redisUrl)} under key prefix ${world.config.keyPrefix} (from REDIS_URL).`);
  });

  it('exits 2 at once, naming the file, when INTERLOCK_SIGNING_KEY_FILE holds no key: no Redis connection is left holding the process', async () => {
    writeFileSync(file('empty-key.pem'), '');
    const run = await runCli(['receipt', 'export', exported[0] ?? ''], { ...redisEnv(), INTERLOCK_SIGNING_KEY_FILE: file('empty-key.pem') }, { timeoutMs: 20_000 });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(`INTERLOCK_SIGNING_KEY_FILE (${file('empty-key.pem')}) holds no usable Ed25519 private key`);
    expect(run.stdout).toBe('');
  });

  it('exits 2 on bad input before reading anything: a malformed id, --out with several receipts, a --dir it cannot create', async () => {
    const malformed = await runCli(['receipt', 'export', 'pi_123'], redisEnv());
    expect(malformed.code, malformed.stderr).toBe(2);
    expect(malformed.stderr).toContain('Not an effect id (64 lowercase hex characters): pi_123');
    const out = await runCli(['receipt', 'export', ...exported.slice(0, 2), '--out', file('two.json')], redisEnv());
    expect(out.code, out.stderr).toBe(2);
    expect(out.stderr).toContain('--out takes one receipt');
    const dir = await runCli(['receipt', 'export', exported[0] ?? '', '--dir', join(file('receipt.json'), 'into')], redisEnv());
    expect(dir.code, dir.stderr).toBe(2);
    expect(dir.stderr.trim()).toBe(`Could not create the directory ${join(file('receipt.json'), 'into')}: a part of the path is a file, not a directory (ENOTDIR). Give a path this user can write, or fix the one given.`);
  });
});
