// Rule: a read-only command (`interlock alerts`, withStores readOnly) that loses Redis says it could not reach Redis
// and changed nothing; it does not tell the operator that "what it asked may or may not have been done" and to check
// before running it again (the alerts index upkeep it may run, index-open-alerts-3, writes only an index derived from
// the alerts as stored, so stores.ts watchWrites does not count it as a write).
import { describe, expect, it } from 'vitest';
import { runCli, tempDir } from './run-cli.js';
import { cutAfter } from './redis-proxy.js';

describe('diff2: alerts listing losing Redis', () => {
  it('is not reported as a command that had begun writing', async () => {
    const temp = tempDir('rv-diff2-alerts');
    const proxy = await cutAfter('alerts-open-complete');
    try {
      const run = await runCli(['alerts'], { REDIS_URL: proxy.url, INTERLOCK_KEY_PREFIX: `rv-diff2-al${Math.random().toString(36).slice(2, 8)}`, INTERLOCK_DATA_DIR: temp.dir });
      expect(proxy.cut(), 'the proxy never cut the connection').toBe(true);
      expect(run.code).toBe(2);
      expect(run.stderr).not.toContain('may or may not have been done');
      expect(run.stderr).toContain('Cannot reach Redis');
    } finally {
      await proxy.close();
      temp.remove();
    }
  });
});
