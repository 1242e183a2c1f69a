// Rule: a CLI failure is one line on standard error, never a stack trace (README "The command line"): a command
// that cannot reach Redis with INTERLOCK_OTEL set prints the one "Cannot reach Redis" line, not ioredis's
// "[ioredis] Unhandled error event" stack (withStores creates the client before openStores, which awaits the
// OpenTelemetry import before it listens for the client's errors).
import { describe, expect, it } from 'vitest';
import { runCli, tempDir } from './run-cli.js';

describe('diff2: CLI with INTERLOCK_OTEL and no Redis', () => {
  it('says it cannot reach Redis in one line, with no ioredis stack', async () => {
    const temp = tempDir('rv-diff2-otel');
    try {
      const run = await runCli(['approvals', 'describe', 'ap_x'], { REDIS_URL: 'redis://127.0.0.1:1', INTERLOCK_KEY_PREFIX: 'rv-diff2-otel', INTERLOCK_DATA_DIR: temp.dir, INTERLOCK_OTEL: '1' });
      expect(run.code).toBe(2);
      expect(run.stderr).toContain('Cannot reach Redis');
      expect(run.stderr).not.toContain('Unhandled error event');
      expect(run.stderr.trim().split('\n')).toHaveLength(1);
    } finally {
      temp.remove();
    }
  });
});
