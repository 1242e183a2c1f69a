// `interlock caps set` and `interlock approvals ...` through the real binary: a bad number, a bad subject, a bad
// configuration or an unreachable Redis ends in one line on stderr (no stack trace) and exit 2, and writes
// nothing; a cap of 0 is accepted (nothing may move on that subject), as the store accepts it.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { startPrivateRedis } from '../support/private-redis.js';
import { cliRig } from './cli-rig.js';
import { runCli, type CliRun } from './run-cli.js';

const { env, prefix, redis } = cliRig('approvals');

const BAD_NUMBERS = ['-5', '1e21', 'abc', '2.5', '', '0x10', ' 7', '9007199254740993'];

/** Exit 2 and exactly one line on stderr that is not a stack frame, and nothing on stdout. */
function expectOneLineBadInput(run: CliRun, mentions: string): void {
  expect(run.code, run.stderr).toBe(2);
  expect(run.stdout).toBe('');
  const lines = run.stderr.trimEnd().split('\n');
  expect(lines, run.stderr).toHaveLength(1);
  expect(run.stderr).not.toMatch(/^\s+at\s/m);
  expect(run.stderr).toContain(mentions);
}

async function writtenKeys(): Promise<string[]> {
  return redis.keys(`${prefix}:*`);
}

describe.concurrent('caps set', { timeout: 90_000 }, () => {
  it.each(BAD_NUMBERS)('refuses the cap "%s" with one line and exit 2, and sets no cap', async (value) => {
    const subject = `payment:pi_bad_${randomBytes(3).toString('hex')}`;
    const run = await runCli(['caps', 'set', subject, value], env);
    expectOneLineBadInput(run, 'cents must be a whole number of cents from 0 to 9007199254740991');
    expect((await writtenKeys()).filter((key) => key.includes(subject))).toEqual([]);
  });

  it('accepts a cap of 0: nothing may move on that subject', async () => {
    const run = await runCli(['caps', 'set', 'payment:pi_zero', '0'], env);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ subject: 'payment:pi_zero', limitCents: 0 });
    const capKey = (await writtenKeys()).find((key) => key.includes('{payment:pi_zero}'));
    expect(capKey).toBeDefined();
    expect(await redis.hget(capKey ?? '', 'limit')).toBe('0');
  });

  // A cap on something no effect moves on would be taken for a cap that holds: `caps set pi_123 3000` capped nothing.
  it.each(['payment pi 1', 'pi_123', 'PAYMENT:pi_123', 'payment:123', 'refund:re_1', 'payment:pi_1.2', 'customer:cus-1'])('refuses the subject "%s", which names no one payment or customer, with one line and exit 2, and sets no cap', async (subject) => {
    const run = await runCli(['caps', 'set', subject, '100'], env);
    expectOneLineBadInput(run, 'subject must name one payment or one customer');
    expect(run.stdout).toBe('');
    expect((await writtenKeys()).filter((key) => key.includes(subject))).toEqual([]);
  });
});

