// `interlock alerts` through the real binary: the open alerts, and a person resolving one once it is handled (a
// late landing's alert asks for exactly that: "Resolve this alert once the customer has been told").
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { createAlerts } from '../../src/redis/alerts.js';
import { createKeys } from '../../src/redis/keys.js';
import { alertsRig } from './alerts-rig.js';
import { runCli } from './run-cli.js';

const { env, redis, alerts } = alertsRig('alerts');

describe('interlock alerts', { timeout: 90_000 }, () => {
  it('resolves an alert a person has handled, once, naming who; it leaves the open list; a bad or unknown id records nothing', async () => {
    const effectId = randomBytes(32).toString('hex');
    const { alert } = await alerts.raise({ kind: 'late_landing', effectId, subject: 'payment:pi_late', centsAtStake: 2_000, refund: 're_late', disputes: [], sentence: 'A send landed after the gate had settled the effect as REFUSED:stale_premise.', action: 'Check the effect at Stripe. Resolve this alert once the customer has been told.' });
    const resolved = await runCli(['alerts', 'resolve', alert.id, '--by', 'lee@support'], env);
    expect(resolved.code, resolved.stderr).toBe(0);
    expect(JSON.parse(resolved.stdout)).toMatchObject({ id: alert.id, resolvedBy: 'lee@support (cli)' });
    expect((await alerts.get(alert.id))?.resolvedAt).not.toBeNull();
    const open = await runCli(['alerts', '--json'], env);
    expect(open.code, open.stderr).toBe(0);
    expect(JSON.parse(open.stdout)).toEqual({ alerts: [] });

    // --all lists it, marked resolved and naming who, never with the action an open alert asks for.
    const all = await runCli(['alerts', '--all'], env);
    expect(all.code, all.stderr).toBe(0);
    const line = all.stdout.split('\n').find((text) => text.includes(effectId.slice(0, 12))) ?? '';
    expect(line).toMatch(new RegExp(`^\\S+ RESOLVED late_landing:${effectId} `));
    expect(line).toContain('Resolved by lee@support (cli) at ');
    expect(line).not.toContain('What to do');

    const again = await runCli(['alerts', 'resolve', alert.id, '--by', 'sam'], env);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('lee@support (cli)');
    expect((await alerts.get(alert.id))?.resolvedBy).toBe('lee@support (cli)');
    const unknown = await runCli(['alerts', 'resolve', `late_landing:${'0'.repeat(64)}`, '--by', 'lee'], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('No alert');
    const bad = await runCli(['alerts', 'resolve', 'not-an-alert', '--by', 'lee'], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('is not an alert id');
  });
});

describe('what interlock alerts puts on the terminal', { timeout: 90_000 }, () => {
  // An alert's sentence quotes what Stripe said (a refund's failure reason, a dispute's), and a proposer's text: a
  // string that reaches the terminal raw can set its title, move the cursor up and erase the lines of other alerts,
  // or turn the rest of a line around. Every such character is printed as its JSON escape, on the alert's one line.
  const hostile = 'lost_or_stolen_card\u001b]0;all clear\u0007\u001b[1A\u001b[2K\r\u009b2J\u202enoitca on\nfake line';
  // C0 controls but the line feed, DEL and C1, and the direction and invisible characters nobody sees.
  // eslint-disable-next-line no-control-regex -- finding control characters is what this checks
  const unprintable = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2066-\u2069]/gu;

  it('prints an alert whose sentence holds escape sequences with each of them escaped, on one line, and --json the same text', async () => {
    const effectId = randomBytes(32).toString('hex');
    await alerts.raise({ kind: 'failed_after_landed', effectId, subject: 'payment:pi_escape', centsAtStake: 2_000, refund: 're_escape', disputes: [], sentence: `Refund re_escape failed at Stripe (${hostile}).`, action: 'Check the refund at Stripe.' });
    const shown = await runCli(['alerts'], env);
    expect(shown.code, shown.stderr).toBe(0);
    const lines = shown.stdout.trimEnd().split('\n').filter((line) => line.includes(effectId.slice(0, 12)));
    expect(lines).toHaveLength(1);
    expect([...shown.stdout.matchAll(unprintable)].map((match) => match[0].codePointAt(0))).toEqual([]);
    expect(lines[0]).toContain('lost_or_stolen_card\\u001b]0;all clear\\u0007\\u001b[1A\\u001b[2K\\u000d\\u009b2J\\u202enoitca on\\u000afake line');
    const json = await runCli(['alerts', '--json'], env);
    expect([...json.stdout.matchAll(unprintable)].map((match) => match[0].codePointAt(0))).toEqual([]);
    const listed = (JSON.parse(json.stdout) as { alerts: { effectId: string; sentence: string }[] }).alerts.find((alert) => alert.effectId === effectId);
    expect(listed?.sentence).toBe(`Refund re_escape failed at Stripe (${hostile}).`);
  });
});

describe('interlock alerts with more open alerts than one page', { timeout: 120_000 }, () => {
  const many = `tcli${randomBytes(5).toString('hex')}`;
  // Raised one millisecond apart, so newest first is the reverse of the order they were raised in.
  let clock = 1_700_000_000_000;
  const store = createAlerts({ redis, keys: createKeys(many), now: async () => (clock += 1) });
  afterAll(async () => {
    const keys = await redis.keys(`${many}:*`);
    if (keys.length > 0) await redis.del(...keys);
  });

  it('lists every open alert, the oldest (money at stake longest) too, past the 100 of one page, in text and in --json', async () => {
    const effects: string[] = [];
    for (let i = 0; i < 105; i += 1) {
      const effectId = randomBytes(32).toString('hex');
      effects.push(effectId);
      await store.raise({ kind: 'exposure', effectId, subject: `payment:pi_${i}`, centsAtStake: 12_000, refund: `re_${i}`, disputes: [`du_${i}`], sentence: 'Refunded and charged back.', action: 'Answer the dispute.' });
    }
    const manyEnv = { ...env, INTERLOCK_KEY_PREFIX: many };
    const json = await runCli(['alerts', '--json'], manyEnv);
    expect(json.code, json.stderr).toBe(0);
    expect((JSON.parse(json.stdout) as { alerts: { effectId: string }[] }).alerts.map((alert) => alert.effectId)).toEqual([...effects].reverse());
    const text = await runCli(['alerts'], manyEnv);
    expect(text.code, text.stderr).toBe(0);
    const lines = text.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(105);
    expect(lines.map((line) => line.split(' ')[1])).toEqual([...effects].reverse().map((effectId) => `exposure:${effectId}`));
  });
});
