// Rule: a bad value given to `refund` or `credit` is named by the option the operator typed (`--payment-intent`), never
// by the field of the proposal it is kept in (`effect.paymentIntent`), and nothing is recorded (exit 2, before Redis
// is reached). So for every option either command fills its effect or decision from.
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli, tempDir } from './run-cli.js';

const temp = tempDir('effect-option-names');
afterAll(() => temp.remove());
// No Redis answers here: a refusal of the values comes before any connection.
const env = { INTERLOCK_DATA_DIR: join(temp.dir, 'data'), REDIS_URL: 'redis://127.0.0.1:1' };
const refund = ['refund', '--request', 'r1', '--payment-intent', 'pi_123', '--amount', '100', '--approval', 'ap_1'];
const credit = ['credit', '--request', 'r1', '--customer', 'cus_123', '--amount', '100', '--incident', 'inc_1', '--approval', 'ap_1'];
/** `args` with `option`'s value replaced by `value` (added when absent). */
const given = (args: readonly string[], option: string, value: string) => {
  const at = args.indexOf(option);
  return at === -1 ? [...args, option, value] : args.map((arg, index) => (index === at + 1 ? value : arg));
};

describe.concurrent('refund and credit name a bad value by its option', { timeout: 60_000 }, () => {
  it.each([
    ['refund --payment-intent', given(refund, '--payment-intent', 'ch_123'), '--payment-intent: must be a PaymentIntent id'],
    ['credit --customer', given(credit, '--customer', 'pi_123'), '--customer: must be a Customer id'],
    ['credit --incident', given(credit, '--incident', 'inc 1'), '--incident: must be 1-200 letters, digits or _ . : # -'],
    ['credit --description', given(credit, '--description', 'x'.repeat(351)), '--description: must be at most 350 characters'],
    ['refund --model', [...refund, '--model', 'm'.repeat(201), '--decision', 'refund it'], '--model: must be at most 200 characters'],
  ])('%s', async (_name, args, said) => {
    const run = await runCli(args, env);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(`The proposal is invalid (${said}`);
    expect(run.stderr).toContain('Nothing was recorded.');
    expect(run.stderr).not.toMatch(/effect\.|decision\./);
  });
});
