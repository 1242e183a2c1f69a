// Rule: nothing from a receipt file, a key file or their names reaches the terminal raw on stderr either
// (src/cli/output.ts: "a receipt file from anywhere: none of it reaches the terminal raw"). `receipt verify FILE` on a
// file that is not JSON wrote V8's parse error as it was, and V8 quotes the text around the bad token: a hostile file
// could clear the screen, set the terminal title or recolour text. File names ("Cannot read NAME: ...", the warning
// that a --public-key file holds a private key) were written raw too, where several files' lines are escaped.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { testKey } from '../support/harness.js';
import { runCli, tempDir } from './run-cli.js';

const temp = tempDir('receipt-escapes');
afterAll(() => temp.remove());

const ESC = '\u001b';
const BEL = '\u0007';

describe.concurrent('receipt verify writes no terminal control characters from a file to stderr', { timeout: 60_000 }, () => {
  it('a file that is not JSON: the parse error quoting its text is escaped', async () => {
    const file = join(temp.dir, 'hostile.json');
    writeFileSync(file, `${ESC}]0;owned${BEL}${ESC}[2J${ESC}[32mVALID`);
    const run = await runCli(['receipt', 'verify', file]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`${file} is not JSON`);
    expect(run.stderr).toContain('\\u001b');
    expect(run.stderr).not.toContain(ESC);
    expect(run.stderr).not.toContain(BEL);
  });

  it('a file name holding an escape sequence, unreadable: the name is escaped', async () => {
    const file = join(temp.dir, `missing${ESC}[2J.json`);
    const run = await runCli(['receipt', 'verify', file]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`Cannot read ${join(temp.dir, 'missing\\u001b[2J.json')}`);
    expect(run.stderr).not.toContain(ESC);
  });

  it('a --public-key file named with an escape sequence that holds a private key: the warning names it escaped', async () => {
    const { privatePem } = testKey();
    const keyFile = join(temp.dir, `private${ESC}[2J.pem`);
    writeFileSync(keyFile, privatePem, { mode: 0o600 });
    const receipt = join(temp.dir, 'not-json.json');
    writeFileSync(receipt, 'not json');
    const run = await runCli(['receipt', 'verify', '--public-key', keyFile, receipt]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`${join(temp.dir, 'private\\u001b[2J.pem')} holds a private key`);
    expect(run.stderr).not.toContain(ESC);
  });
});
