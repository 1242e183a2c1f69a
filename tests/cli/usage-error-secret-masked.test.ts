// Rule: a usage error the command line writes to stderr (commander's own: a bad value, an unknown option, a stray
// argument) shows a secret in it only by its kind, as every other line the CLI writes there: a key typed in the wrong
// place (`--amount sk_live_…`) is never printed whole to a terminal or a collected log.
import { describe, expect, it } from 'vitest';
import { runCli } from './run-cli.js';

const KEY = 'sk_live_51HqLyjWDarjtT1zdp7dcAbCdEfGhIjKlMnOpQrStUvWx9999';

describe('a usage error quoting a secret', () => {
  it.each([
    ['a key where --amount goes', ['refund', '--request', 'r1', '--payment-intent', 'pi_1', '--amount', KEY, '--approval', 'ap_1']],
    ['a key in an unknown --option=value', ['refund', `--api-key=${KEY}`, '--request', 'r1', '--payment-intent', 'pi_1', '--amount', '100', '--approval', 'ap_1']],
    ['a key where serve --port goes', ['serve', '--port', KEY]],
    ['a key as the command', [KEY]],
  ])('masks it (%s), still exiting 2 and naming the problem', async (_label, args) => {
    const run = await runCli(args);
    expect(run.code).toBe(2);
    expect(run.stderr).not.toContain(KEY);
    expect(run.stderr).toContain('sk_live_…');
    expect(run.stderr).toContain('(add --help for usage)');
  });
});
