// What the CLI leaves on the terminal when its reader goes away or its input is hostile (src/cli/program.ts).
//
// Rule: a command whose standard output is closed early (`interlock ... | head -1`, `| true`, a script that stops
// reading) ends quietly: no "Unhandled 'error' event", no stack trace on stderr (README: "a failure is always one line
// on standard error, never a stack trace"). Every printJson/printLine/commander help write on a closed pipe threw
// EPIPE from the socket as an unhandled 'error' event: a Node stack trace and exit 1 (for `approvals grant`, after the
// approval was granted, so a script under `set -o pipefail` read "the answer is no").
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { unknownSettings } from '../../src/config.js';
import { removePrefixes } from '../support/harness.js';
import { REPO, runCli, tempDir } from './run-cli.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const prefix = `revcli${randomBytes(5).toString('hex')}`;
const temp = tempDir('epipe');
const env = { REDIS_URL, INTERLOCK_KEY_PREFIX: prefix, INTERLOCK_DATA_DIR: temp.dir };

afterAll(async () => {
  await removePrefixes([prefix]);
  temp.remove();
});

/** Runs the binary with its stdout read end closed at once (as `| true` does). */
function withClosedStdout(args: string[]): Promise<{ code: number | null; stderr: string }> {
  const runnerOnly = Object.fromEntries(unknownSettings(process.env).map(({ variable }) => [variable, undefined]));
  const child = spawn(process.execPath, [join(REPO, 'bin', 'interlock.js'), ...args], {
    cwd: REPO,
    env: { ...process.env, ...runnerOnly, INTERLOCK_LOG_LEVEL: 'silent', INTERLOCK_SIGNING_KEY_FILE: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout.destroy();
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stderr })));
}

describe('stdout closed early (| head, | true)', () => {
  it('approvals describe ends without a stack trace', async () => {
    const id = `ap_${randomBytes(4).toString('hex')}`;
    const granted = await runCli(['approvals', 'grant', '--id', id, '--approver', 'dana', '--cap-cents', '100', '--scope', 'payment:pi_epipe'], env);
    expect(granted.code, granted.stderr).toBe(0);
    const run = await withClosedStdout(['approvals', 'describe', id]);
    expect(run.stderr).not.toContain("Unhandled 'error' event");
    expect(run.stderr).not.toMatch(/^\s+at\s/m);
  });

  it('approvals grant (which did grant) ends without a stack trace and not with exit 1', async () => {
    const id = `ap_${randomBytes(4).toString('hex')}`;
    const run = await withClosedStdout(['approvals', 'grant', '--id', id, '--approver', 'dana', '--cap-cents', '100', '--scope', 'payment:pi_epipe']);
    expect(run.stderr).not.toMatch(/^\s+at\s/m);
    expect(run.code).not.toBe(1);
  });

  it('--help ends without a stack trace', async () => {
    const run = await withClosedStdout(['--help']);
    expect(run.stderr).not.toMatch(/^\s+at\s/m);
  });
});

// Rule: no text the caller passed reaches the terminal raw: "every character a
// terminal would act on or hide is written as its JSON escape". The program's own messages do that (printProblem),
// but commander's usage errors (a value refused by an argument parser: an alert id, an inbox item id, --cap-cents)
// quoted the value and were written through configureOutput's outputError as they were, so an id taken from a ticket
// or a chat message by a script could clear the operator's screen or recolour what follows.
const ESC = '\u001b';

describe('commander usage errors', () => {
  it.each([
    ['alerts resolve', ['alerts', 'resolve', `x${ESC}[2J${ESC}[31mfake`, '--by', 'lee']],
    ['inbox show', ['inbox', 'show', `x${ESC}]0;owned\u0007`]],
    ['approvals grant --cap-cents', ['approvals', 'grant', '--id', 'ap_1', '--approver', 'd', '--cap-cents', `1${ESC}[2J`, '--scope', 'payment:pi_1']],
  ])('%s: the refused value is written escaped, exit 2', async (_name, args) => {
    const run = await runCli(args, { REDIS_URL: 'redis://127.0.0.1:1' });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).not.toContain(ESC);
    expect(run.stderr).not.toContain('\u0007');
  });
});
