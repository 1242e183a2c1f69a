// The scenario runner's progress line (scenarios/progress.ts): test mode's fixed waits run for minutes, and the line
// must say that the run is waiting, for what and how long, not look stuck on a cell.
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createProgressBar } from '../../scenarios/progress.js';
import { runStripeDispute } from '../../scenarios/stripe-dispute.js';

function capture(): { stream: NodeJS.WriteStream; lines: () => string[] } {
  let text = '';
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      text += chunk.toString('utf8');
      done();
    },
  }) as unknown as NodeJS.WriteStream;
  return { stream, lines: () => text.split('\n').filter((line) => line !== '') };
}

describe('a cell that waits', () => {
  it('shows what it waits for and the time left while it waits, and its plain label once the wait is over', async () => {
    const { stream, lines } = capture();
    const bar = createProgressBar(stream);
    bar.add(2);
    const cell = bar.cell();
    cell.start('stripe_dispute gap_probe / gate');
    const started = Date.now();
    await cell.wait('the refund window to pass (test mode waits 300 s)', 1_200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_150);
    const during = lines().at(-1) ?? '';
    expect(lines().some((line) => line.includes('stripe_dispute gap_probe / gate: waiting for the refund window to pass (test mode waits 300 s), 1s left'))).toBe(true);
    expect(during).toContain('stripe_dispute gap_probe / gate');
    cell.done();
    bar.finish();
    expect(lines().at(-1)).toContain('1/2 cells');
    expect(lines().filter((line) => line.includes('waiting for'))).toHaveLength(1);
  });
});

describe('a cell that fails', () => {
  it("is counted as done and no longer shown as running, also when it fails while its case opens (Stripe errs before the cell's work)", async () => {
    const { stream, lines } = capture();
    const bar = createProgressBar(stream);
    const failing = async () => {
      throw new Error('Stripe answered 500');
    };
    const world = { stripe: { post: failing, get: failing, list: failing, apiBase: 'http://127.0.0.1:1' }, control: null, backend: 'sandbox', delays: 'fast', poll: { fastMs: 10, slowMs: 10 }, exclusive: <T>(work: () => Promise<T>) => work() } as never;
    const only = { row: (name: string) => name === 'crash_before_send_chargeback_during_outage', column: (name: string) => name === 'no_check' };
    const result = await runStripeDispute({ world, decider: {} as never, model: 'rules', reps: 1, bar, only });
    bar.finish();
    expect(result.cells.map((cell) => cell.outcome)).toEqual(['CELL_FAILED']);
    const last = lines().at(-1) ?? '';
    expect(last).toMatch(/\] 1\/1 cells/);
    expect(last).not.toContain('crash_before_send_chargeback_during_outage / no_check');
  });
});
