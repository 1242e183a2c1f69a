// The committed receipts under tests/fixtures/receipts/ (made by tests/fixtures/make-receipts.ts from real gate
// flows) verify offline with the public key beside them, through the CLI an auditor would use.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Verification } from '../../src/core/verify.js';
import { REPO, runCli, tempDir } from './run-cli.js';

const FIXTURES = join(REPO, 'tests', 'fixtures', 'receipts');

async function verifyFixture(name: string, folder = FIXTURES): Promise<Verification> {
  const temp = tempDir('fixtures');
  try {
    const run = await runCli(['receipt', 'verify', join(folder, name), '--public-key', join(folder, 'public-key.pem')], { INTERLOCK_DATA_DIR: temp.dir });
    expect(run.stderr).toBe('');
    expect(run.code, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout) as Verification;
    expect(result).toMatchObject({ valid: true, chainIntact: true, signed: true, problems: [] });
    return result;
  } finally {
    temp.remove();
  }
}

describe.each([
  ['v3 (batches sealed in shared trees)', FIXTURES, 'interlock.receipt/v3'],
  ['v2 (signed per batch)', join(FIXTURES, 'v2'), 'interlock.receipt/v2'],
  ['v1 (every entry signed)', join(FIXTURES, 'v1'), 'interlock.receipt/v1'],
] as const)('committed receipt fixtures, %s', (_version, folder, format) => {
  it.concurrent('committed.json: a plain gated refund that landed once and was returned', async () => {
    const result = await verifyFixture('committed.json', folder);
    expect(JSON.parse(readFileSync(join(folder, 'committed.json'), 'utf8'))).toMatchObject({ format });
    expect(result).toMatchObject({ outcome: 'COMMITTED', happened: true, happenedOnce: true, authorizedWhenFired: true, assumptionsHeld: true, approvedBy: 'dana@support', answerMatchesFinalMoney: true });
    expect(result.finalMoney.status).toBe('returned');
  });

  it.concurrent('refused-at-recovery.json: a chargeback during the outage made recovery refuse, and nothing was sent', async () => {
    const result = await verifyFixture('refused-at-recovery.json', folder);
    expect(result).toMatchObject({ outcome: 'REFUSED:stale_premise_at_recovery', happened: false, refused: { code: 'REFUSED:stale_premise_at_recovery' }, evidence: null });
    expect(result.recheckedAtRecovery?.violations).toEqual([expect.stringContaining('chargebacks')]);
    expect(result.finalMoney.status).toBe('not_returned');
  });

  it.concurrent('failed-refund.json: the gate answered landed, but Stripe failed the refund on the disputed charge', async () => {
    const result = await verifyFixture('failed-refund.json', folder);
    expect(result).toMatchObject({ outcome: 'COMMITTED', happened: true, answer: 'returned', answerMatchesFinalMoney: false, exposure: null });
    expect(result.finalMoney).toMatchObject({ status: 'not_returned', failureReason: 'charge_for_pending_refund_disputed' });
    expect(result.finalMoney.disputes).toEqual([expect.objectContaining({ status: 'needs_response', reason: 'fraudulent' })]);
    expect(result.finalMoney.refunds).toEqual([expect.objectContaining({ id: result.evidence, status: 'failed' })]);
  });
});