describe.concurrent('approvals grant', { timeout: 90_000 }, () => {
  const grant = (overrides: Record<string, string>) => {
    const options: Record<string, string> = { '--id': `ap_${randomBytes(4).toString('hex')}`, '--approver': 'dana@support', '--cap-cents': '3000', '--scope': 'payment:pi_grant', ...overrides };
    return runCli(['approvals', 'grant', ...Object.entries(options).flat()], env);
  };

  it('run again with the same options (a retry: the CLI asks for one after a Redis timeout) answers the approval that stands, exit 0, with its first expiry; other terms are a conflict', async () => {
    const id = `ap_${randomBytes(4).toString('hex')}`;
    const first = await grant({ '--id': id, '--expires-in': '3600' });
    expect(first.code, first.stderr).toBe(0);
    const granted = JSON.parse(first.stdout) as { created: boolean; expiresAt: number };
    expect(granted.created).toBe(true);
    const again = await grant({ '--id': id, '--expires-in': '3600' });
    expect({ code: again.code, stderr: again.stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(again.stdout)).toMatchObject({ id, created: false, expiresAt: granted.expiresAt });
    const wider = await grant({ '--id': id, '--cap-cents': '3001' });
    expect(wider.code).toBe(1);
    expect(wider.stderr).toContain('already exists with other terms');
  });

  it.each([
    ['--cap-cents', '-5'],
    ['--cap-cents', '2.5'],
    ['--cap-cents', '1e21'],
    ['--cap-cents', 'lots'],
    ['--cap-cents', '0'],
    ['--max-uses', '-1'],
    ['--max-uses', '1.5'],
    ['--max-uses', '1e21'],
    ['--max-uses', 'twice'],
    // The support API's bound (GRANT_LIMITS): a grant the CLI takes, the API would refuse.
    ['--max-uses', '1000001'],
    ['--expires-in', '-60'],
    ['--expires-in', '0.5'],
    ['--expires-in', '1e21'],
    ['--expires-in', 'soon'],
  ])('refuses %s %s with one line and exit 2, and grants nothing', async (option, value) => {
    const id = `ap_${randomBytes(4).toString('hex')}`;
    expectOneLineBadInput(await grant({ '--id': id, [option]: value }), `${option} must be a whole number`);
    expect(await redis.hget(`${prefix}:index:approvals`, id)).toBeNull();
  });

  // Rule (cli/program.ts preAction): an option given twice is refused, not read as its last value (`--cap-cents 100
  // … --cap-cents 5000`, a script appending its own defaults, granted 5000 cents); nothing is granted.
  it('refuses a money flag given twice, naming it, and grants nothing', async () => {
    const id = `ap_${randomBytes(4).toString('hex')}`;
    const run = await runCli(['approvals', 'grant', '--id', id, '--approver', 'dana', '--cap-cents', '100', '--scope', 'payment:pi_twice', '--cap-cents=5000'], env);
    expectOneLineBadInput(run, '--cap-cents was given 2 times; give it once');
    expect((await runCli(['approvals', 'describe', id], env)).code).toBe(1);
  });

  it('refuses an expiry too far ahead to be an approval (more than ten years)', async () => {
    expectOneLineBadInput(await grant({ '--expires-in': String(10 * 365 * 24 * 60 * 60 + 1) }), '--expires-in must be a whole number of seconds from 1 to 315360000');
  });

  it('refuses an approval id the store rejects as bad input, with exit 2', async () => {
    expectOneLineBadInput(await grant({ '--id': 'ap with spaces' }), 'The approval is invalid: id must be');
  });

  it('refuses an approver holding a character nobody sees (a direction override), naming it, and grants nothing', async () => {
    const id = `ap_${randomBytes(4).toString('hex')}`;
    expectOneLineBadInput(await grant({ '--id': id, '--approver': 'dana\u202e@support' }), 'approver holds U+202E');
    expect(await redis.hget(`${prefix}:index:approvals`, id)).toBeNull();
  });

  it('grants an approval given whole numbers, and prints its terms', async () => {
    const run = await grant({ '--id': 'ap_cli_ok', '--max-uses': '2', '--expires-in': '600' });
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ id: 'ap_cli_ok', capCents: 3000, maxUses: 2, scope: 'payment:pi_grant', created: true });
  });
});

describe.concurrent('approvals revoke', { timeout: 90_000 }, () => {
  it.each([
    ['an empty name', '', 'must not be empty'],
    ['a name with a leading space', ' lee', 'may not start or end with spaces'],
    ['a name of 201 characters', 'x'.repeat(201), 'must be at most 200 characters'],
    ['a name with a zero-width space', 'lee\u200b', 'holds U+200B'],
  ])('refuses %s as --by, as the inbox commands do (one line, exit 2), and leaves the approval live', async (_what, by, problem) => {
    const id = `ap_${randomBytes(4).toString('hex')}`;
    const granted = await runCli(['approvals', 'grant', '--id', id, '--approver', 'dana@support', '--cap-cents', '3000', '--scope', 'payment:pi_revoke'], env);
    expect(granted.code, granted.stderr).toBe(0);
    expectOneLineBadInput(await runCli(['approvals', 'revoke', id, '--by', by], env), `--by ${problem}`);
    const described = await runCli(['approvals', 'describe', id], env);
    expect(JSON.parse(described.stdout)).toMatchObject({ id, revoked: false, live: true, usesLeft: 1, centsLeft: 3000, usable: true });
  });
});

