// Rule: a receipt that verifies cannot mean two different things: a receipt file that is not UTF-8 is not the text that
// was signed. Read leniently, every bad byte became U+FFFD, so bytes C0 80 (an overlong NUL, read as NUL by "modified
// UTF-8" readers) standing where the signed text held U+FFFD verified as valid. Such a file (or standard input) is
// refused as unreadable (exit 2), naming the file and the offset of the first bad byte; a byte order mark still reads.
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readReceiptText } from '../../src/cli/verify-pool.js';
import { verifyReceiptText } from '../../src/core/receipt-text.js';
import { approvalTerms, createWorld, refundProposal, type World } from '../support/harness.js';
import { FLOW_TIMING } from '../fixtures/receipt-flows.js';
import { unknownSettings } from '../../src/config.js';
import { REPO, runCli, tempDir, type CliRun } from './run-cli.js';

let world: World;
let genuine: Buffer;
/** Where the signed "\uFFFD\uFFFD" starts in the file, in bytes: where the edited files hold C0 80 instead. */
let at = -1;
const temp = tempDir('not-utf8');
const file = (name: string) => join(temp.dir, name);
const env = { INTERLOCK_DATA_DIR: join(temp.dir, 'data') };

beforeAll(async () => {
  world = await createWorld({ config: FLOW_TIMING });
  const name = `rv_utf8_${Date.now()}`;
  const node = await world.node();
  const subject = `payment:pi_${name}`;
  world.target.world.set(subject, { chargebacks: [], refunded_by_others: 0 });
  const terms = approvalTerms({ id: `ap_${name}`, scope: subject });
  await node.approvals.grant(terms);
  const proposal = { ...refundProposal({ requestId: `case-${name}`, approval: terms.id, paymentIntent: `pi_${name}` }), decision: { model: 'm', text: 'refund \uFFFD\uFFFD as asked' } };
  const result = await node.gate.submit(proposal);
  genuine = Buffer.from(JSON.stringify(await node.gate.receipt(result.effectId), null, 2), 'utf8');
  const signed = Buffer.from('\uFFFD\uFFFD', 'utf8');
  at = genuine.indexOf(signed);
  const edited = Buffer.concat([genuine.subarray(0, at), Buffer.from([0xc0, 0x80]), genuine.subarray(at + signed.length)]);
  writeFileSync(file('receipt.json'), genuine);
  writeFileSync(file('bom.json'), Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), genuine]));
  writeFileSync(file('edited.json'), edited);
  // Past the one read buffer of 256 KiB (read another way): the JSON padded with spaces after it.
  writeFileSync(file('edited-large.json'), Buffer.concat([edited, Buffer.alloc(300 * 1024, 0x20)]));
  writeFileSync(file('public-key.pem'), world.key.publicPem);
});

afterAll(async () => {
  await world?.close();
  temp.remove();
});

/** The CLI as runCli runs it, with `input` (bytes, where runCli writes text) on its standard input. */
function runWithInput(args: readonly string[], input: Buffer): Promise<CliRun> {
  const runnerOnly = Object.fromEntries(unknownSettings(process.env).map(({ variable }) => [variable, undefined]));
  const childEnv = { ...process.env, ...runnerOnly, INTERLOCK_LOG_LEVEL: 'silent', INTERLOCK_SIGNING_KEY_FILE: '', ...env };
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [join(REPO, 'bin', 'interlock.js'), ...args], { cwd: REPO, env: childEnv, timeout: 50_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : -1, stdout, stderr });
    });
    child.stdin?.end(input);
  });
}

describe('a receipt file that is not UTF-8', { timeout: 60_000 }, () => {
  it('is refused when read, saying where, while the genuine file (with or without a byte order mark) verifies', () => {
    expect(at).toBeGreaterThan(0);
    for (const name of ['receipt.json', 'bom.json']) {
      expect(verifyReceiptText(readReceiptText(file(name)), { publicKeys: world.key.publicKeys })).toMatchObject({ json: true, verification: { valid: true, problems: [] } });
    }
    const why = `it is not UTF-8 text: the bytes from offset ${at} (C0 80 `;
    expect(() => readReceiptText(file('edited.json'))).toThrow(why);
    expect(() => readReceiptText(file('edited-large.json'))).toThrow(why);
  });

  it('exits 2 naming the file and the offset, alone, among several, and on standard input', async () => {
    const pem = file('public-key.pem');
    const [alone, several, piped] = await Promise.all([
      runCli(['receipt', 'verify', file('edited.json'), '--public-key', pem], env),
      runCli(['receipt', 'verify', '--threads', '1', '--public-key', pem, file('receipt.json'), file('edited-large.json')], env),
      runWithInput(['receipt', 'verify', '-', '--public-key', pem], Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), genuine.subarray(0, at), Buffer.from([0xc0, 0x80]), genuine.subarray(at + 6)])),
    ]);
    expect(alone.code, alone.stderr).toBe(2);
    expect(alone.stdout).toBe('');
    expect(alone.stderr).toContain(`Cannot read ${file('edited.json')}: it is not UTF-8 text: the bytes from offset ${at} (C0 80 `);
    expect(several.code, several.stderr).toBe(2);
    expect(several.stderr).toContain('2 receipts: 1 valid, 0 invalid, 0 not authenticated, 1 unreadable');
    const lines = several.stdout.split('\n').filter(Boolean).map((line) => JSON.parse(line) as unknown);
    expect(lines).toContainEqual(expect.objectContaining({ file: file('edited-large.json'), status: 'unreadable', error: expect.stringContaining(`cannot read ${file('edited-large.json')}: it is not UTF-8 text: the bytes from offset ${at} (C0 80 `) }));
    expect(piped.code, piped.stderr).toBe(2);
    // The byte order mark is three bytes of the input, before the receipt.
    expect(piped.stderr).toContain(`Cannot read -: it is not UTF-8 text: the bytes from offset ${at + 3} (C0 80 `);
  });
});
