// Rule: the README's payment line (the one `npm start` prints) ends with a sentence of its own when Stripe's answer
// holds no payment: nothing (the key was not exported, the address is wrong), an error (a declined card), or no JSON
// at all (a proxy's error page). Never a stack trace, and PI is left empty with the line failing (exit 1).
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const README = readFileSync(join(import.meta.dirname, '..', '..', 'README.md'), 'utf8');
const line = README.split('\n').find((each) => each.trim().startsWith('PI=$(curl')) ?? '';
/** The node part of the line, run on what curl would have printed. */
const reader = /\| (node -pe '.*')\)$/.exec(line.trim())?.[1] ?? '';

function read(answer: string) {
  const run = spawnSync('sh', ['-c', `PI=$(printf '%s' "$ANSWER" | ${reader}) && echo "PI=$PI"`], { env: { ...process.env, ANSWER: answer }, encoding: 'utf8' });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

describe("the README's payment line", () => {
  it('is found in the README, reading the payment id from the answer', () => {
    expect(reader).toMatch(/^node -pe '/);
    expect(read('{"id":"pi_123","object":"payment_intent"}')).toEqual({ status: 0, stdout: 'PI=pi_123\n', stderr: '' });
  });

  it.each([
    ['no answer', '', 'No payment made.'],
    ['an error', '{"error":{"message":"Your card was declined."}}', 'No payment: {"error":{"message":"Your card was declined."}}'],
    ['a page that is no JSON', '<html>502 Bad Gateway</html>', 'No payment: <html>502 Bad Gateway</html>'],
  ])('stops with a sentence on %s', (_, answer, sentence) => {
    const run = read(answer);
    expect(run.status).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr.trim()).toBe(sentence);
  });
});