// Rule: `approvals describe` says usable only while one more effect could go under the approval, its scope's shared cap
// counted: with that cap at 0 every effect under it is refused over_cap.
describe('approvals describe', { timeout: 90_000 }, () => {
  it('counts the cap shared on the approval\'s scope: subjectCentsLeft, and not usable when it leaves nothing', async () => {
    const id = `ap_${randomBytes(4).toString('hex')}`;
    const scope = `payment:pi_describe_${randomBytes(4).toString('hex')}`;
    expect((await runCli(['approvals', 'grant', '--id', id, '--approver', 'dana@support', '--cap-cents', '3000', '--scope', scope], env)).code).toBe(0);
    expect(JSON.parse((await runCli(['approvals', 'describe', id], env)).stdout)).toMatchObject({ centsLeft: 3000, subjectCentsLeft: null, usable: true });
    const capped = await runCli(['caps', 'set', scope, '0'], env);
    expect(capped.code, capped.stderr).toBe(0);
    expect(JSON.parse((await runCli(['approvals', 'describe', id], env)).stdout)).toMatchObject({ live: true, usesLeft: 1, centsLeft: 3000, subjectCentsLeft: 0, usable: false });
  });
});

describe.concurrent('every command that needs Redis fails in one line with exit 2 when it is unreachable or misconfigured', { timeout: 90_000 }, () => {
  const unreachable = { ...env, REDIS_URL: 'redis://127.0.0.1:1' };
  it.each([
    ['caps set', ['caps', 'set', 'payment:pi_1', '100']],
    ['approvals grant', ['approvals', 'grant', '--id', 'ap_1', '--approver', 'dana', '--cap-cents', '100', '--scope', 'payment:pi_1']],
    ['approvals revoke', ['approvals', 'revoke', 'ap_1', '--by', 'lee']],
    ['approvals describe', ['approvals', 'describe', 'ap_1']],
    ['receipt export', ['receipt', 'export', 'a'.repeat(64)]],
  ])('%s: an unreachable Redis', async (_name, args) => {
    expectOneLineBadInput(await runCli(args, unreachable), 'Cannot reach Redis at redis://127.0.0.1:1');
  });

  it('a Redis that refuses REDIS_URL\'s password: the line says what Redis answered and to check REDIS_URL, not that nothing answered', async () => {
    const guarded = await startPrivateRedis(['--save', '']);
    try {
      const admin = new Redis(guarded.url);
      await admin.config('SET', 'requirepass', 'right-password');
      admin.disconnect();
      for (const url of [guarded.url, `redis://:wrong-password@127.0.0.1:${guarded.port}`]) {
        const run = await runCli(['approvals', 'describe', 'ap_1'], { ...env, REDIS_URL: url });
        expectOneLineBadInput(run, 'Cannot reach Redis at redis://');
        expect(run.stderr).toMatch(/NOAUTH|WRONGPASS/);
        expect(run.stderr).toContain('REDIS_URL');
        expect(run.stderr).not.toContain('no answer');
        expect(run.stderr).not.toContain('wrong-password');
      }
    } finally {
      await guarded.stop();
    }
  });

  it('a timing configuration that breaks a rule', async () => {
    expectOneLineBadInput(await runCli(['approvals', 'describe', 'ap_1'], { ...env, INTERLOCK_HEARTBEAT_TTL_MS: '1000' }), 'heartbeat_ttl_at_least_twice_interval');
  });

  it('a REDIS_URL that is not a URL', async () => {
    expectOneLineBadInput(await runCli(['caps', 'set', 'payment:pi_1', '5'], { ...env, REDIS_URL: 'not a url' }), 'Configuration is invalid (REDIS_URL');
  });

  it('an unknown command or a missing argument is a usage error (exit 2)', async () => {
    expectOneLineBadInput(await runCli(['refund-everything'], env), "unknown command 'refund-everything'");
    expectOneLineBadInput(await runCli(['caps', 'set', 'payment:pi_1'], env), "missing required argument 'cents'");
  });
});

describe('a command whose answer is no exits 1, not 2', { timeout: 60_000 }, () => {
  it('approvals describe of an unknown id', async () => {
    const run = await runCli(['approvals', 'describe', 'ap_never_granted'], env);
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr).toBe('No approval ap_never_granted.\n');
  });
});
