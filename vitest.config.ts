import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['tests/**/*.test.ts', 'sandbox/**/*.test.ts', 'src/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two test files at once even on two cores: most of the slow files wait on processes they spawned (serve, the
    // Stripe CLI, a private redis-server), so the default (one per core but one) left half the machine idle and the
    // suite took 13.5 minutes here; with two it takes about 10. Each file keeps its own key prefix and ports.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    globalSetup: ['tests/support/outcome-coverage.ts', 'tests/support/code-cache.ts'],
    env: { INTERLOCK_LOG_LEVEL: 'silent' },
  },
});
