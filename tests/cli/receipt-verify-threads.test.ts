// Rule: a numeric CLI option takes plain digits only (src/cli/failure.ts, wholeNumber), and is refused before any file
// is read. `receipt verify --threads` was read with Number(), so `--threads 1e3` started up to a thousand verifying
// threads and `--threads 0x2` meant two; and with one file the option was never looked at, so `--threads banana`
// passed silently. At most 256: `--threads 100000` over many files started a thread per file, each loading its own
// verifier, until memory ran out.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { chainReceipt, drafts } from '../core/entry-chain.js';
import { testKey } from '../support/harness.js';
import { runCli, tempDir } from './run-cli.js';

const temp = tempDir('receipt-threads');
afterAll(() => temp.remove());

describe.concurrent('receipt verify --threads', { timeout: 60_000 }, () => {
  const { key, publicPem } = testKey();
  const pub = join(temp.dir, 'pub.pem');
  const a = join(temp.dir, 'a.json');
  const b = join(temp.dir, 'b.json');
  writeFileSync(pub, publicPem);
  writeFileSync(a, JSON.stringify(chainReceipt('threads-a', [drafts.proposed()], key)));
  writeFileSync(b, JSON.stringify(chainReceipt('threads-b', [drafts.proposed()], key)));

  for (const value of ['1e1', '0x2', ' 2', '0', '-1', '', '257', '100000']) {
    it(`refuses --threads ${JSON.stringify(value)} with several files (exit 2): digits only, 1 to 256`, async () => {
      const run = await runCli(['receipt', 'verify', '--threads', value, '--public-key', pub, a, b]);
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr).toContain('--threads must be a whole number of threads from 1 to 256');
      expect(run.stdout).toBe('');
    });
  }

  it('refuses --threads banana with one file too (exit 2), as it does with several', async () => {
    const run = await runCli(['receipt', 'verify', '--threads', 'banana', '--public-key', pub, a]);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain('--threads must be a whole number of threads');
    expect(run.stdout).toBe('');
  });

  it('takes --threads in digits, with one file and with several', async () => {
    const [one, several] = await Promise.all([
      runCli(['receipt', 'verify', '--threads', '2', '--public-key', pub, a]),
      runCli(['receipt', 'verify', '--threads', '256', '--public-key', pub, a, b]),
    ]);
    expect([one.code, several.code], `${one.stderr}\n${several.stderr}`).toEqual([0, 0]);
  });
});
